// The CPU rule for matmul-like blocks: register tiles (or wide tiles for few rows) with the
// accumulator in a local cache, a fused epilogue applied to the tile, and the right
// operand's panel packed when that pays.
#include <algorithm>
#include <optional>
#include <set>

#include "support/status_macros.h"
#include "tir/analyzer.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/cpu_rules.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::cpu_rules {

using namespace schedule_internal;  // NOLINT

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

namespace {

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

int64_t WideTileWidth(const CpuScheduleOptions& options);

// The least row count from which the register tiles pack the panels of a narrow constant
// weight (at most WideTileWidth columns: no wide tiles for few rows, rows at most 1 KiB
// apart) of constant depth k; nullopt (always packed) for a wider weight or a symbolic k.
// The copy of the whole weight is paid per call, and fewer row tiles do not repay it.
// Measured (matmul_bench --knobs-b=matmul.pack=0 or 1, one thread, symbolic m; unpacked
// over packed), AVX-512 / AVX2 code: m x 784 x 128 at m = 1, 4, 16, 32, 64, 128: 3.03 /
// 2.62, 1.80 / 1.76, 1.28 / 1.24, 1.14 / 1.18, 1.07 / 1.06, 0.99 / 1.03; m x 256 x 256
// (AVX-512) at m = 8 / 16 / 32 / 48: 1.46 / 1.23 / 1.12 / 1.08. On AVX2 a deeper panel
// (k x 16, from L2) streams better packed, from fewer rows the deeper it is: m x 4096 x 128
// at m = 1 / 8 / 16 / 32 / 64: 1.92 / 1.14 / 0.99 / 0.91 / 0.81, m x 2048 x 128 at 16 / 32:
// 1.11 / 1.00, m x 1024 x 128 at 32 / 64: 1.11 / 1.05 (AVX-512 still 1.15 at 32 x 4096 x
// 128 and 1.05 at 100). Wider weights keep their panels packed: on AVX2 120 x 1024 x 1024
// took 4.5-4.6 ms unpacked against 2.5 packed (its rows 4 KiB apart share their L1 sets).
std::optional<int64_t> NarrowPackLeastRows(int64_t columns, const PrimExpr& depth, const CpuScheduleOptions& options) {
  std::optional<int64_t> k = depth.as_int();
  if (!k || columns > WideTileWidth(options)) return std::nullopt;
  if (options.vector_lanes == 8 && *k > 1024) return std::max<int64_t>(8, 64 * 1024 / *k);
  return 128;
}

// Packing a panel pays when the panels alone keep every thread busy (the row tiles of a
// panel run serially in its iteration). A symbolic column count is packed when it is known
// to be at least the row count (attention scores, n x d times d x n): the panels are then
// as many as the work needs threads for, and the copy makes each panel one contiguous
// block. Unpacked, a panel's k rows lie n floats apart, and at n = 1024 (4 KiB) all of them
// fall in the same L1 sets; packed, the scores (1024 x 64 x 1024 with the transpose and the
// scale, one thread, CPU time per call on a loaded machine) went from 2.17 to 1.43 ms (ONNX
// Runtime's FusedMatMul: 1.41). An unrelated symbolic column count (possibly a few columns under many rows)
// keeps the parallel loop over row tiles too, unless the panel's producer folds into the
// packing (`folds_producer`, PackPanel): then packing is what keeps the intermediate from
// being written whole. A convolution over a symbolic image (relax/op/legalize_nn.cc: the
// im2col columns, C x taps x P floats per image) ran 2-2.5x slower with its columns
// written out (64 -> 64 3 x 3 at 56 x 56: 10.6 ms against 4.9 ms packed; one thread).
//
// A narrow constant weight is packed only from NarrowPackLeastRows rows on. For a symbolic
// row count that may be fewer, ScheduleForCpu versions the function on `m >= least`
// (PackedPanelRowsCondition) and the copy for fewer rows reads the panels in place
// (options.matmul_unpacked_panels).
bool PackPays(const PrimExpr& rows, const PrimExpr& columns, const PrimExpr& depth, int64_t col_tile,
              const CpuScheduleOptions& options, bool folds_producer) {
  Analyzer analyzer;
  if (std::optional<int64_t> n = columns.as_int()) {
    if (*n / col_tile < 4 * options.num_threads) return false;
    if (folds_producer) return true;
    std::optional<int64_t> least = NarrowPackLeastRows(*n, depth, options);
    if (!least) return true;
    return !options.matmul_unpacked_panels && !analyzer.CanProveLE(rows, IntImm(rows.dtype(), *least - 1));
  }
  return folds_producer || analyzer.CanProveLE(rows, columns);
}

// Vector registers of the target's SIMD unit, known from its width: AVX-512 (16 fp32 lanes)
// has 32, AVX2 (8 lanes) and SSE (4) have 16.
int64_t VectorRegisters(const CpuScheduleOptions& options) { return options.vector_lanes >= 16 ? 32 : 16; }

// Rows of a register tile `vectors` vectors wide: its accumulators (rows x vectors), the
// `vectors` loads of the right operand and one broadcast of the left must all stay in
// registers, or the accumulators spill at every k step. At most 8 rows (8 x 2 vectors was
// measured best on AVX-512; more rows only lengthen the unrolled body).
int64_t RegisterTileRows(const CpuScheduleOptions& options, int64_t vectors) {
  return std::clamp<int64_t>((VectorRegisters(options) - vectors - 1) / vectors, 1, 8);
}

// Vectors of a register tile's columns (the col_vectors knob, 0: this rule's): two, except
// on 16-register targets (AVX2) against a large constant right operand (k and n both at
// least 1024), where the tile is 4 x 3 vectors. Each column panel re-reads the whole left
// operand, which at these sizes lives beyond L2, and panels of 24 columns instead of 16
// re-read it a third fewer times. Measured (matmul_bench.sh --mcpu=haswell, Haswell
// OpenBLAS peers, 1 thread, --knobs-b="matmul.row_tile=4 matmul.col_vectors=3", B/A):
// 2048^3 0.95-1.15 (ten runs, mean 1.03; the 4 x 3 tile also swung less from run to run),
// 256 x 4096 x 4096 1.04, 1024^3 1.00-1.02, 128 x 2048 x 2048 0.99-1.02, but 512^3 0.91-0.96,
// where everything stays in cache and the pair's fewer loads per FMA win.
int64_t RegisterTileVectors(const CpuScheduleOptions& options, std::optional<int64_t> k, std::optional<int64_t> n) {
  const int64_t lanes = options.vector_lanes;
  if (int knob = options.knobs.matmul.col_vectors; knob > 0) {
    return std::max<int64_t>(1, std::min<int64_t>(64, knob * lanes) / lanes);
  }
  const bool large = k && n && *k >= 1024 && *n >= 1024;
  return lanes == 8 && large ? 3 : 2;
}

// Rows of each step of a wide tile's update (a vector pair each): the register tile's rows
// for two vectors, rounded down to a power of two so that they divide kFewRowsGroup (8 on
// AVX-512; 4 on AVX2, where 8 rows x 2 vectors would take all 16 registers).
int64_t WideTileStepRows(const CpuScheduleOptions& options) {
  if (options.knobs.matmul.wide_step_rows > 0) return options.knobs.matmul.wide_step_rows;
  int64_t rows = 1;
  while (rows * 2 <= RegisterTileRows(options, 2)) rows *= 2;
  return rows;
}

// Rows of a wide tile (its accumulator: kFewRowsGroup x the tile's columns, in L2). Every
// row tile streams the whole weight from memory once, so for few rows the group is as tall
// as L2 allows while every k block of the weight (16 rows across the tile) is reused by
// all of its rows from cache: 16 x 4096 floats of accumulator (256 KiB) on one thread.
// Measured (matmul_bench, 4096 x 4096 weight, AVX-512, one thread, load ~12, one run per
// group size, ratio to the best OpenBLAS in the same run): groups of 8 / 16 / 32 rows gave
// M = 16: 1.44 / 1.57 / 1.31, M = 32: 0.79 / 0.90 / 0.36 (32 rows: 512 KiB of accumulator,
// which L2 no longer holds beside the weight's block). The cost: 8 to 15 rows are now a
// row edge (the streaming copy, each row reading the k block from L2) where 8 of them were
// a full tile: M = 8 fell from 2.15x to 1.46x of the best OpenBLAS (same run, load 8).
constexpr int64_t kFewRowsGroup = 16;

// The packed wide tiles (from PackedWideLeastRows rows; see PackedWideApplies): on AVX2 64
// rows (16 register steps of 4: WideTileStepRows) x 2 sub-tiles of 128 columns, k blocks of
// 256 weight rows each copied into a contiguous 256 x 128 panel (128 KiB, in L2) that every
// row step reads. The accumulator tile (64 KiB) is reloaded once per k block, as a packed
// GEMM's is. Measured by issue 15's mm15 (knobs `matmul.row_tile=48 matmul.wide_step_rows=6
// matmul.wide_k_block=256 matmul.wide_pack=1 matmul.wide_subtiles=2`, AVX2 code against
// AVX2 OpenBLAS, 4096 x 4096 weight, one thread): M = 48 0.87-0.88 of the best OpenBLAS
// where the 16-row unpacked tiles gave 0.59-0.70 (their 16 KiB-apart weight rows collide
// in L1 and each k block of 16 reloads the accumulators from L1 at every step). 64 rows in
// steps of 4 rather than 48 in steps of 6 (mm18): one tile holds every row up to 64, so the
// weight is copied once (M = 49-63 ran a 48-row tile plus an edge tile that copied it
// again, and M = 64 took the register tiles, which pack a k x 16 panel reading 64 bytes
// from each weight row: a third of their time in perf). Main's binary against this
// one (AVX2 code, one thread, alternating rounds at load 21-27, Kiln / best OpenBLAS; docs/
// schedule.md): M = 56 0.51-0.63 -> 0.69-0.92, M = 64 0.68-0.74 -> 0.81-0.90, M = 40
// 0.69-0.73 -> 0.84-0.85, M = 48 about even; M = 36, six whole 6-row steps before, loses
// (0.81-0.84 -> 0.71-0.78: a 4 x 2 step has fewer accumulators and more loads per FMA).
// On AVX-512 the same tiles take 8-row steps of a vector pair (16 of the 32 registers), one
// sub-tile of 256 columns (8 pairs of 32) and k blocks of 64 (a 64 x 256 panel, 64 KiB):
// matmul_bench with the same schedule by knobs (`matmul.row_tile=64 matmul.wide_step_rows=8
// matmul.wide_k_block=64 matmul.wide_pack=1 matmul.wide_subtiles=1 matmul.many_rows=65`)
// against the unpacked tiles, Zen 4, 2026-11-29, B/A: 1 thread M = 32 1.45, M = 48 1.46,
// M = 64 1.35 (Kiln / best OpenBLAS 0.94 -> 1.37, 0.86 -> 1.26, 0.90 -> 1.22); 2 threads
// M = 32 0.97, M = 48 1.37, M = 64 1.24; M = 8 and 16 (left unpacked) 0.83-0.97. k blocks of
// 128 ran 0.94, 0.94 and 1.00 of 64's.
constexpr int64_t kPackedWideRows = 64;
int64_t PackedWideSubTiles(const CpuScheduleOptions& options) { return options.vector_lanes == 8 ? 2 : 1; }
int64_t PackedWideKBlock(const CpuScheduleOptions& options) { return options.vector_lanes == 8 ? 256 : 64; }
// Fewer rows keep the unpacked wide tiles. Below 8 rows their row-edge copy streams the
// weight (a GEMV), and copying each k block first made M = 1 3x slower and M = 4 2x (AVX2,
// one thread). Since the row edge's whole steps keep their accumulators in registers
// (docs/schedule.md), the packed tiles win from 33 rows: M = 36 0.74-0.77 of the best
// OpenBLAS against 0.58 for the unpacked tiles (two 16-row tiles and a streaming edge), M =
// 44 0.68-0.70 against 0.60-0.61; at M = 32 (two full unpacked tiles) and 40 the two
// alternated (0.62-0.76), and M = 16 stays unpacked (0.63 packed against 0.88; AVX2 code,
// one thread, two runs at load 20). Quiet A/B later moved the start to 32 rows: M = 32
// packed / unpacked 1.08, 1.08, 1.10 (mm21, knob matmul.packed_least_rows, load 0.4-0.9;
// M = 24-28 packed lost, 0.95-0.97).
constexpr int64_t kPackedWideLeastRows = 32;
// On AVX2 the packed tiles have since gained their 4 x 3 steps, prefetched panels and even
// column shares, and win from 16 rows: matmul_bench --mcpu=haswell --openblas-core=Haswell
// --fastest with the knob matmul.packed_least_rows=16 as B, two quiet rounds (2026-11-29),
// B/A on 1 thread M = 16 1.02-1.03, M = 20 1.21-1.26, M = 24 1.24-1.26, M = 28 1.27-1.56; on
// 2 threads 1.05-1.13, 1.30-1.40, 1.31-1.38, 1.07-1.17 (Kiln / best OpenBLAS at M = 16-28
// 0.97-1.02 on 1 thread, where the unpacked tiles read 0.65-0.96). Below 16 they lose (8
// as B: M = 8, 12, 15 B/A 0.67, 0.75, 0.73 on 1 thread; 0.58, 0.80, 0.91 on 2).
constexpr int64_t kPackedWideLeastRowsAvx2 = 16;

// The least row count of the packed wide tiles: the knob's, else the rule's for the width.
int64_t PackedWideLeastRows(const CpuScheduleOptions& options) {
  const int knob = options.knobs.matmul.packed_least_rows;
  if (knob > 0) return knob;
  return options.vector_lanes == 8 ? kPackedWideLeastRowsAvx2 : kPackedWideLeastRows;
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

// Vectorizes `loop` (constant extent `extent`). A loop of a whole number of vectors that is
// not a power of two (3 x 8 lanes: a 4 x 24 register tile on AVX2, col_vectors=3) becomes an
// unrolled loop of single vectors instead: LLVM splits a 24-lane vector lane by lane, and
// the tile's accumulators were then rebuilt element by element at every k step
// (vinsertps from the stack; 2048^3 ran at 9-11 GF/s).
// Splits `loop` into an unrolled loop over single vectors and, inside it, the loop over one
// vector's lanes (returned, to be vectorized).
absl::StatusOr<std::string> UnrollVectors(Schedule* s, const std::string& loop, const CpuScheduleOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts,
                        s->Split(loop, {-1, static_cast<int64_t>(options.vector_lanes)}));
  KILN_RETURN_IF_ERROR(s->Unroll(parts[0]));
  return parts[1];
}

absl::Status VectorizeInWholeVectors(Schedule* s, const std::string& loop, int64_t extent,
                                     const CpuScheduleOptions& options) {
  const int64_t lanes = options.vector_lanes;
  const int64_t vectors = lanes > 1 && extent % lanes == 0 ? extent / lanes : 1;
  if (vectors <= 2 || (vectors & (vectors - 1)) == 0) return s->Vectorize(loop);
  KILN_ASSIGN_OR_RETURN(std::string lane_loop, UnrollVectors(s, loop, options));
  return s->Vectorize(lane_loop);
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
    Schedule attempt = *s;
    if (VectorizeInWholeVectors(&attempt, loops.back(), *col_extent, options).ok()) *s = std::move(attempt);
  }
  if (row_extent && *row_extent <= 8) (void)s->Unroll(loops[loops.size() - 2]);
  return absl::OkStatus();
}

