// DeformConv and TfIdfVectorizer (converters/deform_conv_converters.cc, tfidf_converters.cc):
// their numerics are checked against ONNX's reference data by the kept node cases
// (tests/frontends/onnx_node_new); here, that bad or unsupported models are clear errors.
#include <string>

#include "frontends/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;

TEST(OnnxDeformConv, OffsetChannelsThatDoNotFitTheKernelAreAnError) {
  ModelBuilder m(19);
  m.Input("X", kFloat, {"1", "1", "3", "3"}).Input("W", kFloat, {"1", "1", "2", "2"});
  m.Input("offset", kFloat, {"1", "6", "2", "2"});  // 2 x 2 taps need 8 channels
  m.Node("DeformConv", {"X", "W", "offset"}, {"Y"});
  m.Output("Y");
  absl::Status status = ImportUncheckedStatus(m.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("op DeformConv"), std::string::npos) << status;
  EXPECT_NE(status.message().find("offset has 6 channels"), std::string::npos) << status;
}

TEST(OnnxTfIdfVectorizer, StringPoolsAreUnsupportedNamingTheOperator) {
  ModelBuilder m(9);
  m.Input("X", ::onnx::TensorProto::INT32, {"4"});
  ::onnx::NodeProto* node = m.Node("TfIdfVectorizer", {"X"}, {"Y"});
  auto* pool = node->add_attribute();
  pool->set_name("pool_strings");
  pool->set_type(::onnx::AttributeProto::STRINGS);
  pool->add_strings("a");
  m.Output("Y");
  absl::Status status = ImportUncheckedStatus(m.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
  EXPECT_NE(status.message().find("op TfIdfVectorizer"), std::string::npos) << status;
}

}  // namespace
}  // namespace kiln::frontends::onnx
