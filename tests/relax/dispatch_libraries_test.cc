// DispatchLibraries: large float32 2-D matmuls become OpenBLAS library calls, the rest stay;
// text in, text out. Then lower_call_tir lowers the library call like a call_tir.
#include "relax/transform/dispatch_libraries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "relax/block_builder.h"
#include "relax/structural_equal.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/lower_call_tir.h"
#include "relax/well_formed.h"
#include "tests/relax/pass_test_util.h"

namespace kiln::relax {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::Normalized;

constexpr char kInput[] = R"(module {
  func @main(x: Tensor((b, 784), float32), w0: Tensor((784, 256), float32), w1: Tensor((256, 10), float32), h: Tensor((b, 784), float16), hw: Tensor((784, 256), float16)) -> Tensor((b, 10), float32) {
    dataflow {
      %h0 = R.matmul(x, w0)
      %small = R.matmul(%h0, w1)
      %half = R.matmul(h, hw)
      y = R.add(%small, %small)
    }
    return y
  }
})";

constexpr char kExpected[] = R"(module {
  func @main(x: Tensor((b, 784), float32), w0: Tensor((784, 256), float32), w1: Tensor((256, 10), float32), h: Tensor((b, 784), float16), hw: Tensor((784, 256), float16)) -> Tensor((b, 10), float32) {
    dataflow {
      %h0 = R.call_dps_library(R.extern("kiln.openblas.sgemm"), (x, w0), out_sinfo=Tensor((b, 256), float32))
      %small = R.matmul(%h0, w1)
      %half = R.matmul(h, hw)
      y = R.add(%small, %small)
    }
    return y
  }
})";

// The size and dtype rule alone: these tests send every matmul it takes (the measured
// table, which narrows it per target, is tests/relax/library_dispatch_evidence_test.cc's).
LibraryOptions SizeRuleOnly() {
  LibraryOptions options;
  options.openblas_by_evidence = false;
  return options;
}

TEST(DispatchLibraries, RewritesLargeFloat32MatmulsOnly) {
  IRModule in = Normalized(kInput);
  absl::StatusOr<IRModule> out = DispatchLibraries(in, SizeRuleOnly());
  ASSERT_TRUE(out.ok()) << out.status();
  IRModule expected = Normalized(kExpected);
  EXPECT_TRUE(StructuralEqual(*out, expected)) << PrintModule(*out);
  EXPECT_TRUE(CheckWellFormed(*out).ok()) << CheckWellFormed(*out);
}

TEST(DispatchLibraries, ThresholdAndOffSwitch) {
  IRModule in = Normalized(kInput);
  LibraryOptions all = SizeRuleOnly();
  all.min_row_work = 1;
  absl::StatusOr<IRModule> every = DispatchLibraries(in, all);
  ASSERT_TRUE(every.ok()) << every.status();
  std::string text = PrintModule(*every);
  EXPECT_THAT(text, HasSubstr("R.call_dps_library(R.extern(\"kiln.openblas.sgemm\"), (%h0, w1)"));
  EXPECT_THAT(text, HasSubstr("R.matmul(h, hw)"));

  LibraryOptions off;
  off.openblas = false;
  absl::StatusOr<IRModule> same = DispatchLibraries(in, off);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_THAT(PrintModule(*same), Not(HasSubstr("call_dps_library")));
}

TEST(DispatchLibraries, LowerCallTirAllocatesTheLibraryOutput) {
  absl::StatusOr<IRModule> dispatched = DispatchLibraries(Normalized(kInput), SizeRuleOnly());
  ASSERT_TRUE(dispatched.ok()) << dispatched.status();
  absl::StatusOr<IRModule> lowered = LowerCallTir(*dispatched);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  std::string text = PrintModule(*lowered);
  EXPECT_THAT(text, HasSubstr("%h0_out: Tensor((b, 256), float32) = R.alloc_tensor(R.shape([b, 256]), dtype=float32)"));
  EXPECT_THAT(text, HasSubstr("%h0: Tensor((b, 256), float32) = R.call_tir_dps(R.extern(\"kiln.openblas.sgemm\"), (x, w0), (%h0_out,))"));
  EXPECT_TRUE(CheckWellFormed(*lowered).ok()) << CheckWellFormed(*lowered);
}


// The cuda target: matmuls go to cuBLAS (kiln.cublas.gemm_XY), the CPU rules do not apply.
constexpr char kCudaInput[] = R"(module {
  func @main(x: Tensor((b, 256), float32), w: Tensor((512, 256), float32), h: Tensor((b, 256), float16), hw: Tensor((256, 128), float16), q: Tensor((2, s, 64), float32), k: Tensor((2, s, 64), float32), v: Tensor((2, 64, 96), float32), a: Tensor((256, b), float32), wq: Tensor((256, 64), float32), wp: Tensor((64, 128), float32), small: Tensor((256, 8), float32)) -> Tensor((b, 512), float32) {
    dataflow {
      %wt = R.permute_dims(w, axes=[1, 0])
      %lin = R.matmul(x, %wt)
      %half = R.matmul(h, hw)
      %wide = R.matmul(h, hw, out_dtype="float32")
      %kt = R.permute_dims(k, axes=[0, -1, 1])
      %scores = R.matmul(q, %kt)
      %ctx = R.matmul(q, v)
      %at = R.permute_dims(a)
      %left = R.matmul(%at, wq)
      %proj = R.matmul(q, wp)
      %tiny = R.matmul(x, small)
      y = R.add(%lin, %lin)
    }
    return y
  }
})";

