#include "frontends/onnx/importer.h"

#include <unordered_map>
#include <unordered_set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/bfloat16_outputs.h"
#include "frontends/onnx/flag_attributes.h"
#include "frontends/onnx/graph_order.h"
#include "frontends/onnx/model_loader.h"
#include "frontends/onnx/narrow_types.h"
#include "frontends/onnx/tensor_proto.h"
#include "relax/block_builder.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// Dims above this are refused: no real tensor has them, and products of a few would
// overflow int64 in shape arithmetic.
constexpr int64_t kMaxDim = int64_t{1} << 40;

// A symbolic variable name the text format can spell: [A-Za-z_][A-Za-z0-9_]*.
std::string Identifier(const std::string& text) {
  std::string out;
  for (char c : text) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "d_" + out;
  return out;
}

// The values one graph defines, on top of those of the graphs enclosing it (a subgraph
// sees its enclosing graphs' values; the main graph's scope has no parent). Node-based
// maps: NodeContext holds pointers to values while later ones are added.
struct Scope {
  std::unordered_map<std::string, Value> values;
  Scope* parent = nullptr;

  Value* Find(const std::string& name) {
    for (Scope* s = this; s != nullptr; s = s->parent) {
      auto it = s->values.find(name);
      if (it != s->values.end()) return &it->second;
    }
    return nullptr;
  }
  std::unordered_set<std::string> VisibleNames() const {
    std::unordered_set<std::string> names;
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      for (const auto& [name, value] : s->values) names.insert(name);
    }
    return names;
  }
};

// Subgraphs nested deeper than this are refused (a model could nest them without end).
constexpr int kMaxSubgraphDepth = 16;

class GraphImporter {
 public:
  GraphImporter(const LoadedModel& model, const ImportOptions& options) : model_(model), options_(options) {}

