// The GPU rule for matmuls with operand tiles staged in shared memory. A thread block
// computes a BM x BN tile of the output (BM = TY * TM rows, BN = TX * TN columns); its
// TY x TX threads (threadIdx.y, threadIdx.x) each own a TM x TN register tile. The
// reduction runs in steps of BK: at each step the block's threads copy the A tile
// (BM x BK) and the B tile (BK x BN) from device memory into shared memory together, and
// every thread then accumulates its register tile from the shared tiles, so each element
// loaded from device memory is used by TX (A) or TY (B) threads, TN or TM times each.
//
//   for blk in blockIdx.x:                      -- batch, row tiles, column tiles, fused
//     for ty in threadIdx.y: for tx in threadIdx.x:
//       allocate A_shared, B_shared: shared
//       C_local[TM, TN] = 0
//       for ko in serial(ceil(K / BK)):
//         A_shared = the block's A tile at ko   -- CacheReadShared (guarded at M and K tails)
//         B_shared = the block's B tile at ko
//         for ki, ii, ji (unrolled): C_local[ii, ji] += A_shared[..] * B_shared[..]
//       C[..] = C_local                         -- guarded at the M and N tails
//
// As scheduled, each thread (run serially) copies the whole tile itself; lowering
// (transform::LowerCooperativeCopies) spreads the copies over the threads between two
// storage_sync() barriers that every thread reaches (the guards sit on the copies).
// Floating-point sums run in the serial order of k for each element, as the CPU reference.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/gpu_rules.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::gpu_rules {

namespace {

constexpr int64_t kRegisterTile = 4;  // TM = TN: outputs per thread in each direction
constexpr int64_t kThreadsPerSide = 16;  // TY = TX at most: 256 threads
constexpr int64_t kReductionStep = 16;   // BK at most

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The buffers the block reads other than its output, in the order of first read.
std::vector<std::string> OperandNames(const BlockNode* block) {
  class Loads : public StmtExprVisitor {
   public:
    explicit Loads(const BufferNode* output) : output_(output) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      const std::string& name = op->buffer->name;
      if (op->buffer.get() != output_ && std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
      }
      StmtExprVisitor::VisitExpr_(op, self);
    }
    std::vector<std::string> names;

   private:
    const BufferNode* output_;
  };
  const auto* store = block->body.as<BufferStoreNode>();
  Loads loads(store ? store->buffer.get() : nullptr);
  loads.VisitStmt(block->body);
  return loads.names;
}

// Bytes of shared memory the function allocates (one kernel: the rule's).
int64_t SharedBytes(const PrimFunc& func) {
  int64_t bytes = 0;
  schedule_internal::ForEachStmt(func->body, [&](const Stmt& s) {
    const auto* alloc = s.as<AllocateNode>();
    if (!alloc || alloc->buffer->scope != "shared") return;
    int64_t b = alloc->buffer->dtype.bytes();
    for (const PrimExpr& d : alloc->buffer->shape) b *= d.as_int().value_or(0);
    bytes += b;
  });
  return bytes;
}

// The largest tile count per side, at most `cap`, that a constant extent needs.
int64_t Fit(const PrimExpr& extent, int64_t per_thread, int64_t cap) {
  std::optional<int64_t> e = extent.as_int();
  return e ? std::clamp<int64_t>(CeilDiv(*e, per_thread), 1, cap) : cap;
}

}  // namespace

