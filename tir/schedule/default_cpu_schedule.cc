#include "tir/schedule/default_cpu_schedule.h"

#include <algorithm>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/analyzer.h"
#include "tir/schedule/row_reduction.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"
#include "tir/structural_equal.h"

namespace kiln::tir {

namespace {

using namespace schedule_internal;  // NOLINT

// A block alone in a chain of serial loops from 0, each binding one iteration variable.
struct PlainNest {
  const BlockNode* block = nullptr;
  std::vector<const ForNode*> loops;  // outermost first
  std::vector<int> iter_of_loop;      // the iteration variable each loop binds
};

std::optional<PlainNest> FindPlainNest(const PrimFunc& func, const std::string& name) {
  absl::StatusOr<Stmt> b = FindBlock(func, name, "");
  if (!b.ok()) return std::nullopt;
  PlainNest nest;
  nest.block = b->as<BlockNode>();
  if (nest.block->predicate.defined()) return std::nullopt;
  std::vector<Stmt> loops = LoopsAbove(func->body, nest.block);
  for (size_t i = 0; i < loops.size(); ++i) {
    const auto* l = loops[i].as<ForNode>();
    const StmtNode* inner = i + 1 < loops.size() ? loops[i + 1].get() : nest.block;
    if (l->body.get() != inner || l->for_kind != ForKind::kSerial || l->min.as_int() != 0) return std::nullopt;
    int bound = -1;
    for (size_t k = 0; k < nest.block->iter_vars.size(); ++k) {
      const IterVar& iv = nest.block->iter_vars[k];
      if (iv.value.get() == l->loop_var.get()) {
        if (bound >= 0) return std::nullopt;
        bound = static_cast<int>(k);
      } else if (UsesVar(iv.value, l->loop_var.get())) {
        return std::nullopt;
      }
    }
    if (bound < 0) return std::nullopt;
    nest.loops.push_back(l);
    nest.iter_of_loop.push_back(bound);
  }
  return nest;
}

// Whether every store the block makes to memory that outlives it indexes with every spatial
// iteration variable its loops bind: then different spatial iterations write different
// elements, and running them in parallel or as vector lanes cannot race.
bool WritesFollowSpatialVars(const PlainNest& nest) {
  std::vector<const VarNode*> spatial;
  for (int k : nest.iter_of_loop) {
    const IterVar& iv = nest.block->iter_vars[k];
    if (iv.type == IterType::kSpatial) spatial.push_back(iv.var.get());
  }
  class Stores : public StmtExprVisitor {
   public:
    explicit Stores(std::vector<const VarNode*> spatial) : spatial_(std::move(spatial)) {}
    void VisitStmt_(const BlockNode* op, const Stmt& self) override {
      for (const Buffer& b : op->alloc_buffers) local_.push_back(b.get());
      StmtExprVisitor::VisitStmt_(op, self);
    }
    void VisitStmt_(const AllocateNode* op, const Stmt& self) override {
      local_.push_back(op->buffer.get());
      StmtExprVisitor::VisitStmt_(op, self);
    }
    void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
      if (std::find(local_.begin(), local_.end(), op->buffer.get()) == local_.end()) {
        for (const VarNode* v : spatial_) {
          bool used = false;
          for (const PrimExpr& i : op->indices) used |= UsesVar(i, v);
          ok &= used;
        }
      }
      StmtExprVisitor::VisitStmt_(op, self);
    }
    bool ok = true;

   private:
    std::vector<const VarNode*> spatial_;
    std::vector<const BufferNode*> local_;
  } stores(spatial);
  stores.VisitStmt_(nest.block, Stmt());  // its own allocations count as local
  return stores.ok;
}

bool IsReductionLoop(const PlainNest& nest, size_t i) {
  return nest.block->iter_vars[nest.iter_of_loop[i]].type == IterType::kReduction;
}

// Splits `loop` so its inner part has `lanes` iterations (or keeps a short constant loop
// whole) and vectorizes that part. Returns the outer loop's name, or "" when there is none.
absl::StatusOr<std::string> VectorizeInner(Schedule* s, const std::string& loop, int64_t extent_or_zero, int lanes) {
  if (lanes < 2 || extent_or_zero == 1) return std::string();
  if (extent_or_zero >= 2 && extent_or_zero <= lanes) {
    KILN_RETURN_IF_ERROR(s->Vectorize(loop));
    return std::string();
  }
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(loop, {-1, lanes}));
  KILN_RETURN_IF_ERROR(s->Vectorize(parts[1]));
  return parts[0];
}

