// Operators whose output shape is an input's value, given a tensor computed at run time
// (converters/run_time_shapes.h): Expand, Reshape, ConstantOfShape, Tile and Pad, with the
// shape input computed as Add(S, 0) from a graph input S, so that it is known only when the
// function runs. Each is compiled once per model and run on several shapes; the results are
// compared with the operators' definitions written here as loops, and bad shapes must be
// clear run-time errors.
#include <cstdint>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = ::onnx::TensorProto::INT64;
using tir::DataType;

// A model: X (float, dims x_dims) and S (int64, length s_len) in; `op`(X, Add(S, 0)) out,
// with `extra` attributes set by the caller on the returned node.
struct Model {
  ModelBuilder m{18};
  ::onnx::NodeProto* node = nullptr;
};

std::unique_ptr<Model> MakeModel(const std::string& op, const std::vector<std::string>& x_dims, int64_t s_len,
                                 bool shape_first = false) {
  auto model = std::make_unique<Model>();
  ModelBuilder& m = model->m;
  if (!shape_first) m.Input("X", kFloat, x_dims);
  m.Input("S", kInt64, {std::to_string(s_len)});
  m.Output("Y", kFloat);
  m.Initializer("zero", {0}, {1});
  m.Node("Add", {"S", "zero"}, {"s"}, "computed");
  model->node = shape_first ? m.Node(op, {"s"}, {"Y"}, "op") : m.Node(op, {"X", "s"}, {"Y"}, "op");
  return model;
}

std::vector<float> Iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f - 1.0f;
  return v;
}

int64_t Count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<std::vector<vm::Tensor>> RunModel(const Model& model, const std::vector<int64_t>& x_shape,
                                                 const std::vector<int64_t>& s, bool with_x = true) {
  KILN_ASSIGN_OR_RETURN(ImportResult imported, ImportOnnxBytes(model.m.Bytes(), "", ImportOptions{}));
  std::map<std::string, relax::ConstantData> inputs = {
      {"S", HostData(DataType::Int64(), {static_cast<int64_t>(s.size())}, s)}};
  if (with_x) inputs["X"] = HostData(DataType::Float32(), x_shape, Iota(Count(x_shape)));
  return CompileAndRun(imported, inputs);
}

std::vector<float> Values(const vm::Tensor& t) {
  const float* p = static_cast<const float*>(t.data());
  return std::vector<float>(p, p + Count(t.shape()));
}

TEST(OnnxRunTimeShape, ExpandBroadcastsBothWays) {
  auto model = MakeModel("Expand", {"3", "1"}, 3);
  // Target (2, 1, 4): the 1 keeps X's 3, X's 1 becomes 4.
  absl::StatusOr<std::vector<vm::Tensor>> out = RunModel(*model, {3, 1}, {2, 1, 4});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 3, 4}));
  std::vector<float> x = Iota(3), expected;
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) expected.push_back(x[i]);
    }
  }
  EXPECT_EQ(Values((*out)[0]), expected);
}

TEST(OnnxRunTimeShape, ExpandShorterTargetAndNonBroadcastingShape) {
  auto model = MakeModel("Expand", {"3", "1"}, 1);
  absl::StatusOr<std::vector<vm::Tensor>> out = RunModel(*model, {3, 1}, {5});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{3, 5}));
  auto wide = MakeModel("Expand", {"3", "1"}, 2);
  absl::StatusOr<std::vector<vm::Tensor>> bad = RunModel(*wide, {3, 1}, {4, 2});  // 3 vs 4
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), testing::HasSubstr("broadcast"));
}

TEST(OnnxRunTimeShape, ReshapeCopiesZeroAndInfersMinusOne) {
  auto model = MakeModel("Reshape", {"2", "3", "4"}, 3);
  absl::StatusOr<std::vector<vm::Tensor>> out = RunModel(*model, {2, 3, 4}, {0, -1, 2});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 6, 2}));
  EXPECT_EQ(Values((*out)[0]), Iota(24));  // row-major order kept
  out = RunModel(*model, {2, 3, 4}, {4, 3, 2});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{4, 3, 2}));
}

