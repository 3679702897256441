// ONNX's sequence and optional operators (converters/sequence_converters.cc), sequence and
// optional graph inputs and outputs (importer.cc) and their test data files
// (tensor_proto.cc ReadValueFile), checked against values worked out here by hand.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

#include "frontends/onnx/importer.h"
#include "frontends/onnx/tensor_file.h"
#include "gtest/gtest.h"
#include "onnx/onnx-data_pb.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = ::onnx::TensorProto::INT64;
using tir::DataType;

std::vector<float> FloatsOf(const vm::Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.data(), out.size() * sizeof(float));
  return out;
}

relax::ConstantData Floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  return HostData(DataType::Float32(), std::move(shape), values);
}

// A graph output (or input) of type seq(tensor(float)).
void AddSequenceValue(::google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>* list, const std::string& name) {
  auto* v = list->Add();
  v->set_name(name);
  v->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(kFloat);
}

absl::StatusOr<ImportResult> Import(const ModelBuilder& m, const ImportOptions& options = {}) {
  return ImportOnnxBytes(m.Bytes(), "", options);
}

// X (2, 3) split along axis 1 into sizes [1, 2]; the sequence is then edited and read back.
ModelBuilder SplitModel() {
  ModelBuilder m(17);
  m.Input("X", kFloat, {"2", "3"});
  m.Initializer("sizes", {1, 2}, {2});
  m.Initializer("one", {1}, {});
  m.Initializer("zero", {0}, {});
  auto* split = m.Node("SplitToSequence", {"X", "sizes"}, {"seq"});
  SetIntAttr(split, "axis", 1);
  m.Node("SequenceAt", {"seq", "one"}, {"second"});
  m.Node("SequenceLength", {"seq"}, {"length"});
  // [X[:, 1:3], X[:, 0:1], X[:, 1:3]] after inserting the second piece at the front.
  m.Node("SequenceInsert", {"seq", "second", "zero"}, {"inserted"});
  m.Node("SequenceErase", {"inserted"}, {"erased"});  // drops the last: [X[:, 1:3], X[:, 0:1]]
  auto* concat = m.Node("ConcatFromSequence", {"erased"}, {"joined"});
  SetIntAttr(concat, "axis", -1);
  m.Output("second").Output("length", kInt64).Output("joined");
  return m;
}

