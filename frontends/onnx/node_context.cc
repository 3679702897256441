#include "frontends/onnx/node_context.h"

#include "frontends/onnx/converters/string_converters.h"
#include "frontends/onnx/tensor_proto.h"
#include "support/status_macros.h"
#include "tir/string_type.h"

namespace kiln::frontends::onnx {

using relax::Expr;

std::string NodeLabel(const ::onnx::NodeProto& node, int64_t opset) {
  std::string name = node.name();
  if (name.empty()) name = node.output_size() > 0 ? node.output(0) : std::string("<unnamed>");
  return absl::StrCat("node '", name, "' (op ", node.op_type(), ", opset ", opset, ")");
}

int NodeContext::FirstInputNotLookedAt() const {
  for (int i = 0; i < num_inputs(); ++i) {
    if (inputs_[i] != nullptr && !looked_at_[i]) return i;
  }
  return -1;
}

absl::Status NodeContext::NeedInput(int i) const {
  if (!has_input(i)) return Error("input ", i, " is required but missing");
  if (inputs_[i]->is_sequence) return Error("input '", input_name(i), "' is a sequence, where a tensor is expected");
  if (inputs_[i]->is_none) return Error("input '", input_name(i), "' is an empty optional, where a tensor is expected");
  return absl::OkStatus();
}

absl::StatusOr<Expr> NodeContext::Input(int i) {
  KILN_RETURN_IF_ERROR(NeedInput(i));
  Value& v = *inputs_[i];
  if (!v.expr.defined() && !v.data && !v.elements) {
    return Error("input '", input_name(i), "' has no value");  // the importer never does this
  }
  return Materialize(v);
}

absl::StatusOr<Expr> NodeContext::Materialize(Value& v) {
  if (v.is_sequence) return Unsupported("a sequence where a tensor is expected is not supported");
  if (v.is_none) return Unsupported("an empty optional where a tensor is expected is not supported");
  if (v.expr.defined()) return v.expr;
  if (v.data && tir::IsStringType(v.data->dtype)) {
    KILN_ASSIGN_OR_RETURN(v.expr, StringConstant(*this, *v.data));  // string_converters.cc
    return v.expr;
  }
  if (v.data) {
    v.expr = relax::Constant(*v.data);
    return v.expr;
  }
  if (!v.elements) return Error("a value without contents");  // the importer never makes one
  std::vector<int64_t> constants;
  if (AllConstant(*v.elements, &constants)) {
    std::vector<int64_t> shape;
    if (v.elements_rank == 1) shape.push_back(static_cast<int64_t>(constants.size()));
    v.expr = relax::Constant(IntData(constants, v.elements_dtype, shape));
    return v.expr;
  }
  // A symbolic shape value as a tensor: one R.full per element, concatenated.
  std::vector<Expr> pieces;
  for (const PrimExpr& e : *v.elements) {
    std::vector<PrimExpr> piece_shape;
    if (v.elements_rank == 1) piece_shape.push_back(PrimExpr(1));
    KILN_ASSIGN_OR_RETURN(Expr piece, Call("full", {relax::ShapeExpr(piece_shape), relax::PrimValue(e)},
                                           {{"dtype", v.elements_dtype}}));
    pieces.push_back(piece);
  }
  if (v.elements_rank == 0) {
    v.expr = pieces.at(0);
  } else {
    KILN_ASSIGN_OR_RETURN(v.expr, Call("concat", {relax::Tuple(pieces)}, {{"axis", int64_t{0}}}));
  }
  return v.expr;
}

absl::StatusOr<const relax::TensorStructInfoNode*> NodeContext::InputInfo(int i) {
  KILN_ASSIGN_OR_RETURN(Expr e, Input(i));
  const auto* t = e.struct_info().as<relax::TensorStructInfoNode>();
  if (t == nullptr) return Error("input '", input_name(i), "' is not a tensor");
  if (t->ndim == relax::kUnknownNdim) {
    return Unsupported("input '", input_name(i), "' has an unknown rank (give the graph input a shape)");
  }
  return t;
}

absl::StatusOr<std::vector<PrimExpr>> NodeContext::InputShape(int i) {
  KILN_ASSIGN_OR_RETURN(const relax::TensorStructInfoNode* t, InputInfo(i));
  if (!t->shape) return Unsupported("input '", input_name(i), "' has an unknown shape");
  return *t->shape;
}

absl::StatusOr<tir::DataType> NodeContext::InputDType(int i) {
  KILN_RETURN_IF_ERROR(NeedInput(i));
  const Value& v = *inputs_[i];
  if (!v.expr.defined() && v.data) return v.data->dtype;
  if (!v.expr.defined() && v.elements) return v.elements_dtype;
  KILN_ASSIGN_OR_RETURN(const relax::TensorStructInfoNode* t, InputInfo(i));
  if (!t->dtype) return Unsupported("input '", input_name(i), "' has an unknown element type");
  return *t->dtype;
}

bool NodeContext::InputElementsKnown(int i) const {
  if (!has_input(i)) return false;
  const Value& v = *inputs_[i];
  return v.elements.has_value() || (v.data && ElementsOfData(*v.data).has_value());
}

absl::StatusOr<relax::ConstantData> NodeContext::InputData(int i) {
  KILN_RETURN_IF_ERROR(NeedInput(i));
  Value& v = *inputs_[i];
  if (v.data) return *v.data;
  std::vector<int64_t> constants;
  if (v.elements && AllConstant(*v.elements, &constants)) {
    std::vector<int64_t> shape;
    if (v.elements_rank == 1) shape.push_back(static_cast<int64_t>(constants.size()));
    return IntData(constants, v.elements_dtype, shape);
  }
  const std::string& name = input_name(i);
  if (is_graph_input_(name)) {
    if (bind_) {
      if (std::optional<relax::ConstantData> bound = bind_(name)) {
        v.data = *bound;
        return *bound;
      }
    }
    return Unsupported("input '", name, "' must be known at import time, but it is the graph input '", name,
                       "' whose data comes at run time: bind it to a tensor (kiln import --bind ", name,
                       "=FILE.pb; docs/onnx.md)");
  }
  if (v.elements) {
    return Unsupported("input '", name, "' must be a constant at import time, but its value is symbolic");
  }
  return Unsupported("input '", name,
                     "' must be known at import time (a constant, an initializer, or computed from shapes), "
                     "but it is computed from run-time data");
}

absl::StatusOr<std::vector<PrimExpr>> NodeContext::InputElements(int i) {
  KILN_RETURN_IF_ERROR(NeedInput(i));
  Value& v = *inputs_[i];
  if (v.elements) return *v.elements;
  KILN_ASSIGN_OR_RETURN(relax::ConstantData data, InputData(i));
  std::optional<std::vector<PrimExpr>> elements = ElementsOfData(data);
  if (!elements) {
    return Unsupported("input '", input_name(i), "' must be a small integer tensor of rank 0 or 1 (got ",
                       data.dtype.ToString(), " with ", data.shape.size(), " dims, ", data.numel(), " elements)");
  }
  return *elements;
}

absl::StatusOr<std::vector<int64_t>> NodeContext::InputInts(int i) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> elements, InputElements(i));
  std::vector<int64_t> out;
  if (!AllConstant(elements, &out)) {
    return Unsupported("input '", input_name(i), "' must be constant at import time, but it is symbolic");
  }
  return out;
}

