#include "tir/transform/narrow_gpu_indices.h"

#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tir/const_int_bound.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::transform {
namespace {

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

bool IsInt64Scalar(DataType t) { return t == DataType::Int64(); }
bool FitsInt32(const IntBound& b) { return b.min >= kInt32Min && b.max <= kInt32Max; }

// The rewrite. Try32 gives the int32 form of an int64 expression when every int64 value
// on the way fits; VisitExpr (every other place) keeps each expression's type, widening a
// narrowed int64 subexpression back with a cast, so a use that needs 64 bits still gets them.
class IndexNarrower : public StmtExprMutator {
 public:
  // int64 scalar parameters: `bounds` holds what the kernel may assume of each.
  explicit IndexNarrower(VarBoundMap bounds) : bounds_(std::move(bounds)) {}

  // Declares the int32 copy of an int64 parameter whose bound fits (nullopt otherwise).
  std::optional<Var> NarrowParam(const Var& param) {
    if (!IsInt64Scalar(param.dtype()) || !FitsInt32(VarBound(*param.get(), bounds_))) return std::nullopt;
    Var narrow(param.name() + "_i32", DataType::Int32(), param->lower_bound, param->upper_bound);
    narrowed_[param.get()] = narrow;
    return narrow;
  }

  bool all_loops_narrowed() const { return all_loops_narrowed_; }

  PrimExpr VisitExpr(const PrimExpr& e) override {
    // Literals and variables without an int32 form are left as they are (no cast pair).
    if (e.defined() && IsInt64Scalar(e.dtype()) && e.kind() != ExprKind::kIntImm &&
        (e.kind() != ExprKind::kVar || narrowed_.count(e.as<VarNode>()) > 0)) {
      if (std::optional<PrimExpr> narrow = Try32(e)) return Cast(DataType::Int64(), *narrow);
    }
    return StmtExprMutator::VisitExpr(e);
  }

  PrimExpr VisitExpr_(const BinaryNode* op, const PrimExpr& self) override {
    if (IsComparison(op->kind()) && IsInt64Scalar(op->a.dtype())) {
      std::optional<PrimExpr> a = Try32(op->a), b = Try32(op->b);
      if (a && b) return MakeBinary(op->kind(), *a, *b);
    }
    return StmtExprMutator::VisitExpr_(op, self);
  }

