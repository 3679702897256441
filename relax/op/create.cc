// Tensor creation.
//
// full (shape: Shape, fill_value), attribute dtype (default: the fill value's dtype).
//   fill_value is a Prim (R.prim_value) or a 0-d tensor. Result: Tensor(shape, dtype).
// zeros, ones (shape: Shape), attribute dtype (default float32).
// arange: the bounds come either as 1 to 3 Prim arguments — (end), (start, end) or
//   (start, end, step), numpy order — or, with no arguments, as attributes start (default
//   0), end (required) and step (default 1), ints or floats. Attribute dtype (default int64
//   when every bound is an integer, else float32). The length is ceil((end - start) / step):
//   for integer bounds floordiv(end - start + step - 1, step) (step > 0; mirrored for a
//   negative literal step); constant bounds clamp the length at 0, symbolic ones are assumed
//   to describe a range that is not reversed, with a positive step when the step is symbolic
//   (both checked at run time, before the first kernel). Float bounds must be constants for
//   a known length; otherwise the result is a 1-d tensor of unknown length. Constant bounds
//   must be finite and give a length that fits in int64.
#include <cmath>

#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::StatusOr<std::vector<PrimExpr>> ShapeValues(const CallNode& call, size_t index,
                                                  tir::Analyzer& analyzer, int* ndim) {
  KILN_ASSIGN_OR_RETURN(const ShapeStructInfoNode* shape, ShapeArg(call, index, "shape"));
  *ndim = shape->ndim;
  if (!shape->values) return std::vector<PrimExpr>();
  for (size_t i = 0; i < shape->values->size(); ++i) {
    auto c = (*shape->values)[i].as_int();
    if (c && *c < 0) return OpError(call, "shape dim ", i, " is negative (", *c, ")");
  }
  return SimplifyDims(*shape->values, analyzer);
}

StructInfo Result(const ShapeStructInfoNode& shape, std::vector<PrimExpr> values,
                  std::optional<DataType> dtype) {
  if (!shape.values) return TensorSInfoOfNdim(shape.ndim, dtype);
  return TensorSInfo(std::move(values), dtype);
}

absl::StatusOr<StructInfo> InferFull(const CallNode& call, tir::Analyzer& analyzer) {
  int ndim = 0;
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> values, ShapeValues(call, 0, analyzer, &ndim));
  const StructInfo& fill = call.args[1].struct_info();
  std::optional<DataType> fill_dtype;
  if (const auto* prim = fill.as<PrimStructInfoNode>()) {
    fill_dtype = prim->dtype;
  } else if (const auto* t = fill.as<TensorStructInfoNode>()) {
    if (t->ndim != 0 && t->ndim != kUnknownNdim) {
      return OpError(call, "fill_value must be a scalar (Prim or 0-d tensor), got ",
                     ToString(fill));
    }
    fill_dtype = t->dtype;
  } else {
    return OpError(call, "fill_value must be a Prim or a 0-d tensor, got ", ToString(fill));
  }
  KILN_ASSIGN_OR_RETURN(auto dtype, DTypeAttr(call, "dtype"));
  const auto* shape = call.args[0].struct_info().as<ShapeStructInfoNode>();
  return Result(*shape, std::move(values), dtype ? dtype : fill_dtype);
}

absl::StatusOr<StructInfo> InferZerosOnes(const CallNode& call, tir::Analyzer& analyzer) {
  int ndim = 0;
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> values, ShapeValues(call, 0, analyzer, &ndim));
  KILN_ASSIGN_OR_RETURN(auto dtype, DTypeAttr(call, "dtype"));
  const auto* shape = call.args[0].struct_info().as<ShapeStructInfoNode>();
  return Result(*shape, std::move(values), dtype.value_or(DataType::Float32()));
}

// One bound of arange: a PrimExpr, or undefined when not known statically.
absl::StatusOr<PrimExpr> BoundFromArg(const CallNode& call, size_t index) {
  const auto* prim = call.args[index].struct_info().as<PrimStructInfoNode>();
  if (prim == nullptr) {
    return OpError(call, "argument ", index, " must be a Prim, got ",
                   ToString(call.args[index].struct_info()));
  }
  if (!prim->value.defined()) return PrimExpr();
  return prim->value;
}

absl::StatusOr<PrimExpr> BoundFromAttr(const CallNode& call, const std::string& name,
                                       std::optional<int64_t> fallback) {
  auto it = call.attrs.find(name);
  if (it == call.attrs.end()) {
    if (!fallback) return OpError(call, "attribute '", name, "' is required");
    return Int(*fallback);
  }
  if (const auto* i = std::get_if<int64_t>(&it->second)) return Int(*i);
  if (const auto* d = std::get_if<double>(&it->second))
    return tir::FloatImm(DataType::Float(64), *d);
  return OpError(call, "attribute '", name, "' must be an int or a float");
}

