#include "relax/transform/fuse_attention.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/expr_functor.h"
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "relax/transform/function_pass.h"
#include "support/status_macros.h"
#include "tir/structural_equal.h"

namespace kiln::relax {
namespace {

using tir::Buffer;
using tir::DataType;
using tir::Stmt;

// One attention chain found in a function: the tensors the kernel reads and the scale.
struct Chain {
  Expr q, k, v;
  std::optional<float> scale;  // absent: no scale
  bool divide = false;         // the scores are divided by `scale` instead of multiplied
  // The mask, when defined: added to the scaled scores, or (`where`) a bool condition that
  // keeps them where it is true and puts `fill` there where it is false (`fill_when_true`:
  // the other way round).
  Expr mask;
  bool where = false;
  float fill = 0;
  bool fill_when_true = false;
  const VarNode* scores = nullptr;
  const VarNode* scaled = nullptr;  // == scores when there is no scale
  const VarNode* masked = nullptr;  // == scaled when there is no mask
  const VarNode* probs = nullptr;
  const VarNode* transposed = nullptr;  // %kt, removed with the chain when it has no other use
};

// A tensor of `dtype` (float32 by default) and at least `min_ndim` dims whose every dim the
// kernel can bind from its buffer (a constant or a plain variable); null otherwise.
const TensorStructInfoNode* BindableTensor(const StructInfo& s, int min_ndim = 2,
                                          DataType dtype = DataType::Float32()) {
  const auto* t = s.defined() ? s.as<TensorStructInfoNode>() : nullptr;
  if (t == nullptr || !t->shape || !t->dtype || *t->dtype != dtype || t->ndim < min_ndim || !t->device.empty()) {
    return nullptr;
  }
  for (const PrimExpr& d : *t->shape) {
    if (!d.as_int() && d.kind() != tir::ExprKind::kVar) return nullptr;  // the kernel binds dims from buffers
  }
  return t;
}

bool SameDims(const std::vector<PrimExpr>& a, size_t a_from, const std::vector<PrimExpr>& b, size_t b_from,
              size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!tir::StructuralEqual(a[a_from + i], b[b_from + i])) return false;
  }
  return true;
}

// The value of a float32 scalar constant (shape [] or [1]).
std::optional<float> ScalarConstant(const Expr& e) {
  const auto* c = e.as<ConstantNode>();
  if (c == nullptr || c->data.is_external() || c->data.dtype != DataType::Float32() || c->data.numel() != 1 ||
      c->data.shape.size() > 1 || !c->data.bytes || c->data.bytes->size() != sizeof(float)) {
    return std::nullopt;
  }
  float value;
  std::memcpy(&value, c->data.bytes->data(), sizeof(float));
  return value;
}

class UseCounter : public ExprVisitor {
 public:
  void VisitExpr_(const VarNode* op, const Expr& self) override {
    ++uses[op];
    ExprVisitor::VisitExpr_(op, self);
  }
  std::unordered_map<const VarNode*, int> uses;
};

class Matcher {
 public:
  explicit Matcher(const Expr& body) {
    UseCounter counter;
    counter.VisitExpr(body);
    uses_ = std::move(counter.uses);
    if (const auto* seq = body.as<SeqExprNode>()) {
      for (size_t i = 0; i < seq->blocks.size(); ++i) {
        for (const Binding& b : seq->blocks[i].bindings) {
          if (!b.is_match_cast()) bound_[b.var.get()] = b.value;
          block_of_[b.var.get()] = i;
        }
      }
    }
  }

  // The chain whose last matmul is `call`, bound to `var` of struct info `out`, if any.
  std::optional<Chain> Match(const CallNode& call, const VarNode* var, const StructInfo& out) const {
    std::optional<Chain> chain = MatchOperators(call, out);
    // The kernel's call replaces the last matmul: a dataflow variable it reads must be
    // bound in the same dataflow block.
    if (!chain) return std::nullopt;
    for (const Expr& operand : {chain->q, chain->k, chain->v, chain->mask}) {
      const auto* v = operand.defined() ? operand.as<VarNode>() : nullptr;
      if (v != nullptr && v->is_dataflow() && block_of_.at(v) != block_of_.at(var)) return std::nullopt;
    }
    return chain;
  }

