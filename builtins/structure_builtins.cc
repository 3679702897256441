// Structure builtins: tuples, shapes, closures, reading an If condition out of a tensor, and
// checking a symbolic dimension against its declared bounds.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/builtin_args.h"
#include "builtins/default_builtins.h"
#include "support/status_macros.h"
#include "vm/virtual_machine.h"

namespace kiln::builtins {
namespace {

using vm::BuiltinContext;
using vm::Value;

// (any...) -> tuple
absl::Status TupleMake(BuiltinContext&, const Value* const* args, int n, Value* out) {
  vm::TupleFields fields;
  fields.reserve(n);
  for (int i = 0; i < n; ++i) fields.push_back(*args[i]);
  *out = Value::FromTuple(std::move(fields));
  return absl::OkStatus();
}

// (tuple, int) -> any
absl::Status TupleGet(BuiltinContext&, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 2));
  KILN_RETURN_IF_ERROR(CheckKind(*args[0], Value::Kind::kTuple, 0));
  KILN_RETURN_IF_ERROR(CheckKind(*args[1], Value::Kind::kInt, 1));
  const vm::TupleFields& fields = args[0]->as_tuple();
  int64_t index = args[1]->as_int();
  if (index < 0 || index >= static_cast<int64_t>(fields.size())) {
    return absl::OutOfRangeError(absl::StrCat("tuple index ", index, " out of range for a tuple of ", fields.size()));
  }
  *out = fields[index];
  return absl::OkStatus();
}

// (any value, int size, string context) -> none: a match_cast to a Tuple, or a Tuple
// parameter, needs a tuple of that many fields before its fields are taken out and matched;
// `context` names it ("match_cast 'u'", "parameter 't' field 1").
absl::Status CheckTuple(BuiltinContext&, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 3));
  KILN_RETURN_IF_ERROR(CheckKind(*args[1], Value::Kind::kInt, 1));
  KILN_RETURN_IF_ERROR(CheckKind(*args[2], Value::Kind::kString, 2));
  const Value& v = *args[0];
  const int64_t size = args[1]->as_int();
  if (v.kind() != Value::Kind::kTuple || static_cast<int64_t>(v.as_tuple().size()) != size) {
    return absl::InvalidArgumentError(
        absl::StrCat(args[2]->as_string(), ": expected a tuple of ", size, ", got ", v.Describe()));
  }
  *out = Value();
  return absl::OkStatus();
}

// (any value, int arity, string context) -> none: a match_cast to a Func (or a Func field of
// a Tuple match) needs a closure; with arity >= 0 (`Func([...] -> ...)`, not `Func(... ->
// ...)`) one that takes that many arguments: its function's parameters less the values it
// captured, known when the closure is this executable's. The arguments' and the result's
// struct info are checked when it is called (the callee's parameter signatures).
absl::Status CheckClosure(BuiltinContext& ctx, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 3));
  KILN_RETURN_IF_ERROR(CheckKind(*args[1], Value::Kind::kInt, 1));
  KILN_RETURN_IF_ERROR(CheckKind(*args[2], Value::Kind::kString, 2));
  const Value& v = *args[0];
  const int64_t arity = args[1]->as_int();
  const std::string& context = args[2]->as_string();
  if (v.kind() != Value::Kind::kClosure) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": expected a function (closure), got ", v.Describe()));
  }
  const vm::Closure& closure = v.as_closure();
  if (arity >= 0 && ctx.vm != nullptr && closure.executable == &ctx.vm->executable()) {
    const std::vector<vm::Function>& functions = ctx.vm->executable().functions();
    if (closure.function_index >= 0 && static_cast<size_t>(closure.function_index) < functions.size()) {
      const vm::Function& f = functions[closure.function_index];
      const int64_t takes = static_cast<int64_t>(f.params.size()) - static_cast<int64_t>(closure.captured.size());
      if (takes != arity) {
        return absl::InvalidArgumentError(absl::StrCat(context, ": expected a function of ", arity, " argument",
                                                       arity == 1 ? "" : "s", ", got '", f.name, "', which takes ",
                                                       takes));
      }
    }
  }
  *out = Value();
  return absl::OkStatus();
}

// (tensor) -> shape
absl::Status ShapeOf(BuiltinContext&, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 1));
  KILN_RETURN_IF_ERROR(CheckKind(*args[0], Value::Kind::kTensor, 0));
  *out = Value::FromShape(args[0]->as_tensor().shape());
  return absl::OkStatus();
}

// `t` in host memory: itself, or a copy of a tensor a kernel left on a GPU (a shape or
// slice positions computed or held there, which the host reads here).
absl::StatusOr<vm::Tensor> OnHost(const vm::Tensor& t) {
  if (t.device().device_type == kDLCPU) return t;
  return t.CopyTo(vm::CpuDevice());
}

