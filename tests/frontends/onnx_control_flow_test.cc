// ONNX control flow lowered at import time (converters/control_flow_converters.cc): If on a
// condition known at run time (both branches, selected) or at import time (one branch),
// Scan and Loop unrolled. Results are checked against values computed here by hand.
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
constexpr int32_t kBool = ::onnx::TensorProto::BOOL;

::onnx::NodeProto* AddNode(::onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& inputs,
                          const std::string& output) {
  auto* node = g->add_node();
  node->set_op_type(op);
  for (const auto& i : inputs) node->add_input(i);
  node->add_output(output);
  return node;
}

::onnx::GraphProto Branch(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                          const std::string& output) {
  ::onnx::GraphProto g;
  g.set_name(name);
  AddNode(&g, op, inputs, output);
  g.add_output()->set_name(output);
  return g;
}

void AddFloatConstant(::onnx::GraphProto* g, const std::string& name, const std::vector<float>& values) {
  auto* node = g->add_node();
  node->set_op_type("Constant");
  node->add_output(name);
  auto* attr = node->add_attribute();
  attr->set_name("value");
  attr->set_type(::onnx::AttributeProto::TENSOR);
  attr->mutable_t()->set_data_type(kFloat);
  attr->mutable_t()->add_dims(static_cast<int64_t>(values.size()));
  for (float v : values) attr->mutable_t()->add_float_data(v);
}

std::vector<float> FloatsOf(const vm::Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.data(), out.size() * sizeof(float));
  return out;
}

absl::StatusOr<std::vector<vm::Tensor>> ImportAndRun(const ModelBuilder& model,
                                                     const std::map<std::string, relax::ConstantData>& inputs,
                                                     bool check = true) {
  ImportOptions options;
  options.check = check;
  KILN_ASSIGN_OR_RETURN(ImportResult imported, ImportOnnxBytes(model.Bytes(), "", options));
  return CompileAndRun(imported, inputs);
}

// The If node comes first in the file; its branches read Y1 and Y2, which later nodes
// produce: the import orders it after them (ONNX's checker, which refuses unsorted graphs,
// is off).
TEST(OnnxControlFlow, IfOnARunTimeConditionSelectsBetweenBothBranches) {
  ModelBuilder m(16);
  m.Input("cond", kBool, {}).Input("X", kFloat, {"3"}).Output("Y");
  ::onnx::NodeProto* node = m.Node("If", {"cond"}, {"Y"});
  SetGraphAttr(node, "then_branch", Branch("then", "Neg", {"Y1"}, "then_out"));
  SetGraphAttr(node, "else_branch", Branch("else", "Abs", {"Y2"}, "else_out"));
  m.Node("Add", {"X", "X"}, {"Y1"});
  m.Node("Mul", {"X", "X"}, {"Y2"});
  const std::vector<float> x = {1.5f, -2.0f, 3.0f};
  for (bool cond : {true, false}) {
    absl::StatusOr<std::vector<vm::Tensor>> out =
        ImportAndRun(m, {{"cond", HostData(tir::DataType::Bool(), {}, std::vector<uint8_t>{cond})},
                         {"X", HostData(tir::DataType::Float32(), {3}, x)}},
                     /*check=*/false);
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<float> y = FloatsOf(out->at(0));
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], cond ? -(x[i] + x[i]) : x[i] * x[i]) << i;
  }
}

