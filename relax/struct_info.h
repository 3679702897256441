// StructInfo: what the compiler knows statically about a Relax value.
//
//   Object                         anything (no static knowledge)
//   Prim(dtype[, value])           a scalar; value, when known, is a symbolic PrimExpr
//   Shape(values | ndim)           a shape value (e.g. the result of R.shape_of)
//   Tensor(shape | ndim, dtype[, device])
//   Tuple(fields)
//   Func(params, ret, purity)      params absent = opaque callee of unknown signature
//
// Unknowns: ndim == kUnknownNdim when the rank is unknown; an undefined dtype (Tensor's
// dtype() is std::nullopt) when the element type is unknown. A shape dimension is a
// tir::PrimExpr: a constant, a symbolic variable, or arithmetic on them.
//
// StructInfo is immutable and shared. Symbolic variables appearing in it are the same
// tir::Var objects the enclosing function defines (by match_cast or its parameters).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tir/data_type.h"
#include "tir/expr.h"

namespace kiln::relax {

using tir::DataType;
using tir::PrimExpr;

inline constexpr int kUnknownNdim = -1;

enum class StructInfoKind : uint8_t { kObject, kPrim, kShape, kTensor, kTuple, kFunc };

class StructInfoNode {
 public:
  virtual ~StructInfoNode() = default;
  StructInfoKind kind() const { return kind_; }

 protected:
  explicit StructInfoNode(StructInfoKind kind) : kind_(kind) {}

 private:
  StructInfoKind kind_;
};

class StructInfo {
 public:
  StructInfo() = default;
  explicit StructInfo(std::shared_ptr<const StructInfoNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const StructInfoNode* get() const { return node_.get(); }
  const StructInfoNode* operator->() const { return node_.get(); }
  StructInfoKind kind() const { return node_->kind(); }
  bool same_as(const StructInfo& other) const { return node_ == other.node_; }
  template <typename T>
  const T* as() const {
    return dynamic_cast<const T*>(node_.get());
  }

 private:
  std::shared_ptr<const StructInfoNode> node_;
};

class ObjectStructInfoNode : public StructInfoNode {
 public:
  ObjectStructInfoNode() : StructInfoNode(StructInfoKind::kObject) {}
};

class PrimStructInfoNode : public StructInfoNode {
 public:
  PrimStructInfoNode(DataType dtype, PrimExpr value)
      : StructInfoNode(StructInfoKind::kPrim), dtype(dtype), value(std::move(value)) {}
  const DataType dtype;
  const PrimExpr value;  // may be undefined
};

class ShapeStructInfoNode : public StructInfoNode {
 public:
  ShapeStructInfoNode(std::optional<std::vector<PrimExpr>> values, int ndim)
      : StructInfoNode(StructInfoKind::kShape), values(std::move(values)), ndim(ndim) {}
  const std::optional<std::vector<PrimExpr>> values;  // when known, values->size() == ndim
  const int ndim;                                     // or kUnknownNdim
};

class TensorStructInfoNode : public StructInfoNode {
 public:
  TensorStructInfoNode(std::optional<std::vector<PrimExpr>> shape, int ndim,
                       std::optional<DataType> dtype, std::string device)
      : StructInfoNode(StructInfoKind::kTensor),
        shape(std::move(shape)),
        ndim(ndim),
        dtype(dtype),
        device(std::move(device)) {}
  const std::optional<std::vector<PrimExpr>> shape;  // when known, shape->size() == ndim
  const int ndim;                                    // or kUnknownNdim
  const std::optional<DataType> dtype;               // nullopt: unknown
  const std::string device;                          // "" unspecified, else "cpu", "cuda:0", ...
};

class TupleStructInfoNode : public StructInfoNode {
 public:
  explicit TupleStructInfoNode(std::vector<StructInfo> fields)
      : StructInfoNode(StructInfoKind::kTuple), fields(std::move(fields)) {}
  const std::vector<StructInfo> fields;
};

class FuncStructInfoNode : public StructInfoNode {
 public:
  FuncStructInfoNode(std::optional<std::vector<StructInfo>> params, StructInfo ret, bool pure)
      : StructInfoNode(StructInfoKind::kFunc),
        params(std::move(params)),
        ret(std::move(ret)),
        pure(pure) {}
  const std::optional<std::vector<StructInfo>> params;  // nullopt: opaque
  const StructInfo ret;
  const bool pure;
};

// Constructors.
StructInfo ObjectSInfo();
StructInfo PrimSInfo(DataType dtype, PrimExpr value = PrimExpr());
StructInfo ShapeSInfo(std::vector<PrimExpr> values);
StructInfo ShapeSInfoOfNdim(int ndim);
StructInfo TensorSInfo(std::vector<PrimExpr> shape, std::optional<DataType> dtype,
                       std::string device = "");
StructInfo TensorSInfoOfNdim(int ndim, std::optional<DataType> dtype, std::string device = "");
StructInfo TupleSInfo(std::vector<StructInfo> fields);
StructInfo FuncSInfo(std::vector<StructInfo> params, StructInfo ret, bool pure);
StructInfo OpaqueFuncSInfo(StructInfo ret, bool pure);

// The text-format spelling, e.g. `Tensor((n, 4), float32)`, `Tuple(Tensor(ndim=2, float32),
// Shape((n,)))`, `Prim(int64)`, `Object`.
std::string ToString(const StructInfo& sinfo);

}  // namespace kiln::relax