// The columns of a wide tile (a multiple of `sub_tile`, 8 vector pairs). A constant width
// is shared evenly between the threads (each thread one tile per row tile), so that the edge
// copy few rows run (StreamWideEdgeTiles) reads each row of the weight in runs of about
// n / threads columns: a GEMV streams its weight at the memory's speed only in long runs
// (measured with a C++ loop on this project's AVX-512 machine, one thread: 8 / 10 / 21 /
// 29 GB/s for runs of 1 / 4 / 8 / 16 KiB). Full row tiles walk the tile in sub-tiles, each
// with its k blocks, as they would with narrow tiles. A symbolic width keeps one sub-tile.
//
// Where a thread's share is more sub-tiles than a packed tile holds (1 or 2; their copies
// read the weight in runs of one sub-tile whatever the tile's width), the tile takes the
// number of sub-tiles, up to the most, that gives the busiest thread the fewest columns
// (the unpacked tiles keep the widest: their width is the run a GEMV streams). The tiles
// are the parallel loop's tasks, so 4096 columns as 11 tiles of 2
// AVX2 sub-tiles (384 columns) ran 6 tiles on one thread and 4 2/3 on the other; as 22 tiles
// of one sub-tile, 11 against 10 1/3 (matmul_bench --mcpu=haswell, 2 threads, M = 48 and 64:
// 0.92 and 0.96 of the best OpenBLAS -> 0.95 and 1.00).
int64_t WideTileColumns(std::optional<int64_t> width, int64_t sub_tile, const CpuScheduleOptions& options) {
  if (!width) return sub_tile;
  const int64_t threads = std::max(1, options.num_threads);
  const int64_t share_subtiles = ((*width + threads - 1) / threads + sub_tile - 1) / sub_tile;
  const int64_t most = options.knobs.matmul.wide_subtiles > 0 ? options.knobs.matmul.wide_subtiles
                       : options.matmul_packed_wide             ? PackedWideSubTiles(options)
                                                                : 16;
  if (share_subtiles <= most || !options.matmul_packed_wide) {
    return std::clamp<int64_t>(share_subtiles, 1, most) * sub_tile;
  }
  int64_t best = most, best_load = 0;
  for (int64_t subtiles = most; subtiles >= 1; --subtiles) {
    const int64_t columns = subtiles * sub_tile;
    const int64_t tiles = (*width + columns - 1) / columns;
    const int64_t load = (tiles + threads - 1) / threads * columns;  // the busiest thread's columns
    if (best_load == 0 || load < best_load) best = subtiles, best_load = load;
  }
  return best * sub_tile;
}

// Rows of the right operand (k steps) each vector pair of a wide tile runs through before
// the next pair: within them the pair's accumulators (rows x 2 vectors) stay in registers,
// so each step is 2 loads of the weight, one broadcast per row and 2 FMAs per row, instead
// of loading and storing the accumulators in L1 at every step (the store port, not the
// FMAs, bounded the wide tiles). A k block walks all the tile's sub-tiles, so it reads its
// 16 rows of the weight across the whole tile (long runs, which the prefetcher streams)
// and the block's part of each sub-tile stays in L1 across its pairs. Measured
// (matmul_bench, 4096 x 4096 weight, one thread, AVX-512, ratio to the best OpenBLAS in the
// same run): M = 16 from 0.54-0.66x (no k blocks) to 0.68-0.85x (blocks of 64 inside each
// sub-tile) to 0.92-1.12x (blocks of 16 across the sub-tiles); M = 32 from 0.60x to
// 0.51-0.53x to 0.76-0.80x (the machine was loaded; ratios only).
constexpr int64_t kWideTileKBlock = 16;

// The k block of the wide tiles: the knob's, else kWideTileKBlock.
int64_t WideTileKBlock(const CpuScheduleOptions& options) {
  if (options.knobs.matmul.wide_k_block > 0) return options.knobs.matmul.wide_k_block;
  return options.matmul_packed_wide ? PackedWideKBlock(options) : kWideTileKBlock;
}

