// THE list of operator cases: one-op Relax functions over symbolic shapes, each with the
// concrete sizes to run it at (1, primes, and one above 1000 where the op's cost allows),
// how its random inputs are drawn (valid indices for take, positive values for log, ...) and
// the tolerance its results are held to against the reference evaluator.
//
// tests/codegen/op_harness_test.cc compiles each case once through the whole pipeline and
// runs it through the VM for every size; it also fails when an operator of the registry
// that has a legalization appears in no case here, so a new operator must add one.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <random>
#include <set>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "relax/op_registry.h"
#include "relax/text_parser.h"
#include "support/check.h"
#include "tests/reference/host_tensor.h"
#include "tir/data_type.h"

namespace kiln::op_cases {

// The range random values of a parameter are drawn from (integers: floor of a uniform draw,
// so [lo, hi) for integral bounds; bool: true for positive draws). A float parameter with
// `special` > 0 has about that fraction of its elements replaced by NaN, +inf or -inf.
struct Gen {
  double lo = -2.0;
  double hi = 2.0;
  double special = 0.0;
};

struct Param {
  std::string name;
  std::vector<std::string> dims;  // integer literals or symbolic variable names
  std::string dtype = "float32";
  Gen gen;
};

// Concrete values of the symbolic variables, one map per run.
using Sizes = std::vector<std::map<std::string, int64_t>>;

struct Case {
  std::string name;  // a C identifier: it names the test
  std::vector<Param> params;
  std::string expr;  // the op call, e.g. "R.add(x, y)"
  Sizes sizes;
  double rtol = 1e-5;
  double atol = 1e-5;
  std::string prelude = "";  // bindings before `r = expr`, each ending in "\n"
  // Large enough for the OpenBLAS dispatch rule (relax/transform/dispatch_libraries.h): the
  // case is compiled and run both with the library and with generated kernels only.
  bool openblas = false;
  // A quantized_matmul: compiled and run both with its library kernel
  // (builtins/quantized_matmul_kernels.h) and with the generated kernel.
  bool quantized_library = false;
};

// gtest prints a parameter by its name, not its bytes.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

inline std::string ParamText(const Param& p) {
  return absl::StrCat(p.name, ": Tensor((", absl::StrJoin(p.dims, ", "), p.dims.size() == 1 ? "," : "", "), ",
                      p.dtype, ")");
}

inline std::string ModuleText(const Case& c) {
  std::vector<std::string> params;
  for (const Param& p : c.params) params.push_back(ParamText(p));
  return absl::StrCat("module {\n  func @main(", absl::StrJoin(params, ", "), ") -> Object {\n", c.prelude,
                      "    r = ", c.expr, "\n    return r\n  }\n}\n");
}

inline reference::HostTensor RandomTensor(const Param& p, const std::map<std::string, int64_t>& size,
                                          std::mt19937& rng) {
  std::vector<int64_t> shape;
  for (const std::string& d : p.dims) {
    auto it = size.find(d);
    shape.push_back(it != size.end() ? it->second : std::stoll(d));
  }
  absl::StatusOr<tir::DataType> dtype = tir::DataType::Parse(p.dtype);
  KILN_CHECK(dtype.ok()) << p.dtype;
  reference::HostTensor t(*dtype, shape);
  std::uniform_real_distribution<double> uniform(p.gen.lo, p.gen.hi);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double kSpecials[] = {std::nan(""), INFINITY, -INFINITY};
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype->is_float() && p.gen.special > 0) {
      const double u = unit(rng);
      t.SetDouble(i, u < p.gen.special ? kSpecials[static_cast<int>(u / p.gen.special * 3) % 3] : uniform(rng));
    } else if (dtype->is_float()) {
      t.SetDouble(i, uniform(rng));
    } else if (dtype->is_bool()) {
      t.SetInt(i, uniform(rng) > 0 ? 1 : 0);
    } else {
      t.SetInt(i, static_cast<int64_t>(std::floor(uniform(rng))));
    }
  }
  return t;
}

inline Param P(std::string name, std::vector<std::string> dims, std::string dtype = "float32", Gen gen = {}) {
  return Param{std::move(name), std::move(dims), std::move(dtype), gen};
}

