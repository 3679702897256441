// Conv's legalization as im2col + matmul (relax/op/legalize_nn.cc) meets the default CPU
// schedule: the matmul block gets the matmul rule's register tiles and packed panels, and
// the im2col block is folded into the packing, so the columns are never written whole. The
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

TEST(ConvMatmulScheduleTest, GroupedConvKeepsTheDirectReduction) {
  std::string trace;
  const std::string printed = ScheduledConv("b, 64, 56, 56", "64, 32, 3, 3", "R.conv2d(x, w, padding=[1], groups=2)", 16, &trace);
  EXPECT_THAT(printed, Not(HasSubstr("conv2d_im2col")));
  EXPECT_THAT(trace, Not(HasSubstr("cache_write(\"conv2d\")")));
}

}  // namespace
}  // namespace kiln::relax
