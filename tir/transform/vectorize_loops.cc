#include "tir/transform/vectorize_loops.h"

#include <map>
#include <vector>

#include "tir/buffer.h"
#include "tir/expr.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::transform {
namespace {

using tir::DataType;
using tir::ExprKind;
using tir::PrimExpr;
using tir::Stmt;

// Structural equality for index expressions (the forms schedules produce); anything else
// compares unequal, which only makes the vectorizer more cautious.
bool SameIndex(const PrimExpr& a, const PrimExpr& b) {
  if (a.same_as(b)) return true;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  if (auto x = a.as_int()) return x == b.as_int();
  if (a.kind() == ExprKind::kVar) return false;  // distinct nodes are distinct variables
  if (const auto* ba = a.as<tir::BinaryNode>()) {
    const auto* bb = b.as<tir::BinaryNode>();
    return SameIndex(ba->a, bb->a) && SameIndex(ba->b, bb->b);
  }
  if (const auto* ca = a.as<tir::CastNode>()) return SameIndex(ca->value, b.as<tir::CastNode>()->value);
  return false;
}

bool SameIndices(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (!SameIndex(a[k], b[k])) return false;
  }
  return true;
}

// Integer arithmetic on scalars with the obvious constant cases folded, so that ramp
// strides stay literal (a stride of literal 1 is what makes an access contiguous).
PrimExpr Fold(ExprKind kind, const PrimExpr& a, const PrimExpr& b) {
  std::optional<int64_t> x = a.as_int(), y = b.as_int();
  if (x && y) {
    switch (kind) {
      case ExprKind::kAdd: return tir::IntImm(a.dtype(), *x + *y);
      case ExprKind::kSub: return tir::IntImm(a.dtype(), *x - *y);
      case ExprKind::kMul: return tir::IntImm(a.dtype(), *x * *y);
      default: break;
    }
  }
  if (kind == ExprKind::kAdd && x == 0) return b;
  if ((kind == ExprKind::kAdd || kind == ExprKind::kSub) && y == 0) return a;
  if (kind == ExprKind::kMul && x == 1) return b;
  if (kind == ExprKind::kMul && y == 1) return a;
  return tir::MakeBinary(kind, a, b);
}

// `e` as a scalar when it is one or a broadcast of one; undefined otherwise.
PrimExpr ScalarOf(const PrimExpr& e) {
  if (e.dtype().lanes() == 1) return e;
  if (const auto* b = e.as<tir::BroadcastNode>()) return b->value;
  return PrimExpr();
}

// Index arithmetic that keeps ramps ramps: ramp(b, s) + x = ramp(b + x, s),
// ramp(b, s) * x = ramp(b * x, s * x), ramp + ramp adds bases and strides.
std::optional<PrimExpr> RampArithmetic(ExprKind kind, const PrimExpr& a, const PrimExpr& b) {
  if (!a.dtype().element_of().is_integer()) return std::nullopt;
  const auto* ra = a.as<tir::RampNode>();
  const auto* rb = b.as<tir::RampNode>();
  PrimExpr sa = ScalarOf(a), sb = ScalarOf(b);
  switch (kind) {
    case ExprKind::kAdd:
      if (ra && sb.defined()) return tir::Ramp(Fold(kind, ra->base, sb), ra->stride, ra->lanes);
      if (sa.defined() && rb) return tir::Ramp(Fold(kind, sa, rb->base), rb->stride, rb->lanes);
      if (ra && rb) return tir::Ramp(Fold(kind, ra->base, rb->base), Fold(kind, ra->stride, rb->stride), ra->lanes);
      break;
    case ExprKind::kSub:
      if (ra && sb.defined()) return tir::Ramp(Fold(kind, ra->base, sb), ra->stride, ra->lanes);
      break;
    case ExprKind::kMul:
      if (ra && sb.defined()) return tir::Ramp(Fold(kind, ra->base, sb), Fold(kind, ra->stride, sb), ra->lanes);
      if (sa.defined() && rb) return tir::Ramp(Fold(kind, sa, rb->base), Fold(kind, sa, rb->stride), rb->lanes);
      break;
    default:
      break;
  }
  return std::nullopt;
}

class Vectorizer {
 public:
  Vectorizer(const tir::ForNode& loop, int lanes) : loop_(loop), lanes_(lanes) {}

  std::optional<Stmt> Run() {
    std::optional<Stmt> body = VisitStmt(loop_.body);
    if (!body || !ok_) return std::nullopt;
    // Every read of a written buffer must be at exactly the written indices.
    for (const auto& [buffer, loads] : loads_) {
      auto store = stores_.find(buffer);
      if (store == stores_.end()) continue;
      for (const auto* indices : loads) {
        for (const auto* written : store->second) {
          if (!SameIndices(*indices, *written)) return std::nullopt;
        }
      }
    }
    return body;
  }

 private:
  PrimExpr Widen(const PrimExpr& e) {
    if (e.dtype().lanes() == lanes_) return e;
    return tir::Broadcast(e, lanes_);
  }

  bool IsVector(const PrimExpr& e) const { return e.dtype().lanes() > 1; }