// Vectors of columns in each register step of AVX2's packed wide tiles: 4 x 3 steps, 12
// accumulators, as OpenBLAS's Haswell kernel. Quiet A/B against the vector pairs (4 x 2;
// matmul_bench --mcpu=haswell, knob matmul.wide_step_vectors, 2026-11-28): on 2 threads
// M = 32 / 48 / 64 over a 4096^2 weight 1.18-1.19 / 1.22 / 1.20-1.28, 64 x 4096 x 4608
// 1.09-1.51; on 1 thread 1.01-1.03 / 1.02-1.04 / 0.95-1.06, 1.02-1.08; squares and M = 16
// (other tiles) 0.95-1.02. (Before the column edge was pinned to the last tile the
// 2-thread build ran its edge with run-time masks and lost, 0.66-0.71.)
constexpr int64_t kPackedWideStepVectors = 3;

// Vectors of columns in each register step of a wide tile: the knob's count or
// kPackedWideStepVectors for AVX2's packed tiles, a vector pair for the unpacked tiles and
// AVX-512's packed ones (the few-rows condition is sized from them).
int64_t WideStepVectors(const CpuScheduleOptions& options) {
  if (!options.matmul_packed_wide) return 2;
  const int vectors = options.knobs.matmul.wide_step_vectors;
  return vectors > 0 ? vectors : options.vector_lanes == 8 ? kPackedWideStepVectors : 2;
}

// The column loop of a k block's panel copy, one weight row's run (768 bytes for the 4 x 3
// steps' sub-tile), as an unrolled loop of single vectors, which the code generator builds
// as straight-line copies (codegen/llvm_stmt_lowering.cc, UnrollsAsItIsBuilt). Vectorized
// whole, each run was one load and store of 192 lanes that LLVM made a memmove call per
// weight row (28 % of the kernel's samples at M = 64); as a loop of vectors, a memcpy call.
// Copied in place, AVX2 code on one thread (matmul_bench against main's build, two rounds):
// Kiln / best OpenBLAS M = 32 0.80-0.82 -> 0.86-0.89, M = 48 0.84 -> 0.87-0.90, M = 64
// 0.87 -> 0.89-0.92. (Long runs are another matter: with LLVM's memcpy idiom off for the
// whole kernel, the 8 KiB runs of M = 8's row edge lost 15 %; they keep their memcpy.)
absl::Status VectorizePanelRows(Schedule* s, const std::string& copy, const CpuScheduleOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> copy_loops, s->GetLoops(copy));
  const std::string columns = copy_loops.back();
  KILN_ASSIGN_OR_RETURN(Stmt loop, FindLoop(s->func(), columns, "cpu schedule"));
  std::optional<int64_t> extent = loop.as<ForNode>()->extent.as_int();
  const int64_t lanes = options.vector_lanes;
  if (!extent || lanes < 2 || *extent <= lanes || *extent % lanes != 0) return s->Vectorize(columns);
  KILN_ASSIGN_OR_RETURN(std::string lane_loop, UnrollVectors(s, columns, options));
  return s->Vectorize(lane_loop);
}

// The update of a wide tile, loops (.., [sub-tiles,] k, rows, pairs, vector), becomes
// (.., k_0, [sub-tiles,] [row steps,] pairs, k_1, rows unrolled, vector). Only for a
// constant k that is a multiple of the block (a model's weights): a remainder would put a
// condition inside the register loop. A tile taller than the registers hold (kFewRowsGroup
// rows) walks its rows in steps of WideTileStepRows inside the sub-tile, so each step's
// pair of accumulators stays in registers over k_1 and the block's piece of the sub-tile
// (16 rows x 256 columns, 16 KiB) is read from L1 by the later steps.
//
// With the wide_pack knob (and `panel`, the weight's name), each k block of a sub-tile is
// first copied into a contiguous buffer (in long runs of the weight's rows; its rows no
// longer 16 KiB apart, so a larger k block stays in cache for every row step): the
// accumulator tile is then reloaded from the wide tile once per k block, as in a packed
// GEMM's k blocking.
absl::Status BlockWideTileOverK(Schedule* s, const std::string& block, const PrimExpr& k_extent,
                                const std::string& sub_tiles, const std::string& panel,
                                const CpuScheduleOptions& options) {
  std::optional<int64_t> k = k_extent.as_int();
  const int64_t k_block = WideTileKBlock(options);
  if (!k || *k % k_block != 0 || *k <= k_block) return absl::OkStatus();
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> loops, s->GetLoops(block));
  // A step of more than two vectors walks them in an unrolled loop above the vector's lanes
  // (WideStepVectors), which stays with the vector below the rows.
  std::vector<std::string> lanes = {loops.back()};
  if (WideStepVectors(options) != 2 && loops.size() >= 5) {
    loops.pop_back();
    lanes.insert(lanes.begin(), loops.back());
  }
  if (loops.size() < 4) return absl::OkStatus();
  const size_t n = loops.size();
  std::string rows = loops[n - 3], pairs = loops[n - 2];
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> steps, s->Split(loops[n - 4], {-1, k_block}));
  std::vector<std::string> order = {steps[0]};
  if (!sub_tiles.empty()) order.push_back(sub_tiles);
  KILN_ASSIGN_OR_RETURN(Stmt row_loop, FindLoop(s->func(), rows, "cpu schedule"));
  std::optional<int64_t> row_extent = row_loop.as<ForNode>()->extent.as_int();
  const int64_t step_rows = WideTileStepRows(options);
  if (row_extent && *row_extent > step_rows && *row_extent % step_rows == 0) {
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> row_steps, s->Split(rows, {-1, step_rows}));
    order.push_back(row_steps[0]);
    rows = row_steps[1];
  }
  for (const std::string& l : {pairs, steps[1], rows}) order.push_back(l);
  for (const std::string& l : lanes) order.push_back(l);
  KILN_RETURN_IF_ERROR(s->Reorder(order));
  KILN_RETURN_IF_ERROR(s->Unroll(rows));
  // Steps of more than two vectors: their column offsets constant too (unrolled), or LLVM
  // folds 24 * t + 8 * g into 8 * (3 * t + g), after which alias analysis cannot tell the
  // step's accumulators apart and keeps them in memory.
  if (lanes.size() > 1) KILN_RETURN_IF_ERROR(s->Unroll(pairs));
  if (!(options.knobs.matmul.wide_pack || options.matmul_packed_wide) || panel.empty()) return absl::OkStatus();
  KILN_ASSIGN_OR_RETURN(std::string copy, s->CacheRead(block, panel, sub_tiles.empty() ? steps[0] : sub_tiles));
  return VectorizePanelRows(s, copy, options);
}

// The k loop of a register tile as (k_0, k_1) with k_1 of `factor` steps unrolled, when k
// is a constant that the factor divides: a remainder would put a condition around the
// register loop. Left as it was when the split does not apply.
void UnrollK(Schedule* s, const std::string& k_loop, const PrimExpr& k_extent, int factor) {
  std::optional<int64_t> k = k_extent.as_int();
  if (factor < 2 || !k || *k <= factor || *k % factor != 0) return;
  Schedule attempt = *s;
  absl::StatusOr<std::vector<std::string>> parts = attempt.Split(k_loop, {-1, factor});
  if (parts.ok() && attempt.Unroll((*parts)[1]).ok()) *s = std::move(attempt);
}

// The elementwise block of the function that makes `buffer` (its only store), when the
// block's loops are still plain (no rule has scheduled it); "" otherwise.
std::string PlainProducerOf(const PrimFunc& func, const std::string& buffer) {
  std::vector<std::string> writers;
  ForEachStmt(func->body, [&](const Stmt& st) {
    const auto* b = st.as<BlockNode>();
    const auto* store = b ? b->body.as<BufferStoreNode>() : nullptr;
    if (store && store->buffer->name == buffer) writers.push_back(b->name);
  });
  if (writers.size() != 1) return "";
  std::optional<PlainNest> nest = FindPlainNest(func, writers[0]);
  if (!nest || nest->block->is_reduction() || nest->block->init.defined()) return "";
  return writers[0];
}

// Whether the block `name` runs inside an iterating block (a row block of the attention
// kernel, relax/transform/fuse_attention.h): whatever it does runs once per iteration of
// that block.
bool InsideIteratingBlock(const PrimFunc& func, const std::string& name) {
  absl::StatusOr<Stmt> block = FindBlock(func, name, "");
  if (!block.ok()) return false;
  for (const Stmt& a : AncestorsOf(func->body, block->get())) {
    const auto* parent = a.as<BlockNode>();
    if (parent && !parent->iter_vars.empty()) return true;
  }
  return false;
}

// Whether the panel `buffer` of the matmul `block` is an intermediate that PackPanel folds
// into the packing: made by a plain elementwise block and read only by the matmul, which
// does not run inside an iterating block (there the copy, hence the folded producer's work,
// a transpose, would repeat for every iteration: the scores of a fused attention kernel
// read k transposed once per row block).
bool FoldsIntoPacking(const PrimFunc& func, const std::string& block, const std::string& buffer) {
  if (InsideIteratingBlock(func, block)) return false;
  const std::string producer = PlainProducerOf(func, buffer);
  if (producer.empty()) return false;
  const BufferNode* intermediate = StoredBuffer(func, producer);
  return intermediate && ReadersOf(func, intermediate).size() == 1;
}

// Each parallel iteration copies the right operand's panel into a contiguous buffer at
// `pack_loop`. When the panel is an intermediate made in this function by an elementwise
// block that no rule has scheduled yet (ScheduleForCpu defers those that only matmuls read:
// `q @ permute_dims(k)` fused, relax/transform/fuse_ops.h), that block is folded into the
// copy, which then reads k itself: the transpose happens while packing, and the transposed
// n x d intermediate is never written. The copy is vectorized where its reads are
// contiguous; a transposing copy reads a column, so it stays scalar (2048 elements per
// panel of 64 x 32, against 64 x 32 x n multiply-adds of the panel's row tiles).
absl::Status PackPanel(Schedule* s, const std::string& block, const std::string& panel, const std::string& pack_loop) {
  KILN_ASSIGN_OR_RETURN(std::string copy, s->CacheRead(block, panel, pack_loop));
  const std::string producer = FoldsIntoPacking(s->func(), block, panel) ? PlainProducerOf(s->func(), panel) : "";
  if (!producer.empty()) {
    Schedule attempt = *s;
    const BufferNode* intermediate = StoredBuffer(attempt.func(), producer);
    if (ReadersOf(attempt.func(), intermediate) == std::vector<std::string>{copy} &&
        attempt.ComputeInline(producer).ok()) {
      *s = std::move(attempt);
    }
  }
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> copy_loops, s->GetLoops(copy));
  Schedule attempt = *s;
  if (attempt.Vectorize(copy_loops.back()).ok()) *s = std::move(attempt);
  return absl::OkStatus();
}

