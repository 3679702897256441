#include "support/check.h"

#include "gtest/gtest.h"

namespace {

TEST(CheckDeathTest, FailingCheckAbortsWithMessage) {
  EXPECT_DEATH({ KILN_CHECK(1 + 1 == 3) << "arithmetic is broken"; }, "arithmetic is broken");
}

TEST(Check, PassingCheckDoesNothing) {
  int evaluations = 0;
  KILN_CHECK(++evaluations == 1) << "never printed";
  EXPECT_EQ(evaluations, 1);
}

}  // namespace
