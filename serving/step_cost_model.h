// StepCostModel: how long one model call takes as a function of the tokens in it, learned
// from the calls the engine makes: seconds = fixed + per_token * tokens. The fixed part is
// what every call pays whatever its size (reading the weights, dispatch); the per-token part
// is the arithmetic. The engine uses it to size the prompt chunk it adds to a step that also
// decodes running streams: adding k prompt tokens to a decode of B tokens costs k *
// per_token, so k <= (fixed + per_token * B) / per_token keeps the step within twice the
// time of the decode alone, and running streams' inter-token latency within twice its idle
// value however many prompts arrive.
//
// A least-squares fit over the recent calls (exponentially forgotten, so a machine whose
// load changes is followed). Not thread-safe: the engine's loop owns it.
#pragma once

#include <cstdint>
#include <optional>

namespace kiln::serving {

class StepCostModel {
 public:
  // `memory`: how many recent calls weigh in the fit (the weight of older ones decays as
  // (1 - 1/memory) per call).
  explicit StepCostModel(double memory = 64);

  void Observe(int64_t tokens, double seconds);

  // The fitted fixed and per-token seconds, once calls of at least two different sizes were
  // seen and the fit is physical (per_token > 0, fixed >= 0 after clamping); nullopt before.
  struct Fit {
    double fixed;
    double per_token;
  };
  std::optional<Fit> Current() const;

  // The most tokens that can be added to a call of `tokens` tokens while the call takes at
  // most `ratio` times longer than it would with `tokens` alone, at least `floor`; `ceiling`
  // when nothing is fitted yet.
  int64_t TokensToAdd(int64_t tokens, double ratio, int64_t floor, int64_t ceiling) const;

 private:
  double decay_;
  // Weighted sums for the fit of seconds against tokens.
  double weight_ = 0, sum_x_ = 0, sum_y_ = 0, sum_xx_ = 0, sum_xy_ = 0;
};

}  // namespace kiln::serving
