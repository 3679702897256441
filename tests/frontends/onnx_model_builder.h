// Small ONNX models built with the protobuf API for the frontend tests.
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace kiln::frontends::onnx {

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    auto* import = model_.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    model_.mutable_graph()->set_name("g");
  }
  // dims: a number is a dim_value, a name a dim_param, "?" an unknown dim.
  ModelBuilder& Input(const std::string& name, int32_t elem_type, const std::vector<std::string>& dims) {
    SetType(model_.mutable_graph()->add_input(), name, elem_type, dims);
    return *this;
  }
  ModelBuilder& Output(const std::string& name, int32_t elem_type = ::onnx::TensorProto::FLOAT) {
    auto* out = model_.mutable_graph()->add_output();
    out->set_name(name);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    out->mutable_type()->mutable_tensor_type()->mutable_shape();  // the checker wants one; the importer infers output shapes itself
    return *this;
  }
  ::onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* node = model_.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(name);
    for (const auto& i : inputs) node->add_input(i);
    for (const auto& o : outputs) node->add_output(o);
    return node;
  }
  ::onnx::TensorProto* Initializer(const std::string& name, const std::vector<int64_t>& values,
                                   const std::vector<int64_t>& dims) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return t;
  }
  std::string Bytes() const { return model_.SerializeAsString(); }
  ::onnx::ModelProto& proto() { return model_; }

 private:
  static void SetType(::onnx::ValueInfoProto* info, const std::string& name, int32_t elem_type,
                      const std::vector<std::string>& dims) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elem_type);
    auto* shape = tensor->mutable_shape();
    for (const std::string& d : dims) {
      auto* dim = shape->add_dim();
      if (d == "?") continue;
      if (std::isdigit(static_cast<unsigned char>(d[0])) || d[0] == '-') {
        dim->set_dim_value(std::stoll(d));
      } else {
        dim->set_dim_param(d);
      }
    }
  }
  ::onnx::ModelProto model_;
};

// An attribute on `node`: an int, or a graph (If's branches, Loop's body).
inline void SetIntAttr(::onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
}
inline void SetGraphAttr(::onnx::NodeProto* node, const std::string& name, const ::onnx::GraphProto& graph) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::GRAPH);
  *a->mutable_g() = graph;
}

}  // namespace kiln::frontends::onnx
