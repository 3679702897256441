// The GPU rule for matmuls with few rows against a weight (an LLM's decode step: one row
// per sequence): `out[.., i, j] += x[.., i, k] * w(j, k)` where the weight term w reads no
// row variable. It covers R.matmul (float32, float16) and quantized_matmul, whose weight
// term decodes the quantized blocks where it is used (relax/op/legalize_quantize.cc).
//
// With few rows no operand tile is reused across threads (gpu_matmul_shared.cc's tiles
// would idle), and one output per thread leaves most of the GPU empty (a 1 x 4096 output
// is 4096 threads: 16 blocks of 256) while each thread walks all of k alone. Here the
// threads of a block split k and combine their partial sums (lower_cross_thread_reduction:
// each group of threads over one output gets its own slots in shared memory), a block
// computes several outputs, and the grid has one block per row and group of columns (rows
// innermost: the rows of one group of columns run together and share its weights in L2). Which
// threads split k follows the weight's layout, so that a warp's loads are consecutive:
//  - k innermost in the weight (x @ w^T, every quantized format): threadIdx.x (a warp)
//    strides k, each thread reading every 32nd element, a warp 32 consecutive ones;
//    threadIdx.y picks the block's columns (threads_per_block / 32 of them);
//  - columns innermost (x @ w, w of k x n): threadIdx.x picks 8 consecutive columns (one
//    32-byte memory sector of a row of w), threadIdx.y strides k.
// The serial loop over k's chunks stays outside the thread loop, so run serially (the TIR
// interpreter) each sum still runs in the order of k.
#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/gpu_rules.h"
#include "tir/stmt_functor.h"
#include "tir/transform/lower_cross_thread_reduction.h"

namespace kiln::tir::gpu_rules {

namespace {

using schedule_internal::UsesAnyVar;
using schedule_internal::UsesVar;

// Whether some load in `e` reads with the last index depending on one of `vars`.
bool SomeLoadIsInnermostIn(const PrimExpr& e, const std::vector<const VarNode*>& vars) {
  class Finder : public StmtExprVisitor {
   public:
    explicit Finder(const std::vector<const VarNode*>& vars) : vars_(vars) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      if (!op->indices.empty() && UsesAnyVar(op->indices.back(), vars_)) found = true;
      StmtExprVisitor::VisitExpr_(op, self);
    }
    bool found = false;

   private:
    const std::vector<const VarNode*>& vars_;
  };
  Finder finder(vars);
  finder.VisitExpr(e);
  return finder.found;
}

// The factors of a product (a quantized weight is itself a product: quant x scale).
void Factors(const PrimExpr& e, std::vector<PrimExpr>* out) {
  if (const auto* mul = e.as<BinaryNode>(); mul && mul->kind() == ExprKind::kMul) {
    Factors(mul->a, out);
    Factors(mul->b, out);
    return;
  }
  out->push_back(e);
}

// Columns innermost: the consecutive columns a block's threads take, 32 bytes of float32
// (one memory sector of a row of the weight). More would make fewer blocks: a 4096-column
// weight gives 512 blocks of 8 columns (an H100 has 132 SMs), each warp reading 4 rows'
// sectors, the block's 32 groups of 8 striding k.
constexpr int64_t kSectorColumns = 8;

}  // namespace

absl::StatusOr<FewRowsLayout> FewRowsMatmulLayout(const cpu_rules::PlainNest& nest) {
  const BlockNode* block = nest.block;
  std::optional<transform::ReductionCombiner> combiner = transform::CrossThreadCombinerOf(block);
  if (!block->is_reduction() || !combiner || combiner->op != ExprKind::kAdd || !combiner->output->dtype.is_float()) {
    return absl::InvalidArgumentError("gpu few rows: not a float sum");
  }
  // Spatial loops (batch.., rows, columns), then the reduction loops.
  size_t spatial = 0;
  while (spatial < nest.loops.size() && !cpu_rules::IsReductionLoop(nest, spatial)) ++spatial;
  if (spatial < 2 || spatial == nest.loops.size()) return absl::InvalidArgumentError("gpu few rows: no rows and columns");
  for (size_t i = spatial; i < nest.loops.size(); ++i) {
    if (!cpu_rules::IsReductionLoop(nest, i)) return absl::InvalidArgumentError("gpu few rows: a spatial loop inside k");
  }
  const VarNode* row = block->iter_vars[nest.iter_of_loop[spatial - 2]].var.get();
  const VarNode* col = block->iter_vars[nest.iter_of_loop[spatial - 1]].var.get();
  std::vector<const VarNode*> ks;
  for (const IterVar& iv : block->iter_vars) {
    if (iv.type == IterType::kReduction) ks.push_back(iv.var.get());
  }
  // The output is out[.., row, col].
  const std::vector<PrimExpr>& out = combiner->indices;
  if (out.size() < 2 || out[out.size() - 2].get() != row || out.back().get() != col) {
    return absl::InvalidArgumentError("gpu few rows: the output is not indexed [.., row, column]");
  }
  // The update: activations (the row, no column) times a weight (the column, no row).
  std::vector<PrimExpr> factors;
  Factors(combiner->update, &factors);
  bool weight = false, activation = false, k_innermost = false;
  for (const PrimExpr& f : factors) {
    const bool uses_row = UsesVar(f, row), uses_col = UsesVar(f, col);
    if (uses_row && uses_col) return absl::InvalidArgumentError("gpu few rows: a factor reads both row and column");
    if (uses_col && UsesAnyVar(f, ks)) {
      weight = true;
      k_innermost = k_innermost || SomeLoadIsInnermostIn(f, ks);
    }
    activation = activation || uses_row;
  }
  if (!weight || !activation) return absl::InvalidArgumentError("gpu few rows: no activation row times weight column");
  FewRowsLayout layout;
  layout.spatial_loops = spatial;
  layout.k_innermost = k_innermost;
  return layout;
}

