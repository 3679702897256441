// NonMaxSuppression (converters/nms_converters.cc) against a greedy selection written here
// in plain loops (the operator's definition): random overlapping boxes over two batches and
// three classes with a score threshold and a per-class maximum, so that the selection's
// length is known only at run time; and a run that selects nothing.
#include <algorithm>
#include <cmath>
#include <array>
#include <cstdint>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = ::onnx::TensorProto::INT64;
constexpr int64_t kBatches = 2, kClasses = 3, kBoxes = 12;

// IoU of two [y1, x1, y2, x2] boxes (corners in any order).
double Iou(const float* a, const float* b) {
  double inter = 1, area_a = 1, area_b = 1;
  for (int axis = 0; axis < 2; ++axis) {
    const double a_lo = std::min(a[axis], a[axis + 2]), a_hi = std::max(a[axis], a[axis + 2]);
    const double b_lo = std::min(b[axis], b[axis + 2]), b_hi = std::max(b[axis], b[axis + 2]);
    inter *= std::max(0.0, std::min(a_hi, b_hi) - std::max(a_lo, b_lo));
    area_a *= a_hi - a_lo;
    area_b *= b_hi - b_lo;
  }
  const double uni = area_a + area_b - inter;
  return inter > 0 && uni > 0 ? inter / uni : 0;
}

std::vector<std::array<int64_t, 3>> Reference(const std::vector<float>& boxes, const std::vector<float>& scores,
                                              int64_t max_count, float iou_threshold, float score_threshold) {
  std::vector<std::array<int64_t, 3>> out;
  for (int64_t b = 0; b < kBatches; ++b) {
    for (int64_t c = 0; c < kClasses; ++c) {
      const float* s = &scores[(b * kClasses + c) * kBoxes];
      std::vector<int64_t> order(kBoxes);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
      std::vector<int64_t> taken;
      for (int64_t i : order) {
        if (static_cast<int64_t>(taken.size()) >= max_count || s[i] <= score_threshold) continue;
        bool free = true;
        for (int64_t j : taken) free = free && Iou(&boxes[(b * kBoxes + i) * 4], &boxes[(b * kBoxes + j) * 4]) <= iou_threshold;
        if (!free) continue;
        taken.push_back(i);
        out.push_back({b, c, i});
      }
    }
  }
  return out;
}

TEST(OnnxNonMaxSuppression, MatchesAGreedySelectionOfRandomBoxes) {
  ModelBuilder m(11);
  m.Input("boxes", kFloat, {"2", "12", "4"})
      .Input("scores", kFloat, {"2", "3", "12"})
      .Input("max", kInt64, {"1"})
      .Input("iou", kFloat, {"1"})
      .Input("score", kFloat, {"1"})
      .Output("selected", kInt64);
  m.Node("NonMaxSuppression", {"boxes", "scores", "max", "iou", "score"}, {"selected"}, "nms");
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", ImportOptions{});
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<float> boxes(kBatches * kBoxes * 4), scores(kBatches * kClasses * kBoxes);
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>((state >> 8) % 1000) / 1000.0f;
  };
  for (size_t i = 0; i < boxes.size(); ++i) boxes[i] = next() * 4.0f;  // corners in any order
  for (float& s : scores) s = std::floor(next() * 8.0f) / 8.0f;         // ties among scores
  for (float score_threshold : {0.3f, 2.0f}) {
    const int64_t max_count = 3;
    const float iou_threshold = 0.2f;
    const std::vector<std::array<int64_t, 3>> want = Reference(boxes, scores, max_count, iou_threshold, score_threshold);
    absl::StatusOr<std::vector<vm::Tensor>> out = CompileAndRun(
        *imported, {{"boxes", HostData(tir::DataType::Float32(), {kBatches, kBoxes, 4}, boxes)},
                    {"scores", HostData(tir::DataType::Float32(), {kBatches, kClasses, kBoxes}, scores)},
                    {"max", HostData(tir::DataType::Int64(), {1}, std::vector<int64_t>{max_count})},
                    {"iou", HostData(tir::DataType::Float32(), {1}, std::vector<float>{iou_threshold})},
                    {"score", HostData(tir::DataType::Float32(), {1}, std::vector<float>{score_threshold})}});
    ASSERT_TRUE(out.ok()) << out.status();
    const vm::Tensor& got = (*out)[0];
    ASSERT_EQ(got.shape(), (std::vector<int64_t>{static_cast<int64_t>(want.size()), 3}))
        << "score_threshold " << score_threshold;
    const int64_t* rows = static_cast<const int64_t*>(got.data());
    for (size_t r = 0; r < want.size(); ++r) {
      for (int k = 0; k < 3; ++k) EXPECT_EQ(rows[r * 3 + k], want[r][k]) << "row " << r << " column " << k;
    }
    if (score_threshold < 1) {
      EXPECT_GT(want.size(), 6u);  // this case selects something
    } else {
      EXPECT_TRUE(want.empty());  // every score is below 2: an empty (0, 3) result
    }
  }
}

}  // namespace
}  // namespace kiln::frontends::onnx