  // How many times the function's body reads `v`.
  int Uses(const VarNode* v) const {
    auto it = uses_.find(v);
    return it == uses_.end() ? 0 : it->second;
  }

 private:
  std::optional<Chain> MatchOperators(const CallNode& call, const StructInfo& out) const {
    if (!IsOp(call.op, "matmul") || call.args.size() != 2) return std::nullopt;
    Chain chain;
    chain.v = call.args[1];
    const CallNode* softmax = BoundCall(call.args[0], "softmax", &chain.probs);
    if (softmax == nullptr || softmax->args.size() != 1) return std::nullopt;
    const auto* probs_type = BindableTensor(softmax->args[0].struct_info());
    absl::StatusOr<std::optional<int64_t>> axis = op::IntAttr(*softmax, "axis");
    if (probs_type == nullptr || !axis.ok()) return std::nullopt;
    const int64_t a = axis->value_or(-1);
    if (a != -1 && a != probs_type->ndim - 1) return std::nullopt;
    // The mask, if any, then the scale, then the scores.
    Expr logits = softmax->args[0];
    if (const CallNode* add = BoundCall(logits, "add", &chain.masked)) {
      if (add->args.size() != 2) return std::nullopt;
      // The scores are the operand made by a scale or the matmul; the mask is the other.
      const VarNode* unused = nullptr;
      const int side = BoundCall(add->args[0], "multiply", &unused) || BoundCall(add->args[0], "divide", &unused) ||
                               BoundCall(add->args[0], "matmul", &unused)
                           ? 0
                           : 1;
      logits = add->args[side];
      chain.mask = add->args[1 - side];
    } else if (const CallNode* where = BoundCall(logits, "where", &chain.masked)) {
      if (where->args.size() != 3) return std::nullopt;
      // One branch is a scalar constant (-inf, or the most negative float), the other the scores.
      std::optional<float> fill = ScalarConstant(Resolve(where->args[2]));
      chain.fill_when_true = !fill;
      if (!fill) fill = ScalarConstant(Resolve(where->args[1]));
      if (!fill) return std::nullopt;
      chain.where = true;
      chain.fill = *fill;
      chain.mask = where->args[0];
      logits = where->args[chain.fill_when_true ? 2 : 1];
    }
    const VarNode* scaled = nullptr;
    const CallNode* scores = nullptr;
    if (const CallNode* mul = BoundCall(logits, "multiply", &scaled)) {
      if (mul->args.size() != 2) return std::nullopt;
      for (int side = 0; side < 2 && !scores; ++side) {
        std::optional<float> c = ScalarConstant(Resolve(mul->args[1 - side]));
        if (c) {
          chain.scale = c;
          scores = BoundCall(mul->args[side], "matmul", &chain.scores);
        }
      }
    } else if (const CallNode* div = BoundCall(logits, "divide", &scaled)) {
      if (div->args.size() != 2) return std::nullopt;
      chain.scale = ScalarConstant(Resolve(div->args[1]));
      chain.divide = true;
      if (chain.scale) scores = BoundCall(div->args[0], "matmul", &chain.scores);
    } else {
      scores = BoundCall(logits, "matmul", &chain.scores);
      scaled = chain.scores;
    }
    if (scores == nullptr || scores->args.size() != 2) return std::nullopt;
    if (chain.scale && !(std::isfinite(*chain.scale) && *chain.scale > 0)) return std::nullopt;
    chain.scaled = scaled;
    chain.q = scores->args[0];
    const CallNode* permute = BoundCall(scores->args[1], "permute_dims", &chain.transposed);
    if (permute == nullptr) return std::nullopt;
    chain.k = permute->args.empty() ? Expr() : permute->args[0];
    if (!chain.mask.defined()) chain.masked = chain.scaled;
    // Each intermediate is used by the chain alone.
    for (const VarNode* v : {chain.scores, chain.scaled, chain.masked, chain.probs}) {
      if (v == nullptr || Uses(v) != 1) return std::nullopt;
    }
    // Types and shapes: q (B.., m, d), k (B.., n, d), v (B.., n, e), out (B.., m, e).
    const TensorStructInfoNode* q = BindableTensor(chain.q.struct_info());
    const TensorStructInfoNode* k = chain.k.defined() ? BindableTensor(chain.k.struct_info()) : nullptr;
    const TensorStructInfoNode* v = BindableTensor(chain.v.struct_info());
    const TensorStructInfoNode* o = BindableTensor(out);
    if (!q || !k || !v || !o || !op::SwapsLastTwoAxes(*permute, k->ndim)) return std::nullopt;
    for (const VarNode* var : {chain.scores, chain.scaled, chain.masked}) {
      if (BindableTensor(var->struct_info()) == nullptr) return std::nullopt;
    }
    // The mask broadcasts to the scores (B.., m, n) without growing them: aligned from the
    // right, each of its dims a literal 1 or the scores' own.
    if (chain.mask.defined()) {
      const TensorStructInfoNode* mask = BindableTensor(chain.mask.struct_info(), /*min_ndim=*/1,
                                                       chain.where ? DataType::Bool() : DataType::Float32());
      const TensorStructInfoNode* scores_type = BindableTensor(chain.scores->struct_info());
      if (mask == nullptr || mask->ndim > scores_type->ndim) return std::nullopt;
      const size_t offset = static_cast<size_t>(scores_type->ndim - mask->ndim);
      for (size_t i = 0; i < static_cast<size_t>(mask->ndim); ++i) {
        const PrimExpr& dim = (*mask->shape)[i];
        if (dim.as_int() != std::optional<int64_t>(1) &&
            !tir::StructuralEqual(dim, (*scores_type->shape)[offset + i])) {
          return std::nullopt;
        }
      }
    }
    const int r = q->ndim;
    if (k->ndim != r || v->ndim != r || o->ndim != r) return std::nullopt;
    const std::vector<PrimExpr>&qs = *q->shape, &ks = *k->shape, &vs = *v->shape, &os = *o->shape;
    const size_t batch = static_cast<size_t>(r - 2);
    if (!SameDims(qs, 0, ks, 0, batch) || !SameDims(qs, 0, vs, 0, batch) || !SameDims(qs, 0, os, 0, batch)) {
      return std::nullopt;
    }
    const size_t m = batch, last = batch + 1;
    if (!SameDims(qs, last, ks, last, 1) || !SameDims(ks, m, vs, m, 1) || !SameDims(os, m, qs, m, 1) ||
        !SameDims(os, last, vs, last, 1)) {
      return std::nullopt;
    }
    return chain;
  }


