// NodeContext: what a converter (converter_registry.h) sees of the node it converts — its
// inputs as Values (value.h), its attributes, the opset version in effect — and how it
// emits Relax bindings and reports errors.
//
// Errors name the node: `node 'NAME' (op Foo, opset 13): ...`. Error() is InvalidArgument
// (the model is wrong: a bad attribute, an input of the wrong rank); Unsupported() is
// Unimplemented (valid ONNX that Kiln cannot express yet). Both are statuses, never aborts.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "frontends/onnx/value.h"
#include "onnx/onnx_pb.h"
#include "relax/block_builder.h"

namespace kiln::frontends::onnx {

// Looks up the run-time data of a graph input for a converter that needs it at import time
// (Reshape's shape, TopK's k, ...): the importer's `bind` option. nullopt: not bound.
using BindLookup = std::function<std::optional<relax::ConstantData>(const std::string& input_name)>;

// Converts a subgraph (If's branches, Scan's and Loop's bodies) into the function being
// built: its nodes see the enclosing graph's values and `bindings` (values for the
// subgraph's inputs, by name); the result is the subgraph's outputs in order. Each call
// converts the nodes again (an unrolled loop calls it once per iteration).
using SubgraphRunner = std::function<absl::StatusOr<std::vector<Value>>(
    const ::onnx::GraphProto& graph, std::vector<std::pair<std::string, Value>> bindings)>;

class NodeContext {
 public:
  NodeContext(const ::onnx::NodeProto& node, int64_t opset, std::string label, relax::BlockBuilder& builder,
              std::vector<Value*> inputs, std::function<bool(const std::string&)> is_graph_input, BindLookup bind,
              const std::string& base_dir)
      : node_(node),
        opset_(opset),
        label_(std::move(label)),
        builder_(builder),
        inputs_(std::move(inputs)),
        is_graph_input_(std::move(is_graph_input)),
        bind_(std::move(bind)),
        base_dir_(base_dir) {}

  const ::onnx::NodeProto& node() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  // The version of the default operator set the model imports.
  int64_t opset() const { return opset_; }
  int num_outputs() const { return node_.output_size(); }
  // Whether output i is wanted (present and named).
  bool has_output(int i) const { return i < node_.output_size() && !node_.output(i).empty(); }

  // --- Inputs ---
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // Present: listed and not the empty name ONNX uses for an omitted optional input. Every
  // accessor of input i comes here, which marks it as looked at (FirstInputNotLookedAt).
  bool has_input(int i) const {
    if (i >= 0 && i < num_inputs()) looked_at_[i] = true;
    return i < num_inputs() && inputs_[i] != nullptr;
  }
  // The first present input the converter never looked at, or -1. A node with more inputs
  // than its operator takes (Cast with two) would otherwise convert ignoring the extra one.
  int FirstInputNotLookedAt() const;
  // An input the operator takes that this conversion knowingly does not need (Dropout's
  // ratio in inference): not a surplus input.
  void IgnoreInput(int i) { has_input(i); }
  const std::string& input_name(int i) const { return node_.input(i); }
  // Input i as a Relax expression (materializing known data or shape values). An error when
  // it is absent.
  absl::StatusOr<relax::Expr> Input(int i);
  // Input i's struct info as a tensor of known rank (an error naming the input otherwise).
  absl::StatusOr<const relax::TensorStructInfoNode*> InputInfo(int i);
  // Input i's static shape (symbolic dims allowed); an error when the rank is unknown.
  absl::StatusOr<std::vector<PrimExpr>> InputShape(int i);
  // Input i's dtype; an error when unknown.
  absl::StatusOr<tir::DataType> InputDType(int i);
  // Input i's value at import time: data (constants, initializers, bound graph inputs).
  // A graph input without a binding is the error "... input 'NAME' must be known at import
  // time ..." that tells how to bind it (docs/onnx.md).
  absl::StatusOr<relax::ConstantData> InputData(int i);
  // `value` as a Relax expression, as Input() does for an input (a subgraph's outputs).
  absl::StatusOr<relax::Expr> Materialize(Value& value);
  // Input i's elements as (possibly symbolic) integers: shape values or small integer data.
  absl::StatusOr<std::vector<PrimExpr>> InputElements(int i);
  // The same, each required to be a constant.
  absl::StatusOr<std::vector<int64_t>> InputInts(int i);
  // Whether input i's elements are known (without binding anything).
  bool InputElementsKnown(int i) const;
  const Value* InputValue(int i) const { return has_input(i) ? inputs_[i] : nullptr; }
  // Whether input i is a graph input (which InputData binds when the importer has a binding).
  bool InputIsGraphInput(int i) const { return has_input(i) && is_graph_input_(input_name(i)); }

  // --- Attributes ---
  const ::onnx::AttributeProto* Attr(std::string_view name) const;
  bool HasAttr(std::string_view name) const { return Attr(name) != nullptr; }
  int64_t AttrInt(std::string_view name, int64_t fallback) const;
  double AttrFloat(std::string_view name, double fallback) const;
  std::string AttrString(std::string_view name, std::string fallback) const;
  std::vector<int64_t> AttrInts(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> AttrFloats(std::string_view name) const;
  // A required attribute (an error naming it when absent).
  absl::StatusOr<int64_t> RequiredInt(std::string_view name) const;
  // A tensor attribute's data (Constant's value, ConstantOfShape's value).
  absl::StatusOr<relax::ConstantData> AttrTensor(std::string_view name) const;
  // A graph attribute (If's then_branch, Scan's body); an error naming it when absent.
  absl::StatusOr<const ::onnx::GraphProto*> AttrGraph(std::string_view name) const;

  // --- Subgraphs ---
  void set_subgraph_runner(SubgraphRunner runner) { subgraph_runner_ = std::move(runner); }
  absl::StatusOr<std::vector<Value>> RunSubgraph(const ::onnx::GraphProto& graph,
                                                 std::vector<std::pair<std::string, Value>> bindings);

  // --- Building ---
  relax::BlockBuilder& builder() { return builder_; }
  // Binds `value` to a fresh variable named after the node's first output.
  absl::StatusOr<relax::Expr> Emit(relax::Expr value);
  // Emits `R.<op>(args, attrs)`.
  absl::StatusOr<relax::Expr> Call(const std::string& op, std::vector<relax::Expr> args, relax::Attrs attrs = {});

  // --- Errors ---
  template <typename... Args>
  absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(absl::StrCat(label_, ": ", args...));
  }
  template <typename... Args>
  absl::Status Unsupported(const Args&... args) const {
    return absl::UnimplementedError(absl::StrCat(label_, ": ", args...));
  }
  // Re-labels a status from Kiln (op inference) with this node.
  absl::Status Annotate(const absl::Status& status) const;
  const std::string& label() const { return label_; }

 private:
  absl::Status NeedInput(int i) const;

  const ::onnx::NodeProto& node_;
  int64_t opset_;
  std::string label_;
  relax::BlockBuilder& builder_;
  std::vector<Value*> inputs_;
  mutable std::vector<bool> looked_at_ = std::vector<bool>(inputs_.size(), false);
  std::function<bool(const std::string&)> is_graph_input_;
  BindLookup bind_;
  const std::string& base_dir_;
  SubgraphRunner subgraph_runner_;
};

// `node 'NAME' (op Foo, opset 13)`; an unnamed node is named after its first output.
std::string NodeLabel(const ::onnx::NodeProto& node, int64_t opset);

}  // namespace kiln::frontends::onnx