absl::Status ScheduleGpuFewRows(Schedule* s, const cpu_rules::PlainNest& nest, const GpuScheduleOptions& options) {
  KILN_ASSIGN_OR_RETURN(FewRowsLayout layout, FewRowsMatmulLayout(nest));
  const int64_t warp = std::max(1, options.warp_size);
  const int64_t threads = options.threads_per_block;
  if (threads < warp) return absl::InvalidArgumentError("gpu few rows: fewer threads per block than a warp");
  // The partials of one block's threads (4 bytes each for float32) fit its shared memory.
  const int64_t partial_bytes = nest.block->body.as<BufferStoreNode>()->buffer->dtype.bytes();
  if (threads * partial_bytes > options.shared_memory_per_block) {
    return absl::InvalidArgumentError("gpu few rows: the partials do not fit shared memory");
  }
  const size_t n = nest.loops.size();
  const size_t spatial = layout.spatial_loops;
  const ForNode* col_loop = nest.loops[spatial - 1];
  // k innermost: a warp strides k, the block's warps take threads / warp columns. Columns
  // innermost: kSectorColumns threads take consecutive columns, the rest of the block
  // strides k. A constant column count smaller than that takes fewer column threads (a
  // power of two, still covering it); the threads freed split k.
  int64_t col_threads = layout.k_innermost ? threads / warp : std::min(kSectorColumns, threads);
  int64_t k_threads = threads / col_threads;
  if (std::optional<int64_t> cols = col_loop->extent.as_int()) {
    while (col_threads > 1 && col_threads / 2 >= *cols) col_threads /= 2;
    if (!layout.k_innermost) k_threads = threads / col_threads;
  }
  int64_t k_extent = 1;  // 0: symbolic
  for (size_t i = spatial; i < n; ++i) {
    std::optional<int64_t> e = nest.loops[i]->extent.as_int();
    k_extent = e && k_extent > 0 ? k_extent * *e : 0;
  }
  while (k_extent > 0 && k_threads > 1 && k_threads / 2 >= k_extent) k_threads /= 2;  // a short constant k
  std::vector<std::string> reduction;
  for (size_t i = spatial; i < n; ++i) reduction.push_back(nest.loops[i]->loop_var.name());
  std::string k = reduction[0];
  if (reduction.size() > 1) {
    KILN_ASSIGN_OR_RETURN(k, s->Fuse(reduction));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> k_parts, s->Split(k, {-1, k_threads}));
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> col_parts,
                        s->Split(col_loop->loop_var.name(), {-1, col_threads}));
  // The grid: batch loops, column groups, then rows innermost, so that the blocks of all
  // rows over one group of columns run side by side and read its weights from device
  // memory once (the other rows find them in L2).
  std::vector<std::string> outer;
  for (size_t i = 0; i + 2 < spatial; ++i) outer.push_back(nest.loops[i]->loop_var.name());
  outer.push_back(col_parts[0]);
  outer.push_back(nest.loops[spatial - 2]->loop_var.name());
  std::vector<std::string> order = outer;
  order.insert(order.end(), {col_parts[1], k_parts[0], k_parts[1]});
  KILN_RETURN_IF_ERROR(s->Reorder(order));
  std::string grid = outer[0];
  if (outer.size() > 1) {
    KILN_ASSIGN_OR_RETURN(grid, s->Fuse(outer));
  }
  KILN_RETURN_IF_ERROR(s->Bind(grid, "blockIdx.x"));
  KILN_RETURN_IF_ERROR(s->Bind(col_parts[1], layout.k_innermost ? "threadIdx.y" : "threadIdx.x"));
  return s->Bind(k_parts[1], layout.k_innermost ? "threadIdx.x" : "threadIdx.y");
}

}  // namespace kiln::tir::gpu_rules