const ::onnx::AttributeProto* NodeContext::Attr(std::string_view name) const {
  for (const auto& attr : node_.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

int64_t NodeContext::AttrInt(std::string_view name, int64_t fallback) const {
  const auto* a = Attr(name);
  return a != nullptr && a->type() == ::onnx::AttributeProto::INT ? a->i() : fallback;
}

double NodeContext::AttrFloat(std::string_view name, double fallback) const {
  const auto* a = Attr(name);
  return a != nullptr && a->type() == ::onnx::AttributeProto::FLOAT ? a->f() : fallback;
}

std::string NodeContext::AttrString(std::string_view name, std::string fallback) const {
  const auto* a = Attr(name);
  return a != nullptr && a->type() == ::onnx::AttributeProto::STRING ? a->s() : fallback;
}

std::vector<int64_t> NodeContext::AttrInts(std::string_view name, std::vector<int64_t> fallback) const {
  const auto* a = Attr(name);
  if (a == nullptr || a->type() != ::onnx::AttributeProto::INTS) return fallback;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<double> NodeContext::AttrFloats(std::string_view name) const {
  const auto* a = Attr(name);
  if (a == nullptr || a->type() != ::onnx::AttributeProto::FLOATS) return {};
  return std::vector<double>(a->floats().begin(), a->floats().end());
}

absl::StatusOr<int64_t> NodeContext::RequiredInt(std::string_view name) const {
  const auto* a = Attr(name);
  if (a == nullptr || a->type() != ::onnx::AttributeProto::INT) {
    return Error("the integer attribute '", std::string(name), "' is required");
  }
  return a->i();
}

absl::StatusOr<relax::ConstantData> NodeContext::AttrTensor(std::string_view name) const {
  const auto* a = Attr(name);
  if (a == nullptr || a->type() != ::onnx::AttributeProto::TENSOR) {
    return Error("the tensor attribute '", std::string(name), "' is required");
  }
  absl::StatusOr<relax::ConstantData> data = TensorFromProto(a->t(), base_dir_);
  if (!data.ok()) return Annotate(data.status());
  return data;
}

absl::StatusOr<Expr> NodeContext::Emit(Expr value) {
  std::string hint = node_.output_size() > 0 ? node_.output(0) : std::string();
  absl::StatusOr<relax::Var> var = builder_.Emit(std::move(value), hint);
  if (!var.ok()) return Annotate(var.status());
  return Expr(*var);
}

absl::StatusOr<Expr> NodeContext::Call(const std::string& op, std::vector<Expr> args, relax::Attrs attrs) {
  return Emit(relax::Call(relax::Op(op), std::move(args), std::move(attrs)));
}

absl::Status NodeContext::Annotate(const absl::Status& status) const {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(label_, ": ", status.message()));
}

absl::StatusOr<const ::onnx::GraphProto*> NodeContext::AttrGraph(std::string_view name) const {
  const ::onnx::AttributeProto* attr = Attr(name);
  if (attr == nullptr || !attr->has_g()) return Error("needs the graph attribute '", std::string(name), "'");
  return &attr->g();
}

absl::StatusOr<std::vector<Value>> NodeContext::RunSubgraph(const ::onnx::GraphProto& graph,
                                                            std::vector<std::pair<std::string, Value>> bindings) {
  if (!subgraph_runner_) return Unsupported("subgraphs are not supported here");
  return subgraph_runner_(graph, std::move(bindings));
}

}  // namespace kiln::frontends::onnx
