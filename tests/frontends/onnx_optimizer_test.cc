// ai.onnx.preview.training's optimizers (converters/optimizer_converters.cc) in models that
// import only that domain. Each update is checked against the formula of ONNX's operator
// documentation evaluated here in double precision.
#include <cmath>
#include <cstring>
#include <map>

#include "frontends/onnx/importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

using ::testing::HasSubstr;
constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = ::onnx::TensorProto::INT64;

// A model importing only ai.onnx.preview.training 1, with inputs R, T and `tensors`.
ModelBuilder TrainingModel(const std::vector<std::string>& tensors) {
  ModelBuilder m(1);
  m.proto().clear_opset_import();
  auto* training = m.proto().add_opset_import();
  training->set_domain("ai.onnx.preview.training");
  training->set_version(1);
  m.Input("R", kFloat, {}).Input("T", kInt64, {});
  for (const std::string& name : tensors) m.Input(name, kFloat, {"3"});
  return m;
}

void SetFloat(::onnx::NodeProto* node, const std::string& name, float value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

absl::StatusOr<std::vector<std::vector<float>>> RunStep(const ModelBuilder& model, float r, int64_t t,
                                                        const std::map<std::string, std::vector<float>>& tensors) {
  std::map<std::string, relax::ConstantData> inputs = {
      {"R", HostData(tir::DataType::Float32(), {}, std::vector<float>{r})},
      {"T", HostData(tir::DataType::Int64(), {}, std::vector<int64_t>{t})}};
  for (const auto& [name, values] : tensors) inputs[name] = HostData(tir::DataType::Float32(), {3}, values);
  KILN_ASSIGN_OR_RETURN(std::vector<vm::Tensor> out, ImportUncheckedAndRun(model.Bytes(), inputs));
  std::vector<std::vector<float>> result;
  for (const vm::Tensor& tensor : out) {
    std::vector<float> v(static_cast<size_t>(tensor.numel()));
    std::memcpy(v.data(), tensor.data(), v.size() * sizeof(float));
    result.push_back(std::move(v));
  }
  return result;
}

const std::vector<float> kX = {1.0f, -2.0f, 0.5f}, kG = {-0.1f, 0.3f, 0.2f}, kV = {0.05f, -0.02f, 0.1f},
                         kH = {0.4f, 0.1f, 0.9f};

TEST(OnnxOptimizers, AdagradWithDecayAndRegularization) {
  ModelBuilder m = TrainingModel({"X", "G", "H"});
  m.Output("X_new").Output("H_new");
  ::onnx::NodeProto* node = m.Node("Adagrad", {"R", "T", "X", "G", "H"}, {"X_new", "H_new"});
  node->set_domain("ai.onnx.preview.training");
  SetFloat(node, "decay_factor", 0.1f);
  SetFloat(node, "epsilon", 1e-5f);
  SetFloat(node, "norm_coefficient", 0.01f);
  absl::StatusOr<std::vector<std::vector<float>>> out = RunStep(m, 0.1f, 3, {{"X", kX}, {"G", kG}, {"H", kH}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  for (size_t i = 0; i < 3; ++i) {
    const double r = 0.1 / (1 + 3 * 0.1), g = 0.01 * kX[i] + kG[i], h = kH[i] + g * g;
    EXPECT_NEAR((*out)[0][i], kX[i] - r * g / (std::sqrt(h) + 1e-5), 1e-6);
    EXPECT_NEAR((*out)[1][i], h, 1e-6);
  }
}

TEST(OnnxOptimizers, AdamCorrectsTheRateOnlyAfterTheFirstStep) {
  ModelBuilder m = TrainingModel({"X", "G", "V", "H"});
  m.Output("X_new").Output("V_new").Output("H_new");
  ::onnx::NodeProto* node = m.Node("Adam", {"R", "T", "X", "G", "V", "H"}, {"X_new", "V_new", "H_new"});
  node->set_domain("ai.onnx.preview.training");
  SetFloat(node, "alpha", 0.8f);
  SetFloat(node, "beta", 0.9f);
  SetFloat(node, "norm_coefficient_post", 0.05f);
  for (int64_t t : {0, 4}) {
    absl::StatusOr<std::vector<std::vector<float>>> out =
        RunStep(m, 0.2f, t, {{"X", kX}, {"G", kG}, {"V", kV}, {"H", kH}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 3u);
    const double alpha = 0.8f, beta = 0.9f;  // the float attributes, as the converter reads them
    const double r = t > 0 ? 0.2f * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : 0.2f;
    for (size_t i = 0; i < 3; ++i) {
      const double v = alpha * kV[i] + (1 - alpha) * kG[i], h = beta * kH[i] + (1 - beta) * kG[i] * kG[i];
      EXPECT_NEAR((*out)[0][i], (1 - 0.05f) * (kX[i] - r * v / (std::sqrt(h) + 1e-6)), 1e-5) << t;
      EXPECT_NEAR((*out)[1][i], v, 1e-6);
      EXPECT_NEAR((*out)[2][i], h, 1e-6);
    }
  }
}

TEST(OnnxOptimizers, MomentumStandardAndNesterov) {
  for (const std::string mode : {"standard", "nesterov"}) {
    ModelBuilder m = TrainingModel({"X", "G", "V"});
    m.Output("X_new").Output("V_new");
    ::onnx::NodeProto* node = m.Node("Momentum", {"R", "T", "X", "G", "V"}, {"X_new", "V_new"});
    node->set_domain("ai.onnx.preview.training");
    SetFloat(node, "alpha", 0.9f);
    SetFloat(node, "beta", 0.5f);
    SetFloat(node, "norm_coefficient", 0.0f);
    auto* a = node->add_attribute();
    a->set_name("mode");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(mode);
    for (int64_t t : {0, 2}) {
      absl::StatusOr<std::vector<std::vector<float>>> out = RunStep(m, 0.1f, t, {{"X", kX}, {"G", kG}, {"V", kV}});
      ASSERT_TRUE(out.ok()) << out.status();
      for (size_t i = 0; i < 3; ++i) {
        const double v = 0.9f * kV[i] + (t > 0 ? 0.5 : 1.0) * kG[i];
        const double dir = mode == "nesterov" ? kG[i] + 0.9f * v : v;
        EXPECT_NEAR((*out)[0][i], kX[i] - 0.1f * dir, 1e-6) << mode << " " << t;
        EXPECT_NEAR((*out)[1][i], v, 1e-6) << mode << " " << t;
      }
    }
  }
}

TEST(OnnxOptimizers, ClearErrors) {
  {  // Momentum's attributes are required.
    ModelBuilder m = TrainingModel({"X", "G", "V"});
    m.Output("X_new");
    m.Node("Momentum", {"R", "T", "X", "G", "V"}, {"X_new"}, "step")->set_domain("ai.onnx.preview.training");
    const absl::Status status = ImportUncheckedStatus(m.Bytes());
    EXPECT_THAT(status.message(), HasSubstr("needs the attribute alpha"));
  }
  {  // Inputs not in groups of three.
    ModelBuilder m = TrainingModel({"X", "G"});
    m.Output("X_new");
    m.Node("Adagrad", {"R", "T", "X", "G"}, {"X_new"}, "step")->set_domain("ai.onnx.preview.training");
    const absl::Status status = ImportUncheckedStatus(m.Bytes());
    EXPECT_THAT(status.message(), HasSubstr("3 inputs per optimized tensor"));
  }
  {  // A default-domain node in a model that imports only the training domain.
    ModelBuilder m = TrainingModel({"X"});
    m.Output("Y");
    m.Node("Relu", {"X"}, {"Y"}, "relu");
    const absl::Status status = ImportUncheckedStatus(m.Bytes());
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("the default domain, which the model does not import"));
  }
}

}  // namespace
}  // namespace kiln::frontends::onnx