absl::Status ParallelOver(Schedule* s, const std::vector<std::string>& loops, const CpuScheduleOptions& options,
                          std::string* innermost = nullptr) {
  if (innermost) *innermost = loops.empty() ? std::string() : loops.back();
  if (loops.empty() || options.num_threads <= 1) return absl::OkStatus();
  std::string loop = loops[0];
  if (loops.size() > 1) {
    KILN_ASSIGN_OR_RETURN(loop, s->Fuse(loops));
  }
  if (innermost) *innermost = loop;
  return s->Parallel(loop);
}

absl::Status ScheduleInjective(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& options) {
  std::vector<std::string> outer;
  for (size_t i = 0; i + 1 < nest.loops.size(); ++i) outer.push_back(nest.loops[i]->loop_var.name());
  const ForNode* inner = nest.loops.back();
  bool has_inner_blocks = !OutermostBlocks(nest.block->body).empty();
  if (has_inner_blocks) {  // the children get their own rules; run the whole nest in parallel
    outer.push_back(inner->loop_var.name());
    return ParallelOver(s, outer, options);
  }
  KILN_ASSIGN_OR_RETURN(std::string split_outer, VectorizeInner(s, inner->loop_var.name(),
                                                                inner->extent.as_int().value_or(0),
                                                                options.vector_lanes));
  if (outer.empty() && !split_outer.empty()) outer.push_back(split_outer);
  return ParallelOver(s, outer, options);
}

// The innermost reduction loop, over contiguous elements, runs as vector lanes of partial
// results (rfactor) when it can; the spatial loops outside the reduction run in parallel.
absl::Status ScheduleReduction(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& options) {
  std::vector<std::string> spatial;
  for (size_t i = 0; i < nest.loops.size() && !IsReductionLoop(nest, i); ++i) {
    spatial.push_back(nest.loops[i]->loop_var.name());
  }
  VectorizeRowReduction(s, nest.block->name, options.vector_lanes);
  return ParallelOver(s, spatial, options);
}

// C[.., i, j] = C[.., i, j] + x * y with the last three loops binding i, j and the reduction.
bool IsMatmulLike(const PlainNest& nest) {
  const BlockNode* block = nest.block;
  size_t n = nest.loops.size();
  if (n < 3 || !block->init.defined()) return false;
  int reductions = 0;
  for (const IterVar& iv : block->iter_vars) reductions += iv.type == IterType::kReduction;
  if (reductions != 1 || !IsReductionLoop(nest, n - 1)) return false;
  for (size_t i = 0; i + 1 < n; ++i) {
    if (IsReductionLoop(nest, i)) return false;
  }
  const auto* store = block->body.as<BufferStoreNode>();
  if (!store || store->indices.size() < 2) return false;
  const auto* add = store->value.as<BinaryNode>();
  if (!add || add->kind() != ExprKind::kAdd) return false;
  auto same_load = [&](const PrimExpr& e) {
    const auto* load = e.as<BufferLoadNode>();
    if (!load || load->buffer != store->buffer.node()) return false;
    for (size_t i = 0; i < load->indices.size(); ++i) {
      if (!load->indices[i].same_as(store->indices[i])) return false;
    }
    return true;
  };
  bool shape = (same_load(add->a) && add->b.kind() == ExprKind::kMul) ||
               (same_load(add->b) && add->a.kind() == ExprKind::kMul);
  if (!shape) return false;
  size_t rank = store->indices.size();
  const VarNode* row = block->iter_vars[nest.iter_of_loop[n - 3]].var.get();
  const VarNode* col = block->iter_vars[nest.iter_of_loop[n - 2]].var.get();
  return store->indices[rank - 2].get() == row && store->indices[rank - 1].get() == col;
}