TEST(OnnxRunTimeShape, ReshapeBadShapesAreRunTimeErrors) {
  auto model = MakeModel("Reshape", {"2", "3", "4"}, 2);
  absl::StatusOr<std::vector<vm::Tensor>> two_inferred = RunModel(*model, {2, 3, 4}, {-1, -1});
  ASSERT_FALSE(two_inferred.ok());
  EXPECT_THAT(std::string(two_inferred.status().message()), testing::HasSubstr("negative"));
  absl::StatusOr<std::vector<vm::Tensor>> wrong_count = RunModel(*model, {2, 3, 4}, {5, 5});
  ASSERT_FALSE(wrong_count.ok());
  EXPECT_THAT(std::string(wrong_count.status().message()), testing::HasSubstr("element counts differ"));
  absl::StatusOr<std::vector<vm::Tensor>> not_divisible = RunModel(*model, {2, 3, 4}, {5, -1});
  ASSERT_FALSE(not_divisible.ok());
}

TEST(OnnxRunTimeShape, ReshapeAllowZeroMakesAnEmptyDim) {
  auto model = MakeModel("Reshape", {"0", "3"}, 2);
  SetIntAttr(model->node, "allowzero", 1);
  absl::StatusOr<std::vector<vm::Tensor>> out = RunModel(*model, {0, 3}, {3, 0});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{3, 0}));
}

TEST(OnnxRunTimeShape, ConstantOfShapeFillsAndRefusesNegativeDims) {
  auto model = MakeModel("ConstantOfShape", {}, 2, /*shape_first=*/true);
  absl::StatusOr<std::vector<vm::Tensor>> out = RunModel(*model, {}, {2, 3}, /*with_x=*/false);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values((*out)[0]), std::vector<float>(6, 0.0f));
  absl::StatusOr<std::vector<vm::Tensor>> bad = RunModel(*model, {}, {2, -3}, /*with_x=*/false);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), testing::HasSubstr("negative"));
}

TEST(OnnxRunTimeShape, TileRepeatsAlongEachAxis) {
  auto model = MakeModel("Tile", {"2", "3"}, 2);
  for (const std::vector<int64_t>& reps : {std::vector<int64_t>{2, 1}, {1, 3}, {3, 2}, {0, 2}}) {
    absl::StatusOr<std::vector<vm::Tensor>> out = RunModel(*model, {2, 3}, reps);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{2 * reps[0], 3 * reps[1]}));
    std::vector<float> x = Iota(6), expected;
    for (int64_t i = 0; i < 2 * reps[0]; ++i) {
      for (int64_t j = 0; j < 3 * reps[1]; ++j) expected.push_back(x[static_cast<size_t>(i % 2 * 3 + j % 3)]);
    }
    EXPECT_EQ(Values((*out)[0]), expected) << reps[0] << "x" << reps[1];
  }
}

// ONNX Pad written as a loop over the output: each output position maps back to an input
// position by the mode (reflect folds at the borders until inside; constant outside -> 9).
std::vector<float> NaivePad(const std::vector<float>& x, int64_t rows, int64_t cols, const std::vector<int64_t>& pads,
                            const std::string& mode, std::vector<int64_t>* shape) {
  const int64_t out_rows = rows + pads[0] + pads[2], out_cols = cols + pads[1] + pads[3];
  *shape = {out_rows, out_cols};
  auto source = [&](int64_t i, int64_t n, bool* inside) {
    *inside = i >= 0 && i < n;
    if (mode == "edge" || mode == "constant") return std::min(std::max<int64_t>(i, 0), n - 1);
    if (mode == "wrap") return ((i % n) + n) % n;
    while (i < 0 || i >= n) {  // reflect
      if (i < 0) i = -i;
      if (i >= n) i = 2 * (n - 1) - i;
    }
    return i;
  };
  std::vector<float> out;
  for (int64_t i = 0; i < out_rows; ++i) {
    for (int64_t j = 0; j < out_cols; ++j) {
      bool in_row = false, in_col = false;
      const int64_t si = source(i - pads[0], rows, &in_row), sj = source(j - pads[1], cols, &in_col);
      out.push_back(mode == "constant" && !(in_row && in_col) ? 9.0f : x[static_cast<size_t>(si * cols + sj)]);
    }
  }
  return out;
}