std::string DispatchedForCuda(const LibraryOptions& options = LibraryOptions()) {
  absl::StatusOr<IRModule> out = DispatchLibraries(Normalized(kCudaInput), options, tir::Target::Cuda());
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return "";
  EXPECT_TRUE(CheckWellFormed(*out).ok()) << CheckWellFormed(*out);
  return PrintModule(*out);
}

TEST(DispatchLibrariesCuda, MatmulsBecomeCublasCallsWithTransposesFolded) {
  const std::string text = DispatchedForCuda();
  // permute_dims(w) read transposed in place: the permute is left for dead code elimination.
  EXPECT_THAT(text, HasSubstr("%lin: Tensor((b, 512), float32) = R.call_dps_library(R.extern(\"kiln.cublas.gemm_nt\"), (x, w), out_sinfo=Tensor((b, 512), float32))"));
  EXPECT_THAT(text, HasSubstr("R.permute_dims(w, axes=[1, 0])"));
  // float16 with a float16 or a float32 result.
  EXPECT_THAT(text, HasSubstr("%half: Tensor((b, 128), float16) = R.call_dps_library(R.extern(\"kiln.cublas.gemm_nn\"), (h, hw), out_sinfo=Tensor((b, 128), float16))"));
  EXPECT_THAT(text, HasSubstr("%wide: Tensor((b, 128), float32) = R.call_dps_library(R.extern(\"kiln.cublas.gemm_nn\"), (h, hw)"));
  // Batched, a symbolic n (s) counts as large; a negative axis in the swap is the same swap.
  EXPECT_THAT(text, HasSubstr("%scores: Tensor((2, s, s), float32) = R.call_dps_library(R.extern(\"kiln.cublas.gemm_nt\"), (q, k)"));
  EXPECT_THAT(text, HasSubstr("%ctx: Tensor((2, s, 96), float32) = R.call_dps_library(R.extern(\"kiln.cublas.gemm_nn\"), (q, v)"));
  // A transposed left operand (permute_dims without axes reverses a 2-D tensor).
  EXPECT_THAT(text, HasSubstr("%left: Tensor((b, 64), float32) = R.call_dps_library(R.extern(\"kiln.cublas.gemm_tn\"), (a, wq)"));
  // A 2-D right operand repeats across the batch (stride 0).
  EXPECT_THAT(text, HasSubstr("%proj: Tensor((2, s, 128), float32) = R.call_dps_library(R.extern(\"kiln.cublas.gemm_nn\"), (q, wp)"));
  // k * n = 256 * 8 is below the threshold: a generated kernel.
  EXPECT_THAT(text, HasSubstr("%tiny: Tensor((b, 8), float32) = R.matmul(x, small)"));
  EXPECT_THAT(text, Not(HasSubstr("openblas")));
}

TEST(DispatchLibrariesCuda, OffSwitchThresholdAndOtherTargets) {
  LibraryOptions off;
  off.cublas = false;
  EXPECT_THAT(DispatchedForCuda(off), Not(HasSubstr("call_dps_library")));
  LibraryOptions all;
  all.min_row_work = 1;
  EXPECT_THAT(DispatchedForCuda(all), HasSubstr("R.extern(\"kiln.cublas.gemm_nn\"), (x, small)"));
  // Vulkan has no library; the CPU's OpenBLAS rule never produces cuBLAS calls.
  absl::StatusOr<IRModule> vulkan = DispatchLibraries(Normalized(kCudaInput), LibraryOptions(), tir::Target::Vulkan());
  ASSERT_TRUE(vulkan.ok()) << vulkan.status();
  EXPECT_THAT(PrintModule(*vulkan), Not(HasSubstr("call_dps_library")));
  absl::StatusOr<IRModule> cpu = DispatchLibraries(Normalized(kCudaInput), SizeRuleOnly(), tir::Target::Cpu());
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_THAT(PrintModule(*cpu), HasSubstr("kiln.openblas.sgemm"));
  EXPECT_THAT(PrintModule(*cpu), Not(HasSubstr("kiln.cublas")));
}

// Matmuls one strided batched GEMM cannot do, or dtypes cuBLAS is not asked for, stay.
TEST(DispatchLibrariesCuda, WhatCublasDoesNotTakeStaysGenerated) {
  constexpr char kText[] = R"(module {
    func @main(a: Tensor((2, 1, s, 64), float32), b: Tensor((3, 64, 64), float32), i: Tensor((s, 64), int32), j: Tensor((64, 64), int32), d: Tensor((s, 64), float64), e: Tensor((64, 64), float64), vec: Tensor((64,), float32), m: Tensor((s, 64), float32)) -> Tensor((2, 3, s, 64), float32) {
      dataflow {
        %broadcast = R.matmul(a, b)
        %ints = R.matmul(i, j)
        %doubles = R.matmul(d, e)
        %vector = R.matmul(m, vec)
        y = R.add(%broadcast, %broadcast)
      }
      return y
    }
  })";
  LibraryOptions all;
  all.min_row_work = 1;
  absl::StatusOr<IRModule> out = DispatchLibraries(Normalized(kText), all, tir::Target::Cuda());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(PrintModule(*out), Not(HasSubstr("call_dps_library")));
}

}  // namespace
}  // namespace kiln::relax
