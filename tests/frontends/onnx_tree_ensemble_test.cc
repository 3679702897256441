// ai.onnx.ml's tree ensembles (converters/tree_ensemble_converters.cc, builtins/
// tree_ensemble_builtins.cc): TreeEnsemble 5 with every node mode and aggregate, and the
// older TreeEnsembleRegressor / TreeEnsembleClassifier. Expected values come from ONNX 1.23's
// reference evaluator (onnx.reference.ReferenceEvaluator, run once on these same models;
// post transforms of TreeEnsemble, which that reference skips, by numpy on its SUM output).
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"
#include "vm/string_tensor.h"

namespace kiln::frontends::onnx {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
const float kNaN = std::nanf("");

ModelBuilder MlModel(int64_t ml_version) {
  ModelBuilder m(17);
  auto* ml = m.proto().add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(ml_version);
  return m;
}

void Ints(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void Floats(::onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
void Strings(::onnx::NodeProto* n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRINGS);
  for (const std::string& x : v) a->add_strings(x);
}
void String(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}
// A float32 or uint8 tensor attribute.
void FloatTensor(::onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(kFloat);
  a->mutable_t()->add_dims(static_cast<int64_t>(v.size()));
  for (float x : v) a->mutable_t()->add_float_data(x);
}
void Uint8Tensor(::onnx::NodeProto* n, const std::string& name, const std::vector<int32_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(::onnx::TensorProto::UINT8);
  a->mutable_t()->add_dims(static_cast<int64_t>(v.size()));
  for (int32_t x : v) a->mutable_t()->add_int32_data(x);
}

std::vector<float> FloatsOf(const vm::Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.data(), out.size() * sizeof(float));
  return out;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f * std::max(1.0f, std::fabs(want[i]))) << i;
}

// Two trees over 3 features with every mode: tree 0 = nodes 0-3 (<=, member {1, 3}, >, !=),
// tree 1 = nodes 4-6 (<, >=, ==); 9 leaves, weights 0.25 * (1..9), alternating targets.
ModelBuilder TreeEnsembleModel(int64_t aggregate, int64_t post, const std::vector<int64_t>& true_ids = {1, 0, 2, 3, 5, 6, 7}) {
  ModelBuilder m = MlModel(5);
  m.Input("X", kFloat, {"N", "3"}).Output("Y");
  ::onnx::NodeProto* n = m.Node("TreeEnsemble", {"X"}, {"Y"});
  n->set_domain("ai.onnx.ml");
  Ints(n, "nodes_featureids", {0, 1, 2, 1, 2, 0, 1});
  FloatTensor(n, "nodes_splits", {0.5f, 0, 2, 4, 1, -1, 2});
  Uint8Tensor(n, "nodes_modes", {0, 6, 3, 5, 1, 2, 4});
  Ints(n, "nodes_truenodeids", true_ids);
  Ints(n, "nodes_trueleafs", {0, 1, 1, 1, 0, 1, 1});
  Ints(n, "nodes_falsenodeids", {2, 1, 3, 4, 5, 6, 8});
  Ints(n, "nodes_falseleafs", {0, 1, 0, 1, 1, 0, 1});
  Ints(n, "nodes_missing_value_tracks_true", {0, 1, 0, 0, 1, 0, 0});
  FloatTensor(n, "membership_values", {1, 3, kNaN});
  Ints(n, "leaf_targetids", {0, 1, 0, 1, 0, 1, 0, 1, 0});
  FloatTensor(n, "leaf_weights", {0.25f, 0.5f, 0.75f, 1, 1.25f, 1.5f, 1.75f, 2, 2.25f});
  Ints(n, "tree_roots", {0, 4});
  SetIntAttr(n, "n_targets", 2);
  SetIntAttr(n, "aggregate_function", aggregate);
  SetIntAttr(n, "post_transform", post);
  return m;
}

const std::vector<float> kTreeX = {0, 1, 0, 0, 2, 5, 1, 4, 3, 1, 5, 0.5f, -2, 2, 0, kNaN, 3, kNaN, 0.5f, kNaN, 3};

absl::StatusOr<std::vector<vm::Tensor>> RunTrees(const ModelBuilder& m, const std::vector<float>& x, int64_t features) {
  const int64_t rows = static_cast<int64_t>(x.size()) / features;
  return ImportUncheckedAndRun(m.Bytes(), {{"X", HostData(tir::DataType::Float32(), {rows, features}, x)}});
}