// Every case, grouped by operator family.
inline std::vector<Case> AllCases() {
  // 1, primes, and a size above 1000 on either axis.
  const Sizes nm = {{{"n", 1}, {"m", 1}}, {{"n", 7}, {"m", 13}}, {{"n", 13}, {"m", 7}},
                    {{"n", 1031}, {"m", 3}}, {{"n", 3}, {"m", 1031}}};
  const Sizes n = {{{"n", 1}}, {{"n", 7}}, {{"n", 13}}, {{"n", 1031}}};
  std::vector<Case> cases;
  auto add = [&](Case c) { cases.push_back(std::move(c)); };

  // ---------------------------------------------------------------- elementwise
  for (const char* op : {"add", "subtract", "multiply", "maximum", "minimum"}) {
    add({op, {P("x", {"n", "m"}), P("y", {"1", "m"})}, absl::StrCat("R.", op, "(x, y)"), nm});
  }
  add({"divide", {P("x", {"n", "m"}), P("y", {"m"}, "float32", {0.5, 3})}, "R.divide(x, y)", nm});
  add({"power", {P("x", {"n", "4"}, "float32", {0.1, 3}), P("y", {"n", "1"})}, "R.power(x, y)", nm, 1e-5, 1e-5});
  // Constant exponents: small integers become multiplications, others stay pow.
  for (const char* k : {"2.0", "3.0", "4.0", "-1.0", "0.0", "1.0", "0.5", "-2.0"}) {
    std::string name = absl::StrCat("power_const_", k);
    for (char& ch : name) ch = ch == '.' ? '_' : ch == '-' ? 'm' : ch;
    add({name, {P("x", {"n", "m"}, "float32", {-3, 3})}, absl::StrCat("R.power(x, R.const(float32, [], [", k, "]))"), nm,
         2e-6, 1e-6});
  }
  add({"power_int", {P("x", {"n"}, "int64", {1, 6}), P("y", {"n"}, "int64", {-3, 5})}, "R.power(x, y)", n});
  add({"power_int32_neg_base", {P("x", {"n"}, "int32", {-4, 0}), P("y", {"n"}, "int32", {0, 5})}, "R.power(x, y)", n});
  add({"add_int32", {P("x", {"n"}, "int32", {-50, 50}), P("y", {"n"}, "int32", {-50, 50})}, "R.add(x, y)", n});
  add({"divide_int64", {P("x", {"n"}, "int64", {-50, 50}), P("y", {"1"}, "int64", {1, 9})}, "R.divide(x, y)", n});
  for (const char* op : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
    add({op, {P("x", {"n", "m"}, "int32", {-3, 3}), P("y", {"m"}, "int32", {-3, 3})}, absl::StrCat("R.", op, "(x, y)"),
         nm});
  }
  add({"less_float", {P("x", {"n", "m"}), P("y", {"n", "1"})}, "R.less(x, y)", nm});
  for (const char* op : {"negative", "relu", "exp", "tanh", "sigmoid", "gelu", "silu"}) {
    add({op, {P("x", {"n", "m"})}, absl::StrCat("R.", op, "(x)"), nm, 2e-6, 1e-6});
  }
  for (const char* op : {"log", "sqrt", "rsqrt"}) {
    add({op, {P("x", {"n", "m"}, "float32", {0.05, 5})}, absl::StrCat("R.", op, "(x)"), nm, 2e-6, 1e-6});
  }
  add({"relu_int", {P("x", {"n"}, "int64", {-9, 9})}, "R.relu(x)", n});
  add({"exp_f64", {P("x", {"n"}, "float64")}, "R.exp(x)", n, 1e-12, 1e-12});
  add({"where", {P("c", {"n", "1"}, "bool"), P("x", {"n", "m"}), P("y", {"m"})}, "R.where(c, x, y)", nm});

  // ---------------------------------------------------------------- elementwise math
  // The float32 functions are inline code (codegen/fast_math.h) held to a few ulp, the
  // reference is the C library in double.
  for (const char* op : {"erf", "sin", "cos", "tan", "atan", "sinh", "cosh", "asinh", "expm1", "reciprocal", "abs",
                         "sign", "floor", "ceil", "round"}) {
    add({op, {P("x", {"n", "m"}, "float32", {-5, 5})}, absl::StrCat("R.", op, "(x)"), nm, 2e-6, 1e-6});
  }
  for (const char* op : {"asin", "acos", "atanh"}) {
    add({op, {P("x", {"n", "m"}, "float32", {-1, 1})}, absl::StrCat("R.", op, "(x)"), nm, 2e-6, 1e-6});
  }
  add({"acosh", {P("x", {"n", "m"}, "float32", {1, 50})}, "R.acosh(x)", nm, 2e-6, 1e-6});
  add({"log1p", {P("x", {"n", "m"}, "float32", {-1, 5})}, "R.log1p(x)", nm, 2e-6, 1e-6});
  // Large arguments: sin/cos reduce exactly, sinh/cosh/expm1 near overflow.
  add({"sin_large", {P("x", {"n"}, "float32", {-1e6, 1e6})}, "R.sin(x)", n, 2e-6, 1e-6});
  add({"cos_huge", {P("x", {"n"}, "float32", {-3e38, 3e38})}, "R.cos(x)", n, 2e-6, 1e-6});
  add({"cosh_wide", {P("x", {"n"}, "float32", {-89, 89})}, "R.cosh(x)", n, 2e-6, 1e-6});
  add({"expm1_wide", {P("x", {"n"}, "float32", {-30, 30})}, "R.expm1(x)", n, 2e-6, 1e-6});
  add({"sin_f64", {P("x", {"n"}, "float64", {-10, 10})}, "R.sin(x)", n, 1e-12, 1e-12});
  add({"atanh_f64", {P("x", {"n"}, "float64", {-1, 1})}, "R.atanh(x)", n, 1e-12, 1e-12});
  // float64 functions that GPU targets write out themselves (codegen/spirv_math.h).
  add({"erf_f64", {P("x", {"n"}, "float64", {-7, 7})}, "R.erf(x)", n, 1e-12, 1e-12});
  add({"atan_f64", {P("x", {"n"}, "float64", {-50, 50})}, "R.atan(x)", n, 1e-12, 1e-12});
  add({"acos_f64", {P("x", {"n"}, "float64", {-1, 1})}, "R.acos(x)", n, 1e-12, 1e-12});
  add({"cosh_f64", {P("x", {"n"}, "float64", {-30, 30})}, "R.cosh(x)", n, 1e-12, 1e-12});
  add({"expm1_f64", {P("x", {"n"}, "float64", {-3, 3})}, "R.expm1(x)", n, 1e-12, 1e-12});
  add({"tan_f16", {P("x", {"n"}, "float16", {-1.5, 1.5})}, "R.tan(x)", n, 2e-3, 1e-3});
  for (const char* op : {"abs", "sign", "floor", "round"}) {
    add({absl::StrCat(op, "_int32"), {P("x", {"n"}, "int32", {-9, 9})}, absl::StrCat("R.", op, "(x)"), n});
  }
  add({"sign_uint8", {P("x", {"n"}, "uint8", {0, 3})}, "R.sign(x)", n});
  add({"isnan", {P("x", {"n", "m"})}, "R.isnan(x)", nm});
  add({"isinf", {P("x", {"n", "m"})}, "R.isinf(x)", nm});
  add({"isinf_positive", {P("x", {"n", "m"})}, "R.isinf(x, detect_negative=false)", nm});
  add({"isinf_negative", {P("x", {"n", "m"})}, "R.isinf(x, detect_positive=false)", nm});
  add({"isnan_int", {P("x", {"n"}, "int32", {-9, 9})}, "R.isnan(x)", n});
  // Division and remainder: float divisors of both signs, integer divisors of one sign per
  // case (a zero divisor is a run-time error, not a value to compare).
  for (const char* op : {"floor_divide", "floor_mod", "mod"}) {
    add({op, {P("x", {"n", "m"}, "float32", {-9, 9}), P("y", {"m"}, "float32", {-3, 3})},
         absl::StrCat("R.", op, "(x, y)"), nm, 2e-6, 1e-6});
    add({absl::StrCat(op, "_int32"), {P("x", {"n", "m"}, "int32", {-50, 50}), P("y", {"m"}, "int32", {1, 9})},
         absl::StrCat("R.", op, "(x, y)"), nm});
    add({absl::StrCat(op, "_int64_neg"), {P("x", {"n"}, "int64", {-50, 50}), P("y", {"n"}, "int64", {-9, 0})},
         absl::StrCat("R.", op, "(x, y)"), n});
    add({absl::StrCat(op, "_uint16"), {P("x", {"n"}, "uint16", {0, 65536}), P("y", {"n"}, "uint16", {1, 300})},
         absl::StrCat("R.", op, "(x, y)"), n});
  }
  add({"clip", {P("x", {"n", "m"}), P("lo", {}), P("hi", {})}, "R.clip(x, lo, hi)", nm});
  add({"clip_broadcast", {P("x", {"n", "m"}), P("lo", {"m"}, "float32", {-2, 0}), P("hi", {"n", "1"}, "float32", {0, 2})},
       "R.clip(x, lo, hi)", nm});
  add({"clip_int8", {P("x", {"n"}, "int8", {-128, 128}), P("lo", {}, "int8", {-50, -49}), P("hi", {}, "int8", {60, 61})},
       "R.clip(x, lo, hi)", n});
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) {
    add({op, {P("x", {"n", "m"}, "bool"), P("y", {"m"}, "bool")}, absl::StrCat("R.", op, "(x, y)"), nm});
  }
  add({"logical_not", {P("x", {"n", "m"}, "bool")}, "R.logical_not(x)", nm});
  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    add({op, {P("x", {"n", "m"}, "int32", {-1000, 1000}), P("y", {"m"}, "int32", {-1000, 1000})},
         absl::StrCat("R.", op, "(x, y)"), nm});
  }
  add({"bitwise_not", {P("x", {"n", "m"}, "int64", {-1000, 1000})}, "R.bitwise_not(x)", nm});
  add({"bitwise_not_uint8", {P("x", {"n"}, "uint8", {0, 256})}, "R.bitwise_not(x)", n});
  // Shift amounts up to and past the width: those shift every bit out.
  for (const char* op : {"left_shift", "right_shift"}) {
    add({absl::StrCat(op, "_uint8"), {P("x", {"n", "m"}, "uint8", {0, 256}), P("y", {"m"}, "uint8", {0, 10})},
         absl::StrCat("R.", op, "(x, y)"), nm});
    add({absl::StrCat(op, "_int32"), {P("x", {"n"}, "int32", {-1e6, 1e6}), P("y", {"n"}, "int32", {0, 33})},
         absl::StrCat("R.", op, "(x, y)"), n});
    add({absl::StrCat(op, "_uint64"), {P("x", {"n"}, "uint64", {0, 1e18}), P("y", {"n"}, "uint64", {0, 64})},
         absl::StrCat("R.", op, "(x, y)"), n});
  }

  // ---------------------------------------------------------------- matmul
  // Symbolic k or m never dispatch to OpenBLAS: these are generated kernels. Tolerances
  // allow for float32 accumulation over up to 1031 terms in another order.
  const Sizes nkm = {{{"n", 1}, {"k", 1}, {"m", 1}},   {{"n", 7}, {"k", 13}, {"m", 5}},
                     {{"n", 13}, {"k", 7}, {"m", 17}}, {{"n", 1031}, {"k", 3}, {"m", 2}},
                     {{"n", 3}, {"k", 1031}, {"m", 5}}, {{"n", 2}, {"k", 5}, {"m", 1031}}};
  add({"matmul_2d", {P("a", {"n", "k"}), P("b", {"k", "m"})}, "R.matmul(a, b)", nkm, 1e-4, 1e-4});
  add({"matmul_batched", {P("a", {"2", "n", "k"}), P("b", {"1", "k", "m"})}, "R.matmul(a, b)", nkm, 1e-4, 1e-4});
  add({"matmul_vec_mat", {P("a", {"k"}), P("b", {"n", "k", "m"})}, "R.matmul(a, b)", nkm, 1e-4, 1e-4});
  add({"matmul_mat_vec", {P("a", {"n", "k"}), P("b", {"k"})}, "R.matmul(a, b)", nkm, 1e-4, 1e-4});
  add({"matmul_vec_vec", {P("a", {"k"}), P("b", {"k"})}, "R.matmul(a, b)", nkm, 1e-4, 1e-4});
  add({"matmul_out_dtype", {P("a", {"n", "k"}, "float32"), P("b", {"k", "m"}, "float32")},
       "R.matmul(a, b, out_dtype=float64)", nkm, 1e-6, 1e-6});
  // Constant k * m large enough to dispatch; the batch n is symbolic.
  Case blas{"matmul_openblas", {P("a", {"n", "64"}), P("b", {"64", "96"})}, "R.matmul(a, b)", n, 1e-4, 1e-4};
  blas.openblas = true;
  add(blas);
  Case blas_k{"matmul_openblas_k1031", {P("a", {"n", "1031"}), P("b", {"1031", "5"})}, "R.matmul(a, b)",
              {{{"n", 1}}, {{"n", 7}}, {{"n", 13}}, {{"n", 67}}}, 1e-4, 1e-4};
  blas_k.openblas = true;
  add(blas_k);

  // ---------------------------------------------------------------- reductions
  for (const char* op : {"sum", "mean", "max", "min"}) {
    add({absl::StrCat(op, "_axis1"), {P("x", {"n", "m"})}, absl::StrCat("R.", op, "(x, axis=[1])"), nm, 1e-4, 1e-4});
    add({absl::StrCat(op, "_all_keepdims"), {P("x", {"n", "m"})}, absl::StrCat("R.", op, "(x, keepdims=true)"), nm,
         1e-4, 1e-3});
    add({absl::StrCat(op, "_axis0_3d"), {P("x", {"n", "3", "m"})}, absl::StrCat("R.", op, "(x, axis=[0, 2])"), nm,
         1e-4, 1e-3});
  }
  // Reductions over zero elements (a symbolic extent of 0 at run time). max/min of nothing
  // is an error for the reference (as in numpy).
  const Sizes empty = {{{"n", 3}, {"m", 0}}, {{"n", 0}, {"m", 5}}};
  add({"sum_empty", {P("x", {"n", "m"})}, "R.sum(x, axis=[1])", empty});
  add({"matmul_empty_k", {P("a", {"n", "m"}), P("b", {"m", "2"})}, "R.matmul(a, b)", empty});
  add({"sum_int", {P("x", {"n", "m"}, "int32", {-9, 9})}, "R.sum(x, axis=[0])", nm});
  add({"max_int", {P("x", {"n", "m"}, "int64", {-9, 9})}, "R.max(x, axis=[1], keepdims=true)", nm});
  for (const char* op : {"argmax", "argmin"}) {
    add({absl::StrCat(op, "_axis"), {P("x", {"n", "m"}, "int32", {-3, 3})}, absl::StrCat("R.", op, "(x, axis=1)"), nm});
    add({absl::StrCat(op, "_all"), {P("x", {"n", "m"})}, absl::StrCat("R.", op, "(x)"), nm});
    add({absl::StrCat(op, "_keepdims"), {P("x", {"n", "m"})}, absl::StrCat("R.", op, "(x, axis=0, keepdims=true)"),
         nm});
  }
  add({"softmax", {P("x", {"n", "m"}, "float32", {-5, 5})}, "R.softmax(x)", nm, 1e-5, 1e-6});
  add({"softmax_axis0", {P("x", {"n", "m"}, "float32", {-5, 5})}, "R.softmax(x, axis=0)", nm, 1e-5, 1e-6});
  add({"layer_norm", {P("x", {"n", "m"}), P("g", {"m"}), P("b", {"m"})}, "R.layer_norm(x, g, b, axes=[-1])", nm,
       1e-4, 1e-4});
  add({"layer_norm_2axes", {P("x", {"2", "n", "m"}), P("g", {"n", "m"}), P("b", {"n", "m"})},
       "R.layer_norm(x, g, b, axes=[1, 2], epsilon=0.001)", nm, 1e-4, 1e-4});
  add({"rms_norm", {P("x", {"n", "m"}), P("w", {"m"})}, "R.rms_norm(x, w)", nm, 1e-4, 1e-5});
  add({"astype_f32_i32", {P("x", {"n"}, "float32", {-9, 9})}, "R.astype(x, dtype=int32)", n});
  add({"astype_i64_f32", {P("x", {"n"}, "int64", {-9, 9})}, "R.astype(x, dtype=float32)", n});
  add({"astype_i32_bool", {P("x", {"n"}, "int32", {-2, 2})}, "R.astype(x, dtype=bool)", n});
  add({"astype_f32_f16", {P("x", {"n"})}, "R.astype(x, dtype=float16)", n});
  // bfloat16 is moved and converted on the CPU, never computed in (relax/op/legalize_common.cc):
  // rounding to nearest even, infinities and NaN kept (x from -3e38 to 3e38 overflows some).
  add({"astype_f32_bf16", {P("x", {"n"}, "float32", {-3.4e38, 3.4e38})}, "R.astype(x, dtype=bfloat16)", n});
  add({"astype_f32_bf16_small", {P("x", {"n", "m"}, "float32", {-2, 2})}, "R.astype(x, dtype=bfloat16)", nm});
  add({"astype_bf16_f32", {P("x", {"n", "m"}, "bfloat16", {-9, 9})}, "R.astype(x, dtype=float32)", nm});
  add({"astype_bf16_f16", {P("x", {"n"}, "bfloat16", {-9, 9})}, "R.astype(x, dtype=float16)", n});
  add({"permute_dims_bf16", {P("x", {"n", "m"}, "bfloat16", {-9, 9})}, "R.permute_dims(x, axes=[1, 0])", nm});
  add({"bitcast_f32_i32", {P("x", {"n", "m"}, "float32", {-9, 9})}, "R.bitcast(x, dtype=int32)", nm});
  add({"bitcast_f16_u16", {P("x", {"n"}, "float16", {-9, 9})}, "R.bitcast(x, dtype=uint16)", n});
  add({"bitcast_i64_f64", {P("x", {"n"}, "int64", {0, 9})}, "R.bitcast(x, dtype=float64)", n});
  add({"bitcast_bool_u8", {P("x", {"n"}, "bool")}, "R.bitcast(x, dtype=uint8)", n});

  // ---------------------------------------------------------------- manipulation
  add({"reshape", {P("x", {"n", "4", "3"})}, "R.reshape(x, R.shape([2, n * 6]))", n});
  add({"reshape_infer", {P("x", {"n", "m"})}, "R.reshape(x, R.shape([-1]))", nm});
  add({"permute_dims", {P("x", {"n", "m", "3"})}, "R.permute_dims(x, axes=[2, 0, 1])", nm});
  add({"permute_dims_reverse", {P("x", {"n", "m"})}, "R.permute_dims(x)", nm});
  add({"broadcast_to", {P("x", {"1", "m"}), P("y", {"n"})}, "R.broadcast_to(x, R.shape([n, 3, m]))", nm});
  add({"concat", {P("x", {"n", "3"}), P("y", {"m", "3"})}, "R.concat((x, y), axis=0)", nm});
  add({"concat_axis1", {P("x", {"n", "m"}), P("y", {"n", "2"}), P("z", {"n", "1"})}, "R.concat((x, y, z), axis=1)",
       nm});
  add({"split_sections", {P("x", {"3", "n"})}, "R.split(x, indices_or_sections=3, axis=0)", n});
  add({"split_indices", {P("x", {"n", "10"})}, "R.split(x, indices_or_sections=[2, 7], axis=1)", n});
  add({"strided_slice", {P("x", {"n", "10"})}, "R.strided_slice(x, axes=[1], begin=[1], end=[9], strides=[3])", n});
  add({"strided_slice_neg", {P("x", {"n", "10"})},
       "R.strided_slice(x, axes=[1], begin=[-2], end=[0], strides=[-2])", n});
  add({"strided_slice_sym_neg_begin", {P("x", {"n", "3"})},
       "R.strided_slice(x, axes=[0, 1], begin=[-3, 2], end=[9223372036854775807, -9223372036854775808], "
       "strides=[1, -1])",
       n});
  add({"strided_slice_sym", {P("x", {"n", "3"})},
       "R.strided_slice(x, axes=[0], begin=[0], end=[9223372036854775807], strides=[2])", n});
  // The exp kernel sees only the compound dim n - 1, which it cannot bind: legalization
  // gives it a fresh variable.
  Case chained{"slice_then_exp", {P("x", {"n", "3"})}, "R.exp(s)", {{{"n", 2}}, {{"n", 13}}, {{"n", 1031}}}};
  chained.prelude = "    s = R.strided_slice(x, axes=[0], begin=[1], end=[9223372036854775807])\n";
  add(chained);
  // Indices are drawn inside the indexed axis: take has no bounds check to exercise here.
  add({"take", {P("x", {"n", "5"}), P("i", {"m"}, "int64", {0, 5})}, "R.take(x, i, axis=1)", nm});
  add({"take_bf16", {P("x", {"n", "6"}, "bfloat16", {-9, 9}), P("i", {"m"}, "int32", {0, 6})}, "R.take(x, i, axis=1)", nm});
  add({"take_axis0", {P("x", {"4", "n"}), P("i", {"m", "2"}, "int32", {0, 4})}, "R.take(x, i, axis=0)", nm});

  // ---------------------------------------------------------------- indexing
  // Indices are drawn in [-dim, dim) of the axis they index (negative ones count from the
  // end); scatters draw repeated positions, which apply in row-major order.
  add({"gather_elements", {P("x", {"n", "5"}), P("i", {"n", "m"}, "int64", {-5, 5})},
       "R.gather_elements(x, i, axis=1)", nm});
  add({"gather_elements_axis0", {P("x", {"4", "n"}), P("i", {"m", "n"}, "int32", {-4, 4})},
       "R.gather_elements(x, i, axis=0)", nm});
  add({"gather_nd", {P("x", {"3", "4", "n"}), P("i", {"m", "2"}, "int64", {-3, 3})}, "R.gather_nd(x, i)", nm});
  add({"gather_nd_batch", {P("x", {"n", "3", "4"}), P("i", {"n", "m", "1"}, "int64", {-3, 3})},
       "R.gather_nd(x, i, batch_dims=1)", nm});
  add({"scatter_elements", {P("x", {"n", "6"}), P("i", {"n", "m"}, "int64", {-6, 6}), P("u", {"n", "m"})},
       "R.scatter_elements(x, i, u, axis=1)", nm});
  add({"scatter_elements_add", {P("x", {"5", "n"}), P("i", {"m", "n"}, "int64", {-5, 5}), P("u", {"m", "n"})},
       "R.scatter_elements(x, i, u, reduction=\"add\")", nm});
  add({"scatter_elements_max", {P("x", {"5", "n"}), P("i", {"m", "n"}, "int32", {-5, 5}), P("u", {"m", "n"})},
       "R.scatter_elements(x, i, u, reduction=\"max\")", nm});
  add({"scatter_elements_mul_int", {P("x", {"5", "n"}, "int64", {-3, 3}), P("i", {"m", "n"}, "int64", {-5, 5}),
                                    P("u", {"m", "n"}, "int64", {-3, 3})},
       "R.scatter_elements(x, i, u, reduction=\"mul\")", {{{"n", 1}, {"m", 1}}, {{"n", 7}, {"m", 3}}, {{"n", 1031}, {"m", 2}}}});
  add({"scatter_nd", {P("x", {"4", "5", "n"}), P("i", {"m", "2"}, "int64", {-4, 4}), P("u", {"m", "n"})},
       "R.scatter_nd(x, i, u)", nm});
  add({"scatter_nd_add", {P("x", {"5", "n"}), P("i", {"m", "1"}, "int64", {-5, 5}), P("u", {"m", "n"})},
       "R.scatter_nd(x, i, u, reduction=\"add\")", nm});
  add({"scatter_nd_min", {P("x", {"5", "n"}), P("i", {"m", "1"}, "int64", {-5, 5}), P("u", {"m", "n"})},
       "R.scatter_nd(x, i, u, reduction=\"min\")", nm});
  add({"one_hot", {P("i", {"n", "m"}, "int64", {-7, 7})},
       "R.one_hot(i, depth=5, axis=1, on_value=3.0, off_value=-1.0)", nm});
  add({"one_hot_int", {P("i", {"n"}, "int32", {-2, 9})}, "R.one_hot(i, depth=8, dtype=int32)", n});

  // ---------------------------------------------------------------- rearranging
  add({"pad_constant", {P("x", {"n", "m"})}, "R.pad(x, pads=[1, 0, 2, 3], pad_value=-7.5)", nm});
  add({"pad_crop", {P("x", {"3", "n", "5"})}, "R.pad(x, pads=[-1, 2, 1, 0, -1, -3])", n});
  add({"pad_reflect", {P("x", {"n", "4"})}, "R.pad(x, pads=[0, 5, 0, 2], mode=\"reflect\")", n});
  add({"pad_reflect_sym", {P("x", {"n", "2"})}, "R.pad(x, pads=[2, 0, 3, 1], mode=\"reflect\")", n});
  add({"pad_edge", {P("x", {"n", "m"}, "int32", {-9, 9})}, "R.pad(x, pads=[2, 1, 0, 3], mode=\"edge\")", nm});
  add({"pad_wrap", {P("x", {"2", "n"})}, "R.pad(x, pads=[1, -1, 3, 4], mode=\"wrap\")", {{{"n", 2}}, {{"n", 7}}, {{"n", 1031}}}});
  add({"tile", {P("x", {"n", "3"})}, "R.tile(x, repeats=[2, 3])", n});
  add({"tile_new_dims", {P("x", {"n"}, "int64", {-9, 9})}, "R.tile(x, repeats=[3, 1, 2])", n});
  add({"flip", {P("x", {"n", "m", "2"})}, "R.flip(x, axis=[0, 2])", nm});
  add({"flip_all", {P("x", {"n", "m"})}, "R.flip(x)", nm});
  add({"trilu_upper", {P("x", {"2", "n", "m"})}, "R.trilu(x, k=1)", nm});
  add({"trilu_lower", {P("x", {"n", "m"})}, "R.trilu(x, upper=false, k=-2)", nm});
  add({"squeeze", {P("x", {"n", "1", "m", "1"})}, "R.squeeze(x, axis=[1, -1])", nm});
  add({"squeeze_all_unit", {P("x", {"1", "n", "1"})}, "R.squeeze(x)", n});
  add({"expand_dims", {P("x", {"n", "m"})}, "R.expand_dims(x, axis=[0, -1])", nm});

  // ---------------------------------------------------------------- sorting and scans
  // O(n^2) per row (relax/op/legalize_sort.cc): rows up to 1031 long. Integer draws from a
  // small range make ties, which must keep index order.
  add({"cumsum", {P("x", {"n", "m"})}, "R.cumsum(x, axis=1)", nm, 1e-5, 1e-4});
  add({"cumsum_exclusive_reverse", {P("x", {"n", "m"})}, "R.cumsum(x, axis=0, exclusive=true, reverse=true)", nm,
       1e-5, 1e-4});
  add({"cumsum_int", {P("x", {"n", "m"}, "int32", {-9, 9})}, "R.cumsum(x, axis=0, exclusive=true)", nm});
  add({"cumsum_f16", {P("x", {"n"}, "float16", {0, 1})}, "R.cumsum(x, axis=0)", n, 2e-3, 1e-3});
  add({"sort", {P("x", {"n", "m"})}, "R.sort(x)", nm});
  add({"sort_descending_axis0", {P("x", {"n", "m"})}, "R.sort(x, axis=0, descending=true)", nm});
  add({"argsort_ties", {P("x", {"n", "m"}, "int32", {-3, 3})}, "R.argsort(x, axis=1)", nm});
  add({"argsort_descending", {P("x", {"n", "m"})}, "R.argsort(x, axis=0, descending=true, dtype=int32)", nm});
  add({"topk", {P("x", {"n", "m"})}, "R.topk(x, k=1, axis=0)", nm});
  add({"topk_smallest_ties", {P("x", {"n", "m"}, "int64", {-2, 2})}, "R.topk(x, k=1, largest=false)", nm});
  add({"topk_k3", {P("x", {"m", "n"})}, "R.topk(x, k=3)",
       {{{"n", 3}, {"m", 1}}, {{"n", 7}, {"m", 13}}, {{"n", 1031}, {"m", 3}}}});

  // ---------------------------------------------------------------- einsum
  add({"einsum_batch_matmul", {P("a", {"2", "n", "k"}), P("b", {"2", "k", "m"})},
       "R.einsum((a, b), subscripts=\"bij, bjk -> bik\")", nkm, 1e-4, 1e-4});
  add({"einsum_batch_diagonal", {P("a", {"n", "5", "5"})}, "R.einsum((a,), subscripts=\"...ii ->...i\")", n});
  add({"einsum_inner_prod", {P("a", {"n"}), P("b", {"n"})}, "R.einsum((a, b), subscripts=\"i,i\")", n, 1e-4, 1e-4});
  add({"einsum_sum", {P("a", {"n", "m"})}, "R.einsum((a,), subscripts=\"ij->i\")", nm, 1e-4, 1e-4});
  add({"einsum_transpose", {P("a", {"n", "m"})}, "R.einsum((a,), subscripts=\"ij->ji\")", nm});
  add({"einsum_broadcast_implicit", {P("a", {"n", "1", "3"}), P("b", {"m", "3", "2"}), P("c", {"2"})},
       "R.einsum((a, b, c), subscripts=\"...j,...jk,k\")", nm, 1e-4, 1e-4});
  // ---------------------------------------------------------------- shapes from data
  // begin/end drawn past both ends (ONNX clamps them); strides never 0.
  add({"dynamic_strided_slice",
       {P("x", {"n", "m"}), P("b", {"2"}, "int64", {-40, 40}), P("e", {"2"}, "int64", {-40, 40}),
        P("s", {"2"}, "int64", {1, 4})},
       "R.dynamic_strided_slice(x, b, e, s)", nm});
  Case dss_neg{"dynamic_strided_slice_negative_strides",
               {P("x", {"n", "3", "m"}), P("b", {"2"}, "int64", {-1100, 1100}), P("e", {"2"}, "int64", {-1100, 1100}),
                P("s", {"2"}, "int64", {1, 3})},
               "R.dynamic_strided_slice(x, b, e, r_s, axes=[2, 0])", nm};
  dss_neg.prelude = "    r_s = R.negative(s)\n";
  add(dss_neg);
  add({"einsum_f16", {P("a", {"n", "k"}, "float16", {19, 21}), P("b", {"k"}, "float16", {0.5, 1.5})},
       "R.einsum((a, b), subscripts=\"ij,j->i\")", {{{"n", 3}, {"k", 1031}}, {{"n", 7}, {"k", 13}}}, 1e-3, 0});

  // ---------------------------------------------------------------- creation
  add({"full_prim", {P("x", {"n"})}, "R.full(R.shape([n, 3]), R.prim(2.5), dtype=float32)", n});
  add({"full_tensor", {P("x", {"n"}), P("v", {}, "float32")}, "R.full(R.shape([n, 2]), v)", n});
  add({"zeros", {P("x", {"n"})}, "R.zeros(R.shape([n]), dtype=int32)", n});
  add({"ones", {P("x", {"n"})}, "R.ones(R.shape([2, n]))", n});
  add({"arange_attrs", {P("x", {"n"})}, "R.arange(start=2, end=17, step=3)", n});
  add({"arange_float", {P("x", {"n"})}, "R.arange(start=0.5, end=3.0, step=0.25, dtype=float32)", n});
  add({"arange_symbolic_end", {P("x", {"n"})}, "R.arange(R.prim(n))", n});
  // The start p is no dim of the arange kernel's buffers: it is passed as a scalar.
  add({"arange_symbolic_start", {P("x", {"p"}), P("y", {"n"})}, "R.arange(R.prim(p), R.prim(p + n))",
       {{{"p", 1}, {"n", 1}}, {{"p", 13}, {"n", 7}}, {{"p", 1031}, {"n", 3}}, {{"p", 2}, {"n", 1031}}}});
  add({"full_symbolic_value", {P("x", {"p"}), P("y", {"n"})}, "R.full(R.shape([n]), R.prim(p), dtype=float32)",
       {{{"p", 1}, {"n", 1}}, {{"p", 13}, {"n", 7}}, {{"p", 3}, {"n", 1031}}}});
  add({"arange_prim", {P("x", {"n"})}, "R.arange(R.prim(10), R.prim(0), R.prim(-3))", n});

  // ---------------------------------------------------------------- nn
  // Window ops cost h * w * channels * window per output: primes up to 37, not above 1000.
  const Sizes hw = {{{"h", 1}, {"w", 1}}, {{"h", 7}, {"w", 13}}, {{"h", 37}, {"w", 5}}};
  add({"conv2d", {P("x", {"1", "3", "h", "w"}), P("k", {"4", "3", "1", "1"})}, "R.conv2d(x, k)", hw, 1e-5, 1e-5});
  add({"conv2d_pad", {P("x", {"2", "4", "h", "w"}), P("k", {"6", "2", "3", "3"})},
       "R.conv2d(x, k, strides=[2, 1], padding=[1, 2], dilation=[1, 2], groups=2)", hw, 1e-5, 1e-5});
  // One group and float data take the im2col matmul (relax/op/legalize_nn.cc): padding on
  // each side, strides, dilations, a symbolic batch and channels, odd kernels, float16.
  add({"conv2d_im2col", {P("x", {"b", "5", "h", "w"}), P("k", {"7", "5", "3", "2"})},
       "R.conv2d(x, k, strides=[2, 1], padding=[1, 0, 2, 1], dilation=[1, 2])",
       {{{"b", 1}, {"h", 1}, {"w", 2}}, {{"b", 2}, {"h", 7}, {"w", 13}}, {{"b", 3}, {"h", 37}, {"w", 5}}}, 1e-5, 1e-5});
  add({"conv2d_im2col_channels", {P("x", {"2", "c", "h", "w"}), P("k", {"3", "c", "3", "3"})},
       "R.conv2d(x, k, padding=[1])", {{{"c", 1}, {"h", 1}, {"w", 1}}, {{"c", 17}, {"h", 7}, {"w", 13}}}, 1e-5, 1e-5});
  add({"conv2d_im2col_f16", {P("x", {"1", "4", "h", "w"}, "float16"), P("k", {"5", "4", "3", "3"}, "float16")},
       "R.conv2d(x, k, padding=[1], strides=[2, 2])", hw, 2e-3, 2e-3});
  add({"conv2d_im2col_wide", {P("x", {"1", "19", "h", "w"}), P("k", {"70", "19", "1", "1"})}, "R.conv2d(x, k)",
       {{{"h", 1}, {"w", 1}}, {{"h", 29}, {"w", 31}}}, 1e-5, 1e-5});
  // Groups and float data take the padded window reduction (LegalizeGroupedConv) and the CPU
  // window rule: depthwise (groups = channels) with a symbolic batch, a channel multiplier
  // of 2, groups of several channels, stride 2 (strided vector loads), rows whose width
  // takes 16 lanes (112: 7 vectors), 8 lanes (56), 4 lanes (100: tiles of 5 vectors) or
  // 16 lanes and a partial last vector (37, and a symbolic width), float16.
  add({"conv2d_depthwise", {P("x", {"b", "6", "h", "w"}), P("k", {"6", "1", "3", "3"})},
       "R.conv2d(x, k, padding=[1], groups=6)",
       {{{"b", 1}, {"h", 1}, {"w", 1}}, {{"b", 2}, {"h", 7}, {"w", 13}}, {{"b", 1}, {"h", 3}, {"w", 37}}}, 1e-5, 1e-5});
  add({"conv2d_depthwise_multiplier", {P("x", {"1", "3", "h", "w"}), P("k", {"6", "1", "3", "2"})},
       "R.conv2d(x, k, strides=[2, 2], padding=[1, 0, 2, 1], groups=3)", hw, 1e-5, 1e-5});
  add({"conv2d_grouped_dilated", {P("x", {"1", "8", "h", "w"}), P("k", {"4", "4", "3", "3"})},
       "R.conv2d(x, k, strides=[1, 2], padding=[2], dilation=[2, 2], groups=2)", hw, 1e-5, 1e-5});
  for (const char* width : {"112", "56", "100", "37"}) {
    add({absl::StrCat("conv2d_depthwise_7x7_w", width), {P("x", {"1", "3", "h", width}), P("k", {"3", "1", "7", "7"})},
         "R.conv2d(x, k, padding=[3], groups=3)", {{{"h", 1}}, {{"h", 5}}}, 1e-5, 1e-5});
    add({absl::StrCat("conv2d_depthwise_s2_w", width), {P("x", {"1", "2", "h", width}), P("k", {"2", "1", "3", "3"})},
         "R.conv2d(x, k, strides=[2, 2], padding=[1], groups=2)", {{{"h", 2}}, {{"h", 5}}}, 1e-5, 1e-5});
  }
  add({"conv2d_grouped_f16", {P("x", {"1", "4", "h", "w"}, "float16"), P("k", {"4", "2", "3", "3"}, "float16")},
       "R.conv2d(x, k, padding=[1], strides=[2, 1], groups=2)", hw, 2e-3, 2e-3});
  add({"max_pool2d", {P("x", {"1", "2", "h", "w"})}, "R.max_pool2d(x, pool_size=[1, 1])", hw});
  add({"max_pool2d_pad", {P("x", {"1", "2", "h", "w"})},
       "R.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])", hw});

  // ---------------------------------------------------------------- reductions and normalizations (ONNX)
  // Factors near 1 keep products of up to 1031 terms in range.
  add({"prod_axis1", {P("x", {"n", "m"}, "float32", {0.9, 1.1})}, "R.prod(x, axis=[1])", nm, 1e-4, 1e-6});
  add({"prod_all_keepdims", {P("x", {"n", "m"}, "float32", {0.99, 1.01})}, "R.prod(x, keepdims=true)", nm, 1e-4,
       1e-6});
  add({"prod_int", {P("x", {"n", "m"}, "int32", {-1, 2})}, "R.prod(x, axis=[0])", nm});
  add({"variance_axis1", {P("x", {"n", "m"})}, "R.variance(x, axis=[1])", nm, 1e-4, 1e-5});
  add({"variance_sample_keepdims", {P("x", {"n", "3", "m"})},
       "R.variance(x, axis=[0, 2], keepdims=true, correction=1)", nm, 1e-4, 1e-5});
  // A correction at or above the count (m = 1, 3) divides by zero as np.var's max(count -
  // ddof, 0) does: inf, or NaN for a row of one value; never by count - correction < 0.
  add({"variance_correction_above_count", {P("x", {"n", "m"})}, "R.variance(x, axis=[1], correction=5)", nm,
       1e-4, 1e-5});
  add({"log_softmax", {P("x", {"n", "m"}, "float32", {-5, 5})}, "R.log_softmax(x)", nm, 1e-5, 1e-5});
  add({"log_softmax_axis0", {P("x", {"n", "m"}, "float32", {-50, 50})}, "R.log_softmax(x, axis=0)", nm, 1e-5,
       1e-5});
  const Gen positive = {0.1, 2};
  add({"batch_norm", {P("x", {"n", "3", "m"}), P("s", {"3"}), P("b", {"3"}), P("mu", {"3"}), P("v", {"3"}, "float32", positive)},
       "R.batch_norm(x, s, b, mu, v, epsilon=0.001)", nm, 1e-5, 1e-5});
  add({"batch_norm_2d", {P("x", {"n", "m"}), P("s", {"m"}), P("b", {"m"}), P("mu", {"m"}), P("v", {"m"}, "float32", positive)},
       "R.batch_norm(x, s, b, mu, v)", nm, 1e-5, 1e-5});
  add({"group_norm", {P("x", {"2", "6", "n", "m"}), P("s", {"6"}), P("b", {"6"})},
       "R.group_norm(x, s, b, num_groups=3)", nm, 1e-4, 1e-4});
  add({"group_norm_symbolic_channels", {P("x", {"2", "n", "m"}), P("s", {"n"}), P("b", {"n"})},
       "R.group_norm(x, s, b, num_groups=1, epsilon=0.01)", nm, 1e-4, 1e-4});
  add({"instance_norm", {P("x", {"2", "3", "n", "m"}), P("s", {"3"}), P("b", {"3"})}, "R.instance_norm(x, s, b)",
       nm, 1e-4, 1e-4});
  add({"lrn", {P("x", {"2", "5", "n", "m"})}, "R.lrn(x, size=3)", nm, 1e-5, 1e-5});
  add({"lrn_even_size", {P("x", {"1", "n", "m"})}, "R.lrn(x, size=4, alpha=0.5, beta=0.6, bias=2.0)", nm, 1e-5,
       1e-5});

  // 1-d and 3-d windows, transposed convolutions, average pooling and pooling options.
  const Sizes len = {{{"n", 7}}, {{"n", 13}}, {{"n", 1031}}};
  const Sizes dhw = {{{"d", 1}, {"h", 1}, {"w", 1}}, {{"d", 3}, {"h", 7}, {"w", 5}}, {{"d", 5}, {"h", 3}, {"w", 11}}};
  add({"conv1d", {P("x", {"1", "3", "n"}), P("k", {"4", "3", "1"})}, "R.conv1d(x, k)", n, 1e-5, 1e-5});
  add({"conv1d_pad", {P("x", {"2", "4", "n"}), P("k", {"6", "2", "3"})},
       "R.conv1d(x, k, strides=[2], padding=[1, 2], dilation=[2], groups=2)", len, 1e-5, 1e-5});
  add({"conv1d_im2col", {P("x", {"2", "3", "n"}), P("k", {"5", "3", "4"})},
       "R.conv1d(x, k, strides=[3], padding=[2, 1], dilation=[2])", len, 1e-5, 1e-5});
  add({"conv1d_depthwise", {P("x", {"2", "3", "n"}), P("k", {"3", "1", "5"})},
       "R.conv1d(x, k, strides=[2], padding=[2, 1], groups=3)", len, 1e-5, 1e-5});
  add({"conv3d_grouped", {P("x", {"1", "4", "d", "h", "w"}), P("k", {"4", "2", "3", "1", "3"})},
       "R.conv3d(x, k, padding=[1, 0, 1], strides=[1, 1, 2], groups=2)", dhw, 1e-5, 1e-5});
  add({"conv3d", {P("x", {"1", "2", "d", "h", "w"}), P("k", {"3", "2", "2", "2", "2"})},
       "R.conv3d(x, k, padding=[1], strides=[1, 2, 1])", dhw, 1e-5, 1e-5});
  add({"conv1d_transpose", {P("x", {"1", "4", "n"}), P("k", {"4", "3", "3"})},
       "R.conv1d_transpose(x, k, strides=[2], padding=[1], output_padding=[1])", n, 1e-5, 1e-5});
  add({"conv2d_transpose", {P("x", {"2", "4", "h", "w"}), P("k", {"4", "3", "3", "3"})},
       "R.conv2d_transpose(x, k, strides=[2, 1], padding=[1, 0, 0, 1], dilation=[1, 2], groups=2)", hw, 1e-5, 1e-5});
  // One group and float data take the matmul and col2im (LegalizeConvTransposeAsMatmul):
  // a U-Net 2 x 2 stride-2 upsampling with a symbolic batch, overlapping taps with padding,
  // dilation and output padding, float16.
  add({"conv2d_transpose_upsample", {P("x", {"b", "5", "h", "w"}), P("k", {"5", "3", "2", "2"})},
       "R.conv2d_transpose(x, k, strides=[2, 2])",
       {{{"b", 1}, {"h", 1}, {"w", 1}}, {{"b", 2}, {"h", 7}, {"w", 13}}, {{"b", 1}, {"h", 3}, {"w", 37}}}, 1e-5, 1e-5});
  add({"conv2d_transpose_overlap", {P("x", {"1", "4", "h", "w"}), P("k", {"4", "3", "3", "2"})},
       "R.conv2d_transpose(x, k, strides=[2, 3], padding=[1, 0, 0, 1], dilation=[1, 2], output_padding=[1, 2])", hw,
       1e-5, 1e-5});
  add({"conv2d_transpose_f16", {P("x", {"1", "4", "h", "w"}, "float16"), P("k", {"4", "2", "3", "3"}, "float16")},
       "R.conv2d_transpose(x, k, strides=[2, 2], padding=[1])", hw, 2e-3, 2e-3});
  add({"conv3d_transpose", {P("x", {"1", "2", "d", "h", "w"}), P("k", {"2", "2", "2", "3", "2"})},
       "R.conv3d_transpose(x, k, strides=[2, 1, 2], padding=[0, 1, 0, 0, 1, 1], output_padding=[1, 0, 0])", dhw, 1e-5,
       1e-5});
  add({"max_pool1d_ceil", {P("x", {"2", "3", "n"})}, "R.max_pool1d(x, pool_size=[3], strides=[2], padding=[1], ceil_mode=true)",
       n});
  add({"max_pool2d_ceil_dilation", {P("x", {"1", "2", "h", "w"})},
       "R.max_pool2d(x, pool_size=[2, 3], strides=[2, 2], dilation=[2, 1], padding=[1], ceil_mode=true)", hw});
  add({"max_pool3d", {P("x", {"1", "2", "d", "h", "w"})}, "R.max_pool3d(x, pool_size=[2], strides=[1], padding=[1])",
       dhw});
  add({"max_pool2d_int", {P("x", {"1", "2", "h", "w"}, "int8", {-100, 100})},
       "R.max_pool2d(x, pool_size=[2, 2], strides=[1, 1], padding=[1])", hw});
  add({"avg_pool1d", {P("x", {"2", "3", "n"})},
       "R.avg_pool1d(x, pool_size=[4], strides=[3], padding=[2, 1], dilation=[2], count_include_pad=true)", len, 1e-5,
       1e-6});
  add({"avg_pool2d", {P("x", {"1", "2", "h", "w"})}, "R.avg_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1])",
       hw, 1e-5, 1e-6});
  add({"avg_pool2d_ceil_include_pad", {P("x", {"1", "2", "h", "w"})},
       "R.avg_pool2d(x, pool_size=[3, 2], strides=[2, 2], padding=[1, 0, 1, 1], ceil_mode=true, count_include_pad=true)",
       hw, 1e-5, 1e-6});
  add({"avg_pool3d", {P("x", {"1", "2", "d", "h", "w"})},
       "R.avg_pool3d(x, pool_size=[2, 3, 2], strides=[1, 2, 2], padding=[1])", dhw, 1e-5, 1e-6});
  add({"avg_pool2d_f16", {P("x", {"1", "2", "h", "w"}, "float16")}, "R.avg_pool2d(x, pool_size=[3, 3], padding=[1])",
       hw, 1e-3, 1e-3});

  // resize: output sizes symbolic or constant, every coordinate mode and method.
  add({"resize_nearest", {P("x", {"1", "2", "h", "w"})}, "R.resize(x, R.shape([1, 2, h * 2, w * 3]), axes=[2, 3])", hw});
  add({"resize_nearest_asymmetric_floor", {P("x", {"1", "2", "h", "w"})},
       "R.resize(x, R.shape([1, 2, 5, 7]), axes=[2, 3], coordinate_transformation_mode=\"asymmetric\", "
       "nearest_mode=\"floor\", scales=[0.6, 1.75])",
       hw});
  add({"resize_nearest_ceil_align_corners", {P("x", {"n", "m"}, "int32", {-50, 50})},
       "R.resize(x, R.shape([n, 9]), axes=[1], coordinate_transformation_mode=\"align_corners\", nearest_mode=\"ceil\")",
       nm});
  add({"resize_nearest_prefer_ceil", {P("x", {"n"})},
       "R.resize(x, R.shape([n * 3]), coordinate_transformation_mode=\"pytorch_half_pixel\", "
       "nearest_mode=\"round_prefer_ceil\")",
       n});
  add({"resize_linear", {P("x", {"n", "m"})}, "R.resize(x, R.shape([n * 2, 5]), method=\"linear\")", nm, 1e-5, 1e-6});
  // With scales, align_corners and pytorch_half_pixel use the unrounded length m * scale.
  add({"resize_align_corners_scales", {P("x", {"n", "m"})},
       "R.resize(x, R.shape([n, 4]), axes=[1], method=\"linear\", coordinate_transformation_mode=\"align_corners\", "
       "scales=[0.6])",
       nm, 1e-5, 1e-6});
  add({"resize_linear_align_corners", {P("x", {"n"})},
       "R.resize(x, R.shape([7]), method=\"linear\", coordinate_transformation_mode=\"align_corners\")", n, 1e-5, 1e-6});
  add({"resize_linear_symmetric_scales", {P("x", {"1", "2", "h", "w"})},
       "R.resize(x, R.shape([1, 2, 4, 11]), axes=[2, 3], method=\"linear\", "
       "coordinate_transformation_mode=\"half_pixel_symmetric\", scales=[0.7, 2.3])",
       hw, 1e-5, 1e-6});
  add({"resize_tf_crop", {P("x", {"1", "2", "h", "w"})},
       "R.resize(x, R.shape([1, 2, 6, 5]), axes=[2, 3], method=\"linear\", "
       "coordinate_transformation_mode=\"tf_crop_and_resize\", roi=[-0.2, 0.1, 1.2, 0.7], extrapolation_value=10.0)",
       hw, 1e-5, 1e-6});
  add({"resize_cubic", {P("x", {"1", "1", "h", "w"})},
       "R.resize(x, R.shape([1, 1, 9, 4]), axes=[2, 3], method=\"cubic\")", hw, 1e-5, 1e-5});
  add({"resize_cubic_exclude_outside", {P("x", {"1", "1", "h", "w"})},
       "R.resize(x, R.shape([1, 1, h * 2, 3]), axes=[-2, -1], method=\"cubic\", cubic_coeff_a=-0.5, "
       "exclude_outside=true, coordinate_transformation_mode=\"asymmetric\")",
       hw, 1e-5, 1e-5});

  // ---------------------------------------------------------------- float16
  // Sums of float16 accumulate in float32: at k = 1031 with values near 20 a float16
  // accumulator was off by 0.33 (ulp of 20 in float16: 0.0156). The reference computes in
  // double and rounds once, so one float16 ulp of tolerance covers the double rounding.
  const Sizes k1031 = {{{"n", 3}, {"k", 1031}, {"m", 5}}, {{"n", 7}, {"k", 13}, {"m", 17}}};
  add({"matmul_f16_k1031",
       {P("a", {"n", "k"}, "float16", {19, 21}), P("b", {"k", "m"}, "float16", {0.5 / 1031, 1.5 / 1031})},
       "R.matmul(a, b)", k1031, 0, 0.0157});
  const Sizes rows = {{{"n", 3}, {"m", 1031}}, {{"n", 1031}, {"m", 7}}};
  add({"sum_f16", {P("x", {"n", "m"}, "float16", {19, 21})}, "R.sum(x, axis=[1])", rows, 1e-3, 0});
  add({"mean_f16", {P("x", {"n", "m"}, "float16", {19, 21})}, "R.mean(x, axis=[1])", rows, 1e-3, 0});
  add({"softmax_f16", {P("x", {"n", "m"}, "float16", {-3, 3})}, "R.softmax(x)", rows, 1e-3, 1e-6});
  add({"layer_norm_f16", {P("x", {"n", "m"}, "float16", {19, 21}), P("g", {"m"}, "float16"), P("b", {"m"}, "float16")},
       "R.layer_norm(x, g, b, axes=[-1])", rows, 2e-3, 4e-3});
  add({"rms_norm_f16", {P("x", {"n", "m"}, "float16", {19, 21}), P("w", {"m"}, "float16")}, "R.rms_norm(x, w)", rows,
       2e-3, 1e-3});

  // ---------------------------------------------------------------- quantized weights
  // Random bytes: every scale a float16 can be (subnormal, NaN, infinite), every quant.
  // The kernel and the reference compute the same float32 products: exact agreement.
  const Gen bytes = {0, 256};
  add({"dequantize_q4_0", {P("x", {"n", "72"}, "uint8", bytes)}, "R.dequantize(x, format=\"q4_0\")", n, 0, 0});
  add({"dequantize_q8_0_f16", {P("x", {"3", "n", "68"}, "uint8", bytes)},
       "R.dequantize(x, format=\"q8_0\", dtype=float16)", n, 0, 0});
  add({"dequantize_q4_1", {P("x", {"n", "40"}, "uint8", bytes)}, "R.dequantize(x, format=\"q4_1\")", n, 0, 0});
  add({"dequantize_q5_0", {P("x", {"n", "44"}, "uint8", bytes)}, "R.dequantize(x, format=\"q5_0\")", n, 0, 0});
  add({"dequantize_q5_1_f16", {P("x", {"n", "48"}, "uint8", bytes)}, "R.dequantize(x, format=\"q5_1\", dtype=float16)",
       n, 0, 0});
  add({"dequantize_q4_K", {P("x", {"n", "288"}, "uint8", bytes)}, "R.dequantize(x, format=\"q4_K\")", n, 0, 0});
  add({"dequantize_q5_K", {P("x", {"2", "n", "176"}, "uint8", bytes)}, "R.dequantize(x, format=\"q5_K\")", n, 0, 0});
  add({"dequantize_q6_K", {P("x", {"n", "210"}, "uint8", bytes)}, "R.dequantize(x, format=\"q6_K\")", n, 0, 0});
  add({"dequantize_q2_K", {P("x", {"n", "168"}, "uint8", bytes)}, "R.dequantize(x, format=\"q2_K\")", n, 0, 0});
  add({"dequantize_q3_K", {P("x", {"n", "220"}, "uint8", bytes)}, "R.dequantize(x, format=\"q3_K\")", n, 0, 0});
  add({"dequantize_iq4_nl", {P("x", {"n", "54"}, "uint8", bytes)}, "R.dequantize(x, format=\"iq4_nl\")", n, 0, 0});
  add({"dequantize_iq4_xs", {P("x", {"n", "272"}, "uint8", bytes)}, "R.dequantize(x, format=\"iq4_xs\")", n, 0, 0});
  // quantized_matmul: bytes below 60 keep every scale a positive float16 below 1 (the high
  // byte's exponent bits stay under 15), so sums are well conditioned and the orders of
  // summation of the library kernel, the generated kernel and the reference agree closely.
  const Gen tame = {0, 60};
  // The K-quants' sub-scales (6-bit, q6_K's int8) multiply the weights by up to 63, so their
  // terms are large next to the results and float32 sums of 256 of them round at about 1e-4 of
  // a result: a looser tolerance for them (iq4_xs the loosest: table values up to 127 times
  // scales up to 31).
  for (auto [format, k, bytes_per_row, tolerance] :
       {std::tuple{"q4_0", "128", "72", 1e-4}, {"q4_1", "128", "80", 1e-4}, {"q8_0", "128", "136", 1e-4},
        {"q5_0", "128", "88", 1e-4}, {"q5_1", "128", "96", 1e-4}, {"q4_K", "512", "288", 1e-3},
        {"q5_K", "256", "176", 1e-3}, {"q6_K", "256", "210", 1e-3}, {"q3_K", "256", "110", 1e-3}, {"q2_K", "256", "84", 1e-3},
        {"iq4_nl", "128", "72", 1e-3}, {"iq4_xs", "256", "136", 4e-3}}) {
    Case c{absl::StrCat("quantized_matmul_", format), {P("x", {"n", k}), P("w", {"m", bytes_per_row}, "uint8", tame)},
           absl::StrCat("R.quantized_matmul(x, w, format=\"", format, "\")"), nm, tolerance, tolerance};
    c.quantized_library = true;
    add(c);
  }
  // llama.cpp's repacked Q4_0 order (a multiple of 8 weight rows at a time, the rest one by one).
  Case by_block{"quantized_matmul_q4_0_blocks", {P("x", {"n", "128"}), P("w", {"m", "72"}, "uint8", tame)},
                "R.quantized_matmul(x, w, format=\"q4_0\", summation=\"blocks\")", nm, 1e-4, 1e-4};
  by_block.quantized_library = true;
  add(by_block);
  // llama.cpp's repacked Q4_K order, and its tiled K-quant order (for 8 or more rows of x).
  for (auto [name, format, bytes_per_row, summation] :
       {std::tuple{"quantized_matmul_q4_K_blocks", "q4_K", "288", "blocks"},
        {"quantized_matmul_q4_K_tiles", "q4_K", "288", "tiles"},
        {"quantized_matmul_q6_K_tiles", "q6_K", "420", "tiles"},
        {"quantized_matmul_q3_K_tiles", "q3_K", "220", "tiles"},
        {"quantized_matmul_q2_K_tiles", "q2_K", "168", "tiles"},
        {"quantized_matmul_q2_K_blocks", "q2_K", "168", "blocks"},
        {"quantized_matmul_iq4_xs_tiles", "iq4_xs", "272", "tiles"},
        {"quantized_matmul_iq4_nl_blocks", "iq4_nl", "288", "blocks"}}) {
    Case c{name, {P("x", {"n", "512"}), P("w", {"m", bytes_per_row}, "uint8", tame)},
           absl::StrCat("R.quantized_matmul(x, w, format=\"", format, "\", summation=\"", summation, "\")"), nm, 1e-3,
           1e-3};
    c.quantized_library = true;
    add(c);
  }
  // rotary_embedding at positions up to 5000 (angles of thousands of radians).
  const Gen position = {0, 5000};
  add({"rotary_embedding_normal", {P("x", {"n", "3", "64"}), P("p", {"n"}, "int64", position)},
       "R.rotary_embedding(x, p, theta=100000.0)", n, 1e-4, 2e-3});
  add({"rotary_embedding_neox_partial", {P("x", {"n", "2", "24"}), P("p", {"n"}, "int32", position)},
       "R.rotary_embedding(x, p, mode=\"neox\", rotary_dims=16)", n, 1e-4, 2e-3});

  // ---------------------------------------------------------------- NaN and infinities
  // Every case with float inputs again, with some of them NaN, +inf or -inf: results must
  // be NaN exactly where the reference's are (NumPy's rules) and infinities must match.
  // float -> int casts of NaN/inf are undefined (as in C and NumPy), so excluded; the float
  // comparisons get their own cases, as the ones above compare integers.
  for (const char* op : {"equal", "not_equal", "less_equal", "greater", "greater_equal"}) {
    add({absl::StrCat(op, "_float"), {P("x", {"n", "m"}), P("y", {"n", "1"})}, absl::StrCat("R.", op, "(x, y)"), nm});
  }
  const size_t before = cases.size();
  for (size_t i = 0; i < before; ++i) {
    Case c = cases[i];
    if (c.name == "astype_f32_i32") continue;
    bool has_float = false;
    for (Param& p : c.params) {
      if (p.dtype.rfind("float", 0) != 0) continue;
      has_float = true;
      // A 0-d tensor has one element: make it special every time.
      p.gen.special = p.dims.empty() ? 1.0 : 0.05;
    }
    if (!has_float) continue;
    c.name += "_nan_inf";
    cases.push_back(std::move(c));
  }
  return cases;
}

