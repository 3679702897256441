// Operators over STRING tensors (docs/onnx.md, "Strings"): StringConcat (20), RegexFullMatch
// (20), StringSplit (20), StringNormalizer (10), ai.onnx.ml LabelEncoder (2, 4; string, integer
// and float keys and values), and the string cases other converters hand over
// (string_converters.h): Equal on strings, Cast / CastLike to and from STRING, string
// constants. Each is one R.call_pure_builtin of a host builtin (builtins/string_builtins.cc);
// attributes travel as builtin arguments (StringImm, PrimValue, tuples of them), and a string
// constant is kiln.string.make of its strings (the constant pool holds no string tensors).
// Results whose shape depends on the data (StringSplit's width, StringNormalizer's kept count)
// have a known rank only.
#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "frontends/onnx/converters/string_converters.h"
#include "frontends/onnx/tensor_proto.h"
#include "support/packed_strings.h"
#include "support/status_macros.h"
#include "tir/string_type.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using relax::StructInfo;
using tir::DataType;

// The DLPack-style packing of a dtype the runtime builtins take (vm::PackDType).
int64_t PackedDType(DataType t) { return int64_t{static_cast<uint8_t>(t.code())} | (int64_t{t.bits()} << 8) | (int64_t{1} << 16); }

absl::Status ExpectString(NodeContext& c, int i, const char* what) {
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(i));
  if (!tir::IsStringType(dtype)) return c.Error(what, " must be a string tensor, got ", dtype.ToString());
  return absl::OkStatus();
}

absl::StatusOr<Expr> CallString(NodeContext& c, const std::string& builtin, std::vector<Expr> args, StructInfo out) {
  args.insert(args.begin(), relax::ExternFunc(builtin));
  return c.Emit(relax::Call(relax::Op("call_pure_builtin"), std::move(args), {}, {std::move(out)}));
}

// The struct info of a broadcast of inputs 0 and 1 (numpy's rule) with element type `dtype`:
// the shape when every dim pair is known (equal constants, or a 1), else the rank only (the
// builtin checks at run time). Constant dims that cannot broadcast are an error here.
absl::StatusOr<StructInfo> BroadcastSInfo(NodeContext& c, DataType dtype) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> a, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> b, c.InputShape(1));
  const size_t rank = std::max(a.size(), b.size());
  std::vector<PrimExpr> shape;
  for (size_t i = 0; i < rank; ++i) {
    const PrimExpr one(int64_t{1});
    const PrimExpr& da = i + a.size() >= rank ? a[i + a.size() - rank] : one;
    const PrimExpr& db = i + b.size() >= rank ? b[i + b.size() - rank] : one;
    const int64_t sa = StaticDim(da), sb = StaticDim(db);
    if (sa >= 0 && sb >= 0 && sa != sb && sa != 1 && sb != 1) {
      return c.Error("input shapes do not broadcast: dims ", sa, " and ", sb);
    }
    if (sa == 1) {
      shape.push_back(db);
    } else if (sb == 1 || (sa >= 0 && sa == sb)) {
      shape.push_back(da);
    } else {
      return relax::TensorSInfoOfNdim(static_cast<int>(rank), dtype);
    }
  }
  return relax::TensorSInfo(shape, dtype);
}

absl::StatusOr<std::vector<Value>> ConvertStringConcat(NodeContext& c) {
  KILN_RETURN_IF_ERROR(ExpectString(c, 0, "X"));
  KILN_RETURN_IF_ERROR(ExpectString(c, 1, "Y"));
  KILN_ASSIGN_OR_RETURN(StructInfo out, BroadcastSInfo(c, tir::StringType()));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr y, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr z, CallString(c, "kiln.string.concat", {x, y}, std::move(out)));
  return Outputs(z);
}

