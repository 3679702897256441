// The CPU rule for window reductions (grouped and depthwise convolutions: each output sums a
// few inputs around its position): vectors along the output's last dim, the small reduction
// unrolled inside them, the rows in parallel.
#include <algorithm>

#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/cpu_rules.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::cpu_rules {

using namespace schedule_internal;  // NOLINT

namespace {

// Reductions of at most this many steps per output are unrolled whole (a 7 x 7 depthwise
// window, 4 channels x 3 x 3 of a ResNeXt group); longer ones unroll their inner loops up
// to it.
constexpr int64_t kMaxUnrolledSteps = 64;
constexpr int64_t kMaxEdgeUnrolledSteps = 8;
// Vectors of outputs per tile: independent sums, so that the adds of one do not wait for
// the previous add of the same vector (4 cycles each). Up to kMaxTileVectors when that
// covers the row or divides its vectors, else kTileVectors and a partial last tile.
constexpr int64_t kTileVectors = 4;
constexpr int64_t kMaxTileVectors = 8;

// A row of outputs in tiles of `vectors` vectors of `lanes` lanes.
struct RowTile {
  int64_t lanes;
  int64_t vectors;
};

// Narrower vectors (down to a quarter, at least 4 lanes) where they divide a constant row
// that full vectors do not: a row of 56 is 7 vectors of 8 lanes, each a plain vector,
// rather than 3.5 vectors of 16 whose last half vector runs masked on every row.
RowTile ChooseRowTile(std::optional<int64_t> width, int64_t vector_lanes) {
  if (!width) return {vector_lanes, kTileVectors};
  int64_t lanes = vector_lanes;
  for (int64_t l = vector_lanes; l >= 4 && 4 * l >= vector_lanes; l /= 2) {
    if (*width % l == 0) {
      lanes = l;
      break;
    }
  }
  const int64_t count = (*width + lanes - 1) / lanes;
  if (count <= kMaxTileVectors) return {lanes, count};
  for (int64_t t = kMaxTileVectors; t >= kTileVectors; --t) {
    if (count % t == 0) return {lanes, t};
  }
  return {lanes, kTileVectors};
}

// Whether `e` uses any of `vars`.
bool UsesAny(const PrimExpr& e, const std::vector<const VarNode*>& vars) {
  for (const VarNode* v : vars) {
    if (UsesVar(e, v)) return true;
  }
  return false;
}

// The reads of a window: every load that depends on `x` uses it in its last index only,
// and at least one of them there together with a reduction variable (x * stride + k * dil).
bool ReadsWindowAlong(const BlockNode* block, const VarNode* x, const std::vector<const VarNode*>& reduction) {
  class Loads : public StmtExprVisitor {
   public:
    Loads(const VarNode* x, const std::vector<const VarNode*>& reduction) : x_(x), reduction_(reduction) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      for (size_t i = 0; i < op->indices.size(); ++i) {
        if (!UsesVar(op->indices[i], x_)) continue;
        if (i + 1 != op->indices.size()) ok = false;
        if (UsesAny(op->indices[i], reduction_)) window = true;
      }
      StmtExprVisitor::VisitExpr_(op, self);
    }
    bool ok = true, window = false;

   private:
    const VarNode* x_;
    const std::vector<const VarNode*>& reduction_;
  } loads(x, reduction);
  loads.VisitStmt(block->body);
  return loads.ok && loads.window;
}

}  // namespace

bool IsWindowReduction(const PlainNest& nest) {
  const BlockNode* block = nest.block;
  const size_t n = nest.loops.size();
  if (!block->init.defined() || n < 2) return false;
  size_t spatial = 0;
  while (spatial < n && !IsReductionLoop(nest, spatial)) ++spatial;
  if (spatial == 0 || spatial == n) return false;
  std::vector<const VarNode*> reduction;
  for (size_t i = spatial; i < n; ++i) {
    if (!IsReductionLoop(nest, i) || !nest.loops[i]->extent.as_int()) return false;
    reduction.push_back(block->iter_vars[nest.iter_of_loop[i]].var.get());
  }
  const auto* store = block->body.as<BufferStoreNode>();
  const VarNode* x = block->iter_vars[nest.iter_of_loop[spatial - 1]].var.get();
  if (!store || store->indices.empty() || store->indices.back().get() != x) return false;
  for (size_t i = 0; i + 1 < store->indices.size(); ++i) {
    if (UsesVar(store->indices[i], x)) return false;
  }
  return ReadsWindowAlong(block, x, reduction);
}