// (tensor) -> shape: R.tensor_to_shape, the dims held by a 1-d int64 tensor (a shape
// computed by a kernel; copied to the host first when it is on a GPU). Each must be >= 0.
absl::Status TensorToShape(BuiltinContext&, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 1));
  KILN_RETURN_IF_ERROR(CheckKind(*args[0], Value::Kind::kTensor, 0));
  const vm::Tensor& given = args[0]->as_tensor();
  if (given.ndim() != 1 || given.dtype().code != kDLInt || given.dtype().bits != 64 || given.dtype().lanes != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor_to_shape needs a 1-d int64 tensor, got ", args[0]->Describe()));
  }
  KILN_ASSIGN_OR_RETURN(vm::Tensor t, OnHost(given));
  std::vector<int64_t> dims(static_cast<size_t>(t.numel()));
  if (!dims.empty()) std::memcpy(dims.data(), t.data(), dims.size() * sizeof(int64_t));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("tensor_to_shape: dim ", i, " is negative (", dims[i], ")"));
    }
  }
  *out = Value::FromShape(std::move(dims));
  return absl::OkStatus();
}

// (tensor, shape) -> none: dynamic_strided_slice's check that no stride is 0 (entry i of the
// 1-d integer tensor `strides` slices data axis axes[i]), before its kernels run. On the
// host (a GPU program's strides are copied here), so it can stop the call with a message.
absl::Status CheckSliceStrides(BuiltinContext&, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 2));
  KILN_RETURN_IF_ERROR(CheckKind(*args[0], Value::Kind::kTensor, 0));
  KILN_RETURN_IF_ERROR(CheckKind(*args[1], Value::Kind::kShape, 1));
  const vm::Tensor& given = args[0]->as_tensor();
  const std::vector<int64_t>& axes = args[1]->as_shape();
  const DLDataType dt = given.dtype();
  const bool integer = (dt.code == kDLInt || dt.code == kDLUInt) && dt.lanes == 1 &&
                       (dt.bits == 8 || dt.bits == 16 || dt.bits == 32 || dt.bits == 64);
  if (given.ndim() != 1 || !integer || given.numel() != static_cast<int64_t>(axes.size())) {
    return absl::InvalidArgumentError(absl::StrCat("dynamic_strided_slice: strides must be a 1-d integer tensor of ",
                                                   axes.size(), " entries, got ", args[0]->Describe()));
  }
  KILN_ASSIGN_OR_RETURN(vm::Tensor t, OnHost(given));
  const auto* bytes = static_cast<const uint8_t*>(t.data());
  const size_t width = dt.bits / 8;
  for (size_t i = 0; i < axes.size(); ++i) {
    bool zero = true;
    for (size_t b = 0; b < width; ++b) zero &= bytes[i * width + b] == 0;
    if (zero) {
      return absl::InvalidArgumentError(
          absl::StrCat("dynamic_strided_slice: the stride of axis ", axes[i], " (strides[", i, "]) is 0"));
    }
  }
  *out = Value();
  return absl::OkStatus();
}

// (tensor | bool | int) -> bool: the truth of a scalar, for If.
absl::Status ReadIfCond(BuiltinContext&, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 1));
  const Value& v = *args[0];
  if (v.kind() == Value::Kind::kBool) {
    *out = v;
    return absl::OkStatus();
  }
  if (v.is_int()) {
    *out = Value(v.as_int() != 0);
    return absl::OkStatus();
  }
  KILN_RETURN_IF_ERROR(CheckKind(v, Value::Kind::kTensor, 0));
  const vm::Tensor& t = v.as_tensor();
  if (t.numel() != 1 || t.device().device_type != kDLCPU) {
    return absl::InvalidArgumentError(absl::StrCat("an If condition must be a one-element CPU tensor, got ", t.Describe()));
  }
  int64_t bytes = vm::DTypeBytes(t.dtype());
  bool truth = false;
  if (t.dtype().code == kDLFloat && bytes == 4) {
    truth = *t.data_as<float>() != 0.0f;
  } else if (t.dtype().code == kDLFloat && bytes == 8) {
    truth = *t.data_as<double>() != 0.0;
  } else if (bytes >= 1 && bytes <= 8 && t.dtype().code != kDLFloat) {
    uint64_t raw = 0;
    std::memcpy(&raw, t.data(), static_cast<size_t>(bytes));
    truth = raw != 0;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unsupported If condition type ", t.Describe()));
  }
  *out = Value(truth);
  return absl::OkStatus();
}

