#include "relax/transform/plan_memory.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/expr_functor.h"
#include "relax/struct_info_functions.h"
#include "relax/transform/function_pass.h"
#include "tir/analyzer.h"

namespace kiln::relax {
namespace {

using tir::PrimExpr;

// Every Relax variable an expression reads, nested expressions (If branches, closures) included.
class UseCollector : public ExprVisitor {
 public:
  void VisitExpr_(const VarNode* op, const Expr& self) override {
    uses.push_back(op);
    ExprVisitor::VisitExpr_(op, self);
  }
  std::vector<const VarNode*> uses;
};

std::vector<const VarNode*> UsesOf(const Expr& e) {
  UseCollector c;
  c.VisitExpr(e);
  return std::move(c.uses);
}

// The tir variables a function's parameters bind on entry: bare variables of Tensor and
// Shape dims and of Prim values (what VM codegen binds from the parameter signatures).
std::set<std::string> ParamBoundVars(const FunctionNode& fn) {
  std::set<std::string> bound;
  auto take = [&bound](const PrimExpr& d) {
    if (const auto* v = d.as<tir::VarNode>()) bound.insert(v->name);
  };
  for (const Var& p : fn.params) {
    const StructInfo& s = p->struct_info();
    if (!s.defined()) continue;
    if (const auto* t = s.as<TensorStructInfoNode>(); t != nullptr && t->shape) {
      for (const PrimExpr& d : *t->shape) take(d);
    } else if (const auto* sh = s.as<ShapeStructInfoNode>(); sh != nullptr && sh->values) {
      for (const PrimExpr& d : *sh->values) take(d);
    } else if (const auto* prim = s.as<PrimStructInfoNode>(); prim != nullptr && prim->value.defined()) {
      take(prim->value);
    }
  }
  return bound;
}

struct Candidate {
  size_t block = 0;    // index of the top-level block
  size_t binding = 0;  // index in that block
  PrimExpr bytes;
  int64_t estimate = 0;  // upper bound of bytes (IntBound::kPosInf when unbounded)
  int def = 0;
  int last = 0;
  bool escapes = false;
  int token = -1;
};

struct Token {
  std::vector<int> members;  // candidate indices, in allocation order
  std::vector<PrimExpr> sizes;  // not provably dominated by each other; the storage is their max
  int64_t estimate = 0;
  int last = 0;
};

class FunctionPlanner {
 public:
  FunctionPlanner(const FunctionNode& fn, const PlanMemoryOptions& options) : fn_(fn), options_(options) {}

  // The new body, or the old one when nothing is planned.
  Expr Run() {
    const auto* seq = fn_.body.as<SeqExprNode>();
    if (seq == nullptr) return fn_.body;
    Analyze(*seq);
    AssignTokens();
    return Rewrite(*seq);
  }

 private:
  std::optional<PrimExpr> BytesOf(const CallNode& call, const StructInfo& sinfo) {
    const auto* t = sinfo.defined() ? sinfo.as<TensorStructInfoNode>() : nullptr;
    if (t == nullptr || !t->shape || !t->dtype) return std::nullopt;
    if (call.args.empty() || call.args[0].kind() != ExprKind::kShapeExpr) return std::nullopt;
    const int64_t bits = static_cast<int64_t>(t->dtype->bits()) * t->dtype->lanes();
    PrimExpr numel = tir::IntImm(tir::DataType::Int64(), 1);
    for (const PrimExpr& d : *t->shape) {
      if (d.dtype() != tir::DataType::Int64()) return std::nullopt;
      std::vector<tir::Var> vars;
      CollectVars(d, &vars);
      for (const tir::Var& v : vars) {
        if (bound_.count(v->name) == 0) return std::nullopt;
      }
      numel = tir::Mul(numel, d);
    }
    // Sub-byte elements are packed (tir/data_type.h): ceil(numel * bits / 8) bytes.
    PrimExpr bytes = bits % 8 == 0 ? tir::Mul(numel, tir::IntImm(tir::DataType::Int64(), bits / 8))
                                   : tir::FloorDiv(tir::Mul(numel, tir::IntImm(tir::DataType::Int64(), bits)) + 7,
                                                   tir::IntImm(tir::DataType::Int64(), 8));
    return analyzer_.Simplify(bytes);
  }