absl::StatusOr<std::vector<Value>> ConvertRegexFullMatch(NodeContext& c) {
  KILN_RETURN_IF_ERROR(ExpectString(c, 0, "X"));
  if (!c.HasAttr("pattern")) return c.Error("attribute 'pattern' is required");
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr y, CallString(c, "kiln.string.regex_full_match", {x, relax::StringImm(c.AttrString("pattern", ""))},
                                           relax::TensorSInfo(shape, DataType::Bool())));
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertStringSplit(NodeContext& c) {
  KILN_RETURN_IF_ERROR(ExpectString(c, 0, "X"));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  const int64_t maxsplit = c.AttrInt("maxsplit", -1);
  if (c.HasAttr("maxsplit") && maxsplit < 0) return c.Error("maxsplit must be non-negative, got ", maxsplit);
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  StructInfo out = relax::TupleSInfo({relax::TensorSInfoOfNdim(static_cast<int>(shape.size()) + 1, tir::StringType()),
                                      relax::TensorSInfo(shape, DataType::Int64())});
  KILN_ASSIGN_OR_RETURN(Expr both, CallString(c, "kiln.string.split",
                                              {x, relax::StringImm(c.AttrString("delimiter", "")),
                                               relax::PrimValue(PrimExpr(maxsplit))},
                                              std::move(out)));
  KILN_ASSIGN_OR_RETURN(Expr substrings, c.Emit(relax::TupleGetItem(both, 0)));
  KILN_ASSIGN_OR_RETURN(Expr counts, c.Emit(relax::TupleGetItem(both, 1)));
  return std::vector<Value>{Value::Of(substrings), Value::Of(counts)};
}

std::vector<std::string> AttrStrings(NodeContext& c, std::string_view name) {
  const ::onnx::AttributeProto* a = c.Attr(name);
  if (a == nullptr) return {};
  return std::vector<std::string>(a->strings().begin(), a->strings().end());
}

Expr StringTuple(const std::vector<std::string>& strings) {
  std::vector<Expr> fields;
  for (const std::string& s : strings) fields.push_back(relax::StringImm(s));
  return relax::Tuple(std::move(fields));
}

absl::StatusOr<std::vector<Value>> ConvertStringNormalizer(NodeContext& c) {
  KILN_RETURN_IF_ERROR(ExpectString(c, 0, "X"));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  if (shape.size() != 1 && shape.size() != 2) return c.Error("X must have shape [C] or [1, C]");
  const std::string action = c.AttrString("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER") {
    return c.Error("case_change_action '", action, "' is not NONE, LOWER or UPPER");
  }
  const std::string locale = c.AttrString("locale", "");
  if (!locale.empty() && locale != "en_US" && locale != "en_US.UTF-8" && locale != "C" && locale != "C.UTF-8") {
    return c.Unsupported("locale '", locale, "' is not supported (case mapping follows C.UTF-8)");
  }
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr y, CallString(c, "kiln.string.normalize",
                                           {x, StringTuple(AttrStrings(c, "stopwords")),
                                            relax::PrimValue(PrimExpr(c.AttrInt("is_case_sensitive", 0))),
                                            relax::StringImm(action)},
                                           relax::TensorSInfoOfNdim(static_cast<int>(shape.size()), tir::StringType())));
  return Outputs(y);
}

// LabelEncoder's keys or values: the `<prefix>_strings` / `_int64s` / `_floats` attribute or
// `<prefix>_tensor`, as builtin argument expressions, with their dtype.
struct Labels {
  std::vector<Expr> items;
  DataType dtype;
  bool given = false;
};

