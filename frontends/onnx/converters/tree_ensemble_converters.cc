// ai.onnx.ml's decision-tree ensembles: TreeEnsemble (5) and the older TreeEnsembleRegressor and
// TreeEnsembleClassifier (1, 3), which sklearn-onnx writes. All three describe the same thing with
// different attributes; each converter rewrites its attributes into one normalized forest (the
// tables the host builtin kiln.ml.tree_ensemble reads, builtins/tree_ensemble_builtins.cc, which
// says their layout) and emits one R.call_pure_builtin with the tables as constants. Malformed
// attributes (lengths that disagree, child ids that name no node, unknown modes) are errors
// naming the node here; feature ids are checked against X's width at run time.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"
#include "tir/string_type.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// The normalized forest (see builtins/tree_ensemble_builtins.cc).
struct Forest {
  std::vector<double> nodes;  // kNodeFields per node
  std::vector<double> thresholds;
  std::vector<double> members{NAN};  // never empty: a constant of shape [0] is avoided
  std::vector<double> leaf_offsets{0};
  std::vector<double> leaf_targets;
  std::vector<double> leaf_weights;
  std::vector<double> roots;
  std::vector<double> base;
  int64_t aggregate = 1;  // SUM
  int64_t post = 0;       // NONE
  int64_t nan_rule = 0;
  bool binary = false;  // TreeEnsembleClassifier's binary scores (see the builtin)
};
constexpr int kNodeFields = 6;

enum Aggregate : int64_t { kAverage = 0, kSum = 1, kMin = 2, kMax = 3 };

int64_t PackedDType(DataType t) { return int64_t{static_cast<uint8_t>(t.code())} | (int64_t{t.bits()} << 8) | (int64_t{1} << 16); }

std::vector<std::string> AttrStringList(const NodeContext& c, std::string_view name) {
  const ::onnx::AttributeProto* a = c.Attr(name);
  if (a == nullptr) return {};
  return std::vector<std::string>(a->strings().begin(), a->strings().end());
}

// A float list given as `name` (floats) or `name_as_tensor` (a tensor); empty when neither.
absl::StatusOr<std::vector<double>> FloatsOrTensor(const NodeContext& c, const std::string& name) {
  if (c.HasAttr(name + "_as_tensor")) {
    KILN_ASSIGN_OR_RETURN(relax::ConstantData data, c.AttrTensor(name + "_as_tensor"));
    std::vector<double> values(static_cast<size_t>(data.numel()));
    for (int64_t i = 0; i < data.numel(); ++i) values[i] = ElementAsDouble(data, i);
    return values;
  }
  return c.AttrFloats(name);
}

absl::StatusOr<std::vector<double>> TensorAttr(const NodeContext& c, std::string_view name, bool required) {
  if (!c.HasAttr(name)) {
    if (required) return c.Error("attribute ", std::string(name), " is required");
    return std::vector<double>{};
  }
  KILN_ASSIGN_OR_RETURN(relax::ConstantData data, c.AttrTensor(name));
  std::vector<double> values(static_cast<size_t>(data.numel()));
  for (int64_t i = 0; i < data.numel(); ++i) values[i] = ElementAsDouble(data, i);
  return values;
}

absl::StatusOr<int64_t> PostTransformCode(const NodeContext& c, const std::string& name) {
  static const std::map<std::string, int64_t> codes = {
      {"NONE", 0}, {"SOFTMAX", 1}, {"LOGISTIC", 2}, {"SOFTMAX_ZERO", 3}, {"PROBIT", 4}};
  auto it = codes.find(name);
  if (it == codes.end()) return c.Error("unknown post_transform '", name, "'");
  return it->second;
}