  void Analyze(const SeqExprNode& seq) {
    bound_ = ParamBoundVars(fn_);
    int pos = 0;
    auto use = [&](const std::vector<const VarNode*>& vars, int at) {
      for (const VarNode* v : vars) {
        auto it = alias_.find(v);
        if (it == alias_.end()) continue;
        for (int id : it->second) candidates_[id].last = std::max(candidates_[id].last, at);
      }
    };
    auto aliases_of = [&](const std::vector<const VarNode*>& vars) {
      std::set<int> out;
      for (const VarNode* v : vars) {
        auto it = alias_.find(v);
        if (it != alias_.end()) out.insert(it->second.begin(), it->second.end());
      }
      return out;
    };
    for (size_t bi = 0; bi < seq.blocks.size(); ++bi) {
      const BindingBlock& block = seq.blocks[bi];
      for (size_t i = 0; i < block.bindings.size(); ++i) {
        const Binding& b = block.bindings[i];
        ++pos;
        const auto* call = b.value.as<CallNode>();
        if (call != nullptr && !b.is_match_cast() && IsOp(call->op, "alloc_tensor")) {
          if (std::optional<PrimExpr> bytes = BytesOf(*call, b.value.struct_info())) {
            Candidate c;
            c.block = bi;
            c.binding = i;
            c.bytes = *bytes;
            tir::IntBound bound = analyzer_.ConstIntBound(*bytes);
            c.estimate = bound.max;
            c.def = c.last = pos;
            alias_[b.var.get()] = {static_cast<int>(candidates_.size())};
            candidates_.push_back(c);
            continue;
          }
        }
        std::vector<const VarNode*> used = UsesOf(b.value);
        use(used, pos);
        if (call != nullptr && IsOp(call->op, "call_tir_dps") && call->args.size() >= 3) {
          alias_[b.var.get()] = aliases_of(UsesOf(call->args[2]));
        } else if (call != nullptr && (IsOp(call->op, "shape_of") || IsOp(call->op, "alloc_storage"))) {
          // Results that hold no tensor memory.
        } else {
          const StructInfo& s = b.var->struct_info();
          const bool holds_memory = !s.defined() || (s.as<ShapeStructInfoNode>() == nullptr && s.as<PrimStructInfoNode>() == nullptr);
          if (holds_memory) {
            std::set<int> a = aliases_of(used);
            if (!a.empty()) alias_[b.var.get()] = std::move(a);
          }
        }
      }
    }
    ++pos;
    std::vector<const VarNode*> result = UsesOf(seq.body);
    use(result, pos);
    for (const VarNode* v : result) {
      auto it = alias_.find(v);
      if (it == alias_.end()) continue;
      for (int id : it->second) candidates_[id].escapes = true;
    }
  }

  // Adds `size` to the token's size terms, dropping terms one of the others provably covers.
  void Grow(Token& t, const PrimExpr& size, int64_t estimate) {
    for (const PrimExpr& s : t.sizes) {
      if (analyzer_.CanProveLE(size, s)) return;
    }
    std::vector<PrimExpr> kept;
    for (const PrimExpr& s : t.sizes) {
      if (!analyzer_.CanProveLE(s, size)) kept.push_back(s);
    }
    kept.push_back(size);
    t.sizes = std::move(kept);
    t.estimate = std::max(t.estimate, estimate);
  }

  void AssignTokens() {
    for (size_t ci = 0; ci < candidates_.size(); ++ci) {
      Candidate& c = candidates_[ci];
      if (c.escapes) continue;
      int best = -1;
      int rank = 3;  // 0: proved equal, 1: fits, 2: grows
      for (size_t ti = 0; ti < tokens_.size(); ++ti) {
        const Token& t = tokens_[ti];
        if (t.last >= c.def) continue;  // its current tensor is still live
        const bool equal = t.sizes.size() == 1 && analyzer_.CanProveEqual(t.sizes[0], c.bytes);
        bool fits = equal;
        for (const PrimExpr& s : t.sizes) fits = fits || analyzer_.CanProveLE(c.bytes, s);
        const int r = equal ? 0 : fits ? 1 : 2;
        // Growing a storage sizes it for the new tensor from its first tensor on, so the new
        // tensor's bytes are held while the earlier ones live too; a storage of its own is
        // allocated only when it is needed and never raises the peak above the live set.
        // Storages sized at their upper bound (allocated ahead of time) grow instead: fewer
        // of them, their sizes summed.
        if (r == 2 && !options_.size_at_upper_bound) continue;
        if (r < rank) {
          best = static_cast<int>(ti);
          rank = r;
          if (r == 0) break;
          continue;
        }
        if (r == rank && r == 1 && t.estimate < tokens_[best].estimate) best = static_cast<int>(ti);
        if (r == rank && r == 2 && t.estimate > tokens_[best].estimate) best = static_cast<int>(ti);
      }
      if (best < 0) {
        best = static_cast<int>(tokens_.size());
        tokens_.push_back(Token());
      }
      Token& t = tokens_[best];
      Grow(t, c.bytes, c.estimate);
      t.members.push_back(static_cast<int>(ci));
      t.last = c.last;
      c.token = best;
    }
  }