  PrimExpr VisitExpr_(const CastNode* op, const PrimExpr& self) override {
    // int64 -> float or narrower int: the same value from the int32 form.
    if (IsInt64Scalar(op->value.dtype()) && !IsInt64Scalar(op->dtype()) && !op->dtype().is_bool() &&
        (op->dtype().is_float() || ((op->dtype().is_int() || op->dtype().is_uint()) && op->dtype().bits() <= 32))) {
      if (std::optional<PrimExpr> narrow = Try32(op->value)) {
        return op->dtype() == DataType::Int32() ? *narrow : Cast(op->dtype(), *narrow);
      }
    }
    return StmtExprMutator::VisitExpr_(op, self);
  }

  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    bool changed = false;
    std::vector<PrimExpr> indices = Indices(op->indices, &changed);
    if (!changed) return self;
    return PrimExpr(std::make_shared<BufferLoadNode>(op->dtype(), op->buffer, std::move(indices)));
  }

  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    bool changed = false;
    std::vector<PrimExpr> indices = Indices(op->indices, &changed);
    PrimExpr value = VisitExpr(op->value);
    if (!changed && value.same_as(op->value)) return self;
    return BufferStore(op->buffer, std::move(value), std::move(indices));
  }

  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (!IsInt64Scalar(op->loop_var.dtype())) return StmtExprMutator::VisitStmt_(op, self);
    const IntBound min = ComputeConstIntBound(op->min, bounds_);
    const IntBound extent = ComputeConstIntBound(op->extent, bounds_);
    std::optional<PrimExpr> min32 = Try32(op->min), extent32 = Try32(op->extent);
    // The loop's end (min + extent) is computed too: it must fit as well.
    const IntBound end = BoundAdd(min, extent);
    if (!min32 || !extent32 || !FitsInt32(end)) {
      all_loops_narrowed_ = false;
      bounds_[op->loop_var.get()] = MakeBound(min.min, BoundAdd(end, MakeBound(-1, -1)).max);
      return StmtExprMutator::VisitStmt_(op, self);
    }
    Var loop_var(op->loop_var.name(), DataType::Int32());
    bounds_[op->loop_var.get()] = MakeBound(min.min, std::max(min.min, end.max - 1));
    narrowed_[op->loop_var.get()] = loop_var;
    Stmt body = VisitStmt(op->body);
    return For(loop_var, *min32, *extent32, op->for_kind, std::move(body), op->thread_tag);
  }

  Stmt VisitStmt_(const LetStmtNode* op, const Stmt& self) override {
    if (IsInt64Scalar(op->var.dtype())) {
      if (std::optional<PrimExpr> value = Try32(op->value)) {
        Var var(op->var.name(), DataType::Int32());
        bounds_[op->var.get()] = ComputeConstIntBound(op->value, bounds_);
        narrowed_[op->var.get()] = var;
        return LetStmt(var, *value, VisitStmt(op->body));
      }
    }
    return StmtExprMutator::VisitStmt_(op, self);
  }

  // Buffers keep their int64 shapes: they are declarations, not arithmetic the kernel runs.
  Buffer VisitBuffer(const Buffer& buffer) override { return buffer; }

 private:
  std::vector<PrimExpr> Indices(const std::vector<PrimExpr>& indices, bool* changed) {
    std::vector<PrimExpr> out;
    out.reserve(indices.size());
    for (const PrimExpr& i : indices) {
      std::optional<PrimExpr> narrow = IsInt64Scalar(i.dtype()) ? Try32(i) : std::nullopt;
      out.push_back(narrow ? *narrow : VisitExpr(i));
      *changed |= !out.back().same_as(i);
    }
    return out;
  }

  // The int32 form of the int64 scalar `e`, or nullopt when some int64 value on the way
  // may not fit in int32 (or `e` is something this pass does not narrow: a load, a call).
  std::optional<PrimExpr> Try32(const PrimExpr& e) {
    if (!IsInt64Scalar(e.dtype())) return std::nullopt;
    if (!FitsInt32(ComputeConstIntBound(e, bounds_))) return std::nullopt;
    switch (e.kind()) {
      case ExprKind::kIntImm: return IntImm(DataType::Int32(), *e.as_int());
      case ExprKind::kVar: {
        const auto* v = e.as<VarNode>();
        if (auto it = narrowed_.find(v); it != narrowed_.end()) return it->second;
        // A variable of the kernel's own (an unbounded let, say) whose bound still fits.
        return Cast(DataType::Int32(), StmtExprMutator::VisitExpr_(v, e));
      }
      case ExprKind::kCast: {
        const PrimExpr& value = e.as<CastNode>()->value;
        if (IsInt64Scalar(value.dtype())) return Try32(value);
        const DataType t = value.dtype();
        if (t == DataType::Int32()) return VisitExpr(value);
        if (t.lanes() == 1 && !t.is_bool() && (t.is_int() || t.is_uint()) && t.bits() < 32) {
          return Cast(DataType::Int32(), VisitExpr(value));
        }
        return std::nullopt;  // a float, bool or uint32 / uint64 source: left as written
      }
      case ExprKind::kSelect: {
        const auto* s = e.as<SelectNode>();
        std::optional<PrimExpr> t = Try32(s->true_value), f = Try32(s->false_value);
        if (!t || !f) return std::nullopt;
        return Select(VisitExpr(s->condition), *t, *f);
      }
      case ExprKind::kAdd:
      case ExprKind::kSub:
      case ExprKind::kMul:
      case ExprKind::kDiv:
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod:
      case ExprKind::kMin:
      case ExprKind::kMax:
      case ExprKind::kBitAnd:
      case ExprKind::kBitOr:
      case ExprKind::kBitXor: {
        // Shifts are left out: their out-of-range amounts depend on the width.
        const auto* b = e.as<BinaryNode>();
        std::optional<PrimExpr> x = Try32(b->a), y = Try32(b->b);
        if (!x || !y) return std::nullopt;
        return MakeBinary(e.kind(), *x, *y);
      }
      default: return std::nullopt;
    }
  }

  VarBoundMap bounds_;
  std::unordered_map<const VarNode*, Var> narrowed_;
  bool all_loops_narrowed_ = true;
};