TEST(OnnxControlFlow, IfOnAKnownConditionTakesOneBranchOfAnyShape) {
  ModelBuilder m(16);
  m.Output("Y");
  ::onnx::NodeProto* cond = m.Node("Constant", {}, {"cond"});
  auto* attr = cond->add_attribute();
  attr->set_name("value");
  attr->set_type(::onnx::AttributeProto::TENSOR);
  attr->mutable_t()->set_data_type(kBool);
  attr->mutable_t()->add_int32_data(0);
  ::onnx::NodeProto* node = m.Node("If", {"cond"}, {"Y"});
  ::onnx::GraphProto then_branch, else_branch;
  then_branch.set_name("then");
  else_branch.set_name("else");
  AddFloatConstant(&then_branch, "a", {1, 2});
  then_branch.add_output()->set_name("a");
  AddFloatConstant(&else_branch, "b", {3, 4, 5});
  else_branch.add_output()->set_name("b");
  SetGraphAttr(node, "then_branch", then_branch);
  SetGraphAttr(node, "else_branch", else_branch);
  absl::StatusOr<std::vector<vm::Tensor>> out = ImportAndRun(m, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(FloatsOf(out->at(0)), (std::vector<float>{3, 4, 5}));

  // The same branches on a run-time condition cannot be selected elementwise.
  ModelBuilder run_time(16);
  run_time.Input("cond", kBool, {}).Output("Y");
  ::onnx::NodeProto* if_node = run_time.Node("If", {"cond"}, {"Y"}, "pick");
  SetGraphAttr(if_node, "then_branch", then_branch);
  SetGraphAttr(if_node, "else_branch", else_branch);
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(run_time.Bytes(), "", ImportOptions());
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(imported.status().message(), HasSubstr("node 'pick' (op If"));
  EXPECT_THAT(imported.status().message(), HasSubstr("must have the same shape and type"));
}

// Scan (opset 9+): a running sum over rows taken in reverse, with the partial sums stacked
// along axis 1.
TEST(OnnxControlFlow, ScanUnrollsOverTheSequence) {
  ModelBuilder m(16);
  m.Input("init", kFloat, {"2"}).Input("x", kFloat, {"3", "2"}).Output("final").Output("partial");
  ::onnx::NodeProto* node = m.Node("Scan", {"init", "x"}, {"final", "partial"});
  ::onnx::GraphProto body;
  body.set_name("body");
  body.add_input()->set_name("sum_in");
  body.add_input()->set_name("row");
  AddNode(&body, "Add", {"sum_in", "row"}, "sum_out");
  AddNode(&body, "Identity", {"sum_out"}, "scanned");
  body.add_output()->set_name("sum_out");
  body.add_output()->set_name("scanned");
  SetGraphAttr(node, "body", body);
  SetIntAttr(node, "num_scan_inputs", 1);
  auto* dirs = node->add_attribute();
  dirs->set_name("scan_input_directions");
  dirs->set_type(::onnx::AttributeProto::INTS);
  dirs->add_ints(1);
  auto* axes = node->add_attribute();
  axes->set_name("scan_output_axes");
  axes->set_type(::onnx::AttributeProto::INTS);
  axes->add_ints(1);
  const std::vector<float> init = {10, 20}, x = {1, 2, 3, 4, 5, 6};
  absl::StatusOr<std::vector<vm::Tensor>> out = ImportAndRun(
      m, {{"init", HostData(tir::DataType::Float32(), {2}, init)}, {"x", HostData(tir::DataType::Float32(), {3, 2}, x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  // Rows in reverse: [5, 6], [3, 4], [1, 2]: sums [15, 26], [18, 30], [19, 32].
  EXPECT_EQ(FloatsOf(out->at(0)), (std::vector<float>{19, 32}));
  EXPECT_EQ(out->at(1).shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(FloatsOf(out->at(1)), (std::vector<float>{15, 18, 19, 26, 30, 32}));
}

// Loop with a trip count: y += iteration number, three times; a condition computed from
// run-time data cannot be unrolled.
TEST(OnnxControlFlow, LoopUnrollsAKnownTripCount) {
  auto make = [](bool data_dependent_condition) {
    ModelBuilder m(16);
    m.Input("y0", kFloat, {"1"}).Output("y");
    m.Initializer("trips", {3}, {});
    ::onnx::NodeProto* node = m.Node("Loop", {"trips", "", "y0"}, {"y"}, "loop");
    ::onnx::GraphProto body;
    body.set_name("body");
    body.add_input()->set_name("i");
    body.add_input()->set_name("cond_in");
    body.add_input()->set_name("y_in");
    SetIntAttr(AddNode(&body, "Cast", {"i"}, "i_f"), "to", kFloat);
    AddNode(&body, "Add", {"y_in", "i_f"}, "y_out");
    if (data_dependent_condition) {
      AddNode(&body, "Less", {"y_out", "y_in"}, "cond_out");
    } else {
      AddNode(&body, "Identity", {"cond_in"}, "cond_out");
    }
    body.add_output()->set_name("cond_out");
    body.add_output()->set_name("y_out");
    SetGraphAttr(node, "body", body);
    return m;
  };
  absl::StatusOr<std::vector<vm::Tensor>> out =
      ImportAndRun(make(false), {{"y0", HostData(tir::DataType::Float32(), {1}, std::vector<float>{0.5f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(FloatsOf(out->at(0)), (std::vector<float>{0.5f + 0 + 1 + 2}));

  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(make(true).Bytes(), "", ImportOptions());
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(imported.status().message(), HasSubstr("node 'loop' (op Loop"));
  EXPECT_THAT(imported.status().message(), HasSubstr("condition known at import time"));
}

}  // namespace
}  // namespace kiln::frontends::onnx