// The left operand's rows that one block of packed register tiles walks before the next
// block starts the column panels again: every column panel re-reads the left operand's rows
// under it, which must then stay in L3 from panel to panel. A block holds kLeftBlockBytes of
// them; the right operand's panels are packed again for each block (a second copy of the
// weight per block, against a left operand re-read once per panel). Measured (matmul_bench,
// AVX2 code, haswell OpenBLAS peers, one thread, --kernel-b with the rows blocked by hand,
// B/A): 2048^3 blocks of 1024 rows (8 MiB) 1.05, of 512 rows 1.06 but 1024 x 2048 x 2048 0.97
// there (the weight copied twice for one block's worth of rows); unblocked, 2048 x 2048 x
// 1024 ran 0.98 of the best OpenBLAS and 2048^3 0.94 where 2048 x 1024 x 2048 (an 8 MiB left
// operand) ran 1.00.
constexpr int64_t kLeftBlockBytes = 8 << 20;
// The least constant k the rule blocks rows for (blocks of at most 2048 rows). The split
// doubles the tiles' code (whole blocks and the last, partial one), so a shallower operand,
// whose blocks would hold more rows than a model's token counts usually reach, keeps one.
constexpr int64_t kLeftBlockLeastDepth = 1024;

// Rows of such a block (a multiple of the tile's rows), or 0 when every row count the matmul
// runs at fits one block, or k is symbolic or below kLeftBlockLeastDepth (the knob
// matmul.left_block_rows: -1 the rule's, 0 none).
int64_t LeftBlockRows(const PrimExpr& rows, const PrimExpr& depth, int64_t row_tile, const CpuScheduleOptions& options) {
  int64_t block = options.knobs.matmul.left_block_rows;
  if (block < 0) {
    std::optional<int64_t> k = depth.as_int();
    if (!k || *k < kLeftBlockLeastDepth) return 0;
    block = kLeftBlockBytes / (*k * 4);
  }
  block = block / row_tile * row_tile;
  if (block < row_tile) return 0;
  Analyzer analyzer;
  return analyzer.CanProveLE(rows, IntImm(rows.dtype(), block)) ? 0 : block;
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
  const MatmulKnobs& knobs = options.knobs.matmul;
  std::optional<int64_t> j_extent = j->extent.as_int();
  const int64_t col_vectors = RegisterTileVectors(options, k->extent.as_int(), j_extent);
  // The wide tiles of few rows are made of vector pairs whatever the col_vectors knob says
  // (the few-rows condition, ManyRowsCondition, is sized from them); WideStepVectors.
  const int64_t step_vectors = WideStepVectors(options);
  const int64_t pair_tile = std::min<int64_t>(64, step_vectors * static_cast<int64_t>(options.vector_lanes));
  // Few rows (m < 64): wide column tiles of 8 vector pairs whose accumulators live in L1.
  // Each row of the right operand is then read as one 1 KiB run per tile (instead of 128
  // bytes per 32-column panel), which a memory-bound GEMV wants; the rows of the tile reuse
  // it from L1. Measured (matmul_bench, 4096 x 4096 weight): 8 pairs beat 4 and 16, and up
  // to m = 32 the wide tiles beat the register tile.
  const int64_t wide_tile = 8 * pair_tile;  // the least width that takes wide tiles
  // The wide tile's columns are split into vector pairs only once the write-back has moved
  // under the tile loop (it wants one dense column loop to do so).
  bool few = options.matmul_few_rows && cache && pair_tile >= 2 && !(j_extent && *j_extent <= wide_tile);
  // Register tile: 8 x 2 vectors on AVX-512 (32 registers), 6 x 2 on AVX2 (16: 12
  // accumulators, 2 loads, 1 broadcast) or 4 x 3 there for large operands
  // (RegisterTileVectors). A wide tile's rows: kFewRowsGroup.
  const int64_t row_tile = knobs.row_tile > 0 ? knobs.row_tile
                           : few ? (options.matmul_packed_wide ? kPackedWideRows : kFewRowsGroup)
                                 : RegisterTileRows(options, col_vectors);
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
  const int64_t col_tile = few ? pair_tile : col_vectors * options.vector_lanes;
  const int64_t wide_columns = WideTileColumns(j_extent, wide_tile, options);
  if (few) {
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(j->loop_var.name(), {-1, wide_columns}));
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
  // k x col_tile panel of the right operand from cache while the rows move on. The
  // rows_outer knob keeps the rows outermost instead (see cpu_knobs.h).
  const bool rows_outer = knobs.rows_outer && !few;
  if (i_split && j_split && !rows_outer) std::swap(outer[outer.size() - 1], outer[outer.size() - 2]);
  std::vector<std::string> order = outer;
  order.push_back(k->loop_var.name());
  order.push_back(ii);
  order.push_back(ji);
  KILN_RETURN_IF_ERROR(s->Reorder(order));
  const VarNode* col = nest.block->iter_vars[nest.iter_of_loop[n - 2]].var.get();
  const VarNode* row = nest.block->iter_vars[nest.iter_of_loop[n - 3]].var.get();
  std::string panel = cache && i_split && j_split ? PanelOperand(nest.block, row, col) : std::string();
  // Inside an iterating block (a row block of the attention kernel) a packed panel would be
  // copied again for every iteration of that block, for its few row tiles: by default the
  // panel is read in place there. (AVX2 code, the attention's product with v over row
  // blocks of 24, n = 1024, 2 threads: packed, the kernel ran 2.12-2.15 ms per call against
  // 1.94-2.10 for the unfused kernels; read in place, 1.93 against 1.93.)
  const bool repacked = InsideIteratingBlock(s->func(), nest.block->name);
  bool pack = !few && !rows_outer && !panel.empty() &&
              (knobs.pack < 0 ? !repacked && PackPays(i->extent, j->extent, k->extent, col_tile, options,
                                                      FoldsIntoPacking(s->func(), nest.block->name, panel))
                              : knobs.pack == 1);
  std::string tile_loop, pack_loop;
  if (pack) {
    // Each parallel iteration owns a column panel: it packs the right operand's panel
    // once and runs every row tile over it.
    std::vector<std::string> panels(outer.begin(), outer.end() - 1);
    const int64_t block_rows = LeftBlockRows(i->extent, k->extent, row_tile, options);
    if (block_rows > 0 && n == 3 && i_split && j_split) {
      // Blocks of the left operand's rows outermost (serial), each walking every panel.
      KILN_ASSIGN_OR_RETURN(std::vector<std::string> blocks, s->Split(outer.back(), {-1, block_rows / row_tile}));
      KILN_RETURN_IF_ERROR(s->Reorder({blocks[0], panels.back(), blocks[1]}));
      outer.back() = blocks[1];
    }
    KILN_RETURN_IF_ERROR(ParallelOver(s, panels, options, &pack_loop));
    tile_loop = outer.back();
  } else {
    KILN_RETURN_IF_ERROR(ParallelOver(s, outer, options, &tile_loop));
  }
  bool contiguous = ColumnsContiguous(nest.block, col);
  if (few && !contiguous) return absl::FailedPreconditionError("cpu schedule: wide tiles want contiguous columns");
  if (!few && j_extent.value_or(col_tile) >= 2 && contiguous) {
    KILN_RETURN_IF_ERROR(j_split ? VectorizeInWholeVectors(s, ji, col_tile, options) : s->Vectorize(ji));
  }
  if (!few && knobs.unroll_rows) KILN_RETURN_IF_ERROR(s->Unroll(ii));
  KILN_RETURN_IF_ERROR(s->DecomposeReduction(nest.block->name, k->loop_var.name()).status());
  if (!few) UnrollK(s, k->loop_var.name(), k->extent, knobs.k_unroll);
  if (write_back.empty()) return absl::OkStatus();
  if (!tile_loop.empty()) {
    KILN_RETURN_IF_ERROR(s->ReverseComputeAt(write_back, tile_loop));
    KILN_RETURN_IF_ERROR(ScheduleWriteBack(s, write_back, options));
    std::string sub_tiles;
    if (few && wide_columns > wide_tile) {
      // The update walks the tile in sub-tiles of `wide_tile` columns, each over all of k
      // (split only now: the write-back moves under the tile loop with one dense column loop).
      KILN_ASSIGN_OR_RETURN(std::vector<std::string> loops, s->GetLoops(nest.block->name));
      const size_t n_loops = loops.size();
      KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(loops.back(), {-1, wide_tile}));
      KILN_RETURN_IF_ERROR(s->Reorder({parts[0], loops[n_loops - 3], loops[n_loops - 2]}));
      sub_tiles = parts[0];
    }
    if (few) {  // the init, the update and the write-back walk the wide tile in vector pairs
      for (const std::string& b : {nest.block->name + "_init", nest.block->name, write_back}) {
        KILN_ASSIGN_OR_RETURN(std::vector<std::string> loops, s->GetLoops(b));
        KILN_ASSIGN_OR_RETURN(std::vector<std::string> parts, s->Split(loops.back(), {-1, col_tile}));
        if (b == nest.block->name && step_vectors != 2) {
          // A vector loop of 3 x 8 lanes becomes element-wise code on AVX2 (LLVM splits a
          // 24-lane vector lane by lane): the step's vectors are an unrolled loop instead.
          KILN_ASSIGN_OR_RETURN(parts[1], UnrollVectors(s, parts[1], options));
        }
        KILN_RETURN_IF_ERROR(s->Vectorize(parts[1]));
      }
      KILN_RETURN_IF_ERROR(
          BlockWideTileOverK(s, nest.block->name, k->extent, sub_tiles, PanelOperand(nest.block, row, col), options));
    }
    if (pack) return PackPanel(s, nest.block->name, panel, pack_loop);
    return absl::OkStatus();
  }
  // No tile loop (rows and columns each fit one tile): a cache of constant size is the tile.
  KILN_ASSIGN_OR_RETURN(Stmt block, FindBlock(s->func(), nest.block->name, "cpu schedule"));
  for (const PrimExpr& d : block.as<BlockNode>()->body.as<BufferStoreNode>()->buffer->shape) {
    if (!d.as_int()) return absl::FailedPreconditionError("cpu schedule: the accumulator has a symbolic size");
  }
  return absl::OkStatus();
}

}  // namespace

