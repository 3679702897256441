#include "serving/step_cost_model.h"

#include <limits>

#include <gtest/gtest.h>

namespace kiln::serving {
namespace {

TEST(StepCostModelTest, NothingFittedBeforeTwoDifferentSizes) {
  StepCostModel model;
  EXPECT_FALSE(model.Current().has_value());
  EXPECT_EQ(model.TokensToAdd(4, 1.0, 1, 256), 256);  // unknown costs: the ceiling
  model.Observe(8, 0.05);
  model.Observe(8, 0.06);
  EXPECT_FALSE(model.Current().has_value());  // one size says nothing about the slope
}

TEST(StepCostModelTest, RecoversAnExactLine) {
  // 20 ms per call plus 5 ms per token, computed by hand for each size.
  StepCostModel model;
  for (int64_t tokens : {1, 4, 16, 64, 2, 32}) model.Observe(tokens, 0.020 + 0.005 * static_cast<double>(tokens));
  ASSERT_TRUE(model.Current().has_value());
  EXPECT_NEAR(model.Current()->fixed, 0.020, 1e-9);
  EXPECT_NEAR(model.Current()->per_token, 0.005, 1e-12);
  // A decode of 4 tokens takes 40 ms; 40 ms more buys 8 tokens (ratio 1), 4 at ratio 0.5.
  EXPECT_EQ(model.TokensToAdd(4, 1.0, 1, 256), 8);
  EXPECT_EQ(model.TokensToAdd(4, 0.5, 1, 256), 4);
  EXPECT_EQ(model.TokensToAdd(4, 1.0, 1, 6), 6);    // the ceiling holds
  EXPECT_EQ(model.TokensToAdd(4, 0.01, 3, 256), 3);  // and so does the floor
}

TEST(StepCostModelTest, FollowsAMachineThatSlowsDown) {
  StepCostModel model(/*memory=*/16);
  for (int i = 0; i < 50; ++i) model.Observe(1 + i % 8, 0.010 + 0.001 * (1 + i % 8));
  for (int i = 0; i < 200; ++i) model.Observe(1 + i % 8, 0.030 + 0.004 * (1 + i % 8));
  ASSERT_TRUE(model.Current().has_value());
  EXPECT_NEAR(model.Current()->fixed, 0.030, 1e-4);
  EXPECT_NEAR(model.Current()->per_token, 0.004, 1e-5);
}

TEST(StepCostModelTest, MeaninglessObservationsAreIgnored) {
  StepCostModel model;
  model.Observe(0, 1.0);
  model.Observe(-3, 1.0);
  model.Observe(5, -1.0);
  model.Observe(5, std::numeric_limits<double>::quiet_NaN());
  model.Observe(5, std::numeric_limits<double>::infinity());
  EXPECT_FALSE(model.Current().has_value());
  // Costs falling with size (noise) give no fit rather than a negative slope.
  model.Observe(1, 0.5);
  model.Observe(10, 0.1);
  EXPECT_FALSE(model.Current().has_value());
}

}  // namespace
}  // namespace kiln::serving