TEST(OnnxTreeEnsemble, EveryModeAndAggregateMatchesTheReference) {
  const float kMax = 3.4028234663852886e+38f;
  const std::map<int64_t, std::vector<float>> expected = {
      {0, {1.0f, 0.0f, 0.0f, 1.0f, 0.375f, 0.75f, 0.875f, 0.5f, 0.0f, 1.25f, 1.125f, 0.5f, 0.125f, 0.75f}},
      {1, {2.0f, 0.0f, 0.0f, 2.0f, 0.75f, 1.5f, 1.75f, 1.0f, 0.0f, 2.5f, 2.25f, 1.0f, 0.25f, 1.5f}},
      {2, {0.25f, kMax, kMax, 0.5f, 0.75f, 1.5f, 1.75f, 1.0f, kMax, 0.5f, 2.25f, 1.0f, 0.25f, 1.5f}},
      {3, {1.75f, -kMax, -kMax, 1.5f, 0.75f, 1.5f, 1.75f, 1.0f, -kMax, 2.0f, 2.25f, 1.0f, 0.25f, 1.5f}}};
  for (const auto& [aggregate, want] : expected) {
    absl::StatusOr<std::vector<vm::Tensor>> out = RunTrees(TreeEnsembleModel(aggregate, 0), kTreeX, 3);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{7, 2}));
    SCOPED_TRACE(aggregate);
    ExpectNear(FloatsOf((*out)[0]), want);
  }
}

TEST(OnnxTreeEnsemble, PostTransformsFollowTheSpecNumbering) {
  // 1 = SOFTMAX, 2 = LOGISTIC (ONNX's numbering; ONNX Runtime 1.23 swaps the two).
  const std::map<int64_t, std::vector<float>> expected = {
      {1, {0.880797088f, 0.119202919f, 0.119202919f, 0.880797088f, 0.320821315f, 0.679178715f, 0.679178715f,
           0.320821315f, 0.0758581832f, 0.924141824f, 0.777299881f, 0.222700134f, 0.222700134f, 0.777299881f}},
      {2, {0.880797088f, 0.5f, 0.5f, 0.880797088f, 0.679178715f, 0.817574501f, 0.851952791f, 0.731058598f, 0.5f,
           0.924141824f, 0.904650509f, 0.731058598f, 0.562176526f, 0.817574501f}}};
  for (const auto& [post, want] : expected) {
    absl::StatusOr<std::vector<vm::Tensor>> out = RunTrees(TreeEnsembleModel(1, post), kTreeX, 3);
    ASSERT_TRUE(out.ok()) << out.status();
    SCOPED_TRACE(post);
    ExpectNear(FloatsOf((*out)[0]), want);
  }
}

TEST(OnnxTreeEnsemble, MalformedTreesAreClearErrors) {
  // A true child naming node 9 of 7.
  absl::Status s = ImportUncheckedStatus(TreeEnsembleModel(1, 0, {1, 0, 2, 3, 9, 6, 7}).Bytes());
  EXPECT_THAT(s.message(), HasSubstr("names node 9 of 7"));
  // A cycle (node 0 is its own true child) fails at run time, not a hang.
  absl::StatusOr<std::vector<vm::Tensor>> cycle = RunTrees(TreeEnsembleModel(1, 0, {0, 0, 2, 3, 5, 6, 7}), kTreeX, 3);
  ASSERT_FALSE(cycle.ok());
  EXPECT_THAT(cycle.status().message(), HasSubstr("has a cycle"));
  // X (declared [N, F]) narrower than the features the nodes read.
  ModelBuilder any_width = TreeEnsembleModel(1, 0);
  any_width.proto().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_param("F");
  absl::StatusOr<std::vector<vm::Tensor>> narrow = RunTrees(any_width, {0, 1, 2, 3}, 2);
  ASSERT_FALSE(narrow.ok());
  EXPECT_THAT(narrow.status().message(), HasSubstr("reads feature 2 but X has 2 features"));
  // An unknown aggregate.
  EXPECT_THAT(ImportUncheckedStatus(TreeEnsembleModel(7, 0).Bytes()).message(), HasSubstr("unknown aggregate_function 7"));
}

// The older operators' shared forest over 2 features: tree 0 (<= then != tracking NaN as
// true), tree 1 (>); leaves by (tree, node id).
::onnx::NodeProto* OldForest(ModelBuilder& m, const std::string& op, std::vector<std::string> outputs) {
  ::onnx::NodeProto* n = m.Node(op, {"X"}, outputs);
  n->set_domain("ai.onnx.ml");
  Ints(n, "nodes_treeids", {0, 0, 0, 0, 0, 1, 1, 1});
  Ints(n, "nodes_nodeids", {0, 1, 2, 3, 4, 0, 1, 2});
  Ints(n, "nodes_featureids", {0, 0, 1, 0, 0, 1, 0, 0});
  Strings(n, "nodes_modes", {"BRANCH_LEQ", "LEAF", "BRANCH_NEQ", "LEAF", "LEAF", "BRANCH_GT", "LEAF", "LEAF"});
  Floats(n, "nodes_values", {0.5f, 0, 1, 0, 0, 0, 0, 0});
  Ints(n, "nodes_truenodeids", {1, 0, 3, 0, 0, 1, 0, 0});
  Ints(n, "nodes_falsenodeids", {2, 0, 4, 0, 0, 2, 0, 0});
  Ints(n, "nodes_missing_value_tracks_true", {0, 0, 1, 0, 0, 0, 0, 0});
  return n;
}
const std::vector<float> kOldX = {0, 0, 1, 1, 1, 2, kNaN, -1, 1, kNaN};

