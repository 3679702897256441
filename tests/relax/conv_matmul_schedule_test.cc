// Conv's legalization as im2col + matmul (relax/op/legalize_nn.cc) meets the default CPU
// schedule: the matmul block gets the matmul rule's register tiles and packed panels, and
// the im2col block is folded into the packing, so the columns are never written whole.
// Grouped convolutions take the window rule (cpu_window_reduction.cc), transposed ones
// the matmul rule. The
// numbers are checked against the reference evaluator by tests/codegen/op_cases.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "relax/transform/legalize_ops.h"
#include "tests/relax/pass_test_util.h"
#include "tir/schedule_rules/cpu_schedule.h"
#include "tir/text_printer.h"

namespace kiln::relax {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The one PrimFunc LegalizeOps makes of `call` over x and w, scheduled for `lanes` vector
// lanes and 2 threads; its trace in `trace`.
std::string ScheduledConv(const std::string& x_shape, const std::string& w_shape, const std::string& call, int lanes,
                          std::string* trace) {
  const std::string text = "module {\n  func @main(x: Tensor((" + x_shape + "), float32), w: Tensor((" + w_shape +
                           "), float32)) -> Object {\n    r = " + call + "\n    return r\n  }\n}\n";
  absl::StatusOr<IRModule> legalized = LegalizeOps(testing::Normalized(text));
  EXPECT_TRUE(legalized.ok()) << legalized.status();
  if (!legalized.ok()) return "";
  for (const IRModule::Entry& e : legalized->entries()) {
    if (!e.prim_func()) continue;
    absl::StatusOr<tir::PrimFunc> f = tir::ScheduleForCpu(*e.prim_func(), {.vector_lanes = lanes, .num_threads = 2}, trace);
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? tir::PrintPrimFunc(*f, "f") : "";
  }
  ADD_FAILURE() << "no PrimFunc";
  return "";
}

TEST(ConvMatmulScheduleTest, A3x3ConvTakesTheMatmulRuleWithIm2colFoldedIntoThePacking) {
  // A constant image and a symbolic one (packing pays there because im2col folds into it),
  // AVX2's and AVX-512's lanes.
  for (const char* x_shape : {"b, 64, 56, 56", "b, 64, h, w"}) {
    for (int lanes : {8, 16}) {
      SCOPED_TRACE(std::string(x_shape) + ", lanes " + std::to_string(lanes));
      std::string trace;
      const std::string printed = ScheduledConv(x_shape, "64, 64, 3, 3", "R.conv2d(x, w, padding=[1])", lanes, &trace);
      EXPECT_THAT(trace, HasSubstr("cache_write(\"conv2d\") -> \"conv2d_write_back\""));
      EXPECT_THAT(trace, HasSubstr("cache_read(\"conv2d\", \"conv_cols\""));
      EXPECT_THAT(trace, HasSubstr("compute_inline(\"conv2d_im2col\")"));
      EXPECT_THAT(printed, Not(HasSubstr("allocate conv_cols:"))) << printed;
      EXPECT_THAT(printed, HasSubstr("allocate conv_cols_local:"));
    }
  }
}

TEST(ConvMatmulScheduleTest, GroupedConvTakesTheWindowRuleOverThePaddedInput) {
  // Depthwise and 2 groups; a row of 56 (7 vectors of 8 lanes, every step unrolled), of 37
  // (a partial last vector: the innermost tap loop unrolled only) and a symbolic one.
  for (const char* x_shape : {"b, 64, 56, 56", "b, 64, 37, 37", "b, 64, h, w"}) {
    for (const char* w_shape : {"64, 1, 3, 3", "64, 32, 3, 3"}) {
      SCOPED_TRACE(std::string(x_shape) + ", weight " + w_shape);
      const std::string groups = std::string(w_shape).substr(4, 1) == "1" ? "64" : "2";
      std::string trace;
      const std::string printed =
          ScheduledConv(x_shape, w_shape, "R.conv2d(x, w, padding=[1], groups=" + groups + ")", 16, &trace);
      EXPECT_THAT(printed, Not(HasSubstr("conv2d_im2col")));
      EXPECT_THAT(printed, HasSubstr("allocate conv_padded:"));
      EXPECT_THAT(trace, HasSubstr("cache_write(\"conv2d\") -> \"conv2d_write_back\""));
      EXPECT_THAT(trace, HasSubstr("reverse_compute_at(\"conv2d_write_back\""));
      // The local tile is compacted to the row's tile (registers), not the output's shape.
      EXPECT_THAT(printed, Not(HasSubstr("out_local: Buffer((b,"))) << printed;
      EXPECT_THAT(trace, HasSubstr("unroll(\"k2\")"));
      if (std::string(x_shape) == "b, 64, 56, 56") {
        EXPECT_THAT(trace, HasSubstr(", [-1, 7, 8]) -> "));
        EXPECT_THAT(trace, HasSubstr("unroll(\"k1\")"));
      } else {
        EXPECT_THAT(trace, Not(HasSubstr("unroll(\"k1\")")));
      }
    }
  }
}

TEST(ConvMatmulScheduleTest, ConvTransposeTakesTheMatmulRule) {
  for (int lanes : {8, 16}) {
    SCOPED_TRACE("lanes " + std::to_string(lanes));
    std::string trace;
    const std::string printed =
        ScheduledConv("b, 64, 28, 28", "64, 32, 2, 2", "R.conv2d_transpose(x, w, strides=[2, 2])", lanes, &trace);
    EXPECT_THAT(trace, HasSubstr("cache_write(\"conv2d_transpose\") -> \"conv2d_transpose_write_back\""));
    EXPECT_THAT(printed, HasSubstr("block \"conv2d_transpose_col2im\""));
  }
}

}  // namespace
}  // namespace kiln::relax
