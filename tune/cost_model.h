// The tuner's learned cost model: gradient-boosted trees (XGBoost's C API, Debian's
// libxgboost-dev) from a candidate's features to log(seconds per call), refit on every
// measurement so far each time new ones arrive, used to rank candidates before measuring
// the most promising. Without XGBoost at configure time (KILN_HAVE_XGBOOST undefined) the
// model is absent: available() is false and the tuner searches at random.
#pragma once

#include <memory>
#include <vector>

namespace kiln::tune {

class CostModel {
 public:
  CostModel();
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  static bool available();
  // Refits on every (features, seconds) pair given so far plus these.
  void Add(const std::vector<float>& features, double seconds);
  void Fit();
  bool trained() const { return trained_; }
  // Predicted log(seconds) per row (lower is faster); all zero before the first fit.
  std::vector<float> Predict(const std::vector<std::vector<float>>& rows) const;

 private:
  std::vector<std::vector<float>> features_;
  std::vector<float> labels_;
  void* booster_ = nullptr;  // BoosterHandle
  bool trained_ = false;
};

}  // namespace kiln::tune