// Rows of the weight the row-edge copy of a wide tile reads together (as parallel streams),
// each row's accumulators loaded and stored once per group. 8, as OpenBLAS's sgemv kernels
// take 8 columns a pass: the accumulators of a tile of n / threads columns do not stay in
// L1 while the weight streams through it, so each group costs a round trip to L2, and 8
// halves those of 4. Measured with a C++ loop of the same shape (4096 x 4096 weight, one
// thread, AVX-512 Zen, loaded machine, best of 40 alternating runs): 23.2-23.9 GB/s with 8
// rows against 21.3-22.3 with 4 (16: 22.5-24.5).
constexpr int64_t kEdgeRowsPerStep = 8;

namespace {

// Whether `outer` directly encloses `inner` and some spatial variable of `block` is bound to
// both `outer` and `with` (outer walks the same index as `with`).
bool EnclosesInIndex(const BlockNode* block, const ForNode* outer, const ForNode* inner, const ForNode* with) {
  if (!outer || outer->body.get() != static_cast<const StmtNode*>(inner)) return false;
  bool found = false;
  for (const IterVar& iv : block->iter_vars) {
    found |= iv.type == IterType::kSpatial && UsesVar(iv.value, outer->loop_var.get()) &&
             UsesVar(iv.value, with->loop_var.get());
  }
  return found;
}

// The distance ahead, in elements, that a wide tile's row edge prefetches the weight rows it
// streams (knob matmul.stream_prefetch; -1: the rule's). 256 floats, 1 KiB: hand-written TIR
// GEMVs over a 4096 x 4096 weight on one thread, with the prefetch 128, 256 or 512 ahead
// against the same loop without, ran 1.13-1.19x faster on AVX-512 and 1.10-1.19x on AVX2
// (the distance hardly mattered); in the rule M = 1 ran 1.23x faster (docs/schedule.md).
int64_t StreamPrefetchDistance(const CpuScheduleOptions& options) {
  const int knob = options.knobs.matmul.stream_prefetch;
  return knob >= 0 ? knob : 256;
}

// The per-row streaming order of a row edge (rows, [sub-tiles,] pairs, weight rows of one
// pass unrolled, vector) prefetches the weight a distance ahead of each pair (PrefetchAhead
// at the pairs loop; only in the first row of each row step, whose reads bring the pair's
// weight into cache for the other rows). The weight is the operand the primitive accepts:
// the non-local read that the pair's vectors walk along its rows. `s` is unchanged when
// the knob is 0 or nothing fits.
void PrefetchEdgeStream(Schedule* s, const std::string& block, const std::string& pairs, const std::string& rows,
                        const CpuScheduleOptions& options) {
  const int64_t distance = StreamPrefetchDistance(options);
  if (distance <= 0) return;
  absl::StatusOr<Stmt> found = FindBlock(s->func(), block, "");
  if (!found.ok()) return;
  for (const BufferNode* read : AccessesOf(found->as<BlockNode>()->body).reads) {
    if (read->scope == "local") continue;
    Schedule attempt = *s;
    if (attempt.PrefetchAhead(block, pairs, read->name, distance, rows).ok()) {
      *s = std::move(attempt);
      return;
    }
  }
}

// The row-edge copy of a k-blocked wide tile with row steps, its k block split as `k_steps`
// (k_1 / 8, 8), as (k_0, row steps, k_1 / 8, [sub-tiles,] pairs, 8 unrolled, rows unrolled,
// vector), each row step checking its rows once (GuardSteps). A whole step (all its rows in
// range: from M = 4 with AVX2's 4-row steps) keeps its rows' accumulator pairs in registers
// over the 8 k steps and loads each piece of the weight once for all its rows, as a full
// tile does, where the per-row order loaded it once per row (AVX2 M = 8: one 32-byte load
// of the weight from L2 per FMA). The partial step (the GEMV's) takes the per-row streaming
// order below it: (k_1 / 8, rows, [sub-tiles,] pairs, 8 unrolled), and its prefetch
// (PrefetchEdgeStream). False, with `s` in any
// state, when a step fails (the caller then keeps its copy from before).
bool StreamEdgeInWholeSteps(Schedule* s, const std::string& block, const std::string& row_steps,
                            const std::vector<std::string>& k_steps, const std::string& sub_tiles,
                            const std::string& pairs, const std::string& rows, const CpuScheduleOptions& options) {
  std::vector<std::string> order = {row_steps, k_steps[0]};
  if (!sub_tiles.empty()) order.push_back(sub_tiles);
  for (const std::string& l : {pairs, k_steps[1], rows}) order.push_back(l);
  if (!s->Reorder(order).ok() || !s->Unroll(k_steps[1]).ok()) return false;
  std::set<std::string> before;
  ForEachStmt(s->func()->body, [&](const Stmt& st) {
    if (const auto* b = st.as<BlockNode>()) before.insert(b->name);
  });
  if (!s->GuardSteps(row_steps).ok()) return false;
  std::string partial;  // the copy GuardSteps made of the block for the partial step
  ForEachStmt(s->func()->body, [&](const Stmt& st) {
    const auto* b = st.as<BlockNode>();
    if (b && !before.count(b->name) && b->name.rfind(block + "_part", 0) == 0) partial = b->name;
  });
  if (partial.empty()) return false;
  absl::StatusOr<std::vector<std::string>> loops = s->GetLoops(partial);
  const size_t inner = sub_tiles.empty() ? 5 : 6;  // k_1 / 8, [sub-tiles,] pairs, 8, rows, vector
  if (!loops.ok() || loops->size() < inner) return false;
  const std::vector<std::string> part(loops->end() - inner, loops->end());
  std::vector<std::string> streaming = {part[0], part[inner - 2]};
  streaming.insert(streaming.end(), part.begin() + 1, part.end() - 2);
  if (!s->Reorder(streaming).ok()) return false;
  PrefetchEdgeStream(s, partial, part[inner - 4], part[inner - 2], options);
  return true;
}

// The most rows of a row step that the row edge runs as whole steps (StreamEdgeInWholeSteps):
// AVX2's 4. AVX-512's 8-row steps stay per row: LLVM hoists a whole step's 8 x 8 broadcasts
// of the left operand out of the pair loop and spills them (and the step's addresses), and
// M = 8 ran slower than per row (AVX-512 Zen, one thread, Kiln / best OpenBLAS in four
// alternating runs at load 16: 1.20-1.60 per row, 0.80-1.42 in whole steps).
constexpr int64_t kWholeEdgeStepMostRows = 4;

// The predicated reduction blocks of the row-edge copies (`.._edge`), by name.
std::vector<std::string> RowEdgeBlocks(const PrimFunc& func) {
  std::vector<std::string> edges;
  ForEachStmt(func->body, [&](const Stmt& st) {
    const auto* b = st.as<BlockNode>();
    if (b && b->predicate.defined() && b->is_reduction() && b->name.size() > 5 &&
        b->name.compare(b->name.size() - 5, 5, "_edge") == 0) {
      edges.push_back(b->name);
    }
  });
  return edges;
}

}  // namespace