  // What a variable is bound to in the function (the expression itself otherwise).
  Expr Resolve(const Expr& e) const {
    const auto* var = e.as<VarNode>();
    auto it = var == nullptr ? bound_.end() : bound_.find(var);
    return it == bound_.end() ? e : it->second;
  }

  // The call to `op` the variable `e` is bound to, or null; `*var` receives the variable.
  const CallNode* BoundCall(const Expr& e, const char* op, const VarNode** var) const {
    const auto* v = e.as<VarNode>();
    auto it = v == nullptr ? bound_.end() : bound_.find(v);
    if (it == bound_.end()) return nullptr;
    const auto* call = it->second.as<CallNode>();
    if (call == nullptr || !IsOp(call->op, op)) return nullptr;
    *var = v;
    return call;
  }

  std::unordered_map<const VarNode*, Expr> bound_;
  std::unordered_map<const VarNode*, size_t> block_of_;
  std::unordered_map<const VarNode*, int> uses_;
};

// The scores of a row block scaled as the chain says.
PrimExpr Scaled(const Chain& chain, PrimExpr x) {
  if (!chain.scale) return x;
  PrimExpr c = tir::FloatImm(DataType::Float32(), *chain.scale);
  return chain.divide ? tir::Div(std::move(x), c) : tir::Mul(std::move(x), c);
}

