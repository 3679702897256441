// Matmuls tiled through shared memory on the GPU (tir/schedule_rules/gpu_matmul_shared.cc,
// Schedule::CacheReadShared, tir/transform/lower_cooperative_copies.h): the lowered kernel
// loads its operand tiles cooperatively between two barriers that no thread-dependent guard
// encloses, both emitters declare the tiles in shared memory, the tile sizes follow the
// target's limits and the verifier rejects tiles above them, and the errors a user can
// cause. The numbers are checked on lavapipe by the op harness (vulkan_op_harness_test.cc:
// matmul, batched and transposed matmuls, linear layers against the reference evaluator)
// and serially by gpu_schedule_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/cuda_codegen.h"
#include "codegen/spirv_codegen.h"
#include "tests/codegen/gpu_kernels.h"
#include "tests/tir/schedule_workloads.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/gpu_schedule.h"
#include "tir/stmt_functor.h"
#include "tir/target.h"
#include "tir/text_parser.h"
#include "tir/text_printer.h"
#include "tir/transform/lower_cooperative_copies.h"
#include "tir/transform/pipeline.h"

namespace kiln {
namespace {

tir::PrimFunc Parse(const std::string& text) {
  absl::StatusOr<tir::ParsedPrimFunc> parsed = tir::ParsePrimFunc(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status() << text;
  return parsed.ok() ? parsed->func : tir::PrimFunc();
}

// A batched matmul C[b] = A[b] @ B (B shared by the batch), sizes as given.
tir::PrimFunc BatchMatmul(const std::string& b, const std::string& m, const std::string& n, const std::string& k) {
  return Parse(R"(
prim_func @f(A: Buffer(()" + b + ", " + m + ", " + k + R"(), float32), B: Buffer(()" + k + ", " + n +
               R"(), float32), C: Buffer(()" + b + ", " + m + ", " + n + R"(), float32)) {
  for q in serial(0, )" + b + R"() {
    for i in serial(0, )" + m + R"() {
      for j in serial(0, )" + n + R"() {
        for r in serial(0, )" + k + R"() {
          block "C" {
            vq = spatial()" + b + R"(, q)
            vi = spatial()" + m + R"(, i)
            vj = spatial()" + n + R"(, j)
            vk = reduce()" + k + R"(, r)
            init {
              C[vq, vi, vj] = 0.0
            }
            C[vq, vi, vj] = C[vq, vi, vj] + A[vq, vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
})");
}

// Each storage_sync() call, with whether an `if` whose condition depends on the thread
// index encloses it inside the kernel (then some threads would skip a barrier the others
// wait at). A condition on the block index alone (transform::SpreadBlockGrid's guard) is
// the same for every thread of a block and keeps the barrier safe.
struct Barriers {
  int count = 0;
  int guarded = 0;
};
Barriers BarriersOf(const tir::PrimFunc& kernel) {
  class Walker : public tir::StmtExprVisitor {
   public:
    void VisitStmt_(const tir::ForNode* op, const tir::Stmt& self) override {
      if (op->thread_tag.rfind("threadIdx", 0) == 0) per_thread_.push_back(op->loop_var.get());
      tir::StmtExprVisitor::VisitStmt_(op, self);
    }
    void VisitStmt_(const tir::LetStmtNode* op, const tir::Stmt& self) override {
      if (PerThread(op->value)) per_thread_.push_back(op->var.get());
      tir::StmtExprVisitor::VisitStmt_(op, self);
    }
    void VisitStmt_(const tir::IfThenElseNode* op, const tir::Stmt& self) override {
      const bool divergent = PerThread(op->condition);
      depth_ += divergent;
      tir::StmtExprVisitor::VisitStmt_(op, self);
      depth_ -= divergent;
    }
    void VisitExpr_(const tir::CallNode* op, const tir::PrimExpr& self) override {
      if (op->op == "storage_sync") {
        ++result.count;
        result.guarded += depth_ > 0;
      }
      tir::StmtExprVisitor::VisitExpr_(op, self);
    }
    Barriers result;

   private:
    bool PerThread(const tir::PrimExpr& e) const {
      return std::any_of(per_thread_.begin(), per_thread_.end(),
                         [&](const tir::VarNode* v) { return tir::schedule_internal::UsesVar(e, v); });
    }
    std::vector<const tir::VarNode*> per_thread_;
    int depth_ = 0;
  } walker;
  walker.VisitStmt(kernel->body);
  return walker.result;
}

TEST(GpuMatmulSharedTest, TilesLoadCooperativelyBetweenUnguardedBarriers) {
  for (const tir::PrimFunc& f : {BatchMatmul("b", "m", "n", "k"), BatchMatmul("3", "37", "67", "1031")}) {
    absl::StatusOr<std::vector<tir::PrimFunc>> kernels = ScheduledKernels(f, tir::Target::Vulkan());
    ASSERT_TRUE(kernels.ok()) << kernels.status();
    ASSERT_FALSE(kernels->empty());
    int shared_kernels = 0;
    for (const tir::PrimFunc& kernel : *kernels) {
      // One barrier before the tiles are overwritten, one after they are complete; the
      // M, N and K tails are guarded around the loads and stores, never around a barrier.
      // (A symbolic row count also gets a kernel for few rows, k split over 32 threads
      // (gpu_few_rows.cc): a barrier after the partials, then 5 in the tree.)
      const std::string text = tir::PrintPrimFunc(kernel);
      const bool shared = text.find("allocate A_shared") != std::string::npos;
      const bool split_k = text.find("C_combine") != std::string::npos;
      shared_kernels += shared;
      Barriers barriers = BarriersOf(kernel);
      EXPECT_EQ(barriers.count, shared ? 2 : split_k ? 6 : 0);
      EXPECT_EQ(barriers.guarded, 0);
      if (shared) {
        EXPECT_THAT(text, ::testing::HasSubstr("allocate B_shared"));
        EXPECT_THAT(text, ::testing::HasSubstr("threadIdx.y"));
      }
      absl::StatusOr<codegen::SpirvModule> spirv = codegen::EmitSpirvModule({{"matmul", kernel}});
      EXPECT_TRUE(spirv.ok()) << spirv.status();
    }
    EXPECT_GT(shared_kernels, 0);
  }
  absl::StatusOr<std::vector<tir::PrimFunc>> cuda_kernels =
      ScheduledKernels(BatchMatmul("b", "m", "n", "k"), tir::Target::Cuda());
  ASSERT_TRUE(cuda_kernels.ok()) << cuda_kernels.status();
  absl::StatusOr<codegen::CudaSource> cuda = codegen::EmitCudaSource({{"matmul", (*cuda_kernels)[0]}});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_THAT(cuda->code, ::testing::HasSubstr("__shared__ float A_shared"));
  EXPECT_THAT(cuda->code, ::testing::HasSubstr("__shared__ float B_shared"));
  EXPECT_THAT(cuda->code, ::testing::HasSubstr("__syncthreads();"));
  EXPECT_THAT(cuda->code, ::testing::HasSubstr("threadIdx.y"));
  // The launch bound counts the whole 16 x 16 block: a bound of 16 (threadIdx.x's extent
  // alone) made every launch of this kernel fail on a GPU with "invalid argument".
  EXPECT_THAT(cuda->code, ::testing::HasSubstr("__launch_bounds__(256)"));
}

// The bytes of shared memory a scheduled function allocates.
int64_t SharedBytes(const tir::PrimFunc& f) {
  int64_t bytes = 0;
  tir::schedule_internal::ForEachStmt(f->body, [&](const tir::Stmt& s) {
    const auto* alloc = s.as<tir::AllocateNode>();
    if (!alloc || alloc->buffer->scope != "shared") return;
    int64_t b = alloc->buffer->dtype.bytes();
    for (const tir::PrimExpr& d : alloc->buffer->shape) b *= d.as_int().value_or(0);
    bytes += b;
  });
  return bytes;
}

TEST(GpuMatmulSharedTest, FewRowsAtRunTimeSplitK) {
  // A symbolic row count: `if (m >= 32)` the shared tiles, else k split across the threads
  // of a block (gpu_few_rows.cc: a decode step's one row would leave 63 of a tile's 64 rows
  // idle); no register tile.
  std::string trace;
  absl::StatusOr<tir::PrimFunc> f = tir::ScheduleForGpu(BatchMatmul("2", "m", "256", "784"), tir::Target::Vulkan(), &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(trace, ::testing::HasSubstr("branch_on"));
  const std::string text = tir::PrintPrimFunc(*f, "f");
  EXPECT_THAT(text, ::testing::HasSubstr("if m >= 32"));
  EXPECT_THAT(text, ::testing::HasSubstr("allocate A_shared"));
  EXPECT_THAT(text, ::testing::HasSubstr("block \"C_else\""));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("C_local_1")));
  EXPECT_TRUE(tir::VerifyGpuFunction(*f, tir::Target::Vulkan()).ok());
  // The lowered else-branch combines 32 partials per column, 8 columns per block.
  absl::StatusOr<std::vector<tir::PrimFunc>> kernels = ScheduledKernels(BatchMatmul("2", "m", "256", "784"), tir::Target::Vulkan());
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  bool combined = false;
  for (const tir::PrimFunc& kernel : *kernels) {
    const std::string k = tir::PrintPrimFunc(kernel);
    combined = combined || k.find("C_combine: Buffer((256,), float32, scope=\"shared\")") != std::string::npos;
  }
  EXPECT_TRUE(combined);
}

TEST(GpuMatmulSharedTest, TileSizesFollowTheTargetsLimits) {
  tir::PrimFunc f = BatchMatmul("2", "m", "n", "k");
  // The default: 16 x 16 threads of 4 x 4 outputs, steps of 16: (64 + 64) * 16 floats.
  absl::StatusOr<tir::PrimFunc> wide = tir::ScheduleForGpu(f, tir::Target::Vulkan());
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(SharedBytes(*wide), (64 + 64) * 16 * 4);
  // Fewer threads and less shared memory: smaller tiles, accepted by the verifier.
  tir::Target small = tir::Target::Vulkan();
  small.max_threads_per_block = 64;
  small.max_shared_memory_per_block = 2048;
  absl::StatusOr<tir::PrimFunc> narrow = tir::ScheduleForGpu(f, small);
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_GT(SharedBytes(*narrow), 0);
  EXPECT_LE(SharedBytes(*narrow), 2048);
  EXPECT_TRUE(tir::VerifyGpuFunction(*narrow, small).ok());
  // The default tiles on that target: the verifier names the kernel's threads and bytes.
  absl::Status rejected = tir::VerifyGpuFunction(*wide, small);
  EXPECT_THAT(rejected.message(), ::testing::HasSubstr("runs 256 threads per block; the target allows 64"));
  small.max_threads_per_block = 256;
  rejected = tir::VerifyGpuFunction(*wide, small);
  EXPECT_THAT(rejected.message(), ::testing::HasSubstr("uses 8192 bytes of shared memory per block; the target allows 2048"));
  // No room for even the smallest tiles: register tiles read from device memory instead.
  small.max_shared_memory_per_block = 64;
  std::string trace;
  absl::StatusOr<tir::PrimFunc> none = tir::ScheduleForGpu(f, small, &trace);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(SharedBytes(*none), 0);
  EXPECT_THAT(trace, ::testing::Not(::testing::HasSubstr("cache_read_shared")));
}

TEST(GpuMatmulSharedTest, CacheReadSharedNeedsAThreadBlockAndAConstantTile) {
  absl::StatusOr<tir::ParsedPrimFunc> parsed = tir::ParsePrimFunc(tir::testing::kMatmul);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  tir::Schedule s(parsed->func);
  // No threadIdx loop around the loop: there is no block of threads to share the tile.
  EXPECT_THAT(s.CacheReadShared("C", "A", "r").status().message(),
              ::testing::HasSubstr("no loop bound to threadIdx encloses the loop"));
  // Rows bound to threads, the reduction over a symbolic k: the row panel has no constant size.
  ASSERT_TRUE(s.Split("i", {-1, 8}).ok());
  ASSERT_TRUE(s.Bind("i_1", "threadIdx.x").ok());
  EXPECT_THAT(s.CacheReadShared("C", "A", "j").status().message(),
              ::testing::HasSubstr("has no constant size (shared memory is sized at compile time)"));
  // Per step of the reduction: an 8 x 4 tile of A, shared by the 8 threads.
  ASSERT_TRUE(s.Split("r", {-1, 4}).ok());
  absl::StatusOr<std::string> copy = s.CacheReadShared("C", "A", "r_0");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_THAT(tir::PrintPrimFunc(s.func(), "f"),
              ::testing::HasSubstr("allocate A_shared: Buffer((8, 4), float32, scope=\"shared\")"));
  EXPECT_THAT(s.trace().ToString(), ::testing::HasSubstr("cache_read_shared"));
}

TEST(GpuMatmulSharedTest, ACopyUnderAThreadDependentConditionIsAnError) {
  // Only some threads would reach the barriers around the copy: a deadlock on a GPU.
  tir::PrimFunc f = Parse(R"(
prim_func @f(A: Buffer((64,), float32), B: Buffer((64,), float32)) {
  for t in thread_binding(0, 64, "threadIdx.x") {
    allocate S: Buffer((64,), float32, scope="shared") {
      if t < 32 {
        for a in serial(0, 64) {
          block "S_cache" {
            v = spatial(64, a)
            S[a] = A[v]
          }
        }
      }
      B[t] = S[63 - t]
    }
  }
})");
  absl::StatusOr<tir::PrimFunc> lowered = tir::transform::LowerCooperativeCopies(f);
  EXPECT_THAT(lowered.status().message(),
              ::testing::HasSubstr("the shared copy 'S_cache' lies under a condition or a loop that depends on the thread"));
}

}  // namespace
}  // namespace kiln