namespace {

// The loops of a wide tile's row-edge update that the streaming orders rearrange, by name:
// (.., k_0, [sub-tiles,] [row steps,] pairs, k_1, rows unrolled, vector).
struct WideEdgeLoops {
  std::string k_blocks;   // k_0, directly above the rest; "" when not found
  std::string sub_tiles;  // "" when the tile has one
  std::string row_steps;  // "" when the tile's rows are one step
  std::string pairs, k, rows;
  int64_t k_extent = 0;
  PrimExpr rows_extent;   // the rows of one step
  int64_t tile_rows = 0;  // the rows of the tile (row steps x rows); 0 when not constant
};

// The row-edge update `name`'s loops in `s` (its get_loops enters the trace), when it has
// the wide tile's shape; nullopt otherwise.
std::optional<WideEdgeLoops> FindWideEdgeLoops(Schedule* s, const std::string& name,
                                               const CpuScheduleOptions& options) {
  absl::StatusOr<std::vector<std::string>> loops = s->GetLoops(name);
  if (!loops.ok() || loops->size() < 4) return std::nullopt;
  const size_t n = loops->size();
  auto loop = [&](size_t i) -> const ForNode* {
    absl::StatusOr<Stmt> f = FindLoop(s->func(), (*loops)[i], "");
    return f.ok() ? f->as<ForNode>() : nullptr;
  };
  const ForNode *pairs = loop(n - 4), *k = loop(n - 3), *rows = loop(n - 2), *vector = loop(n - 1);
  if (!pairs || !k || !rows || !vector || pairs->for_kind != ForKind::kSerial ||
      k->for_kind != ForKind::kSerial || k->extent.as_int() != WideTileKBlock(options) ||
      rows->for_kind != ForKind::kUnrolled || vector->for_kind != ForKind::kVectorized) {
    return std::nullopt;
  }
  absl::StatusOr<Stmt> block = FindBlock(s->func(), name, "");
  if (!block.ok()) return std::nullopt;
  WideEdgeLoops edge;
  edge.pairs = (*loops)[n - 4];
  edge.k = (*loops)[n - 3];
  edge.rows = (*loops)[n - 2];
  edge.k_extent = *k->extent.as_int();
  edge.rows_extent = rows->extent;
  edge.tile_rows = rows->extent.as_int().value_or(0);
  // Above the pairs, when the tile has them: its row steps (BlockWideTileOverK; in the row
  // index), then its sub-tiles (in the column index, with the pairs), then the k blocks.
  size_t above = n - 4;
  const ForNode* row_steps = above >= 1 ? loop(above - 1) : nullptr;
  if (EnclosesInIndex(block->as<BlockNode>(), row_steps, pairs, rows)) {
    edge.row_steps = (*loops)[--above];
    std::optional<int64_t> steps = row_steps->extent.as_int();
    edge.tile_rows = steps ? edge.tile_rows * *steps : 0;  // 0: not known
  }
  const ForNode* below = edge.row_steps.empty() ? pairs : row_steps;
  const ForNode* sub_tiles = above >= 1 ? loop(above - 1) : nullptr;
  if (EnclosesInIndex(block->as<BlockNode>(), sub_tiles, below, pairs)) {
    edge.sub_tiles = (*loops)[--above];
    below = sub_tiles;
  }
  const ForNode* k_blocks = above >= 1 ? loop(above - 1) : nullptr;
  if (k_blocks && k_blocks->for_kind == ForKind::kSerial &&
      k_blocks->body.get() == static_cast<const StmtNode*>(below)) {
    edge.k_blocks = (*loops)[above - 1];
  }
  return edge;
}

// The row count a row-edge block's predicate compares its rows with (`row < m`: m).
std::optional<PrimExpr> EdgeRowCount(const Schedule& s, const std::string& name, const std::string& rows) {
  absl::StatusOr<Stmt> block = FindBlock(s.func(), name, "");
  absl::StatusOr<Stmt> row_loop = FindLoop(s.func(), rows, "");
  if (!block.ok() || !row_loop.ok()) return std::nullopt;
  std::optional<PrimExpr> count;
  const VarNode* row = row_loop->as<ForNode>()->loop_var.get();
  std::vector<PrimExpr> pending = {block->as<BlockNode>()->predicate};
  while (!pending.empty()) {
    PrimExpr e = pending.back();
    pending.pop_back();
    const auto* binary = e.as<BinaryNode>();
    if (!binary) continue;
    if (binary->kind() == ExprKind::kAnd) {
      pending.push_back(binary->a);
      pending.push_back(binary->b);
    } else if (binary->kind() == ExprKind::kLT && UsesVar(binary->a, row) && !UsesVar(binary->b, row)) {
      count = binary->b;
    }
  }
  return count;
}

// The streaming order of a row-edge update: (k_0, [row steps,] [k passes,] rows, [sub-tiles,]
// pairs, weight rows of one pass), the last unrolled by the caller. `passes` is "" when one
// pass covers the k block.
std::vector<std::string> StreamingOrder(const WideEdgeLoops& edge, const std::string& passes,
                                        const std::string& per_pass) {
  std::vector<std::string> order;
  if (!edge.row_steps.empty()) order.push_back(edge.row_steps);
  if (!passes.empty()) order.push_back(passes);
  order.push_back(edge.rows);
  if (!edge.sub_tiles.empty()) order.push_back(edge.sub_tiles);
  order.push_back(edge.pairs);
  order.push_back(per_pass);
  return order;
}

// The one-row version of the row edge (knob matmul.gemv_rows_per_pass): the edge's update
// nest is versioned on `floormod(m, tile rows) == 1` (BranchOn scoped to its k-block loop,
// so nothing else of the function is copied), and the version where only its first row is
// in range (the GEMV) reads `rows_per_pass` weight rows per pass across the whole tile:
// (k_0, [row steps,] [k_1 / rows_per_pass,] rows, [sub-tiles,] pairs, rows_per_pass
// unrolled, vector); each pair's accumulators go to L2 and back once per pass, half as often
// with 16 as with the other row counts' 8. The copy (`_else`) is returned for the order of
// the other row counts; nullopt with `s` unchanged when the edge does not have the shape.
// A constant row count takes the one-row order alone (returns "") or nothing.
std::optional<std::string> SplitOffOneRowEdge(Schedule* s, const std::string& name,
                                              const CpuScheduleOptions& options) {
  const int64_t per_pass = options.knobs.matmul.gemv_rows_per_pass;
  if (per_pass <= 0) return std::nullopt;
  Schedule attempt = *s;
  std::optional<WideEdgeLoops> edge = FindWideEdgeLoops(&attempt, name, options);
  if (!edge || edge->k_blocks.empty() || edge->k_extent % per_pass != 0 || edge->tile_rows < 2) return std::nullopt;
  std::optional<PrimExpr> rows = EdgeRowCount(attempt, name, edge->rows);
  if (!rows) return std::nullopt;
  std::string rest;
  if (std::optional<int64_t> m = rows->as_int()) {
    if (*m % edge->tile_rows != 1) return std::nullopt;
  } else {
    const PrimExpr one_row = EQ(FloorMod(*rows, IntImm(rows->dtype(), edge->tile_rows)), IntImm(rows->dtype(), 1));
    absl::StatusOr<std::vector<std::string>> copy = attempt.BranchOn(one_row, edge->k_blocks);
    if (!copy.ok() || copy->size() != 1) return std::nullopt;
    rest = (*copy)[0];
  }
  std::string outer, inner = edge->k;
  if (per_pass < edge->k_extent) {
    absl::StatusOr<std::vector<std::string>> passes = attempt.Split(edge->k, {-1, per_pass});
    if (!passes.ok()) return std::nullopt;
    outer = (*passes)[0];
    inner = (*passes)[1];
  }
  if (!attempt.Reorder(StreamingOrder(*edge, outer, inner)).ok() || !attempt.Unroll(inner).ok()) return std::nullopt;
  PrefetchEdgeStream(&attempt, name, edge->pairs, edge->rows, options);
  *s = std::move(attempt);
  return rest;
}

// One row-edge update in the streaming order of the other row counts (above).
void StreamWideEdgeTile(Schedule* s, const std::string& name, const CpuScheduleOptions& options) {
  // Everything on a copy, kept only when the reorder is made (get_loops enters the trace).
  Schedule attempt = *s;
  std::optional<WideEdgeLoops> edge = FindWideEdgeLoops(&attempt, name, options);
  if (!edge) return;
  absl::StatusOr<std::vector<std::string>> steps = attempt.Split(edge->k, {-1, kEdgeRowsPerStep});
  if (!steps.ok()) return;
  if (!edge->row_steps.empty() && edge->rows_extent.as_int() <= kWholeEdgeStepMostRows) {
    Schedule stepped = attempt;
    if (StreamEdgeInWholeSteps(&stepped, name, edge->row_steps, *steps, edge->sub_tiles, edge->pairs, edge->rows,
                               options)) {
      *s = std::move(stepped);
      return;
    }
  }
  // Row steps outermost: each step's rows read the block's weight rows across the whole
  // tile (a step whose rows are all out of range skips them once per 8 weight rows).
  if (attempt.Reorder(StreamingOrder(*edge, (*steps)[0], (*steps)[1])).ok() && attempt.Unroll((*steps)[1]).ok()) {
    PrefetchEdgeStream(&attempt, name, edge->pairs, edge->rows, options);
    *s = std::move(attempt);
  }
}

}  // namespace

void StreamWideEdgeTiles(Schedule* s, const CpuScheduleOptions& options) {
  for (const std::string& name : RowEdgeBlocks(s->func())) {
    std::optional<std::string> rest = SplitOffOneRowEdge(s, name, options);
    if (rest && rest->empty()) continue;  // a constant row count: the one-row order only
    StreamWideEdgeTile(s, rest ? *rest : name, options);
  }
}

namespace {

// Each step of the row edge reads the tile's k x columns panel again: from L1 when it fits
// there (the smallest L1 of the targets, Zen 3's and Intel's, is 32 KiB). A panel from L2
// fed AVX2's few rows of a 1024 x 24 panel slower in steps (75 rows: +3 %).
constexpr int64_t kEdgeStepPanelMostBytes = 32 * 1024;

// The loops of a register tile's row-edge update (.., k, rows unrolled, [vectors unrolled,]
// lanes vectorized), when `block` has that shape: a reduction over constant k whose
// accumulator is indexed by the loops below k alone (it lives in registers across k, unlike
// a wide tile's, indexed by its vector pairs above k), the rows a spatial index of constant
// even extent of at least 4, the k x columns panel at most kEdgeStepPanelMostBytes.
struct RegisterEdgeLoops {
  const ForNode* k = nullptr;
  const ForNode* rows = nullptr;
};

std::optional<RegisterEdgeLoops> FindRegisterEdgeLoops(const PrimFunc& func, const BlockNode* block) {
  std::vector<Stmt> above = LoopsAbove(func->body, block);
  size_t n = above.size();
  if (n < 3 || above[n - 1].as<ForNode>()->for_kind != ForKind::kVectorized) return std::nullopt;
  if (n >= 4 && above[n - 2].as<ForNode>()->for_kind == ForKind::kUnrolled &&
      above[n - 3].as<ForNode>()->for_kind == ForKind::kUnrolled) {
    --n;  // AVX2's steps of three vectors: an unrolled vector loop between rows and lanes
  }
  RegisterEdgeLoops edge{above[n - 3].as<ForNode>(), above[n - 2].as<ForNode>()};
  std::optional<int64_t> rows = edge.rows->extent.as_int(), k = edge.k->extent.as_int();
  if (edge.k->for_kind != ForKind::kSerial || edge.rows->for_kind != ForKind::kUnrolled || !rows || *rows < 4 ||
      *rows % 2 != 0 || !k) {
    return std::nullopt;
  }
  const auto* store = block->body.as<BufferStoreNode>();
  if (!store || store->buffer->scope != "local") return std::nullopt;
  int64_t panel_bytes = *k * store->buffer->dtype.bytes();
  for (size_t i = n - 1; i < above.size(); ++i) panel_bytes *= above[i].as<ForNode>()->extent.as_int().value_or(1 << 20);
  if (panel_bytes > kEdgeStepPanelMostBytes) return std::nullopt;
  bool rows_spatial = false, k_reduces = false;
  for (const IterVar& iv : block->iter_vars) {
    rows_spatial |= iv.type == IterType::kSpatial && UsesVar(iv.value, edge.rows->loop_var.get());
    k_reduces |= iv.type == IterType::kReduction && UsesVar(iv.value, edge.k->loop_var.get());
  }
  if (!rows_spatial || !k_reduces) return std::nullopt;
  for (size_t i = 0; i + 3 <= n; ++i) {
    for (const PrimExpr& index : store->indices) {
      if (UsesVar(index, above[i].as<ForNode>()->loop_var.get())) return std::nullopt;
    }
  }
  return edge;
}

}  // namespace