TEST(OnnxSequence, SplitAtInsertEraseConcat) {
  absl::StatusOr<ImportResult> imported = Import(SplitModel());
  ASSERT_TRUE(imported.ok()) << imported.status();
  absl::StatusOr<std::vector<vm::Tensor>> out = CompileAndRun(*imported, {{"X", Floats({2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(FloatsOf((*out)[0]), (std::vector<float>{2, 3, 5, 6}));
  ASSERT_EQ((*out)[1].numel(), 1);
  int64_t length;
  std::memcpy(&length, (*out)[1].data(), sizeof(length));
  EXPECT_EQ(length, 2);
  EXPECT_EQ((*out)[2].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(FloatsOf((*out)[2]), (std::vector<float>{2, 3, 1, 5, 6, 4}));
}

TEST(OnnxSequence, SplitWithoutSizesAndKeepdims0StacksBackWithNewAxis) {
  ModelBuilder m(17);
  m.Input("X", kFloat, {"2", "3"});
  auto* split = m.Node("SplitToSequence", {"X"}, {"rows"});
  SetIntAttr(split, "keepdims", 0);
  auto* stack = m.Node("ConcatFromSequence", {"rows"}, {"Y"});
  SetIntAttr(stack, "axis", 1);
  SetIntAttr(stack, "new_axis", 1);
  m.Output("Y");
  absl::StatusOr<ImportResult> imported = Import(m);
  ASSERT_TRUE(imported.ok()) << imported.status();
  absl::StatusOr<std::vector<vm::Tensor>> out = CompileAndRun(*imported, {{"X", Floats({2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(out.ok()) << out.status();
  // Rows (3,) stacked along a new axis 1: the transpose.
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(FloatsOf((*out)[0]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

// A sequence graph input: its elements become parameters NAME[k] with the shapes the lookup
// gives; a sequence output is returned as its elements NAME[k].
TEST(OnnxSequence, SequenceInputAndOutputThroughSequenceMap) {
  ModelBuilder m(17);
  AddSequenceValue(m.proto().mutable_graph()->mutable_input(), "xs");
  m.Input("b", kFloat, {"1"});
  ::onnx::GraphProto body;
  body.set_name("add_b");
  for (const char* name : {"x", "bias"}) {
    auto* in = body.add_input();
    in->set_name(name);
    in->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
  }
  auto* add = body.add_node();
  add->set_op_type("Add");
  add->add_input("x");
  add->add_input("bias");
  add->add_output("y");
  auto* y = body.add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
  SetGraphAttr(m.Node("SequenceMap", {"xs", "b"}, {"ys"}), "body", body);
  AddSequenceValue(m.proto().mutable_graph()->mutable_output(), "ys");

  ImportOptions options;
  EXPECT_EQ(Import(m, options).status().code(), absl::StatusCode::kUnimplemented);  // no lookup: no length
  OnnxValue xs;
  xs.is_sequence = true;
  xs.tensors = {Floats({2}, {1, 2}), Floats({3}, {3, 4, 5})};
  options.value_lookup = [&](const std::string& name) -> std::optional<OnnxValue> {
    if (name == "xs") return xs;
    return std::nullopt;
  };
  absl::StatusOr<ImportResult> imported = Import(m, options);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->parameters, (std::vector<std::string>{"xs[0]", "xs[1]", "b"}));
  EXPECT_EQ(imported->outputs, (std::vector<std::string>{"ys[0]", "ys[1]"}));
  absl::StatusOr<std::vector<vm::Tensor>> out = CompileAndRun(
      *imported, {{"xs[0]", xs.tensors[0]}, {"xs[1]", xs.tensors[1]}, {"b", Floats({1}, {10})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ(FloatsOf((*out)[0]), (std::vector<float>{11, 12}));
  EXPECT_EQ(FloatsOf((*out)[1]), (std::vector<float>{13, 14, 15}));
}

TEST(OnnxSequence, OptionalHasAndGetElement) {
  ModelBuilder m(18);
  m.Input("X", kFloat, {"2"});
  m.Node("Optional", {"X"}, {"some"});
  auto* none = m.Node("Optional", {}, {"none"});
  auto* type = none->add_attribute();
  type->set_name("type");
  type->set_type(::onnx::AttributeProto::TYPE_PROTO);
  type->mutable_tp()->mutable_tensor_type()->set_elem_type(kFloat);
  m.Node("OptionalHasElement", {"some"}, {"has_some"});
  m.Node("OptionalHasElement", {"none"}, {"has_none"});
  m.Node("OptionalGetElement", {"some"}, {"Y"});
  m.Output("has_some", ::onnx::TensorProto::BOOL).Output("has_none", ::onnx::TensorProto::BOOL).Output("Y");
  absl::StatusOr<ImportResult> imported = Import(m);
  ASSERT_TRUE(imported.ok()) << imported.status();
  absl::StatusOr<std::vector<vm::Tensor>> out = CompileAndRun(*imported, {{"X", Floats({2}, {7, 8})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ(*static_cast<const uint8_t*>((*out)[0].data()), 1);
  EXPECT_EQ(*static_cast<const uint8_t*>((*out)[1].data()), 0);
  EXPECT_EQ(FloatsOf((*out)[2]), (std::vector<float>{7, 8}));

  // Getting the element of an empty optional is the model's mistake, named.
  m.proto().mutable_graph()->mutable_node(4)->set_input(0, "none");
  absl::Status status = Import(m).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("OptionalGetElement"), std::string::npos) << status;
}

TEST(OnnxSequence, BadPositionsAndMisuseAreErrorsNamingTheNode) {
  ModelBuilder m = SplitModel();
  m.proto().mutable_graph()->mutable_initializer(1)->set_int64_data(0, 2);  // SequenceAt(seq, 2) of 2
  absl::Status status = Import(m).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("op SequenceAt"), std::string::npos) << status;
  EXPECT_NE(status.message().find("out of range"), std::string::npos) << status;

  // A sequence where a tensor is expected.
  ModelBuilder bad(17);
  bad.Input("X", kFloat, {"2"});
  bad.Node("SplitToSequence", {"X"}, {"seq"});
  bad.Node("Relu", {"seq"}, {"Y"});
  bad.Output("Y");
  ImportOptions options;
  options.check = false;
  status = Import(bad, options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("is a sequence"), std::string::npos) << status;
}

TEST(OnnxSequence, ReadValueFileReadsSequencesAndOptionals) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("kiln_onnx_sequence_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto tensor = [](float a, float b) {
    ::onnx::TensorProto t;
    t.set_data_type(kFloat);
    t.add_dims(2);
    t.add_float_data(a);
    t.add_float_data(b);
    return t;
  };
  ::onnx::SequenceProto seq;
  seq.set_name("s");
  seq.set_elem_type(::onnx::SequenceProto::TENSOR);
  *seq.add_tensor_values() = tensor(1, 2);
  *seq.add_tensor_values() = tensor(3, 4);
  ::onnx::OptionalProto some, none;
  some.set_elem_type(::onnx::OptionalProto::SEQUENCE);
  *some.mutable_sequence_value() = seq;
  none.set_elem_type(::onnx::OptionalProto::TENSOR);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream((dir / name).string(), std::ios::binary) << bytes;
    return (dir / name).string();
  };
  absl::StatusOr<OnnxValue> s = ReadValueFile(write("seq.pb", seq.SerializeAsString()), OnnxValueKind::kSequence);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "s");
  EXPECT_TRUE(s->is_sequence && s->present);
  ASSERT_EQ(s->tensors.size(), 2u);
  float v;
  std::memcpy(&v, s->tensors[1].bytes->data() + 4, 4);
  EXPECT_EQ(v, 4.0f);
  absl::StatusOr<OnnxValue> o = ReadValueFile(write("some.pb", some.SerializeAsString()), OnnxValueKind::kOptional);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->present && o->is_sequence);
  EXPECT_EQ(o->tensors.size(), 2u);
  absl::StatusOr<OnnxValue> n = ReadValueFile(write("none.pb", none.SerializeAsString()), OnnxValueKind::kOptional);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_FALSE(n->present);
  EXPECT_TRUE(n->tensors.empty());
  // Not a SequenceProto at all.
  EXPECT_FALSE(ReadValueFile(write("junk.pb", "\xff\xff\xff"), OnnxValueKind::kSequence).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::frontends::onnx
