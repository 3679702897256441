// Creation kernels: full, zeros, ones, arange. arange has length
// max(ceil((end - start) / step), 0) and element i = start + i * step, computed in int64
// when every bound is an integer, else in double.
#include <cmath>
#include <variant>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

absl::StatusOr<RefValue> Full(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, call.Shape(0, "shape"));
  if (call.args.size() < 2) return call.Error("missing argument fill_value");
  const RefValue& fill = call.args[1];
  PrimScalar value;
  if (fill.kind() == RefValue::Kind::kPrim) {
    value = fill.prim();
  } else if (fill.is_tensor() && fill.tensor().ndim() == 0) {
    const HostTensor& t = fill.tensor();
    value.dtype = t.dtype();
    value.int_value = t.GetInt(0);
    value.float_value = t.GetDouble(0);
  } else {
    return call.Error("fill_value must be a Prim or a 0-d tensor, got ", fill.TypeString());
  }
  KILN_ASSIGN_OR_RETURN(auto dtype, call.DTypeAttr("dtype"));
  DataType out_dtype = dtype.value_or(value.dtype);
  KILN_RETURN_IF_ERROR(call.CheckDType(out_dtype, "dtype"));
  HostTensor out(out_dtype, shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (value.dtype.is_floating()) {
      out.SetDouble(i, value.float_value);
    } else {
      out.SetInt(i, value.int_value);
    }
  }
  return RefValue(std::move(out));
}

template <int64_t kValue>
absl::StatusOr<RefValue> Constant(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, call.Shape(0, "shape"));
  KILN_ASSIGN_OR_RETURN(auto dtype, call.DTypeAttr("dtype"));
  DataType out_dtype = dtype.value_or(DataType::Float32());
  KILN_RETURN_IF_ERROR(call.CheckDType(out_dtype, "dtype"));
  HostTensor out(out_dtype, shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.SetInt(i, kValue);
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> Arange(const KernelCall& call) {
  // Bounds as scalars: start, end, step.
  PrimScalar bounds[3] = {PrimScalar{DataType::Int64(), 0, 0}, PrimScalar{},
                          PrimScalar{DataType::Int64(), 1, 0}};
  const size_t n = call.args.size();
  if (n > 3) return call.Error("expects at most 3 bounds");
  if (n > 0) {
    for (size_t k = 0; k < n; ++k) {
      if (call.args[k].kind() != RefValue::Kind::kPrim) {
        return call.Error("bound ", k, " must be a Prim, got ", call.args[k].TypeString());
      }
    }
    if (n == 1) {
      bounds[1] = call.args[0].prim();
    } else {
      for (size_t k = 0; k < n; ++k) bounds[k] = call.args[k].prim();
    }
  } else {
    const char* names[3] = {"start", "end", "step"};
    for (int k = 0; k < 3; ++k) {
      auto it = call.call.attrs.find(names[k]);
      if (it == call.call.attrs.end()) {
        if (k == 1) return call.Error("attribute end is required");
        continue;
      }
      if (const int64_t* v = std::get_if<int64_t>(&it->second)) {
        bounds[k] = PrimScalar{DataType::Int64(), *v, 0};
      } else if (const double* d = std::get_if<double>(&it->second)) {
        bounds[k] = PrimScalar{DataType::Float(64), 0, *d};
      } else {
        return call.Error("attribute ", names[k], " must be an int or a float");
      }
    }
  }
  bool all_int = true;
  for (const PrimScalar& b : bounds) all_int = all_int && !b.dtype.is_floating();
  KILN_ASSIGN_OR_RETURN(auto dtype, call.DTypeAttr("dtype"));
  DataType out_dtype = dtype.value_or(all_int ? DataType::Int64() : DataType::Float32());
  KILN_RETURN_IF_ERROR(call.CheckDType(out_dtype, "dtype"));
  if (all_int) {
    int64_t start = bounds[0].int_value, end = bounds[1].int_value, step = bounds[2].int_value;
    if (step == 0) return call.Error("step is 0");
    // |end - start| and |step| as uint64 so that no bound overflows.
    const uint64_t span = step > 0 ? static_cast<uint64_t>(end) - static_cast<uint64_t>(start)
                                   : static_cast<uint64_t>(start) - static_cast<uint64_t>(end);
    const uint64_t abs_step = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
    const bool empty = step > 0 ? end <= start : start <= end;
    const uint64_t ulen = empty ? 0 : (span - 1) / abs_step + 1;
    if (ulen > static_cast<uint64_t>(kMaxElements)) return call.Error("the range has more than ", kMaxElements, " elements");
    const auto len = static_cast<int64_t>(ulen);
    HostTensor out(out_dtype, {len});
    for (int64_t i = 0; i < len; ++i) {
      out.SetInt(i, static_cast<int64_t>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(step)));
    }
    return RefValue(std::move(out));
  }
  double start = bounds[0].AsDouble(), end = bounds[1].AsDouble(), step = bounds[2].AsDouble();
  if (step == 0) return call.Error("step is 0");
  double len_d = std::ceil((end - start) / step);
  if (!(len_d <= static_cast<double>(kMaxElements))) return call.Error("the range is too long or not finite");
  auto len = static_cast<int64_t>(std::max(len_d, 0.0));
  HostTensor out(out_dtype, {len});
  for (int64_t i = 0; i < len; ++i) out.SetDouble(i, start + static_cast<double>(i) * step);
  return RefValue(std::move(out));
}

}  // namespace

void AddCreateKernels(KernelTable& t) {
  t["full"] = Full;
  t["zeros"] = Constant<0>;
  t["ones"] = Constant<1>;
  t["arange"] = Arange;
}

}  // namespace kiln::reference
