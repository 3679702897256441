// Imported ONNX models compiled and run, checked against ONNX's own expected outputs (the
// backend node test data of Debian's libonnx-testdata), never against Kiln itself.
#include <cmath>
#include <filesystem>

#include "frontends/onnx/importer.h"
#include "frontends/onnx/tensor_file.h"
#include "frontends/onnx/value.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"

namespace kiln::frontends::onnx {
namespace {

namespace fs = std::filesystem;
const fs::path kNodeTests = "/usr/share/libonnx-testdata/data/node";

// Runs case `name`'s test_data_set_0 and compares every output elementwise (rtol 1e-3,
// atol 1e-7 as ONNX's backend tests).
void CheckCase(const std::string& name) {
  const fs::path dir = kNodeTests / name;
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " is missing (libonnx-testdata)";
  const fs::path data = dir / "test_data_set_0";
  std::map<std::string, relax::ConstantData> inputs;
  std::vector<relax::ConstantData> expected;
  for (int i = 0; fs::exists(data / ("input_" + std::to_string(i) + ".pb")); ++i) {
    absl::StatusOr<NamedTensor> t = ReadTensorFile((data / ("input_" + std::to_string(i) + ".pb")).string());
    ASSERT_TRUE(t.ok()) << t.status();
    inputs[t->name] = t->data;
  }
  for (int i = 0; fs::exists(data / ("output_" + std::to_string(i) + ".pb")); ++i) {
    absl::StatusOr<NamedTensor> t = ReadTensorFile((data / ("output_" + std::to_string(i) + ".pb")).string());
    ASSERT_TRUE(t.ok()) << t.status();
    expected.push_back(t->data);
  }
  ImportOptions options;
  options.bind_lookup = [&](const std::string& input) -> std::optional<relax::ConstantData> {
    auto it = inputs.find(input);
    if (it == inputs.end()) return std::nullopt;
    return it->second;
  };
  absl::StatusOr<ImportResult> imported = ImportOnnxFile((dir / "model.onnx").string(), options);
  ASSERT_TRUE(imported.ok()) << imported.status();
  absl::StatusOr<std::vector<vm::Tensor>> outputs = CompileAndRun(*imported, inputs);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), expected.size());
  for (size_t k = 0; k < outputs->size(); ++k) {
    const vm::Tensor& t = (*outputs)[k];
    const relax::ConstantData& want = expected[k];
    ASSERT_EQ(t.shape(), want.shape) << "output " << k;
    ASSERT_EQ(t.dtype().bits, want.dtype.bits()) << "output " << k;
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double e = ElementAsDouble(want, i);
      const double a = vm::LoadElementAsDouble(t.data(), t.dtype(), i);
      if (std::isnan(e)) {
        EXPECT_TRUE(std::isnan(a)) << name << " output " << k << " element " << i;
        continue;
      }
      ASSERT_LE(std::fabs(a - e), 1e-7 + 1e-3 * std::fabs(e)) << name << " output " << k << " element " << i;
    }
  }
}

TEST(OnnxNodeNumerics, Gemm) { CheckCase("test_gemm_all_attributes"); }
TEST(OnnxNodeNumerics, SoftmaxBeforeOpset13Axis) { CheckCase("test_softmax_axis_0"); }
TEST(OnnxNodeNumerics, Conv) { CheckCase("test_conv_with_strides_and_asymmetric_padding"); }
TEST(OnnxNodeNumerics, LayerNormalizationOutputs) { CheckCase("test_layer_normalization_3d_axis1_epsilon"); }
TEST(OnnxNodeNumerics, ReshapeWithBoundShape) { CheckCase("test_reshape_reordered_all_dims"); }
TEST(OnnxNodeNumerics, GruWithInitialBias) { CheckCase("test_gru_with_initial_bias"); }
TEST(OnnxNodeNumerics, LstmWithPeepholes) { CheckCase("test_lstm_with_peepholes"); }
TEST(OnnxNodeNumerics, RnnBatchMajorLayout) { CheckCase("test_simple_rnn_batchwise"); }
TEST(OnnxNodeNumerics, HammingWindowSymmetric) { CheckCase("test_hammingwindow_symmetric"); }
TEST(OnnxNodeNumerics, NonMaxSuppressionByIouAndScores) { CheckCase("test_nonmaxsuppression_suppress_by_IOU_and_scores"); }
TEST(OnnxNodeNumerics, ArgMaxSelectLastIndex) { CheckCase("test_argmax_negative_axis_keepdims_random_select_last_index"); }

}  // namespace
}  // namespace kiln::frontends::onnx