void StepRegisterEdgeRows(Schedule* s, const CpuScheduleOptions& options) {
  if (!options.knobs.matmul.edge_steps) return;
  for (const std::string& name : RowEdgeBlocks(s->func())) {
    absl::StatusOr<Stmt> found = FindBlock(s->func(), name, "");
    if (!found.ok()) continue;
    std::optional<RegisterEdgeLoops> edge = FindRegisterEdgeLoops(s->func(), found->as<BlockNode>());
    if (!edge) continue;
    // On a copy, kept only when every step is made and the partial step is its lone row (a
    // step testing both its rows in every k iteration is slower than the tile was). The
    // steps loop stays serial: unrolled, as fast and 30 % more to compile.
    Schedule attempt = *s;
    const std::string k = edge->k->loop_var.name(), rows = edge->rows->loop_var.name();
    absl::StatusOr<std::vector<std::string>> steps = attempt.Split(rows, {-1, 2});
    if (!steps.ok() || !attempt.Reorder({(*steps)[0], k}).ok() || !attempt.Unroll((*steps)[1]).ok() ||
        !attempt.GuardSteps((*steps)[0]).ok()) {
      continue;
    }
    absl::StatusOr<Stmt> part = FindLoop(attempt.func(), (*steps)[1] + "_part", "");
    if (!part.ok() || part->as<ForNode>()->extent.as_int() != 1) continue;
    *s = std::move(attempt);
  }
}

void GuardPackedWideEdgeSteps(Schedule* s) {
  for (const std::string& name : RowEdgeBlocks(s->func())) {
    absl::StatusOr<Stmt> found = FindBlock(s->func(), name, "");
    if (!found.ok()) continue;
    const auto* block = found->as<BlockNode>();
    // Packed: the update reads a local buffer besides its accumulator (the k block's panel).
    const BufferNode* accumulator = block->body.as<BufferStoreNode>()->buffer.get();
    bool packed = false;
    for (const BufferNode* r : AccessesOf(block->body).reads) packed |= r != accumulator && r->scope == "local";
    if (!packed) continue;
    std::vector<Stmt> loops = LoopsAbove(s->func()->body, block);
    // (.., row steps, pairs, k_1, rows, [step's vectors,] vector): a step of more than two
    // vectors has its unrolled vector loop below the rows (WideStepVectors).
    const size_t n = loops.size() - (loops.size() >= 6 && loops[loops.size() - 3].as<ForNode>()->for_kind ==
                                                               ForKind::kUnrolled);
    if (n < 5) continue;
    const auto* row_steps = loops[n - 5].as<ForNode>();
    const auto* pairs = loops[n - 4].as<ForNode>();
    const auto* rows = loops[n - 2].as<ForNode>();
    if (rows->for_kind != ForKind::kUnrolled || !EnclosesInIndex(block, row_steps, pairs, rows)) continue;
    // A failure leaves the copy testing each row at every step, as it was.
    (void)s->GuardSteps(row_steps->loop_var.name());
  }
}

namespace {

// The loops from which PrefetchNext walks to the next panel of the copy `copy` (its own
// loops' chain starting at `first_own`): up from the panel loop while each loop is serial,
// of constant extent, directly inside the next one up, and moves the panel (the copy's
// source index uses it). Empty when the panel loop itself does not qualify (a parallel one:
// each thread copies its own panels, in an order no thread knows ahead).
std::vector<const ForNode*> WalkedToNextPanel(const BlockNode* copy, const std::vector<Stmt>& loops, size_t first_own) {
  const auto* source = copy->body.as<BufferStoreNode>()->value.as<BufferLoadNode>();
  auto moves_panel = [&](const ForNode* l) {
    if (l->for_kind != ForKind::kSerial || !l->extent.as_int()) return false;
    for (const PrimExpr& index : source->indices) {
      if (UsesVar(InLoopTerms(copy, index), l->loop_var.get())) return true;
    }
    return false;
  };
  std::vector<const ForNode*> walked;
  for (size_t i = first_own; i-- > 0;) {
    const auto* l = loops[i].as<ForNode>();
    if (!moves_panel(l) || (!walked.empty() && l->body.get() != walked.front())) break;
    walked.insert(walked.begin(), l);
  }
  return walked;
}

// The first index of the block's read of `panel` (its row), in loop terms; undefined when
// the block does not read it.
PrimExpr PanelRowIndex(const BlockNode* block, const BufferNode* panel) {
  class FirstIndex : public StmtExprVisitor {
   public:
    explicit FirstIndex(const BufferNode* b) : b_(b) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      if (op->buffer.get() == b_ && !op->indices.empty()) index = op->indices[0];
      StmtExprVisitor::VisitExpr_(op, self);
    }
    PrimExpr index;

   private:
    const BufferNode* b_;
  } first(panel);
  first.VisitStmt(block->body);
  return first.index.defined() ? InLoopTerms(block, first.index) : PrimExpr();
}

// Whether the walked loops move the panel along its rows (some index of the copy's source
// uses both the copy's row loop and a walked loop): a k block of the weight, copied per k
// block and sub-tile and reused by at most a tile's row steps, whose copy is a fifth of
// the packed wide tiles' time. A panel copied once per column panel for all of k (PackPanel)
// is reused by every row tile; prefetching it measured no gain (1024 x 4096 x 1024, AVX2 and
// AVX-512 code, 1 thread: within the noise, +-5 %), so it is left alone.
bool MovesAlongRows(const BlockNode* copy, const ForNode* rows, const std::vector<const ForNode*>& walked) {
  std::vector<const VarNode*> walked_vars;
  for (const ForNode* l : walked) walked_vars.push_back(l->loop_var.get());
  for (const PrimExpr& index : copy->body.as<BufferStoreNode>()->value.as<BufferLoadNode>()->indices) {
    PrimExpr in_loops = InLoopTerms(copy, index);
    if (UsesVar(in_loops, rows->loop_var.get()) && UsesAnyVar(in_loops, walked_vars)) return true;
  }
  return false;
}

// PrefetchNext's cycle for the reader's loop `into` (0: all its iterations share the
// rows). In a row edge the steps are guarded by their rows (GuardSteps: an `if` on the
// outermost loop between the panel loop and `into`), and only the steps holding rows run:
// sharing the rows between all 16 steps of a 64-row tile left half of each panel to the
// copy at M = 32. The rows are then shared between the steps that always run, those of the
// least rows a packed tile takes (PackedWideLeastRows in steps of WideTileStepRows: 8 of 4
// rows), the later steps repeating them. (A tile of fewer rows, from knobs, still
// prefetches part of each panel.)
int64_t EdgeCycle(const Stmt& body, const ForNode* panel_loop, const Stmt& into, const CpuScheduleOptions& options) {
  std::vector<Stmt> path = AncestorsOf(body, into.get());
  path.push_back(into);
  auto panel_at = std::find_if(path.begin(), path.end(), [&](const Stmt& st) { return st.get() == panel_loop; });
  if (panel_at == path.end()) return 0;
  std::vector<const ForNode*> spread;
  bool guarded = false;
  for (auto st = panel_at + 1; st != path.end(); ++st) {
    if (const auto* l = st->as<ForNode>()) spread.push_back(l);
    if (const auto* branch = st->as<IfThenElseNode>(); branch && !spread.empty()) {
      guarded |= UsesVar(branch->condition, spread.front()->loop_var.get());
    }
  }
  if (!guarded) return 0;
  const int64_t step_rows = WideTileStepRows(options);
  const int64_t least_steps = (PackedWideLeastRows(options) + step_rows - 1) / step_rows;
  int64_t cycle = 1;
  for (size_t i = 0; i < spread.size(); ++i) {
    std::optional<int64_t> extent = spread[i]->extent.as_int();
    if (!extent) return 0;
    cycle *= i == 0 ? std::min(*extent, least_steps) : *extent;
  }
  return cycle;
}

}  // namespace