// The host's launch of kernel `k` -> `if (checks) launch k32 else launch k`.
class GuardLaunch : public StmtExprMutator {
 public:
  GuardLaunch(int64_t kernel, int64_t narrow_kernel, std::map<size_t, int64_t> caps)
      : kernel_(kernel), narrow_kernel_(narrow_kernel), caps_(std::move(caps)) {}

  Stmt VisitStmt_(const EvaluateNode* op, const Stmt& self) override {
    const auto* call = op->value.as<CallNode>();
    if (!call || call->op != "launch_kernel" || call->args.empty() || call->args[0].as_int() != kernel_) return self;
    // launch_kernel(k, grid xyz, block xyz, shared bytes, args...): the kernel's parameter i
    // is argument 8 + i.
    constexpr size_t kFirstArg = 8;
    PrimExpr fits;
    for (const auto& [param, cap] : caps_) {
      const PrimExpr& arg = call->args[kFirstArg + param];
      PrimExpr check = LE(arg, IntImm(arg.dtype(), cap));
      fits = fits.defined() ? And(fits, check) : check;
    }
    std::vector<PrimExpr> args = call->args;
    args[0] = IntImm(args[0].dtype(), narrow_kernel_);
    return IfThenElse(fits, Evaluate(Call("launch_kernel", std::move(args))), self);
  }

 private:
  int64_t kernel_;
  int64_t narrow_kernel_;
  std::map<size_t, int64_t> caps_;
};

}  // namespace

NarrowedKernel NarrowGpuIndices(const PrimFunc& kernel, const std::map<size_t, int64_t>& caps) {
  VarBoundMap bounds;
  for (const auto& [index, cap] : caps) {
    const Var& p = kernel->params[index].var;
    bounds[p.get()] = MakeBound(p->lower_bound.value_or(IntBound::kNegInf), cap);
  }
  IndexNarrower narrower(std::move(bounds));
  std::vector<std::pair<Var, Var>> copies;  // int64 parameter, its int32 copy
  for (const PrimFuncParam& p : kernel->params) {
    if (p.is_buffer()) continue;
    if (std::optional<Var> narrow = narrower.NarrowParam(p.var)) copies.emplace_back(p.var, *narrow);
  }
  Stmt body = narrower.VisitStmt(kernel->body);
  for (auto it = copies.rbegin(); it != copies.rend(); ++it) {
    body = LetStmt(it->second, Cast(DataType::Int32(), it->first), body);
  }
  NarrowedKernel out;
  out.kernel = PrimFunc(kernel->params, body, kernel->attrs);
  out.all_loops_narrowed = narrower.all_loops_narrowed();
  return out;
}

void NarrowSplitIndices(SplitResult* split) {
  const size_t count = split->device_kernels.size();
  for (size_t k = 0; k < count; ++k) {
    const PrimFunc kernel = split->device_kernels[k];
    NarrowedKernel plain = NarrowGpuIndices(kernel);
    split->device_kernels[k] = plain.kernel;
    if (plain.all_loops_narrowed) continue;
    // Shape parameters (lower bound 0) whose declared bound leaves int32: try caps the host
    // can check.
    std::vector<size_t> open;
    for (size_t i = 0; i < kernel->params.size(); ++i) {
      const Var& v = kernel->params[i].var;
      if (!v.defined() || !IsInt64Scalar(v.dtype()) || !v->lower_bound || *v->lower_bound < 0) continue;
      if (!v->upper_bound || *v->upper_bound > kInt32Max) open.push_back(i);
    }
    if (open.empty()) continue;
    for (int64_t cap : {kInt32Max, int64_t{1} << 24, int64_t{1} << 20, int64_t{1} << 16}) {
      std::map<size_t, int64_t> caps;
      for (size_t i : open) caps[i] = cap;
      NarrowedKernel variant = NarrowGpuIndices(kernel, caps);
      if (!variant.all_loops_narrowed) continue;
      const int64_t index = static_cast<int64_t>(split->device_kernels.size());
      split->device_kernels.push_back(variant.kernel);
      GuardLaunch guard(static_cast<int64_t>(k), index, caps);
      split->host = guard.VisitPrimFunc(split->host);
      break;
    }
  }
}

}  // namespace kiln::tir::transform