std::vector<PrimExpr> Concat(std::vector<PrimExpr> a, const std::vector<PrimExpr>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The kernel: see the header.
tir::PrimFunc AttentionKernel(const Chain& chain, int64_t block_rows) {
  const DataType f32 = DataType::Float32();
  const auto* qt = chain.q.struct_info().as<TensorStructInfoNode>();
  const auto* kt_info = chain.k.struct_info().as<TensorStructInfoNode>();
  const auto* vt = chain.v.struct_info().as<TensorStructInfoNode>();
  const std::vector<PrimExpr>&qs = *qt->shape, &ks = *kt_info->shape, &vs = *vt->shape;
  const size_t batch = qs.size() - 2;
  const std::vector<PrimExpr> batch_dims(qs.begin(), qs.begin() + static_cast<std::ptrdiff_t>(batch));
  const PrimExpr m = qs[batch], d = qs[batch + 1], n = ks[batch], e = vs[batch + 1];
  Buffer q("q", f32, qs), k("k", f32, ks), v("v", f32, vs);
  Buffer out("out", f32, Concat(batch_dims, {m, e}));
  Buffer mask;
  if (chain.mask.defined()) {
    mask = Buffer("mask", chain.where ? DataType::Bool() : f32, *chain.mask.struct_info().as<TensorStructInfoNode>()->shape);
  }

  // k transposed once: each row block's scores read it in whole vectors along n. Its rows
  // lie an odd number of 64-byte lines apart (n rounded up, plus 16 floats at most), so
  // the d rows a register tile reads at each step fall in different L1 sets: at a
  // multiple of 4 KiB (n = 1024) they would all share one set and evict each other.
  const PrimExpr sixteen = tir::IntImm(DataType::Int64(), 16);
  const PrimExpr lines = tir::Add(tir::Mul(tir::IntImm(DataType::Int64(), 2),
                                           tir::FloorDiv(tir::Add(n, tir::IntImm(DataType::Int64(), 31)),
                                                         tir::IntImm(DataType::Int64(), 32))),
                                  tir::IntImm(DataType::Int64(), 1));
  Buffer kt = op::ScratchBuffer("attention_kt", f32, Concat(batch_dims, {d, tir::Mul(sixteen, lines)}));
  Stmt transpose = op::BlockNest("attention_kt", Concat(batch_dims, {d, n}), {}, [&](const auto& s, const auto&) {
    std::vector<PrimExpr> at(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(batch));
    return op::BlockParts{tir::BufferStore(kt, k.Load(Concat(at, {s[batch + 1], s[batch]})), s), Stmt()};
  });

  // One block per (batch, row block).
  const PrimExpr R = tir::IntImm(DataType::Int64(), block_rows);
  const PrimExpr row_blocks = tir::FloorDiv(tir::Add(m, tir::IntImm(DataType::Int64(), block_rows - 1)), R);
  std::vector<tir::IterVar> iters;
  std::vector<tir::Var> loops;
  std::vector<PrimExpr> b;  // the batch iteration variables
  for (size_t i = 0; i <= batch; ++i) {
    const bool is_rows = i == batch;
    tir::Var loop(is_rows ? "rb" : absl::StrCat("b", i));
    tir::Var iv(is_rows ? "vrb" : absl::StrCat("vb", i));
    iters.push_back({iv, is_rows ? row_blocks : batch_dims[i], tir::IterType::kSpatial, loop});
    loops.push_back(loop);
    if (!is_rows) b.push_back(iv);
  }
  const PrimExpr first_row = tir::Mul(iters.back().var, R);
  const PrimExpr rows = tir::Min(R, tir::Sub(m, first_row));
  Buffer S("S", f32, {R, n}), row_max("row_max", f32, {R}), row_sum("row_sum", f32, {R}), O("O", f32, {R, e});
  const PrimExpr zero = tir::FloatImm(f32, 0.0);

  Stmt scores = op::BlockNest("attention_scores", {rows, n}, {d}, [&](const auto& s, const auto& r) {
    PrimExpr acc = S.Load({s[0], s[1]});
    PrimExpr product = tir::Mul(q.Load(Concat(b, {tir::Add(first_row, s[0]), r[0]})), kt.Load(Concat(b, {r[0], s[1]})));
    return op::BlockParts{tir::BufferStore(S, tir::Add(acc, product), {s[0], s[1]}),
                          tir::BufferStore(S, zero, {s[0], s[1]})};
  });
  // With a mask the scores are scaled and masked in place first, and the passes after read
  // them as they are; without one the max is taken over the unscaled scores and scaled
  // after (exact for c > 0: rounding is monotonic), which saves a pass.
  std::vector<Stmt> passes = {scores};
  Chain unscaled = chain;
  if (mask.defined()) {
    passes.push_back(op::BlockNest("attention_mask", {rows, n}, {}, [&](const auto& s, const auto&) {
      PrimExpr at = mask.Load(op::BroadcastIndex(mask, Concat(b, {tir::Add(first_row, s[0]), s[1]})));
      PrimExpr scaled = Scaled(chain, S.Load({s[0], s[1]}));
      PrimExpr fill = tir::FloatImm(f32, chain.fill);
      PrimExpr value = !chain.where           ? tir::Add(scaled, at)
                       : chain.fill_when_true ? tir::Select(at, fill, scaled)
                                              : tir::Select(at, scaled, fill);
      return op::BlockParts{tir::BufferStore(S, value, {s[0], s[1]}), Stmt()};
    }));
    unscaled.scale.reset();
  }
  Stmt max = op::BlockNest("attention_max", {rows}, {n}, [&](const auto& s, const auto& r) {
    return op::BlockParts{tir::BufferStore(row_max, tir::Max(row_max.Load({s[0]}), S.Load({s[0], r[0]})), {s[0]}),
                          tir::BufferStore(row_max, op::LowestValue(f32), {s[0]})};
  });
  Stmt exp = op::BlockNest("attention_exp", {rows, n}, {}, [&](const auto& s, const auto&) {
    PrimExpr x = tir::Sub(Scaled(unscaled, S.Load({s[0], s[1]})), Scaled(unscaled, row_max.Load({s[0]})));
    return op::BlockParts{tir::BufferStore(S, tir::Call("exp", {x}), {s[0], s[1]}), Stmt()};
  });
  Stmt sum = op::BlockNest("attention_sum", {rows}, {n}, [&](const auto& s, const auto& r) {
    return op::BlockParts{tir::BufferStore(row_sum, tir::Add(row_sum.Load({s[0]}), S.Load({s[0], r[0]})), {s[0]}),
                          tir::BufferStore(row_sum, zero, {s[0]})};
  });
  Stmt pv = op::BlockNest("attention_pv", {rows, e}, {n}, [&](const auto& s, const auto& r) {
    PrimExpr acc = O.Load({s[0], s[1]});
    PrimExpr product = tir::Mul(S.Load({s[0], r[0]}), v.Load(Concat(b, {r[0], s[1]})));
    return op::BlockParts{tir::BufferStore(O, tir::Add(acc, product), {s[0], s[1]}),
                          tir::BufferStore(O, zero, {s[0], s[1]})};
  });
  Stmt write = op::BlockNest("attention_out", {rows, e}, {}, [&](const auto& s, const auto&) {
    PrimExpr value = tir::Mul(O.Load({s[0], s[1]}), tir::Div(tir::FloatImm(f32, 1.0), row_sum.Load({s[0]})));
    return op::BlockParts{tir::BufferStore(out, value, Concat(b, {tir::Add(first_row, s[0]), s[1]})), Stmt()};
  });
  passes.insert(passes.end(), {max, exp, sum, pv, write});
  Stmt row_block =
      tir::Block("attention_rows", iters, tir::SeqStmt(passes), Stmt(), PrimExpr(), {S, row_max, row_sum, O});
  for (size_t i = loops.size(); i-- > 0;) {
    row_block = tir::For(loops[i], tir::IntImm(DataType::Int64(), 0), iters[i].extent, tir::ForKind::kSerial,
                         row_block);
  }
  Stmt body = tir::Allocate(kt, tir::SeqStmt({transpose, row_block}));
  // No keys: every softmax row is empty and the products sum nothing (the reductions above
  // would never initialize their results).
  if (!n.as_int()) {
    Stmt zeros = op::ComputeBlock("attention_empty", out, [&](const std::vector<PrimExpr>&) { return zero; });
    body = tir::IfThenElse(tir::EQ(n, tir::IntImm(n.dtype(), 0)), zeros, body);
  } else if (*n.as_int() == 0) {
    body = op::ComputeBlock("attention_empty", out, [&](const std::vector<PrimExpr>&) { return zero; });
  }
  op::KernelParams params{{q, k, v}, {out}, {}};
  if (mask.defined()) params.inputs.push_back(mask);
  return op::MakePrimFunc(params, body, "opaque");
}

class Rewriter {
 public:
  Rewriter(const IRModule& module, const tir::Target& target) : module_(module), target_(target) {}

  absl::StatusOr<Expr> Rewrite(const FunctionNode& fn) {
    const auto* seq = fn.body.as<SeqExprNode>();
    if (seq == nullptr) return fn.body;
    Matcher matcher(fn.body);
    std::unordered_map<const VarNode*, Chain> chains;  // by the last matmul's var
    std::unordered_set<const VarNode*> removed;
    std::unordered_map<const VarNode*, int> transposes;  // uses of each %kt by fused chains
    for (const BindingBlock& block : seq->blocks) {
      for (const Binding& binding : block.bindings) {
        const auto* call = binding.value.as<CallNode>();
        if (binding.is_match_cast() || call == nullptr) continue;
        std::optional<Chain> chain = matcher.Match(*call, binding.var.get(), binding.value.struct_info());
        if (!chain) continue;
        removed.insert({chain->scores, chain->scaled, chain->masked, chain->probs});
        ++transposes[chain->transposed];
        chains.emplace(binding.var.get(), *std::move(chain));
      }
    }
    if (chains.empty()) return fn.body;
    for (const auto& [kt, fused] : transposes) {
      if (matcher.Uses(kt) == fused) removed.insert(kt);
    }
    const int64_t block_rows = target_.vector_bits >= 512 ? 32 : 24;
    std::vector<BindingBlock> blocks;
    for (const BindingBlock& block : seq->blocks) {
      BindingBlock out{{}, block.dataflow};
      for (const Binding& binding : block.bindings) {
        if (removed.count(binding.var.get())) continue;
        auto it = chains.find(binding.var.get());
        if (it == chains.end()) {
          out.bindings.push_back(binding);
          continue;
        }
        const std::string name = FreshName("attention");
        added_.push_back({name, AttentionKernel(it->second, block_rows)});
        Expr callee = GlobalVar(name, OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false));
        const StructInfo& sinfo = binding.value.struct_info();
        const Chain& chain = it->second;
        std::vector<Expr> operands = {chain.q, chain.k, chain.v};
        if (chain.mask.defined()) operands.push_back(chain.mask);
        out.bindings.push_back({binding.var, op::CallTir(callee, operands, sinfo), StructInfo()});
      }
      if (!out.bindings.empty()) blocks.push_back(std::move(out));
    }
    return Expr(std::make_shared<SeqExprNode>(std::move(blocks), seq->body, fn.body.struct_info()));
  }

  const std::vector<std::pair<std::string, tir::PrimFunc>>& added() const { return added_; }

 private:
  std::string FreshName(const std::string& base) {
    for (int i = 0;; ++i) {
      std::string name = i == 0 ? base : absl::StrCat(base, i);
      if (module_.Find(name) == nullptr && taken_.insert(name).second) return name;
    }
  }

  const IRModule& module_;
  const tir::Target target_;
  std::unordered_set<std::string> taken_;
  std::vector<std::pair<std::string, tir::PrimFunc>> added_;
};

}  // namespace

absl::StatusOr<IRModule> FuseAttention(const IRModule& module, const tir::Target& target) {
  if (target.kind != tir::TargetKind::kCpu) return module;
  Rewriter rewriter(module, target);
  KILN_ASSIGN_OR_RETURN(IRModule out,
                        RewriteFunctionBodies(module, [&](const std::string&, const FunctionNode& fn) {
                          return rewriter.Rewrite(fn);
                        }));
  for (const auto& [name, func] : rewriter.added()) KILN_RETURN_IF_ERROR(out.Add(name, func));
  return out;
}

}  // namespace kiln::relax