absl::Status ScheduleWindowReduction(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& options) {
  if (options.vector_lanes < 2) return absl::FailedPreconditionError("cpu schedule: window reductions want vectors");
  const std::string& name = nest.block->name;
  size_t spatial = 0;
  while (!IsReductionLoop(nest, spatial)) ++spatial;
  std::vector<std::string> rows, reductions;
  for (size_t i = 0; i + 1 < spatial; ++i) rows.push_back(nest.loops[i]->loop_var.name());
  for (size_t i = spatial; i < nest.loops.size(); ++i) reductions.push_back(nest.loops[i]->loop_var.name());
  // The sums live in a local tile (registers once compacted), written back once per tile.
  KILN_ASSIGN_OR_RETURN(std::string write_back, s->CacheWrite(name));
  // The last dim in tiles (ChooseRowTile): x_0 (tiles), x_1 (vectors), x_2 (lanes); a
  // constant dim of at most one vector is one tile of one vector.
  const ForNode* x = nest.loops[spatial - 1];
  const std::optional<int64_t> width = x->extent.as_int();
  std::vector<std::string> order = rows;
  std::string tile_loop, vectors, vector;
  const RowTile tile = ChooseRowTile(width, options.vector_lanes);
  if (width && *width <= options.vector_lanes) {
    vector = x->loop_var.name();
  } else {
    std::vector<int64_t> factors = {-1, tile.lanes};
    if (tile.vectors > 1) factors = {-1, tile.vectors, tile.lanes};
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(x->loop_var.name(), factors));
    tile_loop = parts[0];
    order.push_back(tile_loop);
    if (tile.vectors > 1) vectors = parts[1];
    vector = parts.back();
  }
  order.insert(order.end(), reductions.begin(), reductions.end());
  if (!vectors.empty()) order.push_back(vectors);
  order.push_back(vector);
  KILN_RETURN_IF_ERROR(s->Reorder(order));
  std::string row_loop;
  KILN_RETURN_IF_ERROR(ParallelOver(s, rows, options, &row_loop));
  if (tile_loop.empty()) tile_loop = row_loop;
  if (tile_loop.empty()) return absl::FailedPreconditionError("cpu schedule: a window reduction without rows");
  KILN_RETURN_IF_ERROR(s->DecomposeReduction(name, reductions[0]).status());
  KILN_RETURN_IF_ERROR(s->Vectorize(vector));
  if (!vectors.empty()) KILN_RETURN_IF_ERROR(s->Unroll(vectors));
  // Unroll the reduction from the innermost loop out while the steps stay few. A row that
  // ends in a partial vector (or may: a symbolic width) gets an edge copy of the tile
  // (GuardVectorizedTails) whose partial vector is a masked loop of its own per step:
  // there only the innermost loop is unrolled (a 7 x 7 window unrolled whole made hundreds
  // of masked loops, and LLVM took a minute to compile them).
  const bool whole_vectors = width && (*width <= options.vector_lanes || *width % tile.lanes == 0);
  const int64_t max_steps = whole_vectors ? kMaxUnrolledSteps : kMaxEdgeUnrolledSteps;
  int64_t steps = 1;
  for (size_t i = nest.loops.size(); i-- > spatial;) {
    steps *= *nest.loops[i]->extent.as_int();
    if (steps > max_steps) break;
    KILN_RETURN_IF_ERROR(s->Unroll(nest.loops[i]->loop_var.name()));
  }
  KILN_RETURN_IF_ERROR(s->ReverseComputeAt(write_back, tile_loop));
  // The init and the write-back walk the tile like the update: vectors unrolled, lanes
  // vectorized (the init's loops are the update's; the write-back's one loop over the tile).
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> init_loops, s->GetLoops(name + "_init"));
  KILN_RETURN_IF_ERROR(s->Vectorize(init_loops.back()));
  if (!vectors.empty()) KILN_RETURN_IF_ERROR(s->Unroll(init_loops[init_loops.size() - 2]));
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> copy_loops, s->GetLoops(write_back));
  if (!vectors.empty()) {
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(copy_loops.back(), {-1, tile.lanes}));
    KILN_RETURN_IF_ERROR(s->Unroll(parts[0]));
    KILN_RETURN_IF_ERROR(s->Vectorize(parts[1]));
  } else {
    KILN_RETURN_IF_ERROR(s->Vectorize(copy_loops.back()));
  }
  return absl::OkStatus();
}

}  // namespace kiln::tir::cpu_rules