TEST(OnnxTreeEnsemble, RegressorAveragesTreesAndAddsBaseValues) {
  ModelBuilder m = MlModel(3);
  m.Input("X", kFloat, {"N", "2"}).Output("Y");
  ::onnx::NodeProto* n = OldForest(m, "TreeEnsembleRegressor", {"Y"});
  Ints(n, "target_treeids", {0, 0, 0, 0, 1, 1});
  Ints(n, "target_nodeids", {1, 1, 3, 4, 1, 2});
  Ints(n, "target_ids", {0, 1, 1, 0, 0, 1});
  Floats(n, "target_weights", {1, -1, 2, 3, 0.5f, 0.25f});
  SetIntAttr(n, "n_targets", 2);
  Floats(n, "base_values", {0.1f, 0.2f});
  String(n, "aggregate_function", "AVERAGE");
  absl::StatusOr<std::vector<vm::Tensor>> out = RunTrees(m, kOldX, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear(FloatsOf((*out)[0]), {0.6f, -0.175f, 1.85f, 0.2f, 0.35f, 1.2f, 0.1f, 1.325f, 0.1f, 1.325f});
}

TEST(OnnxTreeEnsemble, ClassifierGivesStringLabelsOfTheBestScore) {
  ModelBuilder m = MlModel(3);
  m.Input("X", kFloat, {"N", "2"}).Output("Y", ::onnx::TensorProto::STRING).Output("Z");
  ::onnx::NodeProto* n = OldForest(m, "TreeEnsembleClassifier", {"Y", "Z"});
  Ints(n, "class_treeids", {0, 0, 0, 0, 1, 1});
  Ints(n, "class_nodeids", {1, 1, 3, 4, 1, 2});
  Ints(n, "class_ids", {0, 1, 2, 0, 1, 2});
  Floats(n, "class_weights", {1, -1, 2, 3, 0.5f, 0.25f});
  Strings(n, "classlabels_strings", {"a", "b", "c"});
  String(n, "post_transform", "SOFTMAX");
  absl::StatusOr<std::vector<vm::Tensor>> out = RunTrees(m, kOldX, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(vm::StringsOf((*out)[0]), ElementsAre("a", "a", "c", "c", "c"));
  ExpectNear(FloatsOf((*out)[1]), {0.62200588f, 0.08417933f, 0.29381475f, 0.88349205f, 0.07252146f, 0.04398648f,
                                   0.09962365f, 0.16425163f, 0.73612475f, 0.08704935f, 0.08704935f, 0.82590127f,
                                   0.08704935f, 0.08704935f, 0.82590127f});
}

TEST(OnnxTreeEnsemble, BinaryClassifierScoresBothClasses) {
  // Every weight on class id 0 of two labels: score 1 is the sum, score 0 its negation,
  // then LOGISTIC.
  ModelBuilder m = MlModel(3);
  m.Input("X", kFloat, {"N", "2"}).Output("Y", ::onnx::TensorProto::INT64).Output("Z");
  ::onnx::NodeProto* n = OldForest(m, "TreeEnsembleClassifier", {"Y", "Z"});
  Ints(n, "class_treeids", {0, 0, 0, 0, 1, 1});
  Ints(n, "class_nodeids", {1, 1, 3, 4, 1, 2});
  Ints(n, "class_ids", {0, 0, 0, 0, 0, 0});
  Floats(n, "class_weights", {1, -1, 2, 3, 0.5f, 0.25f});
  Ints(n, "classlabels_int64s", {4, 7});
  String(n, "post_transform", "LOGISTIC");
  absl::StatusOr<std::vector<vm::Tensor>> out = RunTrees(m, kOldX, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<int64_t> labels(5);
  std::memcpy(labels.data(), (*out)[0].data(), 5 * sizeof(int64_t));
  EXPECT_EQ(labels, (std::vector<int64_t>{7, 7, 7, 7, 7}));
  ExpectNear(FloatsOf((*out)[1]), {0.4378235f, 0.5621765f, 0.02931223f, 0.97068775f, 0.07585818f, 0.92414182f,
                                   0.09534947f, 0.90465051f, 0.09534947f, 0.90465051f});
}

TEST(OnnxTreeEnsemble, OldOperatorsRejectBadTables) {
  ModelBuilder m = MlModel(3);
  m.Input("X", kFloat, {"N", "2"}).Output("Y");
  ::onnx::NodeProto* n = OldForest(m, "TreeEnsembleRegressor", {"Y"});
  Ints(n, "target_treeids", {0});
  Ints(n, "target_nodeids", {2});  // a branch, not a leaf
  Ints(n, "target_ids", {0});
  Floats(n, "target_weights", {1});
  EXPECT_THAT(ImportUncheckedStatus(m.Bytes()).message(), HasSubstr("which is not a leaf"));
}

}  // namespace
}  // namespace kiln::frontends::onnx