  PrimExpr Fail() {
    ok_ = false;
    return PrimExpr();
  }

  PrimExpr Visit(const PrimExpr& e) {
    if (!ok_) return e;
    if (e.dtype().lanes() != 1) return Fail();  // already vector code
    switch (e.kind()) {
      case ExprKind::kIntImm:
      case ExprKind::kFloatImm:
        return e;
      case ExprKind::kVar: {
        const auto* var = e.as<tir::VarNode>();
        if (var == loop_.loop_var.get()) return tir::Ramp(loop_.min, tir::IntImm(loop_.min.dtype(), 1), lanes_);
        auto it = lets_.find(var);
        return it != lets_.end() ? it->second : e;
      }
      case ExprKind::kNot: return tir::Not(Visit(e.as<tir::NotNode>()->a));
      case ExprKind::kBitNot: return tir::BitNot(Visit(e.as<tir::BitNotNode>()->a));
      case ExprKind::kReinterpret: {
        PrimExpr v = Visit(e.as<tir::ReinterpretNode>()->value);
        if (!ok_) return e;
        return tir::Reinterpret(e.dtype().with_lanes(v.dtype().lanes()), v);
      }
      case ExprKind::kSelect: {
        const auto* s = e.as<tir::SelectNode>();
        PrimExpr c = Visit(s->condition), t = Visit(s->true_value), f = Visit(s->false_value);
        if (!ok_) return e;
        if (!IsVector(c) && !IsVector(t) && !IsVector(f)) return tir::Select(c, t, f);
        return tir::Select(Widen(c), Widen(t), Widen(f));
      }
      case ExprKind::kCast: {
        PrimExpr v = Visit(e.as<tir::CastNode>()->value);
        if (!ok_) return e;
        return tir::Cast(e.dtype().with_lanes(v.dtype().lanes()), v);
      }
      case ExprKind::kCall: {
        const auto* call = e.as<tir::CallNode>();
        std::vector<PrimExpr> args;
        bool vector = false;
        for (const PrimExpr& a : call->args) {
          args.push_back(Visit(a));
          vector = vector || IsVector(args.back());
        }
        if (!ok_) return e;
        if (vector) {
          for (PrimExpr& a : args) a = Widen(a);
        }
        return tir::Call(call->op, std::move(args));
      }
      case ExprKind::kBufferLoad: {
        const auto* load = e.as<tir::BufferLoadNode>();
        std::vector<PrimExpr> indices = VisitIndices(load->indices);
        if (!ok_) return e;
        loads_[load->buffer.get()].push_back(&load->indices);
        return tir::Buffer(load->buffer).Load(std::move(indices));
      }
      case ExprKind::kLet: {
        const auto* let = e.as<tir::LetNode>();
        PrimExpr value = Visit(let->value);
        if (!ok_) return e;
        if (!IsVector(value)) {
          return tir::Let(tir::Var(let->var), value, Visit(let->body));
        }
        tir::Var wide(let->var->name, value.dtype());
        lets_[let->var.get()] = wide;
        PrimExpr body = Visit(let->body);
        lets_.erase(let->var.get());
        return tir::Let(wide, value, body);
      }
      case ExprKind::kRamp:
      case ExprKind::kBroadcast:
        return Fail();
      default: {
        const auto* bin = e.as<tir::BinaryNode>();
        if (bin == nullptr) return Fail();
        PrimExpr a = Visit(bin->a), b = Visit(bin->b);
        if (!ok_) return e;
        if (IsVector(a) || IsVector(b)) {
          if (std::optional<PrimExpr> ramp = RampArithmetic(e.kind(), a, b)) return *ramp;
          return tir::MakeBinary(e.kind(), Widen(a), Widen(b));
        }
        return tir::MakeBinary(e.kind(), a, b);
      }
    }
  }

  // Indices of a vector access: once any index is a vector, the last one must be one too
  // (an access's lanes are its last index's).
  std::vector<PrimExpr> VisitIndices(const std::vector<PrimExpr>& indices) {
    std::vector<PrimExpr> out;
    bool vector = false;
    for (const PrimExpr& idx : indices) {
      out.push_back(Visit(idx));
      vector = vector || IsVector(out.back());
    }
    if (vector && !out.empty()) out.back() = Widen(out.back());
    return out;
  }

