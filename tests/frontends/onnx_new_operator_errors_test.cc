// What the NonZero / Det / TensorScatter / MaxUnpool / RoiAlign converters, and those of the
// operators ONNX proposes after 1.23 (GeGLU, LinearAttention's erase_gate), refuse: each a
// status naming the node and what is wrong or unsupported, never an abort (import only).
#include <cstdint>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = ::onnx::TensorProto::INT64;

void SetString(::onnx::NodeProto* node, const std::string& name, const std::string& value) {
  ::onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(value);
}

void ExpectRefused(const ModelBuilder& m, absl::StatusCode code, const std::vector<std::string>& phrases) {
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", ImportOptions{});
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), code) << imported.status();
  for (const std::string& phrase : phrases) {
    EXPECT_NE(imported.status().message().find(phrase), std::string::npos) << imported.status();
  }
}

TEST(OnnxNewOperatorErrors, RoiAlignWithSamplingRatioZeroIsUnsupported) {
  ModelBuilder m(16);
  m.Input("X", kFloat, {"1", "1", "8", "8"}).Input("rois", kFloat, {"2", "4"}).Input("b", kInt64, {"2"}).Output("Y");
  ::onnx::NodeProto* node = m.Node("RoiAlign", {"X", "rois", "b"}, {"Y"}, "roi");
  SetIntAttr(node, "output_height", 2);
  SetIntAttr(node, "output_width", 2);
  ExpectRefused(m, absl::StatusCode::kUnimplemented, {"node 'roi' (op RoiAlign", "sampling_ratio 0"});
}

TEST(OnnxNewOperatorErrors, RoiAlignUnknownModeIsAnError) {
  ModelBuilder m(16);
  m.Input("X", kFloat, {"1", "1", "8", "8"}).Input("rois", kFloat, {"2", "4"}).Input("b", kInt64, {"2"}).Output("Y");
  ::onnx::NodeProto* node = m.Node("RoiAlign", {"X", "rois", "b"}, {"Y"}, "roi");
  SetIntAttr(node, "sampling_ratio", 2);
  SetString(node, "mode", "median");
  ExpectRefused(m, absl::StatusCode::kInvalidArgument, {"node 'roi' (op RoiAlign", "mode"});
}

TEST(OnnxNewOperatorErrors, TensorScatterOnTheBatchAxisIsAnError) {
  ModelBuilder m(24);
  m.Input("past", kFloat, {"2", "4", "3"}).Input("update", kFloat, {"1", "4", "3"}).Output("present");
  ::onnx::NodeProto* node = m.Node("TensorScatter", {"past", "update"}, {"present"}, "scatter");
  SetIntAttr(node, "axis", 0);
  ExpectRefused(m, absl::StatusCode::kInvalidArgument, {"node 'scatter' (op TensorScatter", "batch axis"});
}

TEST(OnnxNewOperatorErrors, TensorScatterUpdateLongerThanTheCacheIsAnError) {
  ModelBuilder m(24);
  m.Input("past", kFloat, {"2", "4", "3"}).Input("update", kFloat, {"2", "5", "3"}).Output("present");
  ::onnx::NodeProto* node = m.Node("TensorScatter", {"past", "update"}, {"present"}, "scatter");
  SetIntAttr(node, "axis", 1);
  ExpectRefused(m, absl::StatusCode::kInvalidArgument, {"node 'scatter' (op TensorScatter", "exceeds"});
}