TEST(OnnxRunTimeShape, PadEveryModeWithGrowingAndCroppingPads) {
  for (const std::string mode : {"constant", "edge", "reflect", "wrap"}) {
    auto model = std::make_unique<Model>();
    ModelBuilder& m = model->m;
    m.Input("X", kFloat, {"3", "4"}).Input("S", kInt64, {"4"}).Output("Y", kFloat);
    m.Initializer("zero", {0}, {1});
    auto* value = m.proto().mutable_graph()->add_initializer();
    value->set_name("value");
    value->set_data_type(kFloat);
    value->add_float_data(9.0f);
    m.Node("Add", {"S", "zero"}, {"s"}, "computed");
    auto* pad = m.Node("Pad", {"X", "s", "value"}, {"Y"}, "pad");
    auto* a = pad->add_attribute();
    a->set_name("mode");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(mode);
    for (const std::vector<int64_t>& pads : {std::vector<int64_t>{1, 2, 2, 1}, {0, -1, 1, 0}, {2, 0, -1, 3}}) {
      absl::StatusOr<std::vector<vm::Tensor>> out = RunModel(*model, {3, 4}, pads);
      ASSERT_TRUE(out.ok()) << mode << ": " << out.status();
      std::vector<int64_t> shape;
      std::vector<float> expected = NaivePad(Iota(12), 3, 4, pads, mode, &shape);
      ASSERT_EQ((*out)[0].shape(), shape) << mode;
      EXPECT_EQ(Values((*out)[0]), expected) << mode << " pads " << pads[0] << "," << pads[1] << "," << pads[2] << ","
                                             << pads[3];
    }
  }
}

TEST(OnnxRunTimeShape, PadConstantFillsAnEmptyAxis) {
  auto model = MakeModel("Pad", {"n", "4"}, 4);
  absl::StatusOr<std::vector<vm::Tensor>> out = RunModel(*model, {0, 4}, {1, 0, 1, 1});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(Values((*out)[0]), std::vector<float>(10, 0.0f));
}

TEST(OnnxRunTimeShape, PadCroppingBelowZeroIsARunTimeError) {
  auto model = MakeModel("Pad", {"3", "4"}, 4);
  absl::StatusOr<std::vector<vm::Tensor>> bad = RunModel(*model, {3, 4}, {-2, 0, -2, 0});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), testing::HasSubstr("negative"));
}

// Expand's target Concat(s, [1, 3]) with s computed at run time: the constant entries stay
// known at import time, so the Squeeze (no axes) after it drops the 1 and keeps the fresh
// dim, which must not be 1 when it runs.
TEST(OnnxRunTimeShape, KnownEntriesOfARunTimeShapeStayStatic) {
  ModelBuilder m(18);
  m.Input("X", kFloat, {"1", "1", "3"}).Input("S", kInt64, {"1"}).Output("Y", kFloat);
  m.Initializer("zero", {0}, {1});
  m.Initializer("tail", {1, 3}, {2});
  m.Node("Add", {"S", "zero"}, {"s"}, "computed");
  m.Node("Concat", {"s", "tail"}, {"target"}, "concat")->add_attribute()->set_name("axis");
  auto* axis = m.proto().mutable_graph()->mutable_node(1)->mutable_attribute(0);
  axis->set_type(::onnx::AttributeProto::INT);
  axis->set_i(0);
  m.Node("Expand", {"X", "target"}, {"e"}, "expand");
  m.Node("Squeeze", {"e"}, {"Y"}, "squeeze");
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", ImportOptions{});
  ASSERT_TRUE(imported.ok()) << imported.status();
  auto run = [&](int64_t n) {
    return CompileAndRun(*imported, {{"X", HostData(DataType::Float32(), {1, 1, 3}, Iota(3))},
                                     {"S", HostData(DataType::Int64(), {1}, std::vector<int64_t>{n})}});
  };
  absl::StatusOr<std::vector<vm::Tensor>> out = run(4);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{4, 3}));
  std::vector<float> expected;
  for (int i = 0; i < 4; ++i) {
    for (float v : Iota(3)) expected.push_back(v);
  }
  EXPECT_EQ(Values((*out)[0]), expected);
  absl::StatusOr<std::vector<vm::Tensor>> one = run(1);  // ONNX would squeeze it: refused
  ASSERT_FALSE(one.ok());
  EXPECT_THAT(std::string(one.status().message()), testing::HasSubstr("is 1 at run time"));
}

}  // namespace
}  // namespace kiln::frontends::onnx