absl::StatusOr<Expr> EmitForest(NodeContext& c, const Forest& f, DataType out_dtype) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType x_dtype, c.InputDType(0));
  if (shape.size() != 2) return c.Error("X must be 2-d [N, F], got rank ", shape.size());
  if (!x_dtype.is_float() && !x_dtype.is_integer()) return c.Error("X must be a number tensor, got ", x_dtype.ToString());
  if (f.roots.empty()) return c.Error("the ensemble has no trees");
  if (f.base.empty()) return c.Error("n_targets must be at least 1");
  auto table = [](const std::vector<double>& v, DataType dtype, std::vector<int64_t> dims) {
    return relax::Constant(DataFromDoubles(v, dtype, std::move(dims)));
  };
  const auto n = [](const std::vector<double>& v) { return static_cast<int64_t>(v.size()); };
  // A leaf-only forest has no nodes; one unused node keeps the table non-empty.
  std::vector<double> nodes = f.nodes, thresholds = f.thresholds;
  if (nodes.empty()) {
    nodes = {0, 0, -1, -1, 0, 0};
    thresholds = {0};
  }
  std::vector<double> leaf_targets = f.leaf_targets, leaf_weights = f.leaf_weights, leaf_offsets = f.leaf_offsets;
  if (leaf_targets.empty()) {  // leaves that add nothing (a forest with no weights)
    leaf_targets = {0};
    leaf_weights = {0};
    leaf_offsets.push_back(1);  // an extra, unreachable leaf holding the padding entry
  }
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  const DataType i64 = DataType::Int64(), f64 = DataType::Float(64);
  std::vector<Expr> args = {relax::ExternFunc("kiln.ml.tree_ensemble"),
                            x,
                            table(nodes, i64, {n(nodes) / kNodeFields, kNodeFields}),
                            table(thresholds, f64, {n(thresholds)}),
                            table(f.members, f64, {n(f.members)}),
                            table(leaf_offsets, i64, {n(leaf_offsets)}),
                            table(leaf_targets, i64, {n(leaf_targets)}),
                            table(leaf_weights, f64, {n(leaf_weights)}),
                            table(f.roots, i64, {n(f.roots)}),
                            table(f.base, f64, {n(f.base)}),
                            relax::PrimValue(PrimExpr(f.aggregate)),
                            relax::PrimValue(PrimExpr(f.post)),
                            relax::PrimValue(PrimExpr(f.nan_rule)),
                            relax::PrimValue(PrimExpr(PackedDType(out_dtype))),
                            relax::PrimValue(PrimExpr(int64_t{f.binary}))};
  relax::StructInfo out = relax::TensorSInfo({shape[0], PrimExpr(n(f.base))}, out_dtype);
  return c.Emit(relax::Call(relax::Op("call_pure_builtin"), std::move(args), {}, {std::move(out)}));
}