// Whether every read that depends on the column variable reads it as its last index, so
// vectorizing the columns gives contiguous vector loads rather than gathers.
bool ColumnsContiguous(const BlockNode* block, const VarNode* col) {
  bool contiguous = true;
  class Loads : public StmtExprVisitor {
   public:
    Loads(const VarNode* col, bool* ok) : col_(col), ok_(ok) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      for (size_t i = 0; i < op->indices.size(); ++i) {
        bool last = i + 1 == op->indices.size();
        if (UsesVar(op->indices[i], col_) && !(last && op->indices[i].get() == col_)) *ok_ = false;
      }
      StmtExprVisitor::VisitExpr_(op, self);
    }

   private:
    const VarNode* col_;
    bool* ok_;
  } loads(col, &contiguous);
  loads.VisitStmt(block->body);
  return contiguous;
}

// The right operand of a matmul body: the buffer whose reads index the columns (as their
// last index) and not the rows; "" when there is no single such buffer.
std::string PanelOperand(const BlockNode* block, const VarNode* row, const VarNode* col) {
  std::set<std::string> names;
  bool ok = true;
  class Loads : public StmtExprVisitor {
   public:
    Loads(const VarNode* row, const VarNode* col, std::set<std::string>* names, bool* ok)
        : row_(row), col_(col), names_(names), ok_(ok) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      bool uses_col = false, uses_row = false;
      for (const PrimExpr& i : op->indices) {
        uses_col |= UsesVar(i, col_);
        uses_row |= UsesVar(i, row_);
      }
      if (uses_col && !uses_row) {
        names_->insert(op->buffer->name);
        *ok_ &= op->indices.back().get() == col_;
      }
      StmtExprVisitor::VisitExpr_(op, self);
    }

   private:
    const VarNode* row_;
    const VarNode* col_;
    std::set<std::string>* names_;
    bool* ok_;
  } loads(row, col, &names, &ok);
  loads.VisitStmt(block->body);
  return ok && names.size() == 1 ? *names.begin() : std::string();
}

// Packing a panel pays when the panels alone keep every thread busy (the row tiles of a
// panel run serially in its iteration).
bool PackPays(int64_t panels, const CpuScheduleOptions& options) {
  return panels >= 4 * options.num_threads;
}

// The blocks of the function other than `skip` that read `buffer`.
std::vector<std::string> ReadersOf(const PrimFunc& func, const BufferNode* buffer) {
  std::vector<std::string> names;
  ForEachStmt(func->body, [&](const Stmt& st) {
    const auto* b = st.as<BlockNode>();
    if (b && OutermostBlocks(b->body).empty() && AccessesOf(b->body).reads.count(buffer)) names.push_back(b->name);
  });
  return names;
}

// The buffer a block stores to (its body's single store), or null.
const BufferNode* StoredBuffer(const PrimFunc& func, const std::string& block) {
  absl::StatusOr<Stmt> b = FindBlock(func, block, "");
  if (!b.ok()) return nullptr;
  const auto* store = b->as<BlockNode>()->body.as<BufferStoreNode>();
  return store ? store->buffer.get() : nullptr;
}

// Folds elementwise consumers of the write-back's output into it, one after another, so
// an epilogue (bias, activation) is applied to the tile while it is in registers.
void InlineEpilogues(Schedule* s, const std::string& write_back) {
  for (int guard = 0; guard < 16; ++guard) {
    const BufferNode* out = StoredBuffer(s->func(), write_back);
    if (!out) return;
    std::vector<std::string> readers = ReadersOf(s->func(), out);
    if (readers.size() != 1) return;
    Schedule attempt = *s;
    if (!attempt.ReverseComputeInline(readers[0]).ok()) return;
    *s = attempt;
  }
}

