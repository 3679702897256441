#include "tir/transform/cross_thread_arg_reduction.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/structural_equal.h"

namespace kiln::tir::transform {

namespace {

using schedule_internal::ReadsBuffer;
using schedule_internal::UsesAnyVar;

bool IsConstant(const PrimExpr& e) { return e.as<IntImmNode>() || e.as<FloatImmNode>(); }

// The two stores of a two-statement sequence, or {nullptr, nullptr}.
std::pair<const BufferStoreNode*, const BufferStoreNode*> TwoStores(const Stmt& s) {
  const auto* seq = s.as<SeqStmtNode>();
  if (!seq || seq->seq.size() != 2) return {nullptr, nullptr};
  const auto* a = seq->seq[0].as<BufferStoreNode>();
  const auto* b = seq->seq[1].as<BufferStoreNode>();
  if (!a || !b) return {nullptr, nullptr};
  return {a, b};
}

// `e` is the binary `kind` of two operands; nullptr otherwise.
const BinaryNode* As(const PrimExpr& e, ExprKind kind) {
  const auto* b = e.as<BinaryNode>();
  return b && b->kind() == kind ? b : nullptr;
}

// Whether `e` is a load of `store`'s buffer at its indices (the running value).
bool IsRunning(const PrimExpr& e, const BufferStoreNode* store) {
  const auto* load = e.as<BufferLoadNode>();
  return load && load->buffer.get() == store->buffer.get() && SameIndices(load->indices, store->indices);
}

// better(a, b) as the block writes it: a > b (argmax) or a < b, or'ed for floats with
// "a is NaN and b is not".
PrimExpr Better(const ArgReductionCombiner& c, const PrimExpr& a, const PrimExpr& b) {
  PrimExpr beats = c.is_max ? GT(a, b) : LT(a, b);
  if (c.nan_wins) beats = Or(beats, And(NE(a, a), EQ(b, b)));
  return beats;
}

// Whether (pa, va) replaces (pb, vb): pb holds nothing yet (-1), va is better, or the two
// values tie (neither is better) and pa comes first.
PrimExpr Replaces(const ArgReductionCombiner& c, const PrimExpr& pa, const PrimExpr& va, const PrimExpr& pb,
                  const PrimExpr& vb) {
  return Or(LT(pb, IntImm(pb.dtype(), 0)),
            Or(Better(c, va, vb), And(Not(Better(c, vb, va)), LT(pa, pb))));
}

}  // namespace

std::optional<ArgReductionCombiner> CrossThreadArgCombinerOf(const BlockNode* block) {
  if (!block->init.defined()) return std::nullopt;
  auto [init_index, init_value] = TwoStores(block->init);
  auto [index, value] = TwoStores(block->body);
  if (!init_index || !index) return std::nullopt;
  if (init_index->buffer.get() != index->buffer.get() || init_value->buffer.get() != value->buffer.get() ||
      index->buffer.get() == value->buffer.get()) {
    return std::nullopt;
  }
  if (!SameIndices(index->indices, value->indices) || !SameIndices(index->indices, init_index->indices) ||
      !SameIndices(index->indices, init_value->indices)) {
    return std::nullopt;
  }
  const DataType index_type = index->buffer->dtype;
  if (!index_type.is_int() || index_type.lanes() != 1 || value->buffer->dtype.lanes() != 1) return std::nullopt;
  if (!IsConstant(init_index->value) || !IsConstant(init_value->value)) return std::nullopt;
  const auto* select_index = index->value.as<SelectNode>();
  const auto* select_value = value->value.as<SelectNode>();
  if (!select_index || !select_value || !StructuralEqual(select_index->condition, select_value->condition) ||
      !IsRunning(select_index->false_value, index) || !IsRunning(select_value->false_value, value)) {
    return std::nullopt;
  }
  ArgReductionCombiner c;
  c.index = index->buffer;
  c.value = value->buffer;
  c.index_init = init_index->value;
  c.value_init = init_value->value;
  c.position = select_index->true_value;
  c.element = select_value->true_value;
  c.indices = index->indices;
  if (c.position.dtype() != index_type) return std::nullopt;
  // take = p == 0 || better(x, V[s])
  const BinaryNode* take = As(select_index->condition, ExprKind::kOr);
  const BinaryNode* first = take ? As(take->a, ExprKind::kEQ) : nullptr;
  if (!first || !StructuralEqual(first->a, c.position) || first->b.as_int() != 0) return std::nullopt;
  // better: x > V[s] or x < V[s], for floats or'ed with (x != x && V[s] == V[s]).
  auto comparison = [&](const PrimExpr& e) -> std::optional<bool> {
    const auto* b = e.as<BinaryNode>();
    if (!b || (b->kind() != ExprKind::kGT && b->kind() != ExprKind::kLT)) return std::nullopt;
    if (!StructuralEqual(b->a, c.element) || !IsRunning(b->b, value)) return std::nullopt;
    return b->kind() == ExprKind::kGT;
  };
  std::optional<bool> is_max = comparison(take->b);
  if (!is_max) {
    const BinaryNode* either = As(take->b, ExprKind::kOr);
    const BinaryNode* nan = either ? As(either->b, ExprKind::kAnd) : nullptr;
    const BinaryNode* x_nan = nan ? As(nan->a, ExprKind::kNE) : nullptr;
    const BinaryNode* v_number = nan ? As(nan->b, ExprKind::kEQ) : nullptr;
    if (!x_nan || !v_number || !StructuralEqual(x_nan->a, c.element) || !StructuralEqual(x_nan->b, c.element) ||
        !IsRunning(v_number->a, value) || !IsRunning(v_number->b, value)) {
      return std::nullopt;
    }
    is_max = comparison(either->a);
    if (!is_max) return std::nullopt;
    c.nan_wins = true;
  }
  c.is_max = *is_max;
  // Without the NaN clause a float NaN would tie with everything (lowest position wins),
  // which is not what the serial loop gives.
  if (c.element.dtype().is_float() && !c.nan_wins) return std::nullopt;
  if (ReadsBuffer(c.position, c.index.get()) || ReadsBuffer(c.position, c.value.get()) ||
      ReadsBuffer(c.element, c.index.get()) || ReadsBuffer(c.element, c.value.get())) {
    return std::nullopt;
  }
  // One result per row: the output index uses spatial variables only.
  std::vector<const VarNode*> reduction_vars;
  for (const IterVar& iv : block->iter_vars) {
    if (iv.type == IterType::kReduction) reduction_vars.push_back(iv.var.get());
  }
  for (const PrimExpr& i : c.indices) {
    if (UsesAnyVar(i, reduction_vars)) return std::nullopt;
  }
  return c;
}

ThreadPartials ArgReductionPartials(const ArgReductionCombiner& c, DataType index_type, int64_t threads) {
  auto Index = [index_type](int64_t v) { return IntImm(index_type, v); };
  const DataType position_type = c.index->dtype;
  const DataType value_type = c.value->dtype;
  const std::string& name = c.index->name;
  ThreadPartials p;
  Buffer partial_position(absl::StrCat(name, "_partial_position"), position_type, {Index(1)}, {}, "local");
  Buffer partial_value(absl::StrCat(name, "_partial_value"), value_type, {Index(1)}, {}, "local");
  Buffer slot_position(absl::StrCat(name, "_combine_position"), position_type, {Index(threads)}, {}, "shared");
  Buffer slot_value(absl::StrCat(name, "_combine_value"), value_type, {Index(threads)}, {}, "shared");
  p.partials = {partial_position, partial_value};
  p.slots = {slot_position, slot_value};
  const PrimExpr empty = IntImm(position_type, -1);
  p.init = SeqStmt({BufferStore(partial_position, empty, {Index(0)}), BufferStore(partial_value, c.value_init, {Index(0)})});
  // The element is read once (a fused expression may be costly), then compared.
  Var x(absl::StrCat(c.value->name, "_element"), c.element.dtype());
  const PrimExpr held_position = partial_position.Load({Index(0)});
  const PrimExpr held_value = partial_value.Load({Index(0)});
  p.accumulate = LetStmt(
      x, c.element,
      IfThenElse(Replaces(c, c.position, x, held_position, held_value),
                 SeqStmt({BufferStore(partial_position, c.position, {Index(0)}),
                          BufferStore(partial_value, x, {Index(0)})})));
  p.merge = [c, slot_position, slot_value](const PrimExpr& into, const PrimExpr& from) {
    const PrimExpr pa = slot_position.Load({from}), va = slot_value.Load({from});
    const PrimExpr pb = slot_position.Load({into}), vb = slot_value.Load({into});
    // A thread that saw nothing (-1) never replaces.
    PrimExpr take = And(GE(pa, IntImm(pa.dtype(), 0)), Replaces(c, pa, va, pb, vb));
    return IfThenElse(take, SeqStmt({BufferStore(slot_position, pa, {into}), BufferStore(slot_value, va, {into})}));
  };
  p.write = [c, slot_position, slot_value](const VarMap& spatial, const PrimExpr& first) {
    std::vector<PrimExpr> indices;
    for (const PrimExpr& i : c.indices) indices.push_back(Substitute(i, spatial));
    const PrimExpr position = slot_position.Load({first});
    // An empty row: nothing was seen; the serial loop leaves the init values.
    const PrimExpr none = LT(position, IntImm(position.dtype(), 0));
    return SeqStmt({BufferStore(c.index, Select(none, c.index_init, position), indices),
                    BufferStore(c.value, Select(none, c.value_init, slot_value.Load({first})), indices)});
  };
  return p;
}

}  // namespace kiln::tir::transform