// TreeEnsemble (ai.onnx.ml 5): nodes and leaves by position; a child is a leaf when its
// *_leafs flag is set; one (target, weight) per leaf; Y has X's type.
absl::StatusOr<std::vector<Value>> ConvertTreeEnsemble(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(DataType x_dtype, c.InputDType(0));
  if (!x_dtype.is_float()) return c.Error("X must be a float tensor (float, double or float16), got ", x_dtype.ToString());
  const std::vector<int64_t> features = c.AttrInts("nodes_featureids");
  const std::vector<int64_t> true_ids = c.AttrInts("nodes_truenodeids"), false_ids = c.AttrInts("nodes_falsenodeids");
  const std::vector<int64_t> true_leaf = c.AttrInts("nodes_trueleafs"), false_leaf = c.AttrInts("nodes_falseleafs");
  const std::vector<int64_t> missing = c.AttrInts("nodes_missing_value_tracks_true");
  const std::vector<int64_t> leaf_targets = c.AttrInts("leaf_targetids"), roots = c.AttrInts("tree_roots");
  KILN_ASSIGN_OR_RETURN(std::vector<double> splits, TensorAttr(c, "nodes_splits", true));
  KILN_ASSIGN_OR_RETURN(std::vector<double> modes, TensorAttr(c, "nodes_modes", true));
  KILN_ASSIGN_OR_RETURN(std::vector<double> leaf_weights, TensorAttr(c, "leaf_weights", true));
  KILN_ASSIGN_OR_RETURN(std::vector<double> members, TensorAttr(c, "membership_values", false));
  KILN_ASSIGN_OR_RETURN(int64_t n_targets, c.RequiredInt("n_targets"));
  const size_t count = features.size();
  if (splits.size() != count || modes.size() != count || true_ids.size() != count || false_ids.size() != count ||
      true_leaf.size() != count || false_leaf.size() != count || (!missing.empty() && missing.size() != count)) {
    return c.Error("the nodes_* attributes must all have ", count, " entries (nodes_featureids')");
  }
  if (leaf_targets.size() != leaf_weights.size()) return c.Error("leaf_targetids and leaf_weights differ in length");
  Forest f;
  f.aggregate = c.AttrInt("aggregate_function", kSum);
  f.post = c.AttrInt("post_transform", 0);
  if (f.aggregate < 0 || f.aggregate > 3) return c.Error("unknown aggregate_function ", f.aggregate);
  if (f.post < 0 || f.post > 4) return c.Error("unknown post_transform ", f.post);
  if (n_targets < 1) return c.Error("n_targets must be at least 1");
  f.base.assign(static_cast<size_t>(n_targets), 0.0);
  const auto child = [&](int64_t id, bool leaf, size_t node) -> absl::StatusOr<double> {
    const size_t limit = leaf ? leaf_targets.size() : count;
    if (id < 0 || static_cast<size_t>(id) >= limit) {
      return c.Error("node ", node, " names ", leaf ? "leaf " : "node ", id, " of ", limit);
    }
    return leaf ? static_cast<double>(-id - 1) : static_cast<double>(id);
  };
  // Member sets follow the order of the member nodes, each ended by a NaN.
  size_t member_pos = 0;
  f.members.clear();
  for (size_t i = 0; i < count; ++i) {
    const int64_t mode = static_cast<int64_t>(modes[i]);
    if (mode < 0 || mode > 6) return c.Error("node ", i, " has unknown mode ", mode);
    double member_begin = 0;
    if (mode == 6) {
      if (member_pos >= members.size()) return c.Error("membership_values has no set for member node ", i);
      member_begin = static_cast<double>(f.members.size());
      while (member_pos < members.size() && !std::isnan(members[member_pos])) f.members.push_back(members[member_pos++]);
      if (member_pos == members.size()) return c.Error("membership_values: the set of node ", i, " is not ended by a NaN");
      ++member_pos;
      f.members.push_back(NAN);
    }
    KILN_ASSIGN_OR_RETURN(double t, child(true_ids[i], true_leaf[i] != 0, i));
    KILN_ASSIGN_OR_RETURN(double e, child(false_ids[i], false_leaf[i] != 0, i));
    f.nodes.insert(f.nodes.end(), {static_cast<double>(features[i]), static_cast<double>(mode), t, e,
                                   missing.empty() ? 0.0 : static_cast<double>(missing[i] != 0), member_begin});
    f.thresholds.push_back(mode == 6 ? 0.0 : splits[i]);
  }
  if (f.members.empty()) f.members.push_back(NAN);
  for (size_t l = 0; l < leaf_targets.size(); ++l) {
    if (leaf_targets[l] < 0 || leaf_targets[l] >= n_targets) {
      return c.Error("leaf ", l, " targets ", leaf_targets[l], ", outside [0, n_targets = ", n_targets, ")");
    }
    f.leaf_targets.push_back(static_cast<double>(leaf_targets[l]));
    f.leaf_weights.push_back(leaf_weights[l]);
    f.leaf_offsets.push_back(static_cast<double>(l + 1));
  }
  for (int64_t r : roots) {
    if (r < 0 || static_cast<size_t>(r) >= count) return c.Error("tree root ", r, " names no node");
    f.roots.push_back(static_cast<double>(r));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, EmitForest(c, f, x_dtype));
  return Outputs(y);
}