// Unrolls the row loop and vectorizes the column loop of the write-back (now under the
// tile loop, walking one tile).
absl::Status ScheduleWriteBack(Schedule* s, const std::string& write_back, const CpuScheduleOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> loops, s->GetLoops(write_back));
  if (loops.size() < 2) return absl::OkStatus();
  KILN_ASSIGN_OR_RETURN(Stmt cols, FindLoop(s->func(), loops.back(), ""));
  KILN_ASSIGN_OR_RETURN(Stmt rows, FindLoop(s->func(), loops[loops.size() - 2], ""));
  std::optional<int64_t> col_extent = cols.as<ForNode>()->extent.as_int();
  std::optional<int64_t> row_extent = rows.as<ForNode>()->extent.as_int();
  if (col_extent && *col_extent >= 2 && *col_extent <= 4 * options.vector_lanes) {
    // A failure (a gather or a race) leaves the loop serial.
    (void)s->Vectorize(loops.back());
  }
  if (row_extent && *row_extent <= 8) (void)s->Unroll(loops[loops.size() - 2]);
  return absl::OkStatus();
}

// `cache`: the accumulator tile lives in a local buffer (registers once compacted) and an
// epilogue that reads the result joins the write-back; fails when the tile cannot be
// formed, so the caller can schedule without it.
absl::Status ScheduleMatmul(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& options, bool cache) {
  std::string write_back;
  if (cache) {
    Schedule attempt = *s;
    absl::StatusOr<std::string> wb = attempt.CacheWrite(nest.block->name);
    if (wb.ok()) {
      *s = attempt;
      write_back = *wb;
      InlineEpilogues(s, write_back);
    }
  }
  size_t n = nest.loops.size();
  const ForNode* i = nest.loops[n - 3];
  const ForNode* j = nest.loops[n - 2];
  const ForNode* k = nest.loops[n - 1];
  // 8 x 2 vectors of accumulators fit AVX-512's 32 registers with room for the operands;
  // AVX2's 16 take 4 x 2.
  const int64_t row_tile = options.vector_lanes >= 16 ? 8 : 4;
  const int64_t col_tile = std::min<int64_t>(64, 2 * static_cast<int64_t>(options.vector_lanes));
  std::vector<std::string> outer;  // batch loops, then the row and column tiles
  for (size_t b = 0; b + 3 < n; ++b) outer.push_back(nest.loops[b]->loop_var.name());
  std::string ii, ji;
  bool i_split = false, j_split = false;
  if (i->extent.as_int().value_or(row_tile + 1) <= row_tile) {
    ii = i->loop_var.name();
  } else {
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(i->loop_var.name(), {-1, row_tile}));
    outer.push_back(parts[0]);
    ii = parts[1];
    i_split = true;
  }
  std::optional<int64_t> j_extent = j->extent.as_int();
  // Few rows (m < 64): 8-row tiles over wide column tiles of 8 vector pairs whose
  // accumulators live in L1. Each row of the right operand is then read as one 1 KiB run
  // per tile (instead of 128 bytes per 32-column panel), which a memory-bound GEMV wants;
  // the rows of the tile reuse it from L1. Measured (matmul_bench, 4096 x 4096 weight):
  // 8 pairs beat 4 and 16, and up to m = 32 the wide tiles beat the register tile.
  const int64_t wide_tile = 8 * col_tile;
  // The wide tile's columns are split into vector pairs only once the write-back has moved
  // under the tile loop (it wants one dense column loop to do so).
  bool few = options.matmul_few_rows && cache && col_tile >= 2 && !(j_extent && *j_extent <= wide_tile);
  if (few) {
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(j->loop_var.name(), {-1, wide_tile}));
    outer.push_back(parts[0]);
    ji = parts[1];
    j_split = true;
  } else if (col_tile < 2 || (j_extent && *j_extent <= col_tile)) {
    ji = j->loop_var.name();
  } else {
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(j->loop_var.name(), {-1, col_tile}));
    outer.push_back(parts[0]);
    ji = parts[1];
    j_split = true;
  }
  // Column tiles outermost: consecutive tiles (and a thread's share of them) reuse one
  // k x col_tile panel of the right operand from cache while the rows move on.
  if (i_split && j_split) std::swap(outer[outer.size() - 1], outer[outer.size() - 2]);
  std::vector<std::string> order = outer;
  order.push_back(k->loop_var.name());
  order.push_back(ii);
  order.push_back(ji);
  KILN_RETURN_IF_ERROR(s->Reorder(order));
  const VarNode* col = nest.block->iter_vars[nest.iter_of_loop[n - 2]].var.get();
  const VarNode* row = nest.block->iter_vars[nest.iter_of_loop[n - 3]].var.get();
  std::string panel = cache && i_split && j_split ? PanelOperand(nest.block, row, col) : std::string();
  bool pack = !few && !panel.empty() && j_extent && PackPays(*j_extent / col_tile, options);
  std::string tile_loop, pack_loop;
  if (pack) {
    // Each parallel iteration owns a column panel: it packs the right operand's panel
    // once and runs every row tile over it.
    std::vector<std::string> panels(outer.begin(), outer.end() - 1);
    KILN_RETURN_IF_ERROR(ParallelOver(s, panels, options, &pack_loop));
    tile_loop = outer.back();
  } else {
    KILN_RETURN_IF_ERROR(ParallelOver(s, outer, options, &tile_loop));
  }
  bool contiguous = ColumnsContiguous(nest.block, col);
  if (few && !contiguous) return absl::FailedPreconditionError("cpu schedule: wide tiles want contiguous columns");
  if (!few && j_extent.value_or(col_tile) >= 2 && contiguous) {
    KILN_RETURN_IF_ERROR(s->Vectorize(ji));
  }
  if (!few) KILN_RETURN_IF_ERROR(s->Unroll(ii));
  KILN_RETURN_IF_ERROR(s->DecomposeReduction(nest.block->name, k->loop_var.name()).status());
  if (write_back.empty()) return absl::OkStatus();
  if (!tile_loop.empty()) {
    KILN_RETURN_IF_ERROR(s->ReverseComputeAt(write_back, tile_loop));
    KILN_RETURN_IF_ERROR(ScheduleWriteBack(s, write_back, options));
    if (few) {  // the init, the update and the write-back walk the wide tile in vector pairs
      for (const std::string& b : {nest.block->name + "_init", nest.block->name, write_back}) {
        KILN_ASSIGN_OR_RETURN(std::vector<std::string> loops, s->GetLoops(b));
        KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(loops.back(), {-1, col_tile}));
        KILN_RETURN_IF_ERROR(s->Vectorize(parts[1]));
      }
    }
    if (pack) {
      KILN_ASSIGN_OR_RETURN(std::string copy, s->CacheRead(nest.block->name, panel, pack_loop));
      KILN_ASSIGN_OR_RETURN(std::vector<std::string> copy_loops, s->GetLoops(copy));
      KILN_RETURN_IF_ERROR(s->Vectorize(copy_loops.back()));
    }
    return absl::OkStatus();
  }
  // No tile loop (rows and columns each fit one tile): a cache of constant size is the tile.
  KILN_ASSIGN_OR_RETURN(Stmt block, FindBlock(s->func(), nest.block->name, "cpu schedule"));
  for (const PrimExpr& d : block.as<BlockNode>()->body.as<BufferStoreNode>()->buffer->shape) {
    if (!d.as_int()) return absl::FailedPreconditionError("cpu schedule: the accumulator has a symbolic size");
  }
  return absl::OkStatus();
}

