#include "serving/step_cost_model.h"

#include <algorithm>
#include <cmath>

namespace kiln::serving {

StepCostModel::StepCostModel(double memory) : decay_(memory > 1 ? 1 - 1 / memory : 0) {}

void StepCostModel::Observe(int64_t tokens, double seconds) {
  if (tokens <= 0 || !(seconds >= 0) || !std::isfinite(seconds)) return;
  const double x = static_cast<double>(tokens);
  weight_ = weight_ * decay_ + 1;
  sum_x_ = sum_x_ * decay_ + x;
  sum_y_ = sum_y_ * decay_ + seconds;
  sum_xx_ = sum_xx_ * decay_ + x * x;
  sum_xy_ = sum_xy_ * decay_ + x * seconds;
}

std::optional<StepCostModel::Fit> StepCostModel::Current() const {
  if (weight_ <= 0) return std::nullopt;
  const double mean_x = sum_x_ / weight_, mean_y = sum_y_ / weight_;
  const double var_x = sum_xx_ / weight_ - mean_x * mean_x;
  // Calls all of (nearly) one size say nothing about the slope.
  if (!(var_x > 0.25)) return std::nullopt;
  const double per_token = (sum_xy_ / weight_ - mean_x * mean_y) / var_x;
  if (!(per_token > 0) || !std::isfinite(per_token)) return std::nullopt;
  return Fit{std::max(0.0, mean_y - per_token * mean_x), per_token};
}

int64_t StepCostModel::TokensToAdd(int64_t tokens, double ratio, int64_t floor, int64_t ceiling) const {
  const std::optional<Fit> fit = Current();
  if (!fit) return std::max(floor, ceiling);
  const double alone = fit->fixed + fit->per_token * static_cast<double>(tokens);
  const double extra = alone * ratio / fit->per_token;
  const double capped = std::min(extra, static_cast<double>(std::max(floor, ceiling)));
  // The epsilon keeps a fit that is exact up to rounding (8 - 1e-15 tokens) at its integer.
  return std::max(floor, static_cast<int64_t>(std::floor(capped + 1e-6)));
}

}  // namespace kiln::serving