// The older operators' trees (TreeEnsembleRegressor, TreeEnsembleClassifier): nodes named by
// (tree id, node id), leaves are nodes of mode LEAF, and `<prefix>_treeids / _nodeids / _ids /
// _weights` attach (target, weight) pairs to leaves by (tree id, node id). Aggregation,
// post transform and base values are left to the caller.
absl::StatusOr<Forest> ParseTreeTable(const NodeContext& c, const std::string& prefix, int64_t n_targets) {
  const std::vector<int64_t> tree_ids = c.AttrInts("nodes_treeids"), node_ids = c.AttrInts("nodes_nodeids");
  const std::vector<int64_t> features = c.AttrInts("nodes_featureids");
  const std::vector<int64_t> true_ids = c.AttrInts("nodes_truenodeids"), false_ids = c.AttrInts("nodes_falsenodeids");
  const std::vector<int64_t> missing = c.AttrInts("nodes_missing_value_tracks_true");
  const std::vector<std::string> modes = AttrStringList(c, "nodes_modes");
  KILN_ASSIGN_OR_RETURN(std::vector<double> values, FloatsOrTensor(c, "nodes_values"));
  const std::vector<int64_t> target_tree = c.AttrInts(prefix + "_treeids"), target_node = c.AttrInts(prefix + "_nodeids");
  const std::vector<int64_t> target_ids = c.AttrInts(prefix + "_ids");
  KILN_ASSIGN_OR_RETURN(std::vector<double> weights, FloatsOrTensor(c, prefix + "_weights"));
  const size_t count = tree_ids.size();
  if (node_ids.size() != count || features.size() != count || true_ids.size() != count || false_ids.size() != count ||
      modes.size() != count || (!values.empty() && values.size() != count) || (!missing.empty() && missing.size() != count)) {
    return c.Error("the nodes_* attributes must all have ", count, " entries (nodes_treeids')");
  }
  if (target_node.size() != target_tree.size() || target_ids.size() != target_tree.size() || weights.size() != target_tree.size()) {
    return c.Error(prefix, "_treeids, ", prefix, "_nodeids, ", prefix, "_ids and ", prefix, "_weights differ in length");
  }
  static const std::map<std::string, int64_t> mode_codes = {{"BRANCH_LEQ", 0}, {"BRANCH_LT", 1}, {"BRANCH_GTE", 2},
                                                           {"BRANCH_GT", 3},  {"BRANCH_EQ", 4}, {"BRANCH_NEQ", 5}};
  Forest f;
  f.nan_rule = 1;

  // Number the branch nodes and the leaves; (tree, node id) -> child code.
  std::map<std::pair<int64_t, int64_t>, double> code;
  std::vector<size_t> leaf_nodes;
  int64_t branches = 0;
  for (size_t i = 0; i < count; ++i) {
    const bool leaf = modes[i] == "LEAF";
    if (!leaf && !mode_codes.count(modes[i])) {
      return c.Error("node ", i, " has mode '", modes[i], "' (BRANCH_MEMBER is a TreeEnsemble 5 mode)");
    }
    const double id = leaf ? static_cast<double>(-static_cast<int64_t>(leaf_nodes.size()) - 1) : static_cast<double>(branches++);
    if (leaf) leaf_nodes.push_back(i);
    if (!code.emplace(std::make_pair(tree_ids[i], node_ids[i]), id).second) {
      return c.Error("tree ", tree_ids[i], " has node id ", node_ids[i], " twice");
    }
  }
  // A tree's root is its node that no node of the tree names as a child.
  std::map<std::pair<int64_t, int64_t>, bool> referenced;
  for (size_t i = 0; i < count; ++i) {
    if (modes[i] == "LEAF") continue;
    for (int64_t to : {true_ids[i], false_ids[i]}) {
      auto it = code.find({tree_ids[i], to});
      if (it == code.end()) return c.Error("node ", i, " (tree ", tree_ids[i], ") names node id ", to, ", which the tree lacks");
      referenced[{tree_ids[i], to}] = true;
    }
    const int64_t mode = mode_codes.at(modes[i]);
    f.nodes.insert(f.nodes.end(), {static_cast<double>(features[i]), static_cast<double>(mode), code[{tree_ids[i], true_ids[i]}],
                                   code[{tree_ids[i], false_ids[i]}],
                                   missing.empty() ? 0.0 : static_cast<double>(missing[i] != 0), 0.0});
    f.thresholds.push_back(values.empty() ? 0.0 : values[i]);
  }
  std::map<int64_t, int64_t> root_of;
  for (size_t i = 0; i < count; ++i) {
    if (referenced.count({tree_ids[i], node_ids[i]})) continue;
    if (!root_of.emplace(tree_ids[i], static_cast<int64_t>(i)).second) {
      return c.Error("tree ", tree_ids[i], " has more than one root (node ids ", node_ids[root_of[tree_ids[i]]], " and ",
                     node_ids[i], ")");
    }
  }
  for (size_t i = 0; i < count; ++i) {
    if (root_of.count(tree_ids[i]) == 0) return c.Error("tree ", tree_ids[i], " has no root (a cycle)");
  }
  for (const auto& [tree, i] : root_of) f.roots.push_back(code[{tree, node_ids[i]}]);
  // The leaves' (target, weight) pairs, grouped by leaf.
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_leaf;
  for (size_t k = 0; k < target_tree.size(); ++k) {
    auto it = code.find({target_tree[k], target_node[k]});
    if (it == code.end() || it->second >= 0) {
      return c.Error("target ", k, " names tree ", target_tree[k], " node ", target_node[k], ", which is not a leaf");
    }
    if (target_ids[k] < 0 || target_ids[k] >= n_targets) {
      return c.Error("target ", k, " has id ", target_ids[k], ", outside [0, n_targets = ", n_targets, ")");
    }
    by_leaf[{target_tree[k], target_node[k]}].push_back(k);
  }
  for (size_t i : leaf_nodes) {
    for (size_t k : by_leaf[{tree_ids[i], node_ids[i]}]) {
      f.leaf_targets.push_back(static_cast<double>(target_ids[k]));
      f.leaf_weights.push_back(weights[k]);
    }
    f.leaf_offsets.push_back(static_cast<double>(f.leaf_targets.size()));
  }
  return f;
}

