#include "tir/intrinsics.h"

#include "absl/strings/str_cat.h"

namespace kiln::tir {
namespace {

using Type = IntrinsicInfo::Type;

const std::vector<IntrinsicInfo>& Table() {
  static const auto* table = new std::vector<IntrinsicInfo>{
      {"arg_type_code", Type::kInt32, {Type::kHandle, Type::kInt64}},
      {"arg_int", Type::kInt64, {Type::kHandle, Type::kInt64}},
      {"arg_float", Type::kFloat64, {Type::kHandle, Type::kInt64}},
      {"arg_handle", Type::kHandle, {Type::kHandle, Type::kInt64}},
      {"is_null", Type::kBool, {Type::kHandle}},
      {"tensor_data", Type::kHandle, {Type::kHandle}},
      {"tensor_ndim", Type::kInt32, {Type::kHandle}},
      {"tensor_device_type", Type::kInt32, {Type::kHandle}},
      {"tensor_dtype_code", Type::kInt32, {Type::kHandle}},
      {"tensor_dtype_bits", Type::kInt32, {Type::kHandle}},
      {"tensor_dtype_lanes", Type::kInt32, {Type::kHandle}},
      {"tensor_shape", Type::kInt64, {Type::kHandle, Type::kInt64}},
      {"tensor_stride", Type::kInt64, {Type::kHandle, Type::kInt64, Type::kInt64}},
      {"launch_kernel",
       Type::kInt32,
       {Type::kInt64, Type::kInt64, Type::kInt64, Type::kInt64, Type::kInt64, Type::kInt64, Type::kInt64,
        Type::kInt64},
       /*variadic=*/true},
      {"address_of", Type::kHandle, {Type::kBufferElement}},
      {"storage_sync", Type::kInt32, {}},
      {"prefetch", Type::kInt32, {Type::kBufferElement}},
      {"fast_exp", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_log", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_erf", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_tanh", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_sigmoid", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"libm_tanh", Type::kSameAsArg0, {Type::kFloatAny}},
      {"libm_erf", Type::kSameAsArg0, {Type::kFloatAny}},
      {"fast_expm1", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_log1p", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_sin", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_cos", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_tan", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_asin", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_acos", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_atan", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_sinh", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_cosh", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_asinh", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_acosh", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"fast_atanh", Type::kSameAsArg0, {Type::kFloat32Any}},
      {"libm_tan", Type::kSameAsArg0, {Type::kFloatAny}},
      {"libm_asin", Type::kSameAsArg0, {Type::kFloatAny}},
      {"libm_acos", Type::kSameAsArg0, {Type::kFloatAny}},
      {"libm_atan", Type::kSameAsArg0, {Type::kFloatAny}},
      {"libm_sinh", Type::kSameAsArg0, {Type::kFloatAny}},
      {"libm_cosh", Type::kSameAsArg0, {Type::kFloatAny}},
      {"libm_asinh", Type::kSameAsArg0, {Type::kFloatAny}},
      {"libm_acosh", Type::kSameAsArg0, {Type::kFloatAny}},
      {"libm_atanh", Type::kSameAsArg0, {Type::kFloatAny}},
      {"libm_log1p", Type::kSameAsArg0, {Type::kFloatAny}},
      {"libm_expm1", Type::kSameAsArg0, {Type::kFloatAny}},
  };
  return *table;
}

bool Fits(Type type, DataType t) {
  switch (type) {
    case Type::kHandle: return t == DataType::Handle();
    case Type::kInt32: return t == DataType::Int32();
    case Type::kInt64: return t == DataType::Int64();
    case Type::kFloat64: return t == DataType::Float(64);
    case Type::kBool: return t == DataType::Bool();
    case Type::kFloat32Any: return t.element_of() == DataType::Float32();
    case Type::kFloatAny: return t.is_float();
    case Type::kScalar: return t.is_scalar() && (t.is_integer() || t.is_float() || t.is_handle() || t.is_bool());
    case Type::kBufferElement:  // the node's kind, checked by CheckIntrinsicCall
    case Type::kSameAsArg0: return false;
  }
  return false;
}

const char* Describe(Type type) {
  switch (type) {
    case Type::kHandle: return "handle";
    case Type::kInt32: return "int32";
    case Type::kInt64: return "int64";
    case Type::kFloat64: return "float64";
    case Type::kBool: return "bool";
    case Type::kFloat32Any: return "float32 (any lanes)";
    case Type::kFloatAny: return "a float type";
    case Type::kScalar: return "a scalar int, float or handle";
    case Type::kBufferElement: return "a buffer element B[i]";
    case Type::kSameAsArg0: return "?";
  }
  return "?";
}

DataType Fixed(Type type) {
  switch (type) {
    case Type::kHandle: return DataType::Handle();
    case Type::kInt32: return DataType::Int32();
    case Type::kInt64: return DataType::Int64();
    case Type::kFloat64: return DataType::Float(64);
    case Type::kBool: return DataType::Bool();
    default: return DataType::Int64();
  }
}

}  // namespace

const IntrinsicInfo* FindIntrinsic(std::string_view name) {
  for (const IntrinsicInfo& info : Table()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

absl::Status CheckIntrinsicCall(std::string_view name, const std::vector<PrimExpr>& args) {
  const IntrinsicInfo* info = FindIntrinsic(name);
  std::string n(name);
  if (info == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown intrinsic '", n, "'"));
  if (args.size() < info->args.size() || (!info->variadic && args.size() != info->args.size())) {
    return absl::InvalidArgumentError(absl::StrCat("'", n, "' takes ", info->variadic ? "at least " : "",
                                                   info->args.size(), " argument", info->args.size() == 1 ? "" : "s",
                                                   ", found ", args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    Type want = i < info->args.size() ? info->args[i] : Type::kScalar;
    bool fits = want == Type::kBufferElement ? args[i].as<BufferLoadNode>() != nullptr : Fits(want, args[i].dtype());
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat("argument ", i + 1, " of '", n, "' must be ", Describe(want),
                                                     ", found ",
                                                     want == Type::kBufferElement ? ToString(args[i])
                                                                                  : args[i].dtype().ToString()));
    }
  }
  return absl::OkStatus();
}

DataType IntrinsicResultType(const IntrinsicInfo& info, const std::vector<PrimExpr>& args) {
  if (info.result == Type::kSameAsArg0) return args.at(0).dtype();
  return Fixed(info.result);
}

}  // namespace kiln::tir
