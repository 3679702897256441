// Library dispatch by evidence: the measured table decides per shape class, unmeasured
// classes take the nearest measured one, and dispatch_libraries follows it on cpu.
#include "relax/transform/library_dispatch_evidence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "relax/text_printer.h"
#include "relax/transform/dispatch_libraries.h"
#include "tests/relax/pass_test_util.h"

namespace kiln::relax {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(LibraryDispatchEvidence, MeasuredClasses) {
  // AVX-512, many rows: the generated kernel measured faster for every weight up to 1024^2.
  for (int threads : {1, 2}) {
    for (int64_t weight : {int64_t{64 * 64}, int64_t{64 * 256}, int64_t{512 * 512}, int64_t{1024 * 1024}}) {
      EXPECT_FALSE(OpenBlasMeasuredFaster({.vector_bits = 512, .num_threads = threads, .weight = weight}))
          << threads << " threads, weight " << weight;
    }
  }
  // AVX-512, a few constant rows against 256 x 256 on 1 thread: OpenBLAS was ~2x faster.
  EXPECT_TRUE(OpenBlasMeasuredFaster({.vector_bits = 512, .num_threads = 1, .few_rows = true, .weight = 256 * 256}));
  EXPECT_DOUBLE_EQ(
      MeasuredGeneratedOverOpenBlas({.vector_bits = 512, .num_threads = 1, .few_rows = true, .weight = 256 * 256}),
      0.52);
  // AVX2: the transformer block's weights (64 x 64, 64 x 256) stay generated on 1 and 2
  // threads; a 1024 x 1024 weight with many rows on 1 thread goes to OpenBLAS (0.86x).
  for (int threads : {1, 2}) {
    for (int64_t weight : {int64_t{64 * 64}, int64_t{64 * 256}}) {
      EXPECT_FALSE(OpenBlasMeasuredFaster({.vector_bits = 256, .num_threads = threads, .weight = weight}))
          << threads << " threads, weight " << weight;
    }
  }
  EXPECT_TRUE(OpenBlasMeasuredFaster({.vector_bits = 256, .num_threads = 1, .weight = 1024 * 1024}));
  EXPECT_FALSE(OpenBlasMeasuredFaster({.vector_bits = 256, .num_threads = 1, .few_rows = true, .weight = 1024 * 1024}));
  // Large AVX2 weights go on both thread counts (2048^3 0.63-0.76x, 4096^2 0.71-0.76x).
  for (int threads : {1, 2}) {
    EXPECT_TRUE(OpenBlasMeasuredFaster({.vector_bits = 256, .num_threads = threads, .weight = 4096 * 4096}));
  }
}

TEST(LibraryDispatchEvidence, NearestClass) {
  // Unknown width counts as narrower than 512 bits.
  EXPECT_EQ(MeasuredGeneratedOverOpenBlas({.vector_bits = 0, .num_threads = 1, .weight = 1024 * 1024}), 0.86);
  // 4 threads take the 2-thread rows, a weight between two measured ones the nearer by ratio.
  EXPECT_EQ(MeasuredGeneratedOverOpenBlas({.vector_bits = 512, .num_threads = 4, .weight = 64 * 64}), 1.30);
  EXPECT_EQ(MeasuredGeneratedOverOpenBlas({.vector_bits = 512, .num_threads = 1, .weight = 300 * 1000}), 1.06);
  EXPECT_EQ(MeasuredGeneratedOverOpenBlas({.vector_bits = 512, .num_threads = 1, .weight = 1}), 1.20);
  // Wider than 512 bits is the 512-bit class.
  EXPECT_EQ(MeasuredGeneratedOverOpenBlas({.vector_bits = 1024, .num_threads = 1, .weight = 64 * 64}), 1.20);
}

constexpr char kInput[] = R"(module {
  func @main(x: Tensor((b, 256), float32), one: Tensor((1, 256), float32), w: Tensor((256, 256), float32)) -> Tensor((b, 256), float32) {
    dataflow {
      %many = R.matmul(x, w)
      %few = R.matmul(one, w)
      y = R.add(%many, %few)
    }
    return y
  }
})";

TEST(LibraryDispatchEvidence, DispatchLibrariesFollowsTheTable) {
  IRModule in = testing::Normalized(kInput);
  // AVX-512, 1 thread: the one-row matmul goes to OpenBLAS, the b-row one stays generated.
  absl::StatusOr<IRModule> avx512 = DispatchLibraries(in, LibraryOptions(), tir::Target::Cpu("znver4", 512, 1));
  ASSERT_TRUE(avx512.ok()) << avx512.status();
  std::string text = PrintModule(*avx512);
  EXPECT_THAT(text, HasSubstr("R.call_dps_library(R.extern(\"kiln.openblas.sgemm\"), (one, w)"));
  EXPECT_THAT(text, HasSubstr("R.matmul(x, w)"));
  // AVX2, 1 thread: both stay generated (256 x 256 measured 1.01x with many rows, 1.34x
  // with few).
  absl::StatusOr<IRModule> avx2 = DispatchLibraries(in, LibraryOptions(), tir::Target::Cpu("haswell", 256, 1));
  ASSERT_TRUE(avx2.ok()) << avx2.status();
  EXPECT_THAT(PrintModule(*avx2), HasSubstr("R.matmul(x, w)"));
  EXPECT_THAT(PrintModule(*avx2), HasSubstr("R.matmul(one, w)"));
  // Without the evidence (kiln compile --libs openblas): every matmul the rule takes.
  LibraryOptions all;
  all.openblas_by_evidence = false;
  absl::StatusOr<IRModule> every = DispatchLibraries(in, all, tir::Target::Cpu("znver4", 512, 1));
  ASSERT_TRUE(every.ok()) << every.status();
  EXPECT_THAT(PrintModule(*every), Not(HasSubstr("R.matmul(")));
}

}  // namespace
}  // namespace kiln::relax