// TreeEnsembleRegressor (ai.onnx.ml 1, 3): Y is float32 [N, n_targets].
absl::StatusOr<std::vector<Value>> ConvertTreeEnsembleRegressor(NodeContext& c) {
  const int64_t n_targets = c.AttrInt("n_targets", 1);
  if (n_targets < 1) return c.Error("n_targets must be at least 1");
  KILN_ASSIGN_OR_RETURN(std::vector<double> base, FloatsOrTensor(c, "base_values"));
  if (!base.empty() && base.size() != static_cast<size_t>(n_targets)) {
    return c.Error("base_values has ", base.size(), " values for ", n_targets, " targets");
  }
  KILN_ASSIGN_OR_RETURN(Forest f, ParseTreeTable(c, "target", n_targets));
  const std::string aggregate = c.AttrString("aggregate_function", "SUM");
  static const std::map<std::string, int64_t> aggregates = {{"AVERAGE", kAverage}, {"SUM", kSum}, {"MIN", kMin}, {"MAX", kMax}};
  if (!aggregates.count(aggregate)) return c.Error("unknown aggregate_function '", aggregate, "'");
  f.aggregate = aggregates.at(aggregate);
  KILN_ASSIGN_OR_RETURN(f.post, PostTransformCode(c, c.AttrString("post_transform", "NONE")));
  f.base = base.empty() ? std::vector<double>(static_cast<size_t>(n_targets), 0.0) : base;
  KILN_ASSIGN_OR_RETURN(Expr y, EmitForest(c, f, DataType::Float32()));
  return Outputs(y);
}