  std::optional<Stmt> VisitStmt(const Stmt& s) {
    switch (s.kind()) {
      case tir::StmtKind::kBufferStore: {
        const auto* store = s.as<tir::BufferStoreNode>();
        std::vector<PrimExpr> indices = VisitIndices(store->indices);
        PrimExpr value = Visit(store->value);
        if (!ok_) return std::nullopt;
        // A store at indices that do not depend on v would be written by every lane.
        if (indices.empty() || !IsVector(indices.back())) return std::nullopt;
        stores_[store->buffer.get()].push_back(&store->indices);
        return tir::BufferStore(store->buffer, Widen(value), std::move(indices));
      }
      case tir::StmtKind::kSeqStmt: {
        std::vector<Stmt> seq;
        for (const Stmt& child : s.as<tir::SeqStmtNode>()->seq) {
          std::optional<Stmt> v = VisitStmt(child);
          if (!v) return std::nullopt;
          seq.push_back(*v);
        }
        return tir::SeqStmt(std::move(seq));
      }
      case tir::StmtKind::kLetStmt: {
        const auto* let = s.as<tir::LetStmtNode>();
        PrimExpr value = Visit(let->value);
        if (!ok_) return std::nullopt;
        if (!IsVector(value)) {
          std::optional<Stmt> body = VisitStmt(let->body);
          if (!body) return std::nullopt;
          return tir::LetStmt(let->var, value, *body);
        }
        tir::Var wide(let->var.name(), value.dtype());
        lets_[let->var.get()] = wide;
        std::optional<Stmt> body = VisitStmt(let->body);
        lets_.erase(let->var.get());
        if (!body) return std::nullopt;
        return tir::LetStmt(wide, value, *body);
      }
      case tir::StmtKind::kIfThenElse: {
        // Only a condition that is the same for every lane (it does not depend on v).
        const auto* op = s.as<tir::IfThenElseNode>();
        PrimExpr cond = Visit(op->condition);
        if (!ok_ || IsVector(cond)) return std::nullopt;
        std::optional<Stmt> then_case = VisitStmt(op->then_case);
        if (!then_case) return std::nullopt;
        if (!op->else_case.defined()) return tir::IfThenElse(cond, *then_case);
        std::optional<Stmt> else_case = VisitStmt(op->else_case);
        if (!else_case) return std::nullopt;
        return tir::IfThenElse(cond, *then_case, *else_case);
      }
      case tir::StmtKind::kBlock: {
        // The block dissolves: its iteration variables become their (possibly vector)
        // values, `init` runs under its scalar condition, a scalar predicate guards it.
        const auto* block = s.as<tir::BlockNode>();
        if (!block->alloc_buffers.empty()) return std::nullopt;
        std::vector<const tir::VarNode*> bound;
        PrimExpr first = PrimExpr();
        for (const tir::IterVar& iv : block->iter_vars) {
          PrimExpr value = Visit(iv.value);
          if (!ok_) return std::nullopt;
          if (value.dtype().element_of() != iv.var.dtype()) {
            value = tir::Cast(iv.var.dtype().with_lanes(value.dtype().lanes()), value);
          }
          if (iv.type == tir::IterType::kReduction) {
            if (IsVector(value)) return std::nullopt;  // a reduction across lanes
            PrimExpr is_first = tir::EQ(value, tir::IntImm(value.dtype(), 0));
            first = first.defined() ? tir::And(first, is_first) : is_first;
          }
          lets_[iv.var.get()] = value;
          bound.push_back(iv.var.get());
        }
        std::optional<Stmt> result = VisitStmt(block->body);
        if (result && block->init.defined()) {
          std::optional<Stmt> init = VisitStmt(block->init);
          if (!init) {
            result.reset();
          } else {
            result = tir::SeqStmt({first.defined() ? tir::IfThenElse(first, *init) : *init, *result});
          }
        }
        if (result && block->predicate.defined()) {
          PrimExpr predicate = Visit(block->predicate);
          if (!ok_ || IsVector(predicate)) {
            result.reset();
          } else {
            result = tir::IfThenElse(predicate, *result);
          }
        }
        for (const tir::VarNode* v : bound) lets_.erase(v);
        return result;
      }
      case tir::StmtKind::kEvaluate: {
        PrimExpr value = Visit(s.as<tir::EvaluateNode>()->value);
        if (!ok_) return std::nullopt;
        return tir::Evaluate(value);
      }
      default:
        return std::nullopt;
    }
  }

  const tir::ForNode& loop_;
  int lanes_;
  bool ok_ = true;
  std::map<const tir::VarNode*, PrimExpr> lets_;
  std::map<const tir::BufferNode*, std::vector<const std::vector<PrimExpr>*>> loads_;
  std::map<const tir::BufferNode*, std::vector<const std::vector<PrimExpr>*>> stores_;
};

}  // namespace

std::optional<tir::Stmt> VectorizeLoopBody(const tir::ForNode& loop) {
  std::optional<int64_t> extent = loop.extent.as_int();
  if (!extent || *extent < 2 || *extent > 64) return std::nullopt;
  if (!loop.loop_var.dtype().is_integer()) return std::nullopt;
  return Vectorizer(loop, static_cast<int>(*extent)).Run();
}

namespace {

class LoopVectorizer : public StmtExprMutator {
 public:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt visited = StmtExprMutator::VisitStmt_(op, self);
    const auto* loop = visited.as<ForNode>();
    if (loop == nullptr || loop->for_kind != ForKind::kVectorized) return visited;
    std::optional<Stmt> lanes = VectorizeLoopBody(*loop);
    return lanes ? *lanes : visited;
  }
};

}  // namespace

PrimFunc VectorizeLoops(const PrimFunc& func) { return LoopVectorizer().VisitPrimFunc(func); }

}  // namespace kiln::tir::transform