absl::Status ScheduleGpuMatmulShared(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options) {
  if (!cpu_rules::IsMatmulLike(nest)) return absl::InvalidArgumentError("gpu matmul: not a matmul");
  const size_t n = nest.loops.size();
  const ForNode* row = nest.loops[n - 3];
  const ForNode* col = nest.loops[n - 2];
  const ForNode* red = nest.loops[n - 1];
  // A register tile covers a short constant side already: no reuse across threads there.
  for (const ForNode* side : {row, col}) {
    std::optional<int64_t> e = side->extent.as_int();
    if (e && *e <= kRegisterTile) return absl::InvalidArgumentError("gpu matmul: a side fits one register tile");
  }
  // The thread grid: 16 x 16 where the target allows 256 threads, halved (rows first)
  // below that, and no more threads than a short constant side needs.
  int64_t ty = kThreadsPerSide, tx = kThreadsPerSide;
  while (ty * tx > options.threads_per_block && ty * tx > 1) (ty >= tx ? ty : tx) /= 2;
  ty = Fit(row->extent, kRegisterTile, ty);
  tx = Fit(col->extent, kRegisterTile, tx);
  // The reduction step: at most the extent; halved until the two tiles fit the target's
  // shared memory (counted at 4 bytes an element; the exact total is checked below).
  int64_t bk = std::min<int64_t>(kReductionStep, red->extent.as_int().value_or(kReductionStep));
  const int64_t bm = ty * kRegisterTile, bn = tx * kRegisterTile;
  while (bk > 1 && bk * (bm + bn) * 4 > options.shared_memory_per_block) bk /= 2;

  // Names, not nodes: the rewrites below replace the nodes.
  const std::string block = nest.block->name;
  const std::vector<std::string> operands = OperandNames(nest.block);
  const std::string row_loop = row->loop_var.name(), col_loop = col->loop_var.name(), red_loop = red->loop_var.name();
  std::vector<std::string> blocks;  // batch loops, then the row and column tiles of blocks
  for (size_t b = 0; b + 3 < n; ++b) blocks.push_back(nest.loops[b]->loop_var.name());
  KILN_ASSIGN_OR_RETURN(std::string write_back, s->CacheWrite(block));
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> rows, s->Split(row_loop, {-1, ty, kRegisterTile}));
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> cols, s->Split(col_loop, {-1, tx, kRegisterTile}));
  blocks.push_back(rows[0]);
  blocks.push_back(cols[0]);
  std::vector<std::string> order = blocks;
  for (const std::string& l : {rows[1], cols[1], red_loop, rows[2], cols[2]}) order.push_back(l);
  KILN_RETURN_IF_ERROR(s->Reorder(order));
  // The init before the whole reduction, then the reduction split into steps (its tail
  // predicate then guards the update only).
  KILN_RETURN_IF_ERROR(s->DecomposeReduction(block, red_loop).status());
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> steps, s->Split(red_loop, {-1, bk}));
  std::string grid = blocks[0];
  if (blocks.size() > 1) {
    KILN_ASSIGN_OR_RETURN(grid, s->Fuse(blocks));
  }
  KILN_RETURN_IF_ERROR(s->Bind(grid, "blockIdx.x"));
  KILN_RETURN_IF_ERROR(s->Bind(rows[1], "threadIdx.y"));
  KILN_RETURN_IF_ERROR(s->Bind(cols[1], "threadIdx.x"));
  KILN_RETURN_IF_ERROR(s->Unroll(rows[2]));
  KILN_RETURN_IF_ERROR(s->Unroll(cols[2]));
  // The write-back of each thread's tile, in that thread: the accumulator shrinks to the tile.
  KILN_RETURN_IF_ERROR(s->ReverseComputeAt(write_back, cols[1]));
  // The operand tiles into shared memory; an operand whose tile cannot be bounded (an index
  // not affine in k, say) is read from device memory as before.
  int staged = 0;
  for (const std::string& operand : operands) {
    staged += s->CacheReadShared(block, operand, steps[0]).ok();
  }
  if (staged == 0) return absl::InvalidArgumentError("gpu matmul: no operand tile could be staged in shared memory");
  const int64_t bytes = SharedBytes(s->func());
  if (bytes > options.shared_memory_per_block) {
    return absl::InvalidArgumentError(absl::StrCat("gpu matmul: the shared tiles take ", bytes,
                                                   " bytes; the target allows ", options.shared_memory_per_block));
  }
  return absl::OkStatus();
}

}  // namespace kiln::tir::gpu_rules