  absl::StatusOr<ImportResult> Run() {
    const ::onnx::GraphProto& graph = model_.proto.graph();
    const int64_t opset = model_.opset;
    ImportResult result;
    result.opset = opset;
    if (graph.sparse_initializer_size() > 0) {
      return absl::UnimplementedError("sparse initializers are not supported");
    }
    std::unordered_set<std::string> available;
    for (const ::onnx::TensorProto& init : graph.initializer()) {
      absl::StatusOr<relax::ConstantData> data = TensorFromProto(init, model_.base_dir);
      if (!data.ok()) {
        return absl::Status(data.status().code(), absl::StrCat("initializer: ", data.status().message()));
      }
      Value& value = root_.values[init.name()] = Value::OfData(*std::move(data));
      if (FindNarrowType(init.data_type()) != nullptr) value.narrow_type = init.data_type();
      available.insert(init.name());
    }
    std::vector<relax::Var> params;
    std::unordered_set<std::string> input_names;
    for (const ::onnx::ValueInfoProto& input : graph.input()) {
      // ONNX graphs are in SSA form; a second input of one name was skipped silently (as if an
      // initializer's default), so the caller's second array would bind nothing.
      if (!input_names.insert(input.name()).second) {
        return absl::InvalidArgumentError(absl::StrCat("graph input '", input.name(),
                                                       "' is declared twice (input names must be unique)"));
      }
      if (available.count(input.name()) > 0) continue;  // an initializer's default: a constant
      available.insert(input.name());
      auto bound = options_.bind.find(input.name());
      if (bound != options_.bind.end()) {
        root_.values[input.name()] = Value::OfData(bound->second);
        continue;
      }
      if (input.has_type() && (input.type().has_sequence_type() || input.type().has_optional_type())) {
        KILN_RETURN_IF_ERROR(AddNonTensorInput(input, &params, &result));
        continue;
      }
      KILN_ASSIGN_OR_RETURN(relax::StructInfo sinfo, InputStructInfo(input));
      relax::Var var(input.name(), sinfo);
      params.push_back(var);
      Value& value = root_.values[input.name()] = Value::Of(var);
      const int32_t elem_type = input.type().tensor_type().elem_type();
      if (FindNarrowType(elem_type) != nullptr) value.narrow_type = elem_type;
      if (elem_type == kOnnxBFloat16) result.bfloat16_values.push_back(input.name());
      graph_inputs_.insert(input.name());
      result.parameters.push_back(input.name());
    }
    for (const auto& [name, data] : options_.bind) {
      bool is_input = false;
      for (const auto& input : graph.input()) is_input |= input.name() == name;
      if (!is_input) return absl::InvalidArgumentError(absl::StrCat("bind: the graph has no input '", name, "'"));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<int> order, TopologicalOrder(graph, available, opset));

    relax::BlockBuilder builder;
    KILN_RETURN_IF_ERROR(builder.BeginFunction(params));
    builder.BeginDataflowBlock();
    for (int index : order) {
      KILN_RETURN_IF_ERROR(ConvertNode(graph.node(index), root_, 0, builder, &result));
    }
    std::vector<Expr> outputs;
    for (const ::onnx::ValueInfoProto& output : graph.output()) {
      Value* value = root_.Find(output.name());
      if (value == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph output '", output.name(), "' is not produced by any node, input or initializer"));
      }
      if (value->is_none) continue;  // an empty optional: no tensor
      if (value->is_sequence) {    // its elements, in order
        for (size_t k = 0; k < value->sequence.size(); ++k) {
          const std::string name = absl::StrCat(output.name(), "[", k, "]");
          KILN_ASSIGN_OR_RETURN(Expr e, Materialize(name, value->sequence[k], builder));
          outputs.push_back(e);
          result.outputs.push_back(name);
        }
        continue;
      }
      KILN_ASSIGN_OR_RETURN(Expr e, Materialize(output.name(), *value, builder));
      KILN_RETURN_IF_ERROR(CheckOutputType(output, e));
      outputs.push_back(e);
      result.outputs.push_back(output.name());
      if (output.type().tensor_type().elem_type() == kOnnxBFloat16) result.bfloat16_values.push_back(output.name());
    }
    if (outputs.empty() && graph.output_size() > 0) {
      return absl::UnimplementedError("the graph's outputs hold no tensor (only empty sequences or optionals)");
    }
    if (outputs.empty()) return absl::InvalidArgumentError("the graph has no outputs");
    Expr body = outputs.size() == 1 ? outputs[0] : relax::Tuple(outputs);
    absl::StatusOr<relax::Var> out = builder.EmitOutput(body, outputs.size() == 1 ? result.outputs[0] : "outputs");
    if (!out.ok()) return out.status();
    relax::BindingBlock block = builder.EndBlock();
    KILN_ASSIGN_OR_RETURN(Expr function, builder.EndFunction({block}, *out));
    KILN_RETURN_IF_ERROR(result.module.Add(options_.function_name, function));
    return result;
  }

 private:
  // A sequence or optional graph input (ImportOptions::value_lookup): its elements become
  // parameters of static shapes.
  absl::Status AddNonTensorInput(const ::onnx::ValueInfoProto& input, std::vector<relax::Var>* params,
                                 ImportResult* result) {
    const std::string label = absl::StrCat("graph input '", input.name(), "'");
    const ::onnx::TypeProto& type = input.type();
    const bool optional = type.has_optional_type();
    const ::onnx::TypeProto& inner = optional ? type.optional_type().elem_type() : type;
    const bool sequence = inner.has_sequence_type();
    if (!(sequence ? inner.sequence_type().elem_type().has_tensor_type() : inner.has_tensor_type())) {
      return absl::UnimplementedError(absl::StrCat(
          label, ": only tensors, sequences of tensors and optionals of them are supported (not maps or nesting)"));
    }
    std::optional<OnnxValue> value;
    if (options_.value_lookup) value = options_.value_lookup(input.name());
    if (!value) {
      return absl::UnimplementedError(
          absl::StrCat(label, ": a ", optional ? "optional" : "sequence",
                       " input needs its contents' count and shapes at import time (ImportOptions::value_lookup; "
                       "kiln onnx-test gives them from the test data)"));
    }
    if (!value->present) {
      if (!optional) return absl::InvalidArgumentError(absl::StrCat(label, ": empty, but not an optional"));
      root_.values[input.name()] = Value::None();
      return absl::OkStatus();
    }
    if (value->is_sequence != sequence || (!sequence && value->tensors.size() != 1)) {
      return absl::InvalidArgumentError(absl::StrCat(label, ": the data is a ", value->is_sequence ? "sequence" : "tensor",
                                                     ", the graph declares a ", sequence ? "sequence" : "tensor"));
    }
    auto parameter = [&](const std::string& name, const relax::ConstantData& data) {
      std::vector<PrimExpr> shape;
      for (int64_t d : data.shape) shape.push_back(PrimExpr(d));
      relax::Var var(Identifier(name), relax::TensorSInfo(shape, data.dtype));
      params->push_back(var);
      result->parameters.push_back(name);
      return Value::Of(var);
    };
    if (!sequence) {
      root_.values[input.name()] = parameter(input.name(), value->tensors[0]);
      return absl::OkStatus();
    }
    std::vector<Value> elements;
    for (size_t k = 0; k < value->tensors.size(); ++k) {
      elements.push_back(parameter(absl::StrCat(input.name(), "[", k, "]"), value->tensors[k]));
    }
    root_.values[input.name()] = Value::OfSequence(std::move(elements));
    return absl::OkStatus();
  }

