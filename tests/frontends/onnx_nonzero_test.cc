// NonZero (converters/nonzero_converters.cc) against the operator's definition written
// here as loops: the indices of the non-zero elements in row-major order, one row per axis,
// their count known only at run time (NaN counts as non-zero); an all-zero input gives no
// columns.
#include <cmath>
#include <cstdint>
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

absl::StatusOr<std::vector<vm::Tensor>> RunNonZero(const std::vector<float>& x) {
  ModelBuilder m(13);
  m.Input("X", kFloat, {"2", "3", "4"}).Output("Y", kInt64);
  m.Node("NonZero", {"X"}, {"Y"}, "nonzero");
  KILN_ASSIGN_OR_RETURN(ImportResult imported, ImportOnnxBytes(m.Bytes(), "", ImportOptions{}));
  return CompileAndRun(imported, {{"X", HostData(tir::DataType::Float32(), {2, 3, 4}, x)}});
}

TEST(OnnxNonZero, IndicesOfNonZeroElementsInRowMajorOrder) {
  std::vector<float> x(24, 0.0f);
  for (int i = 0; i < 24; ++i) {
    if (i % 3 == 1 || i == 22) x[i] = static_cast<float>(i) - 10.0f;  // element 10 stays 0
  }
  x[5] = std::nanf("");
  std::vector<int64_t> rows[3];
  for (int64_t i = 0; i < 24; ++i) {
    if (x[i] == 0.0f) continue;
    rows[0].push_back(i / 12);
    rows[1].push_back(i / 4 % 3);
    rows[2].push_back(i % 4);
  }
  absl::StatusOr<std::vector<vm::Tensor>> out = RunNonZero(x);
  ASSERT_TRUE(out.ok()) << out.status();
  const int64_t count = static_cast<int64_t>(rows[0].size());
  ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{3, count}));
  const int64_t* y = static_cast<const int64_t*>((*out)[0].data());
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(std::vector<int64_t>(y + r * count, y + (r + 1) * count), rows[r]) << "axis " << r;
  }
}

TEST(OnnxNonZero, AllZeroInputGivesNoColumns) {
  absl::StatusOr<std::vector<vm::Tensor>> out = RunNonZero(std::vector<float>(24, 0.0f));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{3, 0}));
}

}  // namespace
}  // namespace kiln::frontends::onnx