// The matmul rule: with the accumulator tile when it can be formed, else without. Few rows
// (m < 64) and wide columns (more than one wide tile) take wide tiles: directly when both
// are constants, else the rule tiles for many rows and appends to `many_conditions` the
// run-time condition under which that is right (`m >= 64 || n < 256` for 16 lanes);
// ScheduleForCpu then adds the few-rows branch.
absl::Status ScheduleMatmulRule(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& options,
                                std::vector<PrimExpr>* many_conditions) {
  const PrimExpr& rows = nest.loops[nest.loops.size() - 3]->extent;
  const PrimExpr& cols = nest.loops[nest.loops.size() - 2]->extent;
  const int64_t wide_tile = 8 * std::min<int64_t>(64, 2 * static_cast<int64_t>(options.vector_lanes));
  std::optional<int64_t> m = rows.as_int(), n = cols.as_int();
  bool few_possible = !(m && *m >= 64) && !(n && *n <= wide_tile);
  CpuScheduleOptions matmul_options = options;
  matmul_options.matmul_few_rows = few_possible && (options.matmul_few_rows || (m && n));
  Schedule attempt = *s;
  absl::Status status = ScheduleMatmul(&attempt, nest, matmul_options, /*cache=*/true);
  if (status.ok()) {
    *s = attempt;
    if (few_possible && !options.matmul_few_rows && !(m && n)) {
      PrimExpr many;
      if (!m) many = GE(rows, IntImm(rows.dtype(), 64));
      if (!n) {
        PrimExpr narrow = LT(cols, IntImm(cols.dtype(), wide_tile));
        many = many.defined() ? Or(many, narrow) : narrow;
      }
      many_conditions->push_back(many);
    }
    return status;
  }
  return ScheduleMatmul(s, nest, options, /*cache=*/false);
}