// (int value, int lower, int upper, string name) -> none: a symbolic variable bound at run
// time must lie within the bounds its function declares (`where n <= 2048`): memory
// planning sizes storage by them, so a larger value must stop the call before any kernel runs.
absl::Status CheckBound(BuiltinContext&, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 4));
  for (int i = 0; i < 3; ++i) KILN_RETURN_IF_ERROR(CheckKind(*args[i], Value::Kind::kInt, i));
  KILN_RETURN_IF_ERROR(CheckKind(*args[3], Value::Kind::kString, 3));
  const int64_t value = args[0]->as_int(), lower = args[1]->as_int(), upper = args[2]->as_int();
  const std::string& name = args[3]->as_string();
  if (value > upper) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " = ", value, " is above its declared upper bound ", upper, " (where ", name, " <= ", upper, ")"));
  }
  if (value < lower) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " = ", value, " is below its declared lower bound ", lower, " (where ", name, " >= ", lower, ")"));
  }
  *out = Value();
  return absl::OkStatus();
}

// (int lhs, int rhs, string message) -> none: R.check_dims (relax/op/check_dims.cc), a
// relation between symbolic dims that inference assumed. `message` names the binding and the
// operator; its first "{}" becomes lhs, its second rhs.
absl::Status CheckDims(const Value* const* args, int n, bool (*holds)(int64_t, int64_t)) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 3));
  for (int i = 0; i < 2; ++i) KILN_RETURN_IF_ERROR(CheckKind(*args[i], Value::Kind::kInt, i));
  KILN_RETURN_IF_ERROR(CheckKind(*args[2], Value::Kind::kString, 2));
  const int64_t lhs = args[0]->as_int(), rhs = args[1]->as_int();
  if (holds(lhs, rhs)) return absl::OkStatus();
  const std::string& message = args[2]->as_string();
  std::string text;
  int next = 0;
  for (size_t i = 0; i < message.size(); ++i) {
    if (message.compare(i, 2, "{}") == 0 && next < 2) {
      absl::StrAppend(&text, next++ == 0 ? lhs : rhs);
      ++i;
    } else {
      text += message[i];
    }
  }
  return absl::InvalidArgumentError(text);
}

absl::Status CheckDimsEqual(BuiltinContext&, const Value* const* args, int n, Value* out) {
  *out = Value();
  return CheckDims(args, n, [](int64_t a, int64_t b) { return a == b; });
}

absl::Status CheckDimsAtMost(BuiltinContext&, const Value* const* args, int n, Value* out) {
  *out = Value();
  return CheckDims(args, n, [](int64_t a, int64_t b) { return a <= b; });
}

// A zero or negative divisor never divides (split sections and groups are positive; the
// product of the other dims of a reshape may be zero at run time).
absl::Status CheckDimsDivisible(BuiltinContext&, const Value* const* args, int n, Value* out) {
  *out = Value();
  return CheckDims(args, n, [](int64_t a, int64_t b) { return b > 0 && a % b == 0; });
}

// (string format, any...) -> none: R.print. Each "{}" in the format is replaced by the next
// value's description (Value::Describe: kind, dtype and shape, not tensor contents); values
// left over follow, separated by spaces. Written to stdout, one line per call.
absl::Status Print(BuiltinContext&, const Value* const* args, int n, Value* out) {
  const std::string& format = args[0]->as_string();
  std::string line;
  int next = 1;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format.compare(i, 2, "{}") == 0 && next < n) {
      line += args[next++]->Describe();
      ++i;
    } else {
      line += format[i];
    }
  }
  for (; next < n; ++next) absl::StrAppend(&line, line.empty() ? "" : " ", args[next]->Describe());
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  *out = Value();
  return absl::OkStatus();
}

}  // namespace

void RegisterStructureBuiltins(vm::BuiltinRegistry& r) {
  r.RegisterBuiltin("kiln.tuple_make", "(any...) -> tuple", TupleMake);
  r.RegisterBuiltin("kiln.tuple_get", "(tuple, int) -> any", TupleGet);
  r.RegisterBuiltin("kiln.check_tuple", "(any, int, string) -> none", CheckTuple);
  r.RegisterBuiltin("kiln.check_closure", "(any, int, string) -> none", CheckClosure);
  r.RegisterBuiltin("kiln.shape_of", "(tensor) -> shape", ShapeOf);
  r.RegisterBuiltin("kiln.tensor_to_shape", "(tensor) -> shape", TensorToShape);
  r.RegisterBuiltin("kiln.check_slice_strides", "(tensor, shape) -> none", CheckSliceStrides);
  r.RegisterBuiltin("kiln.read_if_cond", "(any) -> bool", ReadIfCond);
  r.RegisterBuiltin("kiln.check_bound", "(int, int, int, string) -> none", CheckBound);
  r.RegisterBuiltin("kiln.print", "(string, any...) -> none", Print);
  r.RegisterBuiltin("kiln.check_dims_equal", "(int, int, string) -> none", CheckDimsEqual);
  r.RegisterBuiltin("kiln.check_dims_at_most", "(int, int, string) -> none", CheckDimsAtMost);
  r.RegisterBuiltin("kiln.check_dims_divisible", "(int, int, string) -> none", CheckDimsDivisible);
}

}  // namespace kiln::builtins
