// CostModel over XGBoost's C API (or, without it, a model that never trains).
#include "tune/cost_model.h"

#include <cmath>

#ifdef KILN_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace kiln::tune {

namespace {

// Rows of equal width as one row-major float array; short rows padded with NaN (missing).
std::vector<float> Flatten(const std::vector<std::vector<float>>& rows, size_t* width) {
  *width = 0;
  for (const auto& r : rows) *width = std::max(*width, r.size());
  std::vector<float> flat(rows.size() * *width, NAN);
  for (size_t i = 0; i < rows.size(); ++i) std::copy(rows[i].begin(), rows[i].end(), flat.begin() + i * *width);
  return flat;
}

}  // namespace

CostModel::CostModel() = default;

CostModel::~CostModel() {
#ifdef KILN_HAVE_XGBOOST
  if (booster_) XGBoosterFree(booster_);
#endif
}

bool CostModel::available() {
#ifdef KILN_HAVE_XGBOOST
  return true;
#else
  return false;
#endif
}

void CostModel::Add(const std::vector<float>& features, double seconds) {
  features_.push_back(features);
  labels_.push_back(static_cast<float>(std::log(seconds)));
}

void CostModel::Fit() {
#ifdef KILN_HAVE_XGBOOST
  if (features_.size() < 4) return;  // too few to learn anything
  size_t width = 0;
  std::vector<float> flat = Flatten(features_, &width);
  DMatrixHandle train = nullptr;
  if (XGDMatrixCreateFromMat(flat.data(), features_.size(), width, NAN, &train) != 0) return;
  XGDMatrixSetFloatInfo(train, "label", labels_.data(), labels_.size());
  if (booster_) XGBoosterFree(booster_);
  booster_ = nullptr;
  BoosterHandle booster = nullptr;
  if (XGBoosterCreate(&train, 1, &booster) == 0) {
    // Small, shallow trees: the data is tens to hundreds of measurements. One thread, so
    // the model never competes with a measurement for the machine; seeded, so a run repeats.
    XGBoosterSetParam(booster, "objective", "reg:squarederror");
    XGBoosterSetParam(booster, "max_depth", "4");
    XGBoosterSetParam(booster, "eta", "0.3");
    XGBoosterSetParam(booster, "nthread", "1");
    XGBoosterSetParam(booster, "seed", "0");
    XGBoosterSetParam(booster, "verbosity", "0");
    bool ok = true;
    for (int iter = 0; iter < 30 && ok; ++iter) ok = XGBoosterUpdateOneIter(booster, iter, train) == 0;
    if (ok) {
      booster_ = booster;
      trained_ = true;
    } else {
      XGBoosterFree(booster);
    }
  }
  XGDMatrixFree(train);
#endif
}

std::vector<float> CostModel::Predict(const std::vector<std::vector<float>>& rows) const {
  std::vector<float> out(rows.size(), 0.0f);
#ifdef KILN_HAVE_XGBOOST
  if (!trained_ || rows.empty()) return out;
  size_t width = 0;
  std::vector<float> flat = Flatten(rows, &width);
  DMatrixHandle m = nullptr;
  if (XGDMatrixCreateFromMat(flat.data(), rows.size(), width, NAN, &m) != 0) return out;
  bst_ulong length = 0;
  const float* predicted = nullptr;
  if (XGBoosterPredict(booster_, m, 0, 0, 0, &length, &predicted) == 0 && length == rows.size()) {
    std::copy(predicted, predicted + length, out.begin());
  }
  XGDMatrixFree(m);
#endif
  return out;
}

}  // namespace kiln::tune