void FlattenAnd(const PrimExpr& e, std::vector<PrimExpr>* out) {
  if (e.kind() == ExprKind::kAnd) {
    const auto* b = e.as<BinaryNode>();
    FlattenAnd(b->a, out);
    FlattenAnd(b->b, out);
  } else {
    out->push_back(e);
  }
}

// Gives every variable and buffer defined in a statement a new node, so a copy of it
// defines its own (IR defines each variable and buffer once).
class Renewer : public StmtExprMutator {
 public:
  Var VisitVarDef(const Var& var) override {
    return Var(var.name(), var.dtype(), var->lower_bound, var->upper_bound);
  }
  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
    for (const Buffer& b : op->alloc_buffers) Renew(b);
    return StmtExprMutator::VisitStmt_(op, self);
  }
  Stmt VisitStmt_(const AllocateNode* op, const Stmt& self) override {
    Renew(op->buffer);
    return StmtExprMutator::VisitStmt_(op, self);
  }

 private:
  void Renew(const Buffer& b) {
    bool changed = false;
    std::vector<PrimExpr> shape = VisitExprs(b->shape, &changed);
    std::vector<PrimExpr> strides = VisitExprs(b->strides, &changed);
    buffer_remap_[b.get()] = Buffer(b->name, b->dtype, std::move(shape), std::move(strides), b->scope);
  }
};

// A vectorized loop without the conditions on its lane in its blocks' predicates, and
// those conditions evaluated at the last lane; nullopt when a lane condition has a form
// other than `a < b` with `a` increasing with the lane.
struct LaneSplit {
  Stmt body;                    // the loop's body, lane conditions dropped
  std::vector<PrimExpr> guards; // all hold => every lane is in range
};
std::optional<LaneSplit> SplitLaneConditions(const ForNode* loop) {
  std::optional<int64_t> lanes = loop->extent.as_int();
  const VarNode* v = loop->loop_var.get();
  Analyzer analyzer;
  LaneSplit out{loop->body, {}};
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
    }
    PrimExpr predicate;
    for (const PrimExpr& c : keep) predicate = predicate.defined() ? And(predicate, c) : c;
    out.body = ReplaceStmt(out.body, b.get(),
                           Block(block->name, block->iter_vars, block->body, block->init, predicate,
                                 block->alloc_buffers));
  }
  return out;
}

PrimExpr AllOf(const std::vector<PrimExpr>& conditions) {
  PrimExpr condition = conditions[0];
  std::set<std::string> seen = {ToString(condition)};
  for (size_t i = 1; i < conditions.size(); ++i) {
    if (seen.insert(ToString(conditions[i])).second) condition = And(condition, conditions[i]);
  }
  return condition;
}