absl::StatusOr<Labels> ReadLabels(NodeContext& c, const std::string& prefix) {
  Labels out;
  int sources = 0;
  if (const auto* a = c.Attr(prefix + "_strings")) {
    ++sources;
    for (const std::string& s : a->strings()) out.items.push_back(relax::StringImm(s));
    out.dtype = tir::StringType();
  }
  if (const auto* a = c.Attr(prefix + "_int64s")) {
    ++sources;
    for (int64_t v : a->ints()) out.items.push_back(relax::PrimValue(PrimExpr(v)));
    out.dtype = DataType::Int64();
  }
  if (const auto* a = c.Attr(prefix + "_floats")) {
    ++sources;
    for (float v : a->floats()) out.items.push_back(relax::PrimValue(tir::FloatImm(DataType::Float(64), v)));
    out.dtype = DataType::Float32();
  }
  if (c.HasAttr(prefix + "_tensor")) {
    ++sources;
    KILN_ASSIGN_OR_RETURN(relax::ConstantData data, c.AttrTensor(prefix + "_tensor"));
    out.dtype = data.dtype;
    if (tir::IsStringType(data.dtype)) {
      KILN_ASSIGN_OR_RETURN(std::vector<std::string> strings,
                            support::UnpackStrings(data.bytes->data(), data.bytes->size(), data.numel()));
      for (const std::string& s : strings) out.items.push_back(relax::StringImm(s));
    } else if (data.dtype.is_integer()) {
      for (int64_t i = 0; i < data.numel(); ++i) out.items.push_back(relax::PrimValue(PrimExpr(ElementAsInt(data, i))));
    } else if (data.dtype.is_float()) {
      for (int64_t i = 0; i < data.numel(); ++i) {
        out.items.push_back(relax::PrimValue(tir::FloatImm(DataType::Float(64), ElementAsDouble(data, i))));
      }
    } else {
      return c.Unsupported(prefix, "_tensor of type ", data.dtype.ToString(), " is not supported");
    }
  }
  if (sources > 1) return c.Error("give exactly one of ", prefix, "_strings, _int64s, _floats and _tensor");
  out.given = sources == 1;
  return out;
}

absl::StatusOr<std::vector<Value>> ConvertLabelEncoder(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(Labels keys, ReadLabels(c, "keys"));
  KILN_ASSIGN_OR_RETURN(Labels values, ReadLabels(c, "values"));
  if (!keys.given || !values.given) return c.Error("keys and values are required");
  if (keys.items.size() != values.items.size()) {
    return c.Error(keys.items.size(), " keys but ", values.items.size(), " values");
  }
  KILN_ASSIGN_OR_RETURN(DataType input, c.InputDType(0));
  const bool input_matches = tir::IsStringType(input) ? tir::IsStringType(keys.dtype)
                             : input.is_integer() ? keys.dtype.is_integer()
                                                  : input.is_float() && keys.dtype.is_float();
  if (!input_matches) return c.Error("input of type ", input.ToString(), " does not match keys of type ", keys.dtype.ToString());
  // The default: default_tensor, or default_<type> (ONNX's defaults "_Unused", -1, -0.0).
  Expr fallback;
  if (c.HasAttr("default_tensor")) {
    KILN_ASSIGN_OR_RETURN(relax::ConstantData data, c.AttrTensor("default_tensor"));
    if (data.numel() != 1) return c.Error("default_tensor must hold one value");
    if (tir::IsStringType(data.dtype)) {
      KILN_ASSIGN_OR_RETURN(std::vector<std::string> s, support::UnpackStrings(data.bytes->data(), data.bytes->size(), 1));
      fallback = relax::StringImm(s[0]);
    } else if (data.dtype.is_integer()) {
      fallback = relax::PrimValue(PrimExpr(ElementAsInt(data, 0)));
    } else {
      fallback = relax::PrimValue(tir::FloatImm(DataType::Float(64), ElementAsDouble(data, 0)));
    }
  } else if (tir::IsStringType(values.dtype)) {
    fallback = relax::StringImm(c.AttrString("default_string", "_Unused"));
  } else if (values.dtype.is_integer()) {
    fallback = relax::PrimValue(PrimExpr(c.AttrInt("default_int64", -1)));
  } else {
    fallback = relax::PrimValue(tir::FloatImm(DataType::Float(64), c.AttrFloat("default_float", -0.0)));
  }
  const DataType out = values.dtype;
  if (!tir::IsStringType(out) && !out.is_integer() && !out.is_float()) {
    return c.Unsupported("values of type ", out.ToString(), " are not supported");
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr y, CallString(c, "kiln.string.label_encode",
                                           {x, relax::Tuple(keys.items), relax::Tuple(values.items), fallback,
                                            relax::PrimValue(PrimExpr(PackedDType(out)))},
                                           relax::TensorSInfo(shape, out)));
  return Outputs(y);
}

}  // namespace