  PrimExpr StorageSize(const Token& t) {
    PrimExpr size = t.sizes[0];
    for (size_t i = 1; i < t.sizes.size(); ++i) size = tir::Max(size, t.sizes[i]);
    size = analyzer_.Simplify(size);
    if (options_.size_at_upper_bound && !size.as_int()) {
      tir::IntBound bound = analyzer_.ConstIntBound(size);
      if (bound.max != tir::IntBound::kPosInf) size = tir::IntImm(tir::DataType::Int64(), bound.max);
    }
    return size;
  }

  Expr Rewrite(const SeqExprNode& seq) {
    // Which bindings become storage_tensor, and which storage each is the first of.
    std::set<std::string> names;
    for (const BindingBlock& block : seq.blocks) {
      for (const Binding& b : block.bindings) names.insert(b.var.name_hint());
    }
    for (const Var& p : fn_.params) names.insert(p.name_hint());
    std::map<std::pair<size_t, size_t>, int> planned;  // (block, binding) -> candidate
    std::vector<Var> storage_vars(tokens_.size());
    int next_name = 0;
    for (size_t ti = 0; ti < tokens_.size(); ++ti) {
      const Token& t = tokens_[ti];
      if (t.members.size() < 2) continue;
      bool one_dataflow_block = seq.blocks[candidates_[t.members[0]].block].dataflow;
      for (int m : t.members) {
        one_dataflow_block &= candidates_[m].block == candidates_[t.members[0]].block;
        planned[{candidates_[m].block, candidates_[m].binding}] = m;
      }
      std::string name;
      do {
        name = absl::StrCat("storage", next_name++);
      } while (names.count(name) > 0);
      storage_vars[ti] = Var(name, ObjectSInfo(), one_dataflow_block);
    }
    if (planned.empty()) return fn_.body;
    std::vector<BindingBlock> blocks;
    for (size_t bi = 0; bi < seq.blocks.size(); ++bi) {
      const BindingBlock& block = seq.blocks[bi];
      BindingBlock out{{}, block.dataflow};
      for (size_t i = 0; i < block.bindings.size(); ++i) {
        const Binding& b = block.bindings[i];
        auto it = planned.find({bi, i});
        if (it == planned.end()) {
          out.bindings.push_back(b);
          continue;
        }
        const Candidate& c = candidates_[it->second];
        const Token& t = tokens_[c.token];
        const Var& storage = storage_vars[c.token];
        if (t.members[0] == it->second) {
          Expr alloc = Call(Op("alloc_storage"), {PrimValue(StorageSize(t))}, {}, {}, ObjectSInfo());
          out.bindings.push_back({storage, alloc, StructInfo()});
        }
        const auto* call = b.value.as<CallNode>();
        Expr tensor = Call(Op("storage_tensor"), {storage, PrimValue(tir::IntImm(tir::DataType::Int64(), 0)), call->args[0]},
                           call->attrs, {}, b.value.struct_info());
        out.bindings.push_back({b.var, tensor, StructInfo()});
      }
      blocks.push_back(std::move(out));
    }
    return Expr(std::make_shared<SeqExprNode>(std::move(blocks), seq.body, fn_.body.struct_info()));
  }

  const FunctionNode& fn_;
  const PlanMemoryOptions& options_;
  tir::Analyzer analyzer_;
  std::set<std::string> bound_;
  std::vector<Candidate> candidates_;
  std::vector<Token> tokens_;
  std::unordered_map<const VarNode*, std::set<int>> alias_;
};

}  // namespace

absl::StatusOr<IRModule> PlanMemory(const IRModule& module, const PlanMemoryOptions& options) {
  return RewriteFunctionBodies(module, [&](const std::string&, const FunctionNode& fn) -> absl::StatusOr<Expr> {
    return FunctionPlanner(fn, options).Run();
  });
}

}  // namespace kiln::relax
