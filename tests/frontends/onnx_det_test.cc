// Det (converters/det_converters.cc) against a reference written here: the Leibniz formula
// (a sum over all permutations, in double), an algorithm independent of the converter's
// elimination. The matrices have zeros where the unpivoted elimination would divide by
// them, and one of the batch is singular.
#include <algorithm>
#include <cmath>
#include <cstdint>
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

// det(m) of an n x n row-major matrix: the sum over permutations of sign * product.
double LeibnizDet(const float* m, int n) {
  std::vector<int> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  double total = 0;
  do {
    int inversions = 0;
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) inversions += perm[i] > perm[j] ? 1 : 0;
    }
    double term = inversions % 2 == 0 ? 1.0 : -1.0;
    for (int i = 0; i < n; ++i) term *= m[i * n + perm[i]];
    total += term;
  } while (std::next_permutation(perm.begin(), perm.end()));
  return total;
}

TEST(OnnxDet, BatchOfFiveByFiveMatricesNeedingPivots) {
  const int batch = 3, n = 5;
  std::vector<float> x(static_cast<size_t>(batch * n * n));
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        // A zero diagonal (pivoting needed) and a mix of signs and magnitudes.
        x[(b * n + i) * n + j] = i == j ? 0.0f : static_cast<float>(((i * 7 + j * 3 + b * 5) % 11) - 5) * 0.5f;
      }
    }
  }
  // The last matrix singular: its row 3 equals its row 1.
  for (int j = 0; j < n; ++j) x[(2 * n + 3) * n + j] = x[(2 * n + 1) * n + j];
  ModelBuilder m(11);
  m.Input("X", kFloat, {"3", "5", "5"}).Output("Y");
  m.Node("Det", {"X"}, {"Y"}, "det");
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", ImportOptions{});
  ASSERT_TRUE(imported.ok()) << imported.status();
  absl::StatusOr<std::vector<vm::Tensor>> out =
      CompileAndRun(*imported, {{"X", HostData(tir::DataType::Float32(), {batch, n, n}, x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{batch}));
  const float* y = static_cast<const float*>((*out)[0].data());
  for (int b = 0; b < batch; ++b) {
    const double expected = LeibnizDet(x.data() + b * n * n, n);
    if (b < 2) {
      ASSERT_GT(std::abs(expected), 1.0) << b;  // the test's first matrices are not singular
    }
    EXPECT_NEAR(y[b], expected, 1e-4 * std::max(1.0, std::abs(expected))) << "matrix " << b;
  }
}

TEST(OnnxDet, NonSquareMatricesAreAnErrorNamingTheNode) {
  ModelBuilder m(11);
  m.Input("X", kFloat, {"3", "4"}).Output("Y");
  m.Node("Det", {"X"}, {"Y"}, "det");
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", ImportOptions{});
  ASSERT_FALSE(imported.ok());
  EXPECT_NE(imported.status().message().find("node 'det' (op Det"), std::string::npos) << imported.status();
  EXPECT_NE(imported.status().message().find("square"), std::string::npos) << imported.status();
}

}  // namespace
}  // namespace kiln::frontends::onnx