// Drops from the predicates of the blocks in a tile every condition `a < b` that holds for
// the whole tile when it holds at the last iteration of the tile's loops (`a` growing by a
// constant step with each, `b` independent of them), collecting those last-iteration
// conditions as guards. `ok` turns false when a condition on a vector lane must stay.
class TileConditionStripper : public StmtExprMutator {
 public:
  TileConditionStripper(std::vector<const VarNode*> inner, bool lanes_only)
      : inner_(std::move(inner)), lanes_only_(lanes_only) {}
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    loops_.push_back(op);
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    loops_.pop_back();
    return s;
  }
  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* block = s.as<BlockNode>();
    if (!block->predicate.defined()) return s;
    std::vector<PrimExpr> conjuncts, keep;
    FlattenAnd(block->predicate, &conjuncts);
    for (const PrimExpr& c : conjuncts) {
      bool on_lane = false;
      for (const ForNode* l : loops_) on_lane |= l->for_kind == ForKind::kVectorized && UsesVar(c, l->loop_var.get());
      std::optional<PrimExpr> guard = lanes_only_ && !on_lane ? std::nullopt : AtLastIteration(c);
      if (guard) {
        guards.push_back(*guard);
        continue;
      }
      keep.push_back(c);
      ok &= !on_lane;
    }
    PrimExpr predicate;
    for (const PrimExpr& c : keep) predicate = predicate.defined() ? And(predicate, c) : c;
    return Block(block->name, block->iter_vars, block->body, block->init, predicate, block->alloc_buffers);
  }
  bool ok = true;
  std::vector<PrimExpr> guards;

 private:
  std::optional<PrimExpr> AtLastIteration(const PrimExpr& c) {
    if (c.kind() != ExprKind::kLT) return std::nullopt;
    const auto* lt = c.as<BinaryNode>();
    if (UsesAnyVar(lt->b, inner_)) return std::nullopt;
    PrimExpr a = lt->a;
    for (const ForNode* l : loops_) {
      const VarNode* v = l->loop_var.get();
      if (!UsesVar(a, v)) continue;
      std::optional<int64_t> extent = l->extent.as_int();
      std::optional<int64_t> step =
          SimplifyExpr(Substitute(a, VarMap{{v, l->loop_var + 1}}) - a).as_int();
      if (!extent || !step || *step < 0) return std::nullopt;
      a = SimplifyExpr(Substitute(a, VarMap{{v, l->min + (*extent - 1)}}));
    }
    if (UsesAnyVar(a, inner_)) return std::nullopt;
    return SimplifyExpr(LT(a, lt->b));
  }
  std::vector<const VarNode*> inner_;
  bool lanes_only_;
  std::vector<const ForNode*> loops_;
};

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

class DefinedVars : public StmtExprVisitor {
 public:
  void VisitVarDef(const Var& var) override { vars.push_back(var.get()); }
  std::vector<const VarNode*> vars;
};

class TailGuard : public StmtExprMutator {
 public:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* loop = s.as<ForNode>();
    if (loop->for_kind != ForKind::kVectorized || !loop->extent.as_int()) return s;
    std::optional<LaneSplit> split = SplitLaneConditions(loop);
    if (!split || split->guards.empty()) return s;  // other forms are left to the code generator
    Stmt vector_loop = For(loop->loop_var, loop->min, loop->extent, ForKind::kVectorized, split->body);
    Stmt tail = Renewer().VisitStmt(For(loop->loop_var, loop->min, loop->extent, ForKind::kSerial, loop->body));
    return IfThenElse(AllOf(split->guards), vector_loop, tail);
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
      return renew ? Renewer().VisitStmt(t) : t;
    };
    Stmt full_columns = other.empty() ? tile(lane_free, false)
                                      : IfThenElse(AllOf(other), tile(condition_free, false), tile(lane_free, true));
    if (lanes.guards.empty()) return full_columns;
    Stmt edge = Renewer().VisitStmt(LaneLoopSerializer().VisitStmt(Allocate(op->buffer, VisitStmt(op->body))));
    return IfThenElse(AllOf(lanes.guards), full_columns, edge);
  }
};

