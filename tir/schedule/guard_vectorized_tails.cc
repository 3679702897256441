// GuardVectorizedTails: vectorized loops in the form the CPU code generator turns into SIMD
// code directly — constant extent, straight-line body, no condition on the lane — with the
// lanes that may leave the domain handled by a serial copy.
#include <optional>
#include <set>

#include "tir/analyzer.h"
#include "tir/target.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule/tile_conditions.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

// A vectorized loop without the conditions on its lane in its blocks' predicates, and
// those conditions evaluated at the last lane; nullopt when a lane condition has a form
// other than `a < b` with `a` increasing with the lane.
struct LaneSplit {
  Stmt body;                    // the loop's body, lane conditions dropped
  std::vector<PrimExpr> guards; // all hold => every lane is in range
  // For each lane condition `lane + c < b`, b - c: the lanes below every one of these are
  // the lanes in range (the condition's `a` grows by exactly one per lane).
  std::vector<PrimExpr> lane_bounds;
};
std::optional<LaneSplit> SplitLaneConditions(const ForNode* loop) {
  std::optional<int64_t> lanes = loop->extent.as_int();
  const VarNode* v = loop->loop_var.get();
  Analyzer analyzer;
  LaneSplit out{loop->body, {}, {}};
  for (const Stmt& b : OutermostBlocks(loop->body)) {
    const auto* block = b.as<BlockNode>();
    if (!block->predicate.defined() || !UsesVar(block->predicate, v)) continue;
    std::vector<PrimExpr> conjuncts, keep;
    FlattenAnd(block->predicate, &conjuncts);
    for (const PrimExpr& c : conjuncts) {
      if (!UsesVar(c, v)) {
        keep.push_back(c);
        continue;
      }
      const auto* lt = c.as<BinaryNode>();
      if (c.kind() != ExprKind::kLT || UsesVar(lt->b, v) ||
          UsesVar(analyzer.Simplify(Sub(lt->a, loop->loop_var)), v)) {
        return std::nullopt;
      }
      PrimExpr last = analyzer.Simplify(loop->min + IntImm(loop->loop_var.dtype(), *lanes - 1));
      out.guards.push_back(analyzer.Simplify(Substitute(c, VarMap{{v, last}})));
      out.lane_bounds.push_back(analyzer.Simplify(Sub(lt->b, Sub(lt->a, loop->loop_var))));
    }
    PrimExpr predicate;
    for (const PrimExpr& c : keep) predicate = predicate.defined() ? And(predicate, c) : c;
    out.body = ReplaceStmt(out.body, b.get(),
                           Block(block->name, block->iter_vars, block->body, block->init, predicate,
                                 block->alloc_buffers));
  }
  return out;
}

// The edge tiles' copy: vectorized loops whose lanes may leave the domain run serially.
class LaneLoopSerializer : public StmtExprMutator {
 public:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* loop = s.as<ForNode>();
    if (loop->for_kind != ForKind::kVectorized || !loop->extent.as_int()) return s;
    std::optional<LaneSplit> split = SplitLaneConditions(loop);
    if (split && split->guards.empty()) return s;
    return For(loop->loop_var, loop->min, loop->extent, ForKind::kSerial, loop->body);
  }
};