  absl::StatusOr<relax::StructInfo> InputStructInfo(const ::onnx::ValueInfoProto& input) {
    const std::string label = absl::StrCat("graph input '", input.name(), "'");
    if (!input.has_type() || input.type().value_case() == ::onnx::TypeProto::VALUE_NOT_SET) {
      // make_empty_tensor_value_info, or a type left out: not a sequence the message below names.
      return absl::InvalidArgumentError(absl::StrCat(label, " has no type: give its elem_type and shape "
                                                            "(helper.make_tensor_value_info)"));
    }
    if (!input.type().has_tensor_type()) {
      return absl::UnimplementedError(absl::StrCat(label, ": only tensor inputs are supported (not sequences, maps "
                                                          "or optionals)"));
    }
    const auto& tensor_type = input.type().tensor_type();
    absl::StatusOr<DataType> dtype = DataTypeFromOnnx(tensor_type.elem_type());
    if (!dtype.ok()) return absl::UnimplementedError(absl::StrCat(label, ": ", dtype.status().message()));
    if (!tensor_type.has_shape()) return relax::TensorSInfoOfNdim(relax::kUnknownNdim, *dtype);
    std::vector<PrimExpr> shape;
    for (int k = 0; k < tensor_type.shape().dim_size(); ++k) {
      const auto& dim = tensor_type.shape().dim(k);
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0 || dim.dim_value() > kMaxDim) {
          return absl::InvalidArgumentError(
              absl::StrCat(label, ": dim ", k, " is ", dim.dim_value(), " (must be in [0, 2^40])"));
        }
        shape.push_back(PrimExpr(dim.dim_value()));
      } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
        auto [it, added] = symbols_.try_emplace(dim.dim_param());
        if (added) it->second = tir::Var::Shape(UniqueSymbol(Identifier(dim.dim_param())), kMaxDim);
        shape.push_back(it->second);
      } else {
        shape.push_back(tir::Var::Shape(UniqueSymbol(Identifier(absl::StrCat(input.name(), "_dim", k))), kMaxDim));
      }
    }
    return relax::TensorSInfo(shape, *dtype);
  }

  std::string UniqueSymbol(const std::string& base) {
    std::string name = base;
    for (int i = 1; !symbol_names_.insert(name).second; ++i) name = absl::StrCat(base, "_", i);
    return name;
  }

  absl::Status CheckOutputType(const ::onnx::ValueInfoProto& output, const Expr& e) {
    if (!output.has_type() || !output.type().has_tensor_type() || output.type().tensor_type().elem_type() == 0) {
      return absl::OkStatus();
    }
    absl::StatusOr<DataType> declared = DataTypeFromOnnx(output.type().tensor_type().elem_type());
    if (!declared.ok()) {
      return absl::UnimplementedError(absl::StrCat("graph output '", output.name(), "': ", declared.status().message()));
    }
    const auto* t = e.struct_info().as<relax::TensorStructInfoNode>();
    if (t != nullptr && t->dtype && *t->dtype != *declared) {
      return absl::InternalError(absl::StrCat("graph output '", output.name(), "' is declared ",
                                              declared->ToString(), " but the import computes ",
                                              t->dtype->ToString()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Expr> Materialize(const std::string& name, Value& value, relax::BlockBuilder& builder) {
    if (value.expr.defined()) return value.expr;
    ::onnx::NodeProto identity;
    identity.set_op_type("Identity");
    identity.add_output(name);
    NodeContext context(identity, model_.opset, absl::StrCat("value '", name, "'"), builder, {&value},
                        [](const std::string&) { return false; }, nullptr, model_.base_dir);
    return context.Input(0);
  }

  // Converts `graph` (a subgraph of a node at `depth`) in a new scope under `parent`, with
  // `bindings` for its inputs; returns its outputs.
  absl::StatusOr<std::vector<Value>> ConvertSubgraph(const ::onnx::GraphProto& graph,
                                                     std::vector<std::pair<std::string, Value>> bindings,
                                                     Scope& parent, int depth, relax::BlockBuilder& builder,
                                                     ImportResult* result) {
    const std::string label = absl::StrCat("subgraph '", graph.name(), "'");
    if (depth > kMaxSubgraphDepth) {
      return absl::UnimplementedError(absl::StrCat(label, ": subgraphs nest more than ", kMaxSubgraphDepth, " deep"));
    }
    Scope scope;
    scope.parent = &parent;
    for (auto& [name, value] : bindings) scope.values[name] = std::move(value);
    for (const ::onnx::ValueInfoProto& input : graph.input()) {
      if (scope.values.count(input.name()) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(label, ": input '", input.name(), "' has no value"));
      }
    }
    for (const ::onnx::TensorProto& init : graph.initializer()) {
      absl::StatusOr<relax::ConstantData> data = TensorFromProto(init, model_.base_dir);
      if (!data.ok()) return absl::Status(data.status().code(), absl::StrCat(label, ": ", data.status().message()));
      Value& value = scope.values[init.name()] = Value::OfData(*std::move(data));
      if (FindNarrowType(init.data_type()) != nullptr) value.narrow_type = init.data_type();
    }
    KILN_ASSIGN_OR_RETURN(std::vector<int> order, TopologicalOrder(graph, scope.VisibleNames(), model_.opset));
    for (int index : order) KILN_RETURN_IF_ERROR(ConvertNode(graph.node(index), scope, depth, builder, result));
    std::vector<Value> outputs;
    for (const ::onnx::ValueInfoProto& output : graph.output()) {
      const Value* value = scope.Find(output.name());
      if (value == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(label, ": output '", output.name(), "' is not produced"));
      }
      outputs.push_back(*value);
    }
    return outputs;
  }

  absl::Status ConvertNode(const ::onnx::NodeProto& node, Scope& scope, int depth, relax::BlockBuilder& builder,
                           ImportResult* result) {
    const int64_t opset = model_.opset;
    const std::string label = NodeLabel(node, opset);
    // Another domain's operator is registered under its qualified name, with the version the
    // model imports of that domain.
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    const ConverterInfo* converter = nullptr;
    if (default_domain) {
      if (opset == 0) {
        return absl::InvalidArgumentError(absl::StrCat(label, ": operator ", node.op_type(),
                                                       " is of the default domain, which the model does not import"));
      }
      converter = ConverterRegistry::Global().Find(node.op_type(), opset);
    } else if (auto version = model_.domains.find(node.domain()); version != model_.domains.end()) {
      converter = ConverterRegistry::Global().Find(QualifiedOpType(node.domain(), node.op_type()), version->second);
    }
    if (converter == nullptr) {
      return absl::UnimplementedError(absl::StrCat(label, ": operator ", node.op_type(),
                                                   default_domain ? "" : absl::StrCat(" of domain '", node.domain(), "'"),
                                                   " is not supported"));
    }
    KILN_RETURN_IF_ERROR(CheckFlagAttributes(node, label));
    std::vector<Value*> inputs;
    for (const std::string& name : node.input()) {
      Value* value = name.empty() ? nullptr : scope.Find(name);
      if (!name.empty() && value == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(label, ": input '", name, "' is not defined"));
      }
      inputs.push_back(value);
    }
    BindLookup lookup = [this, result](const std::string& name) -> std::optional<relax::ConstantData> {
      if (!options_.bind_lookup) return std::nullopt;
      std::optional<relax::ConstantData> data = options_.bind_lookup(name);
      if (data) result->looked_up.push_back(name);
      return data;
    };
    NodeContext context(node, opset, label, builder, std::move(inputs),
                        [this](const std::string& name) { return graph_inputs_.count(name) > 0; }, lookup,
                        model_.base_dir);
    context.set_subgraph_runner(
        [this, &scope, depth, &builder, result](const ::onnx::GraphProto& graph,
                                                std::vector<std::pair<std::string, Value>> bindings) {
          return ConvertSubgraph(graph, std::move(bindings), scope, depth + 1, builder, result);
        });
    absl::StatusOr<std::vector<Value>> outputs = converter->convert(context);
    if (!outputs.ok()) {
      if (absl::StartsWith(outputs.status().message(), label)) return outputs.status();
      return context.Annotate(outputs.status());
    }
    if (int surplus = context.FirstInputNotLookedAt(); surplus >= 0) {
      // Without the ONNX checker (opsets above kCheckerNewestOpset) nothing else counts inputs.
      return absl::InvalidArgumentError(absl::StrCat(label, ": input ", surplus, " ('", node.input(surplus),
                                                     "') is not an input ", node.op_type(),
                                                     " takes here (the node has ", node.input_size(),
                                                     " inputs): remove it"));
    }
    if (absl::Status rounded = RoundBFloat16Outputs(context, *outputs); !rounded.ok()) {
      if (absl::StartsWith(rounded.message(), label)) return rounded;
      return context.Annotate(rounded);
    }
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      if (k >= static_cast<int>(outputs->size())) {
        return absl::UnimplementedError(
            absl::StrCat(label, ": output ", k, " ('", node.output(k), "') is not supported"));
      }
      scope.values[node.output(k)] = std::move((*outputs)[k]);
    }
    return absl::OkStatus();
  }

  const LoadedModel& model_;
  const ImportOptions& options_;
  Scope root_;
  std::unordered_set<std::string> graph_inputs_;
  std::unordered_map<std::string, tir::Var> symbols_;
  std::unordered_set<std::string> symbol_names_;
};

}  // namespace