// Fused functions hold several kernels' loop nests with their intermediates allocated in
// the function: an elementwise intermediate whose readers are all elementwise is folded
// into them (a reduction reader would recompute it at every step, so it stays).
void InlineIntermediates(Schedule* s) {
  std::vector<std::string> blocks;
  ForEachStmt(s->func()->body, [&](const Stmt& st) {
    if (const auto* b = st.as<BlockNode>(); b && !b->is_reduction() && !b->init.defined()) blocks.push_back(b->name);
  });
  for (const std::string& name : blocks) {
    const BufferNode* out = StoredBuffer(s->func(), name);
    if (!out) continue;
    std::vector<std::string> readers = ReadersOf(s->func(), out);
    bool elementwise_readers = !readers.empty();
    for (const std::string& r : readers) {
      absl::StatusOr<Stmt> rb = FindBlock(s->func(), r, "");
      elementwise_readers &= rb.ok() && !rb->as<BlockNode>()->is_reduction() && !rb->as<BlockNode>()->init.defined();
    }
    if (!elementwise_readers) continue;
    Schedule attempt = *s;
    if (attempt.ComputeInline(name).ok()) *s = attempt;
  }
}

// One matmul that may have few rows and wide columns at run time: the whole function is
// also scheduled for few rows and the two run under `if (m >= 64 || n < 256) { many rows }
// else { few rows }`, so one compiled kernel streams the weight for m = 1 (GEMV) and keeps
// the 8 x 32 register tile for large m. Not a primitive: the trace describes the first
// branch.
absl::StatusOr<PrimFunc> WithFewRowsBranch(const PrimFunc& func, const CpuScheduleOptions& options,
                                           const std::vector<PrimExpr>& many_conditions, const PrimFunc& many) {
  if (many_conditions.size() != 1 || options.matmul_few_rows) return many;
  CpuScheduleOptions few_options = options;
  few_options.matmul_few_rows = true;
  KILN_ASSIGN_OR_RETURN(PrimFunc few, ScheduleForCpu(func, few_options));
  if (StructuralEqual(few, many)) return many;
  Stmt few_body = Renewer().VisitStmt(few->body);
  return WithBody(many, IfThenElse(many_conditions[0], many->body, few_body));
}

}  // namespace

PrimFunc GuardVectorizedTails(const PrimFunc& func) {
  Stmt body = TailGuard().VisitStmt(func->body);
  return body.same_as(func->body) ? func : WithBody(func, body);
}

absl::StatusOr<PrimFunc> ScheduleForCpu(const PrimFunc& func, const CpuScheduleOptions& options, std::string* trace) {
  if (options.vector_lanes < 1 || options.vector_lanes > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu schedule: vector_lanes must be in [1, 64], got ", options.vector_lanes));
  }
  if (options.num_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu schedule: num_threads must be >= 1, got ", options.num_threads));
  }
  Schedule schedule(func);
  std::vector<PrimExpr> many_conditions;  // of the matmuls tiled for many rows only
  InlineIntermediates(&schedule);
  std::vector<std::string> blocks;
  ForEachStmt(schedule.func()->body, [&](const Stmt& s) {
    if (const auto* b = s.as<BlockNode>()) blocks.push_back(b->name);
  });
  for (const std::string& name : blocks) {
    std::optional<PlainNest> nest = FindPlainNest(schedule.func(), name);
    if (!nest || nest->loops.empty() || !WritesFollowSpatialVars(*nest)) continue;
    // Each rule runs on a copy: one that does not apply leaves the block as it was.
    Schedule attempt = schedule;
    // A block inside another (iterating) block runs within its parent's parallel loop.
    CpuScheduleOptions block_options = options;
    for (const Stmt& a : AncestorsOf(schedule.func()->body, nest->block)) {
      const auto* parent = a.as<BlockNode>();
      if (parent && !parent->iter_vars.empty()) block_options.num_threads = 1;
    }
    absl::Status status;
    if (!nest->block->is_reduction()) {
      status = ScheduleInjective(&attempt, *nest, block_options);
    } else if (IsMatmulLike(*nest)) {
      status = ScheduleMatmulRule(&attempt, *nest, block_options, &many_conditions);
    } else {
      status = ScheduleReduction(&attempt, *nest, block_options);
    }
    if (status.ok()) schedule = attempt;
  }
  FuseRowPasses(&schedule);
  if (trace) *trace = schedule.trace().ToString();
  return WithFewRowsBranch(func, options, many_conditions, GuardVectorizedTails(schedule.func()));
}

}  // namespace kiln::tir
