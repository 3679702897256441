// Cross-thread reductions on the GPU (tir/transform/lower_cross_thread_reduction.h and the
// reduction rule of tir/schedule_rules/gpu_reduction.cc): which blocks combine across
// threads, what the lowering makes of them (barriers outside every guard, shared memory
// counted by the verifier), both emitters' barrier, and the errors a user can cause. The
// numbers are checked on lavapipe by the op harness (vulkan_op_harness_test.cc: sum, mean,
// max, min, softmax, layer/rms norm, vector dot products against the reference evaluator).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "codegen/cuda_codegen.h"
#include "codegen/spirv_codegen.h"
#include "tests/codegen/gpu_kernels.h"
#include "tir/schedule_rules/gpu_schedule.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"
#include "tir/target.h"
#include "tir/text_parser.h"
#include "tir/text_printer.h"
#include "tir/transform/lower_cross_thread_reduction.h"
#include "tir/transform/pipeline.h"

namespace kiln {
namespace {

// A row reduction as legalization writes it: B[i] = init; B[i] = update over r < m.
tir::PrimFunc RowReduction(const std::string& shape, const std::string& init, const std::string& update) {
  const std::string text = R"(
prim_func @f(A: Buffer((n, )" + shape + R"(), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    for r in serial(0, )" + shape + R"() {
      block "B" {
        vi = spatial(n, i)
        vr = reduce()" + shape + R"(, r)
        init {
          B[vi] = )" + init + R"(
        }
        B[vi] = )" + update + R"(
      }
    }
  }
})";
  absl::StatusOr<tir::ParsedPrimFunc> parsed = tir::ParsePrimFunc(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? parsed->func : tir::PrimFunc();
}

int CountCalls(const tir::Stmt& body, const std::string& op) {
  class Counter : public tir::StmtExprVisitor {
   public:
    explicit Counter(std::string op) : op_(std::move(op)) {}
    void VisitExpr_(const tir::CallNode* call, const tir::PrimExpr& self) override {
      count += call->op == op_;
      tir::StmtExprVisitor::VisitExpr_(call, self);
    }
    int count = 0;

   private:
    std::string op_;
  } counter(op);
  counter.VisitStmt(body);
  return counter.count;
}

TEST(CrossThreadCombinerTest, AcceptsAssociativeUpdatesWhoseInitAbsorbsItself) {
  struct Case {
    std::string init, update;
    bool combines;
  };
  for (const Case& c : std::vector<Case>{{"0.0", "B[vi] + A[vi, vr]", true},
                                         {"0.0", "A[vi, vr] * A[vi, vr] + B[vi]", true},
                                         {"-3.0e38", "max(B[vi], A[vi, vr])", true},
                                         {"3.0", "min(A[vi, vr], B[vi])", true},
                                         {"1.0", "B[vi] * A[vi, vr]", true},
                                         // Each partial would add the init once: not the serial sum.
                                         {"1.0", "B[vi] + A[vi, vr]", false},
                                         {"0.0", "B[vi] - A[vi, vr]", false},
                                         {"0.0", "B[vi] + A[vi, vr] * B[vi]", false}}) {
    SCOPED_TRACE(c.init + " / " + c.update);
    tir::PrimFunc f = RowReduction("m", c.init, c.update);
    const tir::BlockNode* block = nullptr;
    tir::schedule_internal::ForEachStmt(f->body, [&](const tir::Stmt& s) {
      if (const auto* b = s.as<tir::BlockNode>(); b && b->name == "B") block = b;
    });
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(tir::transform::CrossThreadCombinerOf(block).has_value(), c.combines);
  }
}

TEST(CrossThreadReductionTest, RowSumIsATreeOfBarriersInBothEmitters) {
  // 64 threads per row (a symbolic row): partials, then log2(64) = 6 halvings, each
  // followed by a barrier, after the first store to shared memory.
  absl::StatusOr<std::vector<tir::PrimFunc>> kernels =
      ScheduledKernels(RowReduction("m", "0.0", "B[vi] + A[vi, vr]"), tir::Target::Vulkan());
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  ASSERT_FALSE(kernels->empty());
  for (const tir::PrimFunc& kernel : *kernels) {  // int64 indices, and an int32 variant
    EXPECT_EQ(CountCalls(kernel->body, "storage_sync"), 7);
    EXPECT_THAT(tir::PrintPrimFunc(kernel), ::testing::HasSubstr("scope=\"shared\""));
    absl::StatusOr<codegen::SpirvModule> spirv = codegen::EmitSpirvModule({{"row_sum", kernel}});
    EXPECT_TRUE(spirv.ok()) << spirv.status();
  }

  absl::StatusOr<std::vector<tir::PrimFunc>> cuda_kernels =
      ScheduledKernels(RowReduction("m", "-3.0e38", "max(B[vi], A[vi, vr])"), tir::Target::Cuda());
  ASSERT_TRUE(cuda_kernels.ok()) << cuda_kernels.status();
  absl::StatusOr<codegen::CudaSource> cuda = codegen::EmitCudaSource({{"row_max", (*cuda_kernels)[0]}});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_THAT(cuda->code, ::testing::HasSubstr("__syncthreads();"));
  EXPECT_THAT(cuda->code, ::testing::HasSubstr("__shared__ float"));
}

TEST(CrossThreadReductionTest, ShortConstantRowsStayOneThreadPerRow) {
  absl::StatusOr<std::vector<tir::PrimFunc>> kernels =
      ScheduledKernels(RowReduction("8", "0.0", "B[vi] + A[vi, vr]"), tir::Target::Vulkan());
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  EXPECT_EQ(CountCalls((*kernels)[0]->body, "storage_sync"), 0);
}

TEST(CrossThreadReductionTest, ScalarResultIsOneBlock) {
  absl::StatusOr<tir::ParsedPrimFunc> parsed = tir::ParsePrimFunc(R"(
prim_func @f(A: Buffer((k,), float32), B: Buffer((k,), float32), C: Buffer((), float32)) {
  if k == 0 {
    for i0 in serial(0, 1) {
      block "C_empty" {
        v0 = spatial(1, i0)
        C[] = 0.0
      }
    }
  }
  for r in serial(0, k) {
    block "C" {
      vr = reduce(k, r)
      init {
        C[] = 0.0
      }
      C[] = C[] + A[vr] * B[vr]
    }
  }
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<std::vector<tir::PrimFunc>> kernels = ScheduledKernels(parsed->func, tir::Target::Vulkan());
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  int syncs = 0;
  for (const tir::PrimFunc& kernel : *kernels) syncs += CountCalls(kernel->body, "storage_sync");
  EXPECT_GE(syncs, 7);  // the fill has none; the dot product 7 per variant
}

TEST(CrossThreadReductionTest, SharedMemoryStaysWithinTheTargetsLimit) {
  // 128 bytes of shared memory: 32 float partials per row at most.
  absl::StatusOr<tir::Target> small = tir::Target::Parse("vulkan -max-shared-memory-per-block=128");
  ASSERT_TRUE(small.ok()) << small.status();
  absl::StatusOr<std::vector<tir::PrimFunc>> kernels =
      ScheduledKernels(RowReduction("m", "0.0", "B[vi] + A[vi, vr]"), *small);
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  EXPECT_EQ(CountCalls((*kernels)[0]->body, "storage_sync"), 6);
  // A hand-made schedule above the limit: the verifier names the kernel's total.
  tir::Schedule s(RowReduction("m", "0.0", "B[vi] + A[vi, vr]"));
  absl::StatusOr<std::vector<std::string>> parts = s.Split("r", {-1, 256});
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_TRUE(s.Reorder({(*parts)[1], (*parts)[0]}).ok());
  ASSERT_TRUE(s.Bind("i", "blockIdx.x").ok());
  ASSERT_TRUE(s.Bind((*parts)[1], "threadIdx.x").ok());
  EXPECT_THAT(tir::VerifyGpuFunction(s.func(), *small).message(),
              ::testing::HasSubstr("1024 bytes of shared memory per block; the target allows 128"));
}

TEST(CrossThreadReductionTest, AThreadBoundReductionThatCannotCombineIsAnError) {
  // out = out * 2 + x is no associative combine: 64 threads would race on B. The Bind
  // primitive refuses it; hand-written TIR gets the verifier's error.
  tir::Schedule s(RowReduction("m", "0.0", "B[vi] * 2.0 + A[vi, vr]"));
  absl::StatusOr<std::vector<std::string>> parts = s.Split("r", {-1, 64});
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_TRUE(s.Reorder({(*parts)[1], (*parts)[0]}).ok());
  EXPECT_THAT(s.Bind((*parts)[1], "threadIdx.x").message(), ::testing::HasSubstr("is bound to reduction variable"));
  absl::StatusOr<tir::ParsedPrimFunc> parsed = tir::ParsePrimFunc(R"(
prim_func @f(A: Buffer((64,), float32), B: Buffer((1,), float32)) {
  for t in thread_binding(0, 64, "threadIdx.x") {
    block "B" {
      vr = reduce(64, t)
      init {
        B[0] = 0.0
      }
      B[0] = B[0] * 2.0 + A[vr]
    }
  }
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(tir::VerifyGpuFunction(parsed->func, tir::Target::Vulkan()).message(),
              ::testing::HasSubstr("the loop 't' bound to threadIdx.x reduces block 'B', but its update is neither "
                                   "an associative combine"));
  // The default rule leaves such a block one thread per row.
  EXPECT_TRUE(tir::ScheduleForGpu(RowReduction("m", "0.0", "B[vi] * 2.0 + A[vi, vr]"), tir::Target::Vulkan()).ok());
}

}  // namespace
}  // namespace kiln
