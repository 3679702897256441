#include "tir/transform/flatten_buffers.h"

#include <algorithm>
#include <unordered_map>

#include "tir/analyzer.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::transform {
namespace {

PrimExpr I64(int64_t v) { return PrimExpr(v); }

// An integer index or extent as int64 (with its lanes); anything else is left for the
// emitter to refuse.
PrimExpr ToI64(const PrimExpr& e) {
  DataType t = DataType::Int64().with_lanes(e.dtype().lanes());
  return e.dtype() == t || !e.dtype().element_of().is_integer() ? e : Cast(t, e);
}

PrimExpr Widen(const PrimExpr& e, int lanes) {
  if (lanes == 1 || e.dtype().lanes() == lanes) return e;
  return Broadcast(e, lanes);
}

// a * b and a + b with literal operands folded, so constant shapes give constant spans.
PrimExpr MulFold(const PrimExpr& a, const PrimExpr& b) {
  std::optional<int64_t> x = a.as_int(), y = b.as_int();
  if (x && y) return I64(*x * *y);
  if (x == 1) return b;
  if (y == 1) return a;
  return Mul(a, b);
}
PrimExpr AddFold(const PrimExpr& a, const PrimExpr& b) {
  std::optional<int64_t> x = a.as_int(), y = b.as_int();
  if (x && y) return I64(*x + *y);
  if (x == 0) return b;
  if (y == 0) return a;
  return Add(a, b);
}

// The base of a last index that touches consecutive elements: ramp(b, 1, L), or
// broadcast(x) + ramp(b, 1, L) in either order (x + b).
PrimExpr ContiguousBase(const PrimExpr& index) {
  auto unit_ramp = [](const PrimExpr& e) -> const RampNode* {
    const auto* ramp = e.as<RampNode>();
    return ramp != nullptr && ramp->stride.as_int() == 1 ? ramp : nullptr;
  };
  if (const RampNode* ramp = unit_ramp(index)) return ramp->base;
  if (const auto* add = index.as<BinaryNode>(); add != nullptr && add->kind() == ExprKind::kAdd) {
    const auto* bx = add->a.as<BroadcastNode>();
    const auto* by = add->b.as<BroadcastNode>();
    if (bx != nullptr && unit_ramp(add->b) != nullptr) return Add(bx->value, unit_ramp(add->b)->base);
    if (by != nullptr && unit_ramp(add->a) != nullptr) return Add(unit_ramp(add->a)->base, by->value);
  }
  return PrimExpr();
}

class Flattener : public StmtExprMutator {
 public:
  Buffer VisitBuffer(const Buffer& buffer) override {
    auto it = flat_.find(buffer.get());
    if (it != flat_.end()) return it->second;
    Buffer flat = buffer;
    if (buffer.ndim() != 1 || !buffer->strides.empty()) {
      flat = Buffer(buffer->name, buffer->dtype, {Span(buffer)}, {}, buffer->scope);
    }
    flat_.emplace(buffer.get(), flat);
    return flat;
  }

  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    Buffer buffer(op->buffer);
    Buffer flat = VisitBuffer(buffer);
    bool changed = false;
    std::vector<PrimExpr> indices = VisitExprs(op->indices, &changed);
    PrimExpr offset = Offset(buffer, indices);
    if (flat.same_as(buffer) && indices.size() == 1 && offset.same_as(op->indices[0])) return self;
    return flat.Load({offset});
  }

  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    Buffer flat = VisitBuffer(op->buffer);
    PrimExpr value = VisitExpr(op->value);
    bool changed = false;
    std::vector<PrimExpr> indices = VisitExprs(op->indices, &changed);
    PrimExpr offset = Offset(op->buffer, indices);
    if (flat.same_as(op->buffer) && value.same_as(op->value) && indices.size() == 1 &&
        offset.same_as(op->indices[0])) {
      return self;
    }
    return BufferStore(flat, value, {offset});
  }

 private:
  static PrimExpr Span(const Buffer& buffer) {
    if (buffer->strides.empty()) {
      PrimExpr span = I64(1);
      for (const PrimExpr& dim : buffer->shape) span = MulFold(span, ToI64(dim));
      return span;
    }
    PrimExpr span = I64(1);
    for (int d = 0; d < buffer.ndim(); ++d) {
      PrimExpr dim = ToI64(buffer->shape[d]);
      PrimExpr extent = dim.as_int() ? I64(*dim.as_int() - 1) : Sub(dim, I64(1));
      span = AddFold(span, MulFold(extent, ToI64(buffer->strides[d])));
    }
    return span;
  }

  // The element offset of `indices` (already mutated) in `buffer` (the original shape).
  static PrimExpr Offset(const Buffer& buffer, const std::vector<PrimExpr>& indices) {
    if (indices.empty()) return I64(0);
    int lanes = 1;
    for (const PrimExpr& idx : indices) lanes = std::max(lanes, idx.dtype().lanes());
    if (lanes > 1) {
      bool scalar_prefix = std::all_of(indices.begin(), indices.end() - 1,
                                       [](const PrimExpr& e) { return e.dtype().lanes() == 1; });
      PrimExpr base = scalar_prefix ? ContiguousBase(indices.back()) : PrimExpr();
      if (base.defined()) {
        std::vector<PrimExpr> scalar(indices.begin(), indices.end() - 1);
        scalar.push_back(base);
        return Ramp(Offset(buffer, scalar), I64(1), lanes);
      }
    }
    PrimExpr offset;
    for (size_t k = 0; k < indices.size(); ++k) {
      PrimExpr idx = Widen(ToI64(indices[k]), lanes);
      if (!buffer->strides.empty()) {
        PrimExpr term = Mul(idx, Widen(ToI64(buffer->strides[k]), lanes));
        offset = offset.defined() ? Add(offset, term) : term;
      } else if (!offset.defined()) {
        offset = idx;
      } else {
        offset = Add(Mul(offset, Widen(ToI64(buffer->shape[k]), lanes)), idx);
      }
    }
    if (lanes > 1) return offset;
    // A scalar offset in its canonical linear form (a sum of coefficient * variable): the
    // row-major nesting ((6 * i + r) * 256 + ...) reached LLVM as a different expression
    // for each row r of an unrolled register tile (6 * i * 256 folded to i * 1536 for r = 0,
    // (6 * i | 1) << 8 for r = 1), so alias analysis could not tell the tile's rows apart
    // and kept the accumulators of a k-blocked matmul tile in memory, loaded and stored at
    // every k step. As 1536 * i + 256 * r + ..., the rows differ by constants.
    Analyzer analyzer;
    return analyzer.Simplify(offset);
  }

  std::unordered_map<const BufferNode*, Buffer> flat_;
};

}  // namespace

PrimFunc FlattenBuffers(const PrimFunc& func) { return Flattener().VisitPrimFunc(func); }

}  // namespace kiln::tir::transform
