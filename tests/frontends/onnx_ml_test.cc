// ai.onnx.ml's Binarizer and ArrayFeatureExtractor (converters/ml_converters.cc), checked
// against values worked out here by hand.
#include <cstring>
#include <map>

#include "frontends/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = ::onnx::TensorProto::INT64;

ModelBuilder MlModel() {
  ModelBuilder m(1);
  m.proto().clear_opset_import();
  auto* ml = m.proto().add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(1);
  return m;
}

std::vector<float> FloatsOf(const vm::Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.data(), out.size() * sizeof(float));
  return out;
}

TEST(OnnxMl, BinarizerIsOneStrictlyAboveTheThreshold) {
  ModelBuilder m = MlModel();
  m.Input("X", kFloat, {"4"}).Output("Y");
  ::onnx::NodeProto* node = m.Node("Binarizer", {"X"}, {"Y"});
  node->set_domain("ai.onnx.ml");
  auto* a = node->add_attribute();
  a->set_name("threshold");
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(0.5f);
  absl::StatusOr<std::vector<vm::Tensor>> out =
      ImportUncheckedAndRun(m.Bytes(), {{"X", HostData(tir::DataType::Float32(), {4}, std::vector<float>{-1.0f, 0.5f, 0.75f, 3.0f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(FloatsOf((*out)[0]), (std::vector<float>{0, 0, 1, 1}));
}

TEST(OnnxMl, ArrayFeatureExtractorTakesColumnsOfTheLastAxis) {
  ModelBuilder m = MlModel();
  m.Input("X", kFloat, {"2", "3"}).Input("I", kInt64, {"1", "2"}).Output("Z");
  m.Node("ArrayFeatureExtractor", {"X", "I"}, {"Z"})->set_domain("ai.onnx.ml");
  absl::StatusOr<std::vector<vm::Tensor>> out =
      ImportUncheckedAndRun(m.Bytes(), {{"X", HostData(tir::DataType::Float32(), {2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6})},
                       {"I", HostData(tir::DataType::Int64(), {1, 2}, std::vector<int64_t>{2, 0})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(FloatsOf((*out)[0]), (std::vector<float>{3, 1, 6, 4}));
}

TEST(OnnxMl, ArrayFeatureExtractorOnAVectorGivesOneRow) {
  ModelBuilder m = MlModel();
  m.Input("X", kFloat, {"3"}).Input("I", kInt64, {"2"}).Output("Z");
  m.Node("ArrayFeatureExtractor", {"X", "I"}, {"Z"})->set_domain("ai.onnx.ml");
  absl::StatusOr<std::vector<vm::Tensor>> out =
      ImportUncheckedAndRun(m.Bytes(), {{"X", HostData(tir::DataType::Float32(), {3}, std::vector<float>{7, 8, 9})},
                       {"I", HostData(tir::DataType::Int64(), {2}, std::vector<int64_t>{1, 1})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(FloatsOf((*out)[0]), (std::vector<float>{8, 8}));
}

}  // namespace
}  // namespace kiln::frontends::onnx