class TailGuard : public StmtExprMutator {
 public:
  TailGuard(NameSet* used, bool native_masks) : used_(used), native_masks_(native_masks) {}
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* loop = s.as<ForNode>();
    if (loop->for_kind != ForKind::kVectorized || !loop->extent.as_int()) return s;
    std::optional<LaneSplit> split = SplitLaneConditions(loop);
    if (!split || split->guards.empty()) return s;  // other forms are left to the code generator
    Stmt vector_loop = For(loop->loop_var, loop->min, loop->extent, ForKind::kVectorized, split->body);
    return IfThenElse(AllOf(split->guards), vector_loop, Tail(loop, *split));
  }
  // A local tile buffer: guards for the whole tile, above the allocation, so the tile is
  // indexed only with constants and vector lanes (LLVM then keeps it in registers):
  //   if (every column lane in range) {
  //     if (every row in range) { no conditions } else { row conditions kept }
  //   } else { a copy with its own buffer, its vector loops serial }
  // Each copy defines its own variables and buffer.
  Stmt VisitStmt_(const AllocateNode* op, const Stmt& self) override {
    bool constant = op->buffer->scope == "local";
    for (const PrimExpr& d : op->buffer->shape) constant &= d.as_int().has_value();
    if (!constant) return StmtExprMutator::VisitStmt_(op, self);
    DefinedVars inner;
    inner.VisitStmt(op->body);
    TileConditionStripper lanes(inner.vars, /*lanes_only=*/true);
    Stmt lane_free = lanes.VisitStmt(op->body);
    TileConditionStripper all(inner.vars, /*lanes_only=*/false);
    Stmt condition_free = all.VisitStmt(op->body);
    if (!lanes.ok || !all.ok) return StmtExprMutator::VisitStmt_(op, self);
    std::vector<PrimExpr> other;  // the guards of `all` that `lanes` did not need
    std::set<std::string> lane_text;
    for (const PrimExpr& g : lanes.guards) lane_text.insert(ToString(g));
    for (const PrimExpr& g : all.guards) {
      if (!lane_text.count(ToString(g))) other.push_back(g);
    }
    if (lanes.guards.empty() && other.empty()) return StmtExprMutator::VisitStmt_(op, self);
    auto tile = [&](const Stmt& body, bool renew) {
      Stmt t = Allocate(op->buffer, VisitStmt(body));
      return renew ? CopyWithFreshDefinitions(t, "_edge", used_) : t;
    };
    Stmt full_columns = other.empty() ? tile(lane_free, false)
                                      : IfThenElse(AllOf(other), tile(condition_free, false), tile(lane_free, true));
    if (lanes.guards.empty()) return full_columns;
    Stmt edge = CopyWithFreshDefinitions(LaneLoopSerializer().VisitStmt(Allocate(op->buffer, VisitStmt(op->body))),
                                         "_edge", used_);
    return IfThenElse(AllOf(lanes.guards), full_columns, edge);
  }

 private:
  // The lanes in range run as a vectorized loop of symbolic extent, without the lane
  // conditions; the code generator hands such a loop to LLVM's vectorizer with its tail
  // folded into masked loads and stores, so the last, partial vector is one masked step
  // instead of a scalar loop over all the lanes testing each (an attention-score tile at
  // n = 300, 12 columns of a 32-column tile, ran 4x slower than at n = 288 with the scalar
  // tail). With a lane condition in a nested block, the tail is the serial copy instead;
  // so it is where the lanes update a local buffer in place (an accumulator tile) and the
  // target has no native masks (AVX2): a masked store there is not forwarded to the next
  // step's masked load, and the scores at n = 300 ran 1.5x slower than with the serial tail
  // on AVX2 code (vmaskmovps), 2.8x faster on AVX-512 code (measured on one Zen machine).
  Stmt Tail(const ForNode* loop, const LaneSplit& split) {
    bool nested_lane_condition = false;
    ForEachStmt(split.body, [&](const Stmt& st) {
      const auto* b = st.as<BlockNode>();
      nested_lane_condition |= b && b->predicate.defined() && UsesVar(b->predicate, loop->loop_var.get());
    });
    bool local_round_trip = false;
    BufferAccesses accesses = AccessesOf(split.body);
    for (const BufferNode* w : accesses.writes) local_round_trip |= w->scope == "local" && accesses.reads.count(w);
    if (nested_lane_condition || (local_round_trip && !native_masks_)) {
      return CopyWithFreshDefinitions(For(loop->loop_var, loop->min, loop->extent, ForKind::kSerial, loop->body),
                                      "_tail", used_);
    }
    const DataType t = loop->loop_var.dtype();
    PrimExpr bound = split.lane_bounds[0];
    for (size_t i = 1; i < split.lane_bounds.size(); ++i) bound = Min(bound, split.lane_bounds[i]);
    if (bound.dtype() != t) bound = Cast(t, bound);
    PrimExpr lanes = SimplifyExpr(Min(loop->extent, Max(IntImm(t, 0), Sub(bound, loop->min))));
    return CopyWithFreshDefinitions(For(loop->loop_var, loop->min, lanes, ForKind::kVectorized, split.body), "_tail",
                                    used_);
  }

  NameSet* used_;
  bool native_masks_;
};

}  // namespace

PrimFunc GuardVectorizedTails(const PrimFunc& func) {
  NameSet used = UsedNames(func);
  // Masked loads and stores are native instructions with 512-bit vectors (AVX-512); a
  // function without a target attribute is treated as AVX2.
  absl::StatusOr<std::optional<Target>> target = TargetOf(func);
  const bool native_masks = target.ok() && target->has_value() && (*target)->is_cpu() && (*target)->vector_bits >= 512;
  Stmt body = TailGuard(&used, native_masks).VisitStmt(func->body);
  return body.same_as(func->body) ? func : WithBody(func, body);
}

}  // namespace kiln::tir::schedule_primitive
