// What the operator harnesses share (tests/codegen/op_harness_test.cc on the CPU,
// cuda_op_harness_test.cc and vulkan_op_harness_test.cc on a GPU): host tensors to and
// from the VM and the device, and the NaN-aware comparison against the reference evaluator.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tests/codegen/op_cases.h"
#include "tests/reference/host_tensor.h"
#include "tests/reference/ref_value.h"
#include "vm/tensor.h"
#include "vm/value.h"

namespace kiln::op_cases {

inline DLDataType ToDl(tir::DataType t) { return {static_cast<uint8_t>(t.code()), static_cast<uint8_t>(t.bits()), 1}; }

inline vm::Tensor ToVm(const reference::HostTensor& t) {
  vm::Tensor v = *vm::Tensor::Empty(t.shape(), ToDl(t.dtype()));
  if (t.numel() > 0) std::memcpy(v.data(), t.bytes().data(), t.bytes().size());
  return v;
}

// The VM's result (on the CPU) as the reference's value kind; an error names what cannot be
// converted.
inline absl::StatusOr<reference::RefValue> FromVm(const vm::Value& v) {
  if (v.is_tensor()) {
    const vm::Tensor& t = v.as_tensor();
    if (!t.is_contiguous()) return absl::InternalError("result tensor is not contiguous: " + t.Describe());
    tir::DataType dtype(static_cast<tir::DataType::Code>(t.dtype().code), t.dtype().bits);
    if (t.dtype().lanes != 1 || !reference::IsSupportedDType(dtype)) {
      return absl::InternalError("result tensor of unexpected dtype: " + t.Describe());
    }
    const auto* bytes = static_cast<const uint8_t*>(t.data());
    return reference::RefValue(
        reference::HostTensor::FromBytes(dtype, t.shape(), std::vector<uint8_t>(bytes, bytes + t.nbytes())));
  }
  if (v.kind() == vm::Value::Kind::kTuple) {
    std::vector<reference::RefValue> fields;
    for (const vm::Value& f : v.as_tuple()) {
      KILN_ASSIGN_OR_RETURN(reference::RefValue r, FromVm(f));
      fields.push_back(std::move(r));
    }
    return reference::RefValue::Tuple(std::move(fields));
  }
  return absl::InternalError("unexpected result " + v.Describe());
}

// A result on a GPU, tensors (also inside tuples) copied to the host.
inline absl::StatusOr<vm::Value> ToHost(const vm::Value& v) {
  if (v.is_tensor()) {
    KILN_ASSIGN_OR_RETURN(vm::Tensor t, v.as_tensor().CopyTo(vm::CpuDevice()));
    return vm::Value(std::move(t));
  }
  if (v.kind() == vm::Value::Kind::kTuple) {
    std::vector<vm::Value> fields;
    for (const vm::Value& f : v.as_tuple()) {
      KILN_ASSIGN_OR_RETURN(vm::Value h, ToHost(f));
      fields.push_back(std::move(h));
    }
    return vm::Value::FromTuple(std::move(fields));
  }
  return v;
}

// Returns whether they agree (adding failures where not): NaN where the reference has NaN,
// the same infinity where it has one, |x - y| <= atol + rtol * |x| elsewhere; integers equal.
inline bool ExpectClose(const reference::RefValue& expected, const reference::RefValue& actual, const Case& c,
                        const std::string& where) {
  if (expected.kind() != actual.kind()) {
    ADD_FAILURE() << where << ": expected " << expected.TypeString() << ", got " << actual.TypeString();
    return false;
  }
  if (!expected.is_tensor()) {
    if (expected.fields().size() != actual.fields().size()) {
      ADD_FAILURE() << where << ": expected " << expected.TypeString() << ", got " << actual.TypeString();
      return false;
    }
    bool ok = true;
    for (size_t i = 0; i < expected.fields().size(); ++i) {
      ok = ExpectClose(expected.fields()[i], actual.fields()[i], c, absl::StrCat(where, " field ", i)) && ok;
    }
    return ok;
  }
  const reference::HostTensor& e = expected.tensor();
  const reference::HostTensor& a = actual.tensor();
  if (e.shape() != a.shape() || e.dtype() != a.dtype()) {
    ADD_FAILURE() << where << ": expected " << e.TypeString() << ", got " << a.TypeString();
    return false;
  }
  int failures = 0;
  for (int64_t i = 0; i < e.numel() && failures < 5; ++i) {
    if (e.dtype().is_float()) {
      const double x = e.GetDouble(i);
      const double y = a.GetDouble(i);
      const bool ok = std::isnan(x)   ? std::isnan(y)
                      : std::isinf(x) ? x == y
                                      : std::abs(x - y) <= c.atol + c.rtol * std::abs(x);
      if (!ok) ++failures;
      EXPECT_TRUE(ok) << where << " element " << i << ": expected " << x << ", got " << y;
    } else {
      if (e.GetInt(i) != a.GetInt(i)) ++failures;
      EXPECT_EQ(e.GetInt(i), a.GetInt(i)) << where << " element " << i;
    }
  }
  return failures == 0;
}

}  // namespace kiln::op_cases