bool InputIsString(NodeContext& c, int i) {
  absl::StatusOr<DataType> dtype = c.InputDType(i);
  return dtype.ok() && tir::IsStringType(*dtype);
}

absl::StatusOr<Expr> StringConstant(NodeContext& c, const relax::ConstantData& data) {
  if (!data.bytes) return c.Unsupported("external string data is not supported");
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> strings,
                        support::UnpackStrings(data.bytes->data(), data.bytes->size(), data.numel()));
  std::vector<PrimExpr> shape;
  for (int64_t d : data.shape) shape.push_back(PrimExpr(d));
  return CallString(c, "kiln.string.make", {relax::ShapeExpr(shape), StringTuple(strings)}, relax::TensorSInfo(shape, tir::StringType()));
}

absl::StatusOr<std::vector<Value>> CastWithStrings(NodeContext& c, DataType to) {
  KILN_ASSIGN_OR_RETURN(DataType from, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  if (from == to) return Outputs(x);
  if (const Value* v = c.InputValue(0); v != nullptr && v->narrow_type != 0) {
    return c.Unsupported("cast of ", OnnxDataTypeName(v->narrow_type), " to STRING is not supported");
  }
  const bool to_string = tir::IsStringType(to);
  const DataType number = to_string ? from : to;
  const bool supported = number == DataType::Float32() || number == DataType::Float(64) ||
                         (number.is_integer() && number.bits() >= 8) || (to_string && number.is_bool());
  if (!supported) {
    return c.Unsupported("cast ", to_string ? "from " : "to ", number.ToString(), to_string ? " to" : " from",
                         " STRING is not supported");
  }
  Expr y;
  if (to_string) {
    KILN_ASSIGN_OR_RETURN(y, CallString(c, "kiln.string.from_number", {x}, relax::TensorSInfo(shape, to)));
  } else {
    KILN_ASSIGN_OR_RETURN(y, CallString(c, "kiln.string.to_number", {x, relax::PrimValue(PrimExpr(PackedDType(to)))},
                                        relax::TensorSInfo(shape, to)));
  }
  return Outputs(y);
}

absl::StatusOr<std::vector<Value>> ConvertStringEqual(NodeContext& c) {
  KILN_RETURN_IF_ERROR(ExpectString(c, 0, "A"));
  KILN_RETURN_IF_ERROR(ExpectString(c, 1, "B"));
  KILN_ASSIGN_OR_RETURN(StructInfo out, BroadcastSInfo(c, DataType::Bool()));
  KILN_ASSIGN_OR_RETURN(Expr a, c.Input(0));
  KILN_ASSIGN_OR_RETURN(Expr b, c.Input(1));
  KILN_ASSIGN_OR_RETURN(Expr y, CallString(c, "kiln.string.equal", {a, b}, std::move(out)));
  return Outputs(y);
}

void RegisterStringConverters(ConverterRegistry& r) {
  r.Register("StringConcat", ConvertStringConcat, 20);
  r.Register("RegexFullMatch", ConvertRegexFullMatch, 20);
  r.Register("StringSplit", ConvertStringSplit, 20);
  r.Register("StringNormalizer", ConvertStringNormalizer, 10);
  r.Register(QualifiedOpType("ai.onnx.ml", "LabelEncoder"), ConvertLabelEncoder, 2);
}

}  // namespace kiln::frontends::onnx
