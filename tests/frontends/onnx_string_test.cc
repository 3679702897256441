// STRING tensors through the importer, the compiler and the VM (converters/string_converters.cc,
// builtins/string_builtins.cc): string constants, views, Cast round trips, and the operators
// that do not take strings, against values worked out here by hand.
#include <cmath>
#include <cstring>
#include <map>

#include "frontends/onnx/importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/packed_strings.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"
#include "tir/string_type.h"
#include "vm/string_tensor.h"

namespace kiln::frontends::onnx {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int32_t kString = ::onnx::TensorProto::STRING;
constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;

relax::ConstantData StringData(std::vector<int64_t> shape, const std::vector<std::string>& strings) {
  relax::ConstantData d;
  d.dtype = tir::StringType();
  d.shape = std::move(shape);
  d.bytes = std::make_shared<std::vector<uint8_t>>(support::PackStrings(strings));
  return d;
}

TEST(OnnxString, ConstantStringsAndReshapeViews) {
  // y = Reshape(StringConcat(x, c), [3, 2]) with c a STRING Constant of one element.
  ModelBuilder m(20);
  m.Input("x", kString, {"2", "3"}).Output("y", kString);
  ::onnx::NodeProto* constant = m.Node("Constant", {}, {"c"});
  auto* a = constant->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(kString);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_string_data("!");
  m.Node("StringConcat", {"x", "c"}, {"z"});
  m.Initializer("shape", {3, 2}, {2});
  m.Node("Reshape", {"z", "shape"}, {"y"});
  absl::StatusOr<std::vector<vm::Tensor>> out =
      ImportUncheckedAndRun(m.Bytes(), {{"x", StringData({2, 3}, {"a", "", "c", "d", "é", "f"})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_THAT(vm::StringsOf((*out)[0]), ElementsAre("a!", "!", "c!", "d!", "é!", "f!"));
}

TEST(OnnxString, CastToStringAndBackIsExact) {
  // float32 -> STRING writes the shortest text that reads back to the same float (the
  // strings are numpy's astype(str) of these float32 values).
  ModelBuilder m(13);
  m.Input("x", kFloat, {"6"}).Output("s", kString).Output("y", kFloat);
  SetIntAttr(m.Node("Cast", {"x"}, {"s"}), "to", kString);
  SetIntAttr(m.Node("Cast", {"s"}, {"y"}), "to", kFloat);
  const std::vector<float> x = {0.1f, 1.0f / 3.0f, -2.5e-7f, 3.4028235e38f, 123456.78f, 1e-4f};
  absl::StatusOr<std::vector<vm::Tensor>> out =
      ImportUncheckedAndRun(m.Bytes(), {{"x", HostData(tir::DataType::Float32(), {6}, x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(vm::StringsOf((*out)[0]),
              ElementsAre("0.1", "0.33333334", "-2.5e-07", "3.4028235e+38", "123456.78", "1e-04"));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ((*out)[1].data_as<float>()[i], x[i]) << i;
}

TEST(OnnxString, OperatorsThatMoveElementsSayTheyDoNotTakeStrings) {
  ModelBuilder m(20);
  m.Input("x", kString, {"2", "3"}).Output("y", kString);
  m.Node("Transpose", {"x"}, {"y"});
  absl::StatusOr<std::vector<vm::Tensor>> out = ImportUncheckedAndRun(m.Bytes(), {{"x", StringData({2, 3}, {"a", "b", "c", "d", "e", "f"})}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(out.status().message(), HasSubstr("permute_dims: string tensors are not supported by this operator"));
}

TEST(OnnxString, BadStringDataIsAnError) {
  ModelBuilder m(20);
  m.Input("x", kString, {"2"}).Output("y", kString);
  auto* init = m.proto().mutable_graph()->add_initializer();
  init->set_name("c");
  init->set_data_type(kString);
  init->add_dims(2);
  init->add_string_data("only one");
  m.Node("StringConcat", {"x", "c"}, {"y"});
  absl::Status status = ImportUncheckedStatus(m.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("string_data holds 1 strings, its dims need 2"));
}

}  // namespace
}  // namespace kiln::frontends::onnx