absl::StatusOr<ImportResult> ImportOnnxFile(const std::string& path, const ImportOptions& options) {
  LoadOptions load;
  load.check = options.check;
  KILN_ASSIGN_OR_RETURN(LoadedModel model, LoadModelFile(path, load));
  return GraphImporter(model, options).Run();
}

absl::StatusOr<ImportResult> ImportOnnxBytes(const std::string& bytes, const std::string& base_dir,
                                             const ImportOptions& options) {
  LoadOptions load;
  load.check = options.check;
  KILN_ASSIGN_OR_RETURN(LoadedModel model, LoadModelBytes(bytes, base_dir, load));
  return GraphImporter(model, options).Run();
}

absl::StatusOr<OnnxGraphSignature> ReadOnnxGraphSignature(const std::string& path) {
  LoadOptions load;
  load.check = false;
  KILN_ASSIGN_OR_RETURN(LoadedModel model, LoadModelFile(path, load));
  auto kind = [](const ::onnx::ValueInfoProto& v) {
    if (v.type().has_sequence_type()) return OnnxValueKind::kSequence;
    if (v.type().has_optional_type()) return OnnxValueKind::kOptional;
    return OnnxValueKind::kTensor;
  };
  std::unordered_set<std::string> initializers;
  for (const auto& init : model.proto.graph().initializer()) initializers.insert(init.name());
  OnnxGraphSignature signature;
  for (const auto& input : model.proto.graph().input()) {
    if (initializers.count(input.name()) > 0) continue;
    signature.input_names.push_back(input.name());
    signature.input_kinds.push_back(kind(input));
  }
  for (const auto& output : model.proto.graph().output()) signature.output_kinds.push_back(kind(output));
  return signature;
}

std::vector<std::string> SupportedOperators(int64_t opset) {
  std::vector<std::string> out;
  for (const ConverterInfo& info : ConverterRegistry::Global().converters()) {
    // Another domain's operators ("domain:Op") are listed whatever `opset` is.
    const bool other_domain = info.op_type.find(':') != std::string::npos;
    if ((other_domain || (info.min_opset <= opset && opset <= info.max_opset)) &&
        (out.empty() || out.back() != info.op_type)) {
      out.push_back(info.op_type);
    }
  }
  return out;
}

}  // namespace kiln::frontends::onnx