std::optional<double> AsConst(const PrimExpr& e) {
  if (auto i = e.as_int()) return static_cast<double>(*i);
  if (const auto* f = e.as<tir::FloatImmNode>()) return f->value;
  return std::nullopt;
}

PrimExpr ToInt64(const PrimExpr& e) {
  return e.dtype() == DataType::Int64() ? e : tir::Cast(DataType::Int64(), e);
}

absl::StatusOr<StructInfo> InferArange(const CallNode& call, tir::Analyzer& analyzer) {
  const size_t nargs = call.args.size();
  PrimExpr start, end, step;
  if (nargs == 0) {
    KILN_ASSIGN_OR_RETURN(start, BoundFromAttr(call, "start", 0));
    KILN_ASSIGN_OR_RETURN(end, BoundFromAttr(call, "end", std::nullopt));
    KILN_ASSIGN_OR_RETURN(step, BoundFromAttr(call, "step", 1));
  } else {
    for (const char* name : {"start", "end", "step"}) {
      if (call.attrs.count(name)) {
        return OpError(call, "bounds come from the arguments or from attributes, not both");
      }
    }
    start = Int(0);
    step = Int(1);
    if (nargs == 1) {
      KILN_ASSIGN_OR_RETURN(end, BoundFromArg(call, 0));
    } else {
      KILN_ASSIGN_OR_RETURN(start, BoundFromArg(call, 0));
      KILN_ASSIGN_OR_RETURN(end, BoundFromArg(call, 1));
      if (nargs == 3) {
        KILN_ASSIGN_OR_RETURN(step, BoundFromArg(call, 2));
      }
    }
  }
  bool all_int = true;
  bool all_known = true;
  for (const PrimExpr* e : {&start, &end, &step}) {
    if (!e->defined()) {
      all_known = false;
      continue;
    }
    if (e->dtype().is_bool() || e->dtype().is_handle()) {
      return OpError(call, "bounds must be numbers, got ", e->dtype().ToString());
    }
    if (!e->dtype().is_integer()) all_int = false;
  }
  KILN_ASSIGN_OR_RETURN(auto dtype_attr, DTypeAttr(call, "dtype"));
  DataType dtype = dtype_attr.value_or(all_int ? DataType::Int64() : DataType::Float32());
  if (auto s = step.defined() ? AsConst(step) : std::nullopt; s && *s == 0) {
    return OpError(call, "step must not be 0");
  }
  if (!all_known) return TensorSInfoOfNdim(1, dtype);
  auto cs = AsConst(start), ce = AsConst(end), cst = AsConst(step);
  if (cs && ce && cst) {
    // A NaN or infinite bound, or a length past int64, has no tensor: the cast to int64 was
    // undefined and came out as a negative dim that only allocation refused.
    if (!std::isfinite(*cs) || !std::isfinite(*ce) || !std::isfinite(*cst)) {
      return OpError(call, "bounds must be finite, got start ", *cs, ", end ", *ce, ", step ", *cst);
    }
    double len = std::ceil((*ce - *cs) / *cst);
    if (len >= 0x1p63) {
      return OpError(call, "the length ceil((end - start) / step) = ", len, " does not fit in int64");
    }
    return TensorSInfo({Int(len > 0 ? static_cast<int64_t>(len) : 0)}, dtype);
  }
  if (!all_int) return TensorSInfoOfNdim(1, dtype);
  PrimExpr a = ToInt64(start), b = ToInt64(end), st = ToInt64(step);
  PrimExpr len;
  auto minus = [](const PrimExpr& x, const PrimExpr& y) {
    if (auto c = y.as_int()) return AddConst(x, -*c);
    return x - y;
  };
  if (auto si = st.as_int(); si && *si < 0) {
    len = FloorDivDim(AddConst(minus(a, b), -*si - 1), Int(-*si), analyzer);
  } else if (auto sp = st.as_int()) {
    len = FloorDivDim(AddConst(minus(b, a), *sp - 1), st, analyzer);
  } else {
    AssumeAtMost(call, Int(1), st, analyzer, "a symbolic step must be at least {}, but it is {} at run time");
    len = FloorDivDim(AddConst(minus(b, a) + st, -1), st, analyzer);
  }
  len = analyzer.Simplify(len);
  AssumeAtMost(call, Int(0), len, analyzer,
               absl::StrCat("the range is reversed at run time: its length ", DimStr(len), " must be at least {}, ",
                            "but it is {}"));
  return TensorSInfo({len}, dtype);
}

}  // namespace

void RegisterCreateOps(OpRegistry& registry) {
  registry.Register({"full", 2, 2, true, {"dtype"}, InferFull});
  registry.Register({"zeros", 1, 1, true, {"dtype"}, InferZerosOnes});
  registry.Register({"ones", 1, 1, true, {"dtype"}, InferZerosOnes});
  registry.Register({"arange", 0, 3, true, {"start", "end", "step", "dtype"}, InferArange});
}

}  // namespace kiln::relax::op