void PrefetchPanels(Schedule* s, const CpuScheduleOptions& options) {
  std::vector<const BlockNode*> copies;
  ForEachStmt(s->func()->body, [&](const Stmt& st) {
    const auto* b = st.as<BlockNode>();
    const auto* store = b ? b->body.as<BufferStoreNode>() : nullptr;
    const auto* load = store ? store->value.as<BufferLoadNode>() : nullptr;
    if (load && store->buffer->scope == "local" && load->buffer->scope != "local") copies.push_back(b);
  });
  // Names, not nodes: each PrefetchNext rewrites the function.
  std::vector<std::string> names;
  for (const BlockNode* c : copies) names.push_back(c->name);
  for (const std::string& name : names) {
    absl::StatusOr<Stmt> found = FindBlock(s->func(), name, "");
    if (!found.ok()) continue;
    const auto* copy = found->as<BlockNode>();
    const Stmt body = s->func()->body;  // a copy: PrefetchNext replaces the function
    std::vector<Stmt> loops = LoopsAbove(body, copy);
    Stmt own_root = NestRoot(body, copy);
    auto own = std::find_if(loops.begin(), loops.end(), [&](const Stmt& l) { return l.get() == own_root.get(); });
    if (own == loops.end() || own == loops.begin()) continue;
    std::vector<const ForNode*> walked = WalkedToNextPanel(copy, loops, own - loops.begin());
    if (walked.empty() || !MovesAlongRows(copy, own->as<ForNode>(), walked)) continue;
    // Each reader's loop just above the one that walks the panel's rows (the register
    // steps' k): its iterations share out the prefetches of the next panel's rows. (A row
    // edge reads the panel in two versions, whole steps and the partial one.)
    const BufferNode* panel_buffer = copy->body.as<BufferStoreNode>()->buffer.get();
    const std::string outer = walked.front()->loop_var.name();
    const ForNode* panel_loop = walked.back();
    std::vector<std::pair<std::string, int64_t>> intos;  // (into, cycle)
    for (const std::string& reader_name : ReadersOf(s->func(), panel_buffer)) {
      absl::StatusOr<Stmt> reader_stmt = FindBlock(s->func(), reader_name, "");
      if (reader_name == name || !reader_stmt.ok()) continue;
      const auto* reader = reader_stmt->as<BlockNode>();
      PrimExpr row_index = PanelRowIndex(reader, panel_buffer);
      if (!row_index.defined()) continue;
      std::vector<Stmt> reader_loops = LoopsAbove(body, reader);
      auto panel_at = std::find_if(reader_loops.begin(), reader_loops.end(),
                                   [&](const Stmt& l) { return l.get() == panel_loop; });
      if (panel_at == reader_loops.end()) continue;
      Stmt into;
      for (auto l = panel_at + 1; l != reader_loops.end(); ++l) {
        if (UsesVar(row_index, l->as<ForNode>()->loop_var.get())) break;
        into = *l;
      }
      if (into.defined()) intos.emplace_back(into.as<ForNode>()->loop_var.name(), EdgeCycle(body, panel_loop, into, options));
    }
    // Refused (a symbolic count of row tiles to share the rows between, say): that reader's
    // copy waits on memory as before.
    for (const auto& [into, cycle] : intos) (void)s->PrefetchNext(name, outer, into, cycle);
  }
}

namespace {

// Whether the few-rows branch of this matmul takes packed wide tiles from
// PackedWideLeastRows rows on: AVX2 (8 lanes, 16 registers: the unpacked tiles' 4-row
// steps and k blocks of 16 reach 0.6-0.8 of OpenBLAS there) and AVX-512 (16 lanes: the
// unpacked tiles' 16-row groups each stream the whole weight, 0.86-0.94 of OpenBLAS at M =
// 32-64 where the packed tiles reach 1.2-1.4), over a constant weight whose k is more than
// one k block and a multiple of it (a model's), its columns constant. On AVX-512 only for a
// symbolic row count (a model's tokens): a constant one is a convolution's output channels
// (64 x 576 . 576 x 3136 for a 3 x 3 conv of 64 channels), whose register tiles fold the
// im2col into their packing, which the k blocks' panel copy does not (the columns would be
// written out whole: 2-2.5x slower, PackPays).
bool PackedWideApplies(const PlainNest& nest, const CpuScheduleOptions& options) {
  const size_t n = nest.loops.size();
  std::optional<int64_t> k = nest.loops[n - 1]->extent.as_int();
  std::optional<int64_t> cols = nest.loops[n - 2]->extent.as_int();
  if (options.vector_lanes == 16 && nest.loops[n - 3]->extent.as_int()) return false;
  const int64_t k_block =
      options.knobs.matmul.wide_k_block > 0 ? options.knobs.matmul.wide_k_block : PackedWideKBlock(options);
  return (options.vector_lanes == 8 || options.vector_lanes == 16) && options.knobs.matmul.few_rows && k && cols &&
         *k > k_block && *k % k_block == 0;
}

// The row count from which register tiles replace wide tiles: the knob's, else 64, or one
// more than the packed tile's rows where the packed wide tiles apply (M = 64 fills one
// packed tile; AVX2's register tiles there pack their k x 16 panel 64 bytes per weight row).
int64_t ManyRows(const PlainNest& nest, const CpuScheduleOptions& options) {
  if (options.knobs.matmul.many_rows > 0) return options.knobs.matmul.many_rows;
  return PackedWideApplies(nest, options) ? kPackedWideRows + 1 : 64;
}

// The least number of columns that takes wide tiles (8 vector pairs).
int64_t WideTileWidth(const CpuScheduleOptions& options) {
  return 8 * std::min<int64_t>(64, 2 * static_cast<int64_t>(options.vector_lanes));
}

// Whether some sizes the matmul can run at have few rows (m < 64) and wide columns (n at
// least the wide tile): false when constant sizes say otherwise, when the shape variables'
// bounds rule it out (`where n <= 128`), or when the columns never exceed the rows. The last is the attention scores' (n x d) . (d x n): versioning them on
// `n >= 64 || n < 256`, which always holds, compiled a branch that never runs.
bool FewRowsPossible(const PlainNest& nest, const CpuScheduleOptions& options) {
  const PrimExpr& rows = nest.loops[nest.loops.size() - 3]->extent;
  const PrimExpr& cols = nest.loops[nest.loops.size() - 2]->extent;
  const int64_t wide_tile = WideTileWidth(options);
  const int64_t many_rows = ManyRows(nest, options);
  if (!options.knobs.matmul.few_rows) return false;
  Analyzer analyzer;
  if (analyzer.CanProveLE(IntImm(rows.dtype(), many_rows), rows)) return false;
  if (analyzer.CanProveLE(cols, IntImm(cols.dtype(), wide_tile))) return false;
  // cols <= rows: wide columns (cols >= wide_tile >= 64) imply many rows.
  return !(wide_tile >= many_rows && analyzer.CanProveLE(cols, rows));
}

}  // namespace

std::optional<PrimExpr> ManyRowsCondition(const PlainNest& nest, const CpuScheduleOptions& options) {
  const PrimExpr& rows = nest.loops[nest.loops.size() - 3]->extent;
  const PrimExpr& cols = nest.loops[nest.loops.size() - 2]->extent;
  const int64_t wide_tile = WideTileWidth(options);
  std::optional<int64_t> m = rows.as_int(), n = cols.as_int();
  if (!FewRowsPossible(nest, options) || options.matmul_few_rows || (m && n)) return std::nullopt;
  PrimExpr many;
  if (!m) many = GE(rows, IntImm(rows.dtype(), ManyRows(nest, options)));
  if (!n) {
    PrimExpr narrow = LT(cols, IntImm(cols.dtype(), wide_tile));
    many = many.defined() ? Or(many, narrow) : narrow;
  }
  return many;
}

std::optional<PrimExpr> PackedRowsCondition(const PlainNest& nest, const CpuScheduleOptions& options) {
  const PrimExpr& rows = nest.loops[nest.loops.size() - 3]->extent;
  // Packed tiles from more rows than the many-rows version starts at would never run.
  if (rows.as_int() || !FewRowsPossible(nest, options) || !PackedWideApplies(nest, options) ||
      PackedWideLeastRows(options) >= ManyRows(nest, options)) {
    return std::nullopt;
  }
  return GE(rows, IntImm(rows.dtype(), PackedWideLeastRows(options)));
}

std::optional<PrimExpr> PackedPanelRowsCondition(const PrimFunc& func, const PlainNest& nest,
                                                 const CpuScheduleOptions& options) {
  const size_t n = nest.loops.size();
  const PrimExpr& rows = nest.loops[n - 3]->extent;
  const PrimExpr& cols = nest.loops[n - 2]->extent;
  const MatmulKnobs& knobs = options.knobs.matmul;
  if (rows.as_int() || !cols.as_int() || knobs.pack >= 0 || knobs.rows_outer || FewRowsPossible(nest, options) ||
      InsideIteratingBlock(func, nest.block->name)) {
    return std::nullopt;
  }
  // The register tile's columns, as ScheduleMatmul picks them (no wide tiles: !FewRowsPossible).
  const int64_t col_tile = RegisterTileVectors(options, nest.loops[n - 1]->extent.as_int(), cols.as_int()) *
                           static_cast<int64_t>(options.vector_lanes);
  const VarNode* row = nest.block->iter_vars[nest.iter_of_loop[n - 3]].var.get();
  const VarNode* col = nest.block->iter_vars[nest.iter_of_loop[n - 2]].var.get();
  const std::string panel = PanelOperand(nest.block, row, col);
  // Where the panel's producer folds into the packing, the copy is the producer's work
  // anyway: packed at every row count, no version.
  if (panel.empty() || FoldsIntoPacking(func, nest.block->name, panel) ||
      !PackPays(rows, cols, nest.loops[n - 1]->extent, col_tile, options, /*folds_producer=*/false)) {
    return std::nullopt;
  }
  std::optional<int64_t> least = NarrowPackLeastRows(*cols.as_int(), nest.loops[n - 1]->extent, options);
  if (!least) return std::nullopt;
  return GE(rows, IntImm(rows.dtype(), *least));
}

absl::Status ScheduleMatmulRule(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& options,
                                std::vector<PrimExpr>* many_conditions) {
  std::optional<int64_t> m = nest.loops[nest.loops.size() - 3]->extent.as_int();
  std::optional<int64_t> n = nest.loops[nest.loops.size() - 2]->extent.as_int();
  bool few_possible = FewRowsPossible(nest, options);
  CpuScheduleOptions matmul_options = options;
  if (!options.knobs.matmul.parallel) matmul_options.num_threads = 1;
  matmul_options.matmul_few_rows = few_possible && (options.matmul_few_rows || (m && n));
  matmul_options.matmul_packed_wide =
      matmul_options.matmul_few_rows && PackedWideApplies(nest, options) &&
      (m ? *m >= PackedWideLeastRows(options) && *m < ManyRows(nest, options) : options.matmul_packed_wide);
  Schedule attempt = *s;
  absl::Status status = ScheduleMatmul(&attempt, nest, matmul_options, /*cache=*/true);
  if (status.ok()) {
    *s = attempt;
    if (std::optional<PrimExpr> many = ManyRowsCondition(nest, options)) many_conditions->push_back(*many);
    return status;
  }
  return ScheduleMatmul(s, nest, matmul_options, /*cache=*/false);
}

}  // namespace kiln::tir::cpu_rules
