#include "relax/struct_info.h"

#include "absl/strings/str_cat.h"
#include "support/check.h"

namespace kiln::relax {

StructInfo ObjectSInfo() { return StructInfo(std::make_shared<ObjectStructInfoNode>()); }

StructInfo PrimSInfo(DataType dtype, PrimExpr value) {
  KILN_CHECK(!value.defined() || value.dtype() == dtype) << "Prim value type differs from dtype";
  return StructInfo(std::make_shared<PrimStructInfoNode>(dtype, std::move(value)));
}

StructInfo ShapeSInfo(std::vector<PrimExpr> values) {
  int ndim = static_cast<int>(values.size());
  return StructInfo(std::make_shared<ShapeStructInfoNode>(std::move(values), ndim));
}

StructInfo ShapeSInfoOfNdim(int ndim) {
  KILN_CHECK_GE(ndim, kUnknownNdim);
  return StructInfo(std::make_shared<ShapeStructInfoNode>(std::nullopt, ndim));
}

StructInfo TensorSInfo(std::vector<PrimExpr> shape, std::optional<DataType> dtype, std::string device) {
  int ndim = static_cast<int>(shape.size());
  return StructInfo(
      std::make_shared<TensorStructInfoNode>(std::move(shape), ndim, dtype, std::move(device)));
}

StructInfo TensorSInfoOfNdim(int ndim, std::optional<DataType> dtype, std::string device) {
  KILN_CHECK_GE(ndim, kUnknownNdim);
  return StructInfo(
      std::make_shared<TensorStructInfoNode>(std::nullopt, ndim, dtype, std::move(device)));
}

StructInfo TupleSInfo(std::vector<StructInfo> fields) {
  return StructInfo(std::make_shared<TupleStructInfoNode>(std::move(fields)));
}

StructInfo FuncSInfo(std::vector<StructInfo> params, StructInfo ret, bool pure) {
  return StructInfo(std::make_shared<FuncStructInfoNode>(std::move(params), std::move(ret), pure));
}

StructInfo OpaqueFuncSInfo(StructInfo ret, bool pure) {
  return StructInfo(std::make_shared<FuncStructInfoNode>(std::nullopt, std::move(ret), pure));
}

namespace {

std::string DimsToString(const std::vector<PrimExpr>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += tir::ToString(dims[i]);
  }
  if (dims.size() == 1) out += ",";
  return out + ")";
}

std::string ListToString(const std::vector<StructInfo>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += ToString(items[i]);
  }
  return out;
}

}  // namespace

std::string ToString(const StructInfo& sinfo) {
  if (!sinfo.defined()) return "<unknown>";
  switch (sinfo.kind()) {
    case StructInfoKind::kObject: return "Object";
    case StructInfoKind::kPrim: {
      const auto* prim = sinfo.as<PrimStructInfoNode>();
      std::string out = absl::StrCat("Prim(", prim->dtype.ToString());
      if (prim->value.defined()) absl::StrAppend(&out, ", value=", tir::ToString(prim->value));
      return out + ")";
    }
    case StructInfoKind::kShape: {
      const auto* shape = sinfo.as<ShapeStructInfoNode>();
      if (shape->values) return absl::StrCat("Shape(", DimsToString(*shape->values), ")");
      if (shape->ndim == kUnknownNdim) return "Shape";
      return absl::StrCat("Shape(ndim=", shape->ndim, ")");
    }
    case StructInfoKind::kTensor: {
      const auto* tensor = sinfo.as<TensorStructInfoNode>();
      std::vector<std::string> parts;
      if (tensor->shape) {
        parts.push_back(DimsToString(*tensor->shape));
      } else if (tensor->ndim != kUnknownNdim) {
        parts.push_back(absl::StrCat("ndim=", tensor->ndim));
      }
      if (tensor->dtype) parts.push_back(tensor->dtype->ToString());
      if (!tensor->device.empty()) parts.push_back(absl::StrCat("device=\"", tensor->device, "\""));
      if (parts.empty()) return "Tensor";
      std::string out = "Tensor(";
      for (size_t i = 0; i < parts.size(); ++i) absl::StrAppend(&out, i ? ", " : "", parts[i]);
      return out + ")";
    }
    case StructInfoKind::kTuple:
      return absl::StrCat("Tuple(", ListToString(sinfo.as<TupleStructInfoNode>()->fields), ")");
    case StructInfoKind::kFunc: {
      const auto* func = sinfo.as<FuncStructInfoNode>();
      std::string params = func->params ? absl::StrCat("[", ListToString(*func->params), "]") : "...";
      return absl::StrCat("Func(", params, " -> ", ToString(func->ret), func->pure ? "" : ", impure", ")");
    }
  }
  return "<invalid>";
}

}  // namespace kiln::relax
