#include "relax/op/op_common.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <variant>

#include "support/check.h"
#include "support/int_math.h"
#include "support/status_macros.h"

namespace kiln::relax::op {

std::string OpName(const CallNode& call) {
  if (const auto* op = call.op.as<OpNode>()) return op->name;
  return "<call>";
}

std::string DimStr(const PrimExpr& dim) { return tir::ToString(dim); }

std::string DimsStr(const std::vector<PrimExpr>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) absl::StrAppend(&out, i ? ", " : "", DimStr(dims[i]));
  return out + ")";
}

std::string DTypeStr(const std::optional<DataType>& dtype) {
  return dtype ? dtype->ToString() : std::string("unknown");
}

namespace {

const char* SInfoKindName(const StructInfo& sinfo) {
  if (!sinfo.defined()) return "no struct info";
  switch (sinfo.kind()) {
    case StructInfoKind::kObject:
      return "Object";
    case StructInfoKind::kPrim:
      return "Prim";
    case StructInfoKind::kShape:
      return "Shape";
    case StructInfoKind::kTensor:
      return "Tensor";
    case StructInfoKind::kTuple:
      return "Tuple";
    case StructInfoKind::kFunc:
      return "Func";
  }
  return "?";
}

const char* AttrKindName(const AttrValue& value) {
  switch (value.index()) {
    case 0:
      return "int";
    case 1:
      return "float";
    case 2:
      return "bool";
    case 3:
      return "string";
    case 4:
      return "dtype";
    case 5:
      return "int list";
    case 6:
      return "float list";
  }
  return "?";
}

template <typename T>
absl::StatusOr<std::optional<T>> Lookup(const CallNode& call, const std::string& name,
                                        const char* expected) {
  auto it = call.attrs.find(name);
  if (it == call.attrs.end()) return std::optional<T>();
  if (const T* value = std::get_if<T>(&it->second)) return std::optional<T>(*value);
  return OpError(call, "attribute '", name, "' must be ", expected, ", got ",
                 AttrKindName(it->second));
}

}  // namespace