// TreeEnsembleClassifier (ai.onnx.ml 1, 3): Z, float32 [N, classes], is the sum of the
// leaves' class weights plus base_values, post-transformed; Y is the label of Z's largest
// score (the first on ties), from classlabels_int64s or classlabels_strings. As in ONNX's
// reference, when every leaf weight goes to one class id the scores are binary: two columns
// (see the builtin), and a single label [1] gives labels 0 / 1.
absl::StatusOr<std::vector<Value>> ConvertTreeEnsembleClassifier(NodeContext& c) {
  const std::vector<int64_t> int_labels = c.AttrInts("classlabels_int64s");
  const std::vector<std::string> string_labels = AttrStringList(c, "classlabels_strings");
  if (int_labels.empty() == string_labels.empty()) {
    return c.Error("exactly one of classlabels_int64s and classlabels_strings must be given");
  }
  const int64_t classes = static_cast<int64_t>(std::max(int_labels.size(), string_labels.size()));
  const std::vector<int64_t> class_ids = c.AttrInts("class_ids");
  const bool binary = !class_ids.empty() && std::all_of(class_ids.begin(), class_ids.end(),
                                                        [&](int64_t id) { return id == class_ids[0]; });
  if (classes == 1 && !(int_labels.size() == 1 && int_labels[0] == 1)) {
    return c.Error("a single class label is supported only as classlabels_int64s = [1] (ONNX's reference refuses others)");
  }
  if (binary && class_ids[0] != 0) {
    return c.Error("binary scores with every class_id ", class_ids[0], " are not supported (sklearn-onnx writes 0)");
  }
  const int64_t columns = binary ? 2 : classes;
  KILN_ASSIGN_OR_RETURN(std::vector<double> base, FloatsOrTensor(c, "base_values"));
  if (!base.empty() && static_cast<int64_t>(base.size()) != classes) {
    return c.Error("base_values has ", base.size(), " values for ", classes, " classes");
  }
  KILN_ASSIGN_OR_RETURN(Forest f, ParseTreeTable(c, "class", columns));
  f.aggregate = kSum;
  f.binary = binary;
  KILN_ASSIGN_OR_RETURN(f.post, PostTransformCode(c, c.AttrString("post_transform", "NONE")));
  f.base = base;
  f.base.resize(static_cast<size_t>(columns), 0.0);
  KILN_ASSIGN_OR_RETURN(Expr z, EmitForest(c, f, DataType::Float32()));
  KILN_ASSIGN_OR_RETURN(Expr best, c.Call("argmax", {z}, {{"axis", int64_t{1}}}));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  Expr y;
  if (!string_labels.empty()) {
    // Index -> string through LabelEncoder's builtin (string tensors have no gather).
    std::vector<Expr> keys, values;
    for (size_t k = 0; k < string_labels.size(); ++k) {
      keys.push_back(relax::PrimValue(PrimExpr(static_cast<int64_t>(k))));
      values.push_back(relax::StringImm(string_labels[k]));
    }
    KILN_ASSIGN_OR_RETURN(y, c.Emit(relax::Call(relax::Op("call_pure_builtin"),
                                                {relax::ExternFunc("kiln.string.label_encode"), best, relax::Tuple(keys),
                                                 relax::Tuple(values), relax::StringImm(""),
                                                 relax::PrimValue(PrimExpr(PackedDType(tir::StringType())))},
                                                {}, {relax::TensorSInfo({shape[0]}, tir::StringType())})));
  } else if (classes == 1) {
    y = best;  // labels [1]: score column 1 is label 1, column 0 label 0
  } else {
    std::vector<double> labels(int_labels.begin(), int_labels.end());
    Expr table = relax::Constant(DataFromDoubles(labels, DataType::Int64(), {classes}));
    KILN_ASSIGN_OR_RETURN(y, c.Call("take", {table, best}, {{"axis", int64_t{0}}}));
  }
  return std::vector<Value>{Value::Of(y), Value::Of(z)};
}

}  // namespace

void RegisterTreeEnsembleConverters(ConverterRegistry& r) {
  r.Register(QualifiedOpType("ai.onnx.ml", "TreeEnsemble"), ConvertTreeEnsemble, 5);
  r.Register(QualifiedOpType("ai.onnx.ml", "TreeEnsembleRegressor"), ConvertTreeEnsembleRegressor, 1);
  r.Register(QualifiedOpType("ai.onnx.ml", "TreeEnsembleClassifier"), ConvertTreeEnsembleClassifier, 1);
}

}  // namespace kiln::frontends::onnx