// Operators that read no float tensor data, so have no NaN/inf case (one_hot reads indices only; dequantize reads bytes:
// its random scales include NaN and infinities).
inline bool ReadsNoFloatData(const std::string& op) {
  if (op.rfind("logical_", 0) == 0 || op.rfind("bitwise_", 0) == 0) return true;  // bool / integer only
  return op == "zeros" || op == "ones" || op == "arange" || op == "dequantize" || op == "one_hot" ||
         op == "left_shift" || op == "right_shift";
}

// The operators a case calls, found in its parsed module (empty when it does not parse).
inline std::set<std::string> OperatorsOf(const Case& c) {
  std::set<std::string> ops;
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(ModuleText(c));
  if (!parsed.ok()) return ops;
  std::function<void(const relax::Expr&)> visit = [&](const relax::Expr& e) {
    if (const auto* call = e.as<relax::CallNode>()) {
      if (const auto* op = call->op.as<relax::OpNode>()) ops.insert(op->name);
      for (const relax::Expr& arg : call->args) visit(arg);
    } else if (const auto* tuple = e.as<relax::TupleNode>()) {
      for (const relax::Expr& f : tuple->fields) visit(f);
    } else if (const auto* seq = e.as<relax::SeqExprNode>()) {
      for (const relax::BindingBlock& block : seq->blocks) {
        for (const relax::Binding& b : block.bindings) visit(b.value);
      }
      visit(seq->body);
    }
  };
  for (const relax::IRModule::Entry& entry : parsed->module.entries()) {
    if (entry.is_relax()) visit(entry.relax_function()->body);
  }
  return ops;
}

// The registered operators that have a legalization (each must have a case).
inline std::vector<std::string> LegalizedOperators() {
  const relax::OpRegistry& registry = relax::OpRegistry::Global();
  std::vector<std::string> names;
  for (const std::string& name : registry.Names()) {
    if (registry.Find(name)->legalize != nullptr) names.push_back(name);
  }
  return names;
}

}  // namespace kiln::op_cases
