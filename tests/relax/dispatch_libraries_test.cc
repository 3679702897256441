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

TEST(DispatchLibraries, RewritesLargeFloat32MatmulsOnly) {
  IRModule in = Normalized(kInput);
  absl::StatusOr<IRModule> out = DispatchLibraries(in, LibraryOptions());
  ASSERT_TRUE(out.ok()) << out.status();
  IRModule expected = Normalized(kExpected);
  EXPECT_TRUE(StructuralEqual(*out, expected)) << PrintModule(*out);
  EXPECT_TRUE(CheckWellFormed(*out).ok()) << CheckWellFormed(*out);
}

TEST(DispatchLibraries, ThresholdAndOffSwitch) {
  IRModule in = Normalized(kInput);
  LibraryOptions all;
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
  absl::StatusOr<IRModule> dispatched = DispatchLibraries(Normalized(kInput), LibraryOptions());
  ASSERT_TRUE(dispatched.ok()) << dispatched.status();
  absl::StatusOr<IRModule> lowered = LowerCallTir(*dispatched);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  std::string text = PrintModule(*lowered);
  EXPECT_THAT(text, HasSubstr("%h0_out: Tensor((b, 256), float32) = R.alloc_tensor(R.shape([b, 256]), dtype=float32)"));
  EXPECT_THAT(text, HasSubstr("%h0: Tensor((b, 256), float32) = R.call_tir_dps(R.extern(\"kiln.openblas.sgemm\"), (x, w0), (%h0_out,))"));
  EXPECT_TRUE(CheckWellFormed(*lowered).ok()) << CheckWellFormed(*lowered);
}

}  // namespace
}  // namespace kiln::relax