TEST(OnnxNewOperatorErrors, MaxUnpoolOutputShapeSmallerThanInferredIsUnsupported) {
  ModelBuilder m(11);
  m.Input("X", kFloat, {"1", "1", "2", "2"}).Input("I", kInt64, {"1", "1", "2", "2"}).Output("Y");
  ::onnx::NodeProto* shape = m.Node("Constant", {}, {"shape"}, "shape");
  ::onnx::AttributeProto* value = shape->add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  ::onnx::TensorProto* t = value->mutable_t();
  t->set_data_type(kInt64);
  t->add_dims(4);
  for (int64_t v : {1, 1, 3, 3}) t->add_int64_data(v);
  ::onnx::NodeProto* node = m.Node("MaxUnpool", {"X", "I", "shape"}, {"Y"}, "unpool");
  ::onnx::AttributeProto* kernel = node->add_attribute();
  kernel->set_name("kernel_shape");
  kernel->set_type(::onnx::AttributeProto::INTS);
  kernel->add_ints(2);
  kernel->add_ints(2);
  ::onnx::AttributeProto* strides = node->add_attribute();
  strides->set_name("strides");
  strides->set_type(::onnx::AttributeProto::INTS);
  strides->add_ints(2);
  strides->add_ints(2);
  ExpectRefused(m, absl::StatusCode::kUnimplemented, {"node 'unpool' (op MaxUnpool", "smaller than the inferred 4"});
}

TEST(OnnxNewOperatorErrors, DetOfIntegersIsAnError) {
  ModelBuilder m(11);
  m.Input("X", kInt64, {"2", "2"}).Output("Y", kInt64);
  m.Node("Det", {"X"}, {"Y"}, "det");
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", ImportOptions{});
  ASSERT_FALSE(imported.ok());  // ONNX's checker or the converter: either names the problem
  EXPECT_NE(imported.status().message().find("Det"), std::string::npos) << imported.status();
}

TEST(OnnxNewOperatorErrors, GeGLUOfDifferentShapesIsAnError) {
  ModelBuilder m(28);
  m.Input("A", kFloat, {"2", "6"}).Input("B", kFloat, {"2", "1"}).Output("Y");
  m.Node("GeGLU", {"A", "B"}, {"Y"}, "geglu");
  ExpectRefused(m, absl::StatusCode::kInvalidArgument, {"node 'geglu' (op GeGLU", "no broadcasting"});
}

TEST(OnnxNewOperatorErrors, GeGLUUnknownApproximationIsAnError) {
  ModelBuilder m(28);
  m.Input("A", kFloat, {"2", "6"}).Input("B", kFloat, {"2", "6"}).Output("Y");
  SetString(m.Node("GeGLU", {"A", "B"}, {"Y"}, "geglu"), "approximate", "sigmoid");
  ExpectRefused(m, absl::StatusCode::kInvalidArgument, {"node 'geglu' (op GeGLU", "unknown approximate 'sigmoid'"});
}

// A LinearAttention (B 1, T 2, one head, d_k 2, d_v 2) whose rule is `rule`, with an erase
// gate of `erase_dims`.
ModelBuilder LinearAttentionWithEraseGate(const std::string& rule, const std::vector<std::string>& erase_dims) {
  ModelBuilder m(28);
  m.Input("q", kFloat, {"1", "2", "2"}).Input("k", kFloat, {"1", "2", "2"}).Input("v", kFloat, {"1", "2", "2"});
  m.Input("beta", kFloat, {"1", "2", "1"}).Input("erase", kFloat, erase_dims).Output("y");
  const bool delta = rule == "delta";
  ::onnx::NodeProto* node =
      m.Node("LinearAttention", {"q", "k", "v", "", "", delta ? "beta" : "", "erase"}, {"y"}, "la");
  SetString(node, "update_rule", rule);
  SetIntAttr(node, "q_num_heads", 1);
  SetIntAttr(node, "kv_num_heads", 1);
  return m;
}

TEST(OnnxNewOperatorErrors, LinearAttentionEraseGateOutsideTheDeltaRulesIsAnError) {
  ExpectRefused(LinearAttentionWithEraseGate("linear", {"1", "2", "2"}), absl::StatusCode::kInvalidArgument,
                {"node 'la' (op LinearAttention", "forbids erase_gate"});
}

TEST(OnnxNewOperatorErrors, LinearAttentionEraseGateOfTheWrongShapeIsAnError) {
  ExpectRefused(LinearAttentionWithEraseGate("delta", {"1", "2", "1"}), absl::StatusCode::kInvalidArgument,
                {"node 'la' (op LinearAttention", "erase_gate must have shape (1, 2, 2)"});
}

}  // namespace
}  // namespace kiln::frontends::onnx