absl::Status CheckInt64Dims(const CallNode& call, const std::vector<PrimExpr>& dims,
                            const std::string& what) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!dims[i].defined()) return OpError(call, what, " dim ", i, " is undefined");
    if (dims[i].dtype() != DataType::Int64()) {
      return OpError(call, what, " dim ", i, " (", DimStr(dims[i]),
                     ") must be an int64 expression, got ", dims[i].dtype().ToString());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<const TensorStructInfoNode*> TensorArg(const CallNode& call, size_t index,
                                                      const char* what) {
  KILN_CHECK(index < call.args.size());
  const StructInfo& sinfo = call.args[index].struct_info();
  if (const auto* tensor = sinfo.defined() ? sinfo.as<TensorStructInfoNode>() : nullptr) {
    if (tensor->shape)
      KILN_RETURN_IF_ERROR(
          CheckInt64Dims(call, *tensor->shape, absl::StrCat(what, " (argument ", index, ")")));
    return tensor;
  }
  return OpError(call, what, " (argument ", index, ") must be a Tensor, got ",
                 sinfo.defined() ? ToString(sinfo) : SInfoKindName(sinfo));
}

absl::StatusOr<const ShapeStructInfoNode*> ShapeArg(const CallNode& call, size_t index,
                                                    const char* what) {
  KILN_CHECK(index < call.args.size());
  const StructInfo& sinfo = call.args[index].struct_info();
  if (const auto* shape = sinfo.defined() ? sinfo.as<ShapeStructInfoNode>() : nullptr) {
    if (shape->values)
      KILN_RETURN_IF_ERROR(
          CheckInt64Dims(call, *shape->values, absl::StrCat(what, " (argument ", index, ")")));
    return shape;
  }
  return OpError(call, what, " (argument ", index, ") must be a Shape, got ",
                 sinfo.defined() ? ToString(sinfo) : SInfoKindName(sinfo));
}

bool SwapsLastTwoAxes(const CallNode& call, int ndim) {
  if (!IsOp(call.op, "permute_dims") || call.args.size() != 1 || ndim < 2) return false;
  auto attr = call.attrs.find("axes");
  if (attr == call.attrs.end()) return ndim == 2;
  const auto* axes = std::get_if<std::vector<int64_t>>(&attr->second);
  if (axes == nullptr || static_cast<int>(axes->size()) != ndim) return false;
  for (int i = 0; i < ndim; ++i) {
    int64_t axis = (*axes)[static_cast<size_t>(i)];
    if (axis < 0) axis += ndim;
    const int64_t expected = i == ndim - 2 ? ndim - 1 : i == ndim - 1 ? ndim - 2 : i;
    if (axis != expected) return false;
  }
  return true;
}

absl::StatusOr<std::optional<int64_t>> IntAttr(const CallNode& call, const std::string& name) {
  return Lookup<int64_t>(call, name, "an int");
}

absl::StatusOr<std::optional<bool>> BoolAttr(const CallNode& call, const std::string& name) {
  return Lookup<bool>(call, name, "a bool");
}

absl::StatusOr<std::optional<double>> FloatAttr(const CallNode& call, const std::string& name) {
  auto it = call.attrs.find(name);
  if (it == call.attrs.end()) return std::optional<double>();
  if (const auto* d = std::get_if<double>(&it->second)) return std::optional<double>(*d);
  if (const auto* i = std::get_if<int64_t>(&it->second)) {
    return std::optional<double>(static_cast<double>(*i));
  }
  return OpError(call, "attribute '", name, "' must be a float, got ", AttrKindName(it->second));
}

absl::Status CheckEpsilon(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(auto epsilon, FloatAttr(call, "epsilon"));
  if (epsilon && !(*epsilon >= 0 && std::isfinite(*epsilon))) {
    return OpError(call, "epsilon must be finite and non-negative, got ", *epsilon);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<DataType>> DTypeAttr(const CallNode& call, const std::string& name) {
  auto it = call.attrs.find(name);
  if (it == call.attrs.end()) return std::optional<DataType>();
  if (const auto* t = std::get_if<DataType>(&it->second)) return std::optional<DataType>(*t);
  if (const auto* s = std::get_if<std::string>(&it->second)) {
    absl::StatusOr<DataType> parsed = DataType::Parse(*s);
    if (!parsed.ok()) {
      return OpError(call, "attribute '", name, "': ", parsed.status().message());
    }
    return std::optional<DataType>(*parsed);
  }
  return OpError(call, "attribute '", name, "' must be a dtype, got ", AttrKindName(it->second));
}

absl::StatusOr<std::optional<std::vector<int64_t>>> IntsAttr(const CallNode& call,
                                                             const std::string& name) {
  using Result = std::optional<std::vector<int64_t>>;
  auto it = call.attrs.find(name);
  if (it == call.attrs.end()) return Result();
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return Result(*v);
  if (const auto* i = std::get_if<int64_t>(&it->second)) return Result(std::vector<int64_t>{*i});
  return OpError(call, "attribute '", name, "' must be an int list, got ",
                 AttrKindName(it->second));
}

absl::StatusOr<std::optional<std::vector<double>>> FloatsAttr(const CallNode& call, const std::string& name) {
  using Result = std::optional<std::vector<double>>;
  auto it = call.attrs.find(name);
  if (it == call.attrs.end()) return Result();
  if (const auto* v = std::get_if<std::vector<double>>(&it->second)) return Result(*v);
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return Result(std::vector<double>(v->begin(), v->end()));
  return OpError(call, "attribute '", name, "' must be a list of numbers, got ", AttrKindName(it->second));
}

absl::StatusOr<int> NormalizeAxis(const CallNode& call, int64_t axis, int ndim, const char* what) {
  KILN_CHECK(ndim != kUnknownNdim);
  if (axis < -ndim || axis >= ndim) {
    return OpError(call, what, " ", axis, " is out of range for a tensor of ndim ", ndim);
  }
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

absl::StatusOr<std::vector<int>> NormalizeAxes(const CallNode& call,
                                               const std::vector<int64_t>& axes, int ndim,
                                               const char* what) {
  std::vector<int> out;
  // The value that first named each axis, to say which two entries collide (1 and -1).
  std::vector<std::optional<int64_t>> seen(static_cast<size_t>(ndim));
  for (int64_t axis : axes) {
    KILN_ASSIGN_OR_RETURN(int a, NormalizeAxis(call, axis, ndim, what));
    if (const std::optional<int64_t>& first = seen[static_cast<size_t>(a)]) {
      return OpError(call, what, " names axis ", a, " twice (", *first, " and ", axis, ")");
    }
    seen[static_cast<size_t>(a)] = axis;
    out.push_back(a);
  }
  return out;
}

absl::StatusOr<std::optional<DataType>> UnifyDType(const CallNode& call,
                                                   const std::optional<DataType>& a,
                                                   const char* what_a,
                                                   const std::optional<DataType>& b,
                                                   const char* what_b) {
  if (a && b && *a != *b) {
    return OpError(call, "dtypes differ: ", what_a, " is ", a->ToString(), ", ", what_b, " is ",
                   b->ToString());
  }
  return a ? a : b;
}

absl::StatusOr<std::string> UnifyDevice(const CallNode& call, const std::string& a,
                                        const char* what_a, const std::string& b,
                                        const char* what_b) {
  if (a.empty()) return b;
  if (b.empty() || a == b) return a;
  return OpError(call, "operands are on different devices: ", what_a, " on \"", a, "\", ", what_b,
                 " on \"", b, "\"");
}

absl::StatusOr<std::vector<PrimExpr>> BroadcastShapes(const CallNode& call,
                                                      const std::vector<PrimExpr>& a,
                                                      const std::vector<PrimExpr>& b,
                                                      tir::Analyzer& analyzer, const char* what_a,
                                                      const char* what_b) {
  const size_t ndim = std::max(a.size(), b.size());
  std::vector<PrimExpr> out(ndim);
  for (size_t k = 0; k < ndim; ++k) {
    // k counts from the right.
    const bool has_a = k < a.size();
    const bool has_b = k < b.size();
    PrimExpr result;
    if (!has_a) {
      result = b[b.size() - 1 - k];
    } else if (!has_b) {
      result = a[a.size() - 1 - k];
    } else {
      const size_t ia = a.size() - 1 - k;
      const size_t ib = b.size() - 1 - k;
      PrimExpr da = analyzer.Simplify(a[ia]);
      PrimExpr db = analyzer.Simplify(b[ib]);
      auto ca = da.as_int();
      auto cb = db.as_int();
      if (DimsEqual(da, db, analyzer)) {
        result = da;
      } else if (ca == 1) {
        result = db;
      } else if (cb == 1) {
        result = da;
      } else if (DimsDiffer(da, db, analyzer)) {
        return OpError(call, "cannot broadcast dim ", ia, " (", DimStr(da), ") against dim ", ib,
                       " (", DimStr(db), ")");
      } else {
        AssumeEqual(call, da, db, analyzer,
                    absl::StrCat("shapes do not broadcast at run time: ", what_a, " dim ", ia, " is {}, ",
                                 what_b, " dim ", ib, " is {} (symbolic dims broadcast only when equal)"));
        result = (cb && !ca) ? db : da;  // equal at run time; prefer the literal
      }
    }
    out[ndim - 1 - k] = analyzer.Simplify(result);
  }
  return out;
}

ShapeOrNdim ShapeOf(const TensorStructInfoNode& tensor) { return {tensor.shape, tensor.ndim}; }

absl::StatusOr<ShapeOrNdim> BroadcastTensors(const CallNode& call, const TensorStructInfoNode& a,
                                             const TensorStructInfoNode& b,
                                             tir::Analyzer& analyzer, const char* what_a,
                                             const char* what_b) {
  if (a.shape && b.shape) {
    KILN_ASSIGN_OR_RETURN(auto shape, BroadcastShapes(call, *a.shape, *b.shape, analyzer, what_a, what_b));
    int ndim = static_cast<int>(shape.size());
    return ShapeOrNdim{std::move(shape), ndim};
  }
  if (a.ndim == kUnknownNdim || b.ndim == kUnknownNdim) return ShapeOrNdim{};
  return ShapeOrNdim{std::nullopt, std::max(a.ndim, b.ndim)};
}

StructInfo MakeTensor(const ShapeOrNdim& shape, std::optional<DataType> dtype, std::string device) {
  if (shape.shape) return TensorSInfo(*shape.shape, dtype, std::move(device));
  return TensorSInfoOfNdim(shape.ndim, dtype, std::move(device));
}

std::vector<PrimExpr> SimplifyDims(std::vector<PrimExpr> dims, tir::Analyzer& analyzer) {
  for (PrimExpr& d : dims) d = analyzer.Simplify(d);
  return dims;
}

namespace {

// Structural equality of the integer expressions shape dims are made of.
bool SameExpr(const PrimExpr& a, const PrimExpr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined() || a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  if (auto x = a.as_int()) return x == b.as_int();
  if (tir::IsBinary(a.kind())) {
    const auto* x = a.as<tir::BinaryNode>();
    const auto* y = b.as<tir::BinaryNode>();
    return x && y && SameExpr(x->a, y->a) && SameExpr(x->b, y->b);
  }
  return false;
}

// e == base + offset, peeling constant additions and subtractions.
PrimExpr SplitOffset(const PrimExpr& e, int64_t* offset) {
  if (auto c = e.as_int()) {
    *offset += *c;
    return PrimExpr();
  }
  if (e.kind() == tir::ExprKind::kAdd || e.kind() == tir::ExprKind::kSub) {
    const auto* bin = e.as<tir::BinaryNode>();
    const int64_t sign = e.kind() == tir::ExprKind::kAdd ? 1 : -1;
    if (auto c = bin->b.as_int()) {
      *offset += sign * *c;
      return SplitOffset(bin->a, offset);
    }
    if (auto c = bin->a.as_int(); c && sign == 1) {
      *offset += *c;
      return SplitOffset(bin->b, offset);
    }
  }
  return e;
}

}  // namespace

bool DimsEqual(const PrimExpr& a, const PrimExpr& b, tir::Analyzer& analyzer) {
  if (SameExpr(a, b) || analyzer.CanProveEqual(a, b)) return true;
  int64_t oa = 0, ob = 0;
  PrimExpr ba = SplitOffset(a, &oa), bb = SplitOffset(b, &ob);
  return oa == ob && ((!ba.defined() && !bb.defined()) || SameExpr(ba, bb));
}

bool DimsDiffer(const PrimExpr& a, const PrimExpr& b, tir::Analyzer& analyzer) {
  if (analyzer.CanProveNotEqual(a, b)) return true;
  int64_t oa = 0, ob = 0;
  PrimExpr ba = SplitOffset(a, &oa), bb = SplitOffset(b, &ob);
  return oa != ob && ((!ba.defined() && !bb.defined()) || SameExpr(ba, bb));
}

PrimExpr FloorDivDim(const PrimExpr& a, const PrimExpr& b, tir::Analyzer& analyzer) {
  PrimExpr x = analyzer.Simplify(a);
  PrimExpr y = analyzer.Simplify(b);
  auto cx = x.as_int();
  auto cy = y.as_int();
  if (cy == 1) return x;
  if (cx && cy && *cy != 0) return Int(support::FloorDiv(*cx, *cy));
  return analyzer.Simplify(tir::FloorDiv(x, y));
}

bool KnownNonNegative(const PrimExpr& e, tir::Analyzer& analyzer) {
  if (auto c = e.as_int()) return *c >= 0;
  if (analyzer.ConstIntBound(e).min >= 0) return true;
  if (const auto* var = e.as<tir::VarNode>()) return var->lower_bound && *var->lower_bound >= 0;
  switch (e.kind()) {
    case tir::ExprKind::kAdd:
    case tir::ExprKind::kMul:
    case tir::ExprKind::kMin:
    case tir::ExprKind::kMax:
    case tir::ExprKind::kFloorDiv: {
      const auto* bin = e.as<tir::BinaryNode>();
      if (e.kind() == tir::ExprKind::kMax) {
        return KnownNonNegative(bin->a, analyzer) || KnownNonNegative(bin->b, analyzer);
      }
      return KnownNonNegative(bin->a, analyzer) && KnownNonNegative(bin->b, analyzer);
    }
    default:
      return false;
  }
}

PrimExpr AddConst(const PrimExpr& e, int64_t c) {
  if (auto v = e.as_int()) return Int(*v + c);
  PrimExpr base = e;
  if (e.kind() == tir::ExprKind::kAdd || e.kind() == tir::ExprKind::kSub) {
    const auto* bin = e.as<tir::BinaryNode>();
    if (auto k = bin->b.as_int()) {
      base = bin->a;
      c += e.kind() == tir::ExprKind::kAdd ? *k : -*k;
    }
  }
  if (c == 0) return base;
  return c > 0 ? base + c : base - (-c);
}

PrimExpr Int(int64_t value) { return tir::IntImm(DataType::Int64(), value); }

}  // namespace kiln::relax::op
