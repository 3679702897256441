// Accuracy of the inline float32 math of codegen/fast_math.h, through the whole backend:
// a kernel per function (a scalar loop and a 16-lane SIMD loop) is compiled, loaded and run
// over special values, dense sweeps of each function's interesting range and ~1e6 random
// inputs of every magnitude; results are compared with the C library in double precision
// (an independent reference), in units in the last place of the float32 result. Each
// function runs for the host CPU (FMA contraction) and for baseline x86-64 (no FMA).
#include "codegen/fast_math.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codegen/build_executable.h"
#include "codegen/cpu_shared_object.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/check.h"
#include "support/file_io.h"
#include "tir/buffer.h"
#include "tir/expr.h"
#include "tir/stmt.h"
#include "vm/kernel_abi.h"
#include "vm/kernel_object.h"
#include "vm/tensor.h"
#include "tests/source_dir.h"

namespace kiln::codegen {
namespace {

using namespace kiln::tir;  // NOLINT: IR construction reads better unqualified
using ::testing::HasSubstr;
using ::testing::Not;

// ---------------------------------------------------------------- harness

int32_t SerialParallelFor(KilnCallContext*, int64_t num_tasks, KilnParallelBody body, void* closure) {
  for (int64_t t = 0; t < num_tasks; ++t) {
    if (int32_t rc = body(t, num_tasks, closure); rc != 0) return rc;
  }
  return 0;
}
void* Alloc(KilnCallContext*, uint64_t bytes) { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); }
void Free(KilnCallContext*, void* p) { std::free(p); }
void SetError(KilnCallContext*, const char* message) { ADD_FAILURE() << message; }

constexpr int kLanes = 16;

// out[i] = op(A[i]): "s_<op>" a serial loop, "v_<op>" 16-lane vector code plus a scalar tail.
NamedPrimFuncs MathKernels(const std::vector<std::string>& ops) {
  NamedPrimFuncs funcs;
  for (const std::string& op : ops) {
    Var n = Var::Shape("n");
    Buffer a("A", DataType::Float32(), {n});
    Buffer out("out", DataType::Float32(), {n});
    Var i("i");
    funcs.push_back({"s_" + op, PrimFunc({{a, Var()}, {out, Var()}},
                                         For(i, 0, n, ForKind::kSerial,
                                             BufferStore(out, Call(op, {a.Load({i})}), {i})))});
    Var io("io"), ii("ii"), t("t");
    PrimExpr idx = io * kLanes + ii;
    PrimExpr full = FloorDiv(PrimExpr(n), PrimExpr(kLanes));
    Stmt lanes = For(ii, 0, kLanes, ForKind::kVectorized, BufferStore(out, Call(op, {a.Load({idx})}), {idx}));
    Stmt tail = For(t, full * kLanes, n - full * kLanes, ForKind::kSerial,
                    BufferStore(out, Call(op, {a.Load({t})}), {t}));
    funcs.push_back({"v_" + op, PrimFunc({{a, Var()}, {out, Var()}},
                                         SeqStmt({For(io, 0, full, ForKind::kSerial, lanes), tail}))});
  }
  return funcs;
}

class Compiled {
 public:
  Compiled(const NamedPrimFuncs& funcs, const CpuTarget& target) {
    absl::StatusOr<std::string> so = BuildCpuSharedObject(funcs, target);
    KILN_CHECK(so.ok()) << so.status();
    absl::StatusOr<std::shared_ptr<vm::KernelObject>> object = vm::KernelObject::Load(*so);
    KILN_CHECK(object.ok()) << object.status();
    object_ = *object;
  }

  // Runs kernel `name` over `in`.
  std::vector<float> Run(const std::string& name, const std::vector<float>& in) const {
    absl::StatusOr<KilnKernelFn> fn = object_->Find(name);
    KILN_CHECK(fn.ok()) << fn.status();
    const auto n = static_cast<int64_t>(in.size());
    absl::StatusOr<vm::Tensor> a = vm::Tensor::Empty({n}, DLDataType{kDLFloat, 32, 1});
    absl::StatusOr<vm::Tensor> out = vm::Tensor::Empty({n}, DLDataType{kDLFloat, 32, 1});
    KILN_CHECK(a.ok() && out.ok());
    std::memcpy(a->data(), in.data(), in.size() * sizeof(float));
    KilnArg args[2]{};
    args[0].value.tensor = a->dl_tensor();
    args[0].type_code = kKilnArgTensor;
    args[1].value.tensor = out->dl_tensor();
    args[1].type_code = kKilnArgTensor;
    KilnCallContext ctx{nullptr, SerialParallelFor, Alloc, Free, SetError, 1, {kDLCPU, 0}, nullptr, nullptr};
    KILN_CHECK((*fn)(args, 2, &ctx) == 0) << name;
    std::vector<float> result(in.size());
    std::memcpy(result.data(), out->data(), in.size() * sizeof(float));
    return result;
  }

 private:
  std::shared_ptr<vm::KernelObject> object_;
};

// ---------------------------------------------------------------- references and errors

double Reference(const std::string& op, double x) {
  if (op == "exp") return std::exp(x);
  if (op == "erf") return std::erf(x);
  if (op == "tanh") return std::tanh(x);
  if (op == "sigmoid") return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
  if (op == "log") return std::log(x);
  if (op == "expm1") return std::expm1(x);
  if (op == "log1p") return std::log1p(x);
  if (op == "sin") return std::sin(x);
  if (op == "cos") return std::cos(x);
  if (op == "tan") return std::tan(x);
  if (op == "asin") return std::asin(x);
  if (op == "acos") return std::acos(x);
  if (op == "atan") return std::atan(x);
  if (op == "sinh") return std::sinh(x);
  if (op == "cosh") return std::cosh(x);
  if (op == "asinh") return std::asinh(x);
  if (op == "acosh") return std::acosh(x);
  if (op == "atanh") return std::atanh(x);
  return NAN;
}

// |got - want| in units of the float32 spacing at want (2^-149 in the denormal range); an
// infinite result counts as 2^128, so overflowing one ulp early is one ulp off, not infinitely.
double UlpError(float got, double want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : INFINITY;
  // Beyond FLT_MAX plus half an ulp the float32 result is infinite.
  if (std::fabs(want) >= std::ldexp(1.0, 128) - std::ldexp(1.0, 103)) return got == std::copysign(INFINITY, want) ? 0 : INFINITY;
  double g = std::isinf(got) ? std::copysign(std::ldexp(1.0, 128), got) : got;
  double a = std::fabs(want);
  int e = a == 0 ? -126 : std::max(std::ilogb(a), -126);
  return std::fabs(g - want) / std::ldexp(1.0, e - 23);
}

float Bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Special values, thresholds with their neighbours, a dense sweep of [lo, hi] and random
// inputs: uniform in [lo, hi] and uniform over all bit patterns (every magnitude).
std::vector<float> Inputs(float lo, float hi, const std::vector<float>& thresholds) {
  std::vector<float> in = {0.0f,     -0.0f,    1.0f,     -1.0f,    FLT_MIN,  -FLT_MIN, FLT_MAX,  -FLT_MAX,
                           1e-45f,   -1e-45f,  1e-40f,   -1e-40f,  1e-30f,   -1e-30f,  1e-10f,   -1e-10f,
                           INFINITY, -INFINITY, NAN,     -NAN,     1e10f,    -1e10f,   1e30f,    -1e30f};
  for (float t : thresholds) {
    float v = t;
    for (int s = 0; s < 8; ++s) v = std::nextafter(v, -INFINITY);
    for (int s = 0; s < 16; ++s, v = std::nextafter(v, INFINITY)) {
      in.push_back(v);
      in.push_back(-v);
    }
  }
  constexpr int kSweep = 400000;
  for (int s = 0; s <= kSweep; ++s) in.push_back(lo + (hi - lo) * static_cast<float>(s) / kSweep);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(lo, hi);
  std::uniform_int_distribution<uint32_t> bits;
  for (int s = 0; s < 400000; ++s) in.push_back(uniform(rng));
  for (int s = 0; s < 200000; ++s) in.push_back(Bits(bits(rng)));
  return in;
}

struct Case {
  std::string op;
  float lo, hi;
  std::vector<float> thresholds;
  // The bound asserted. Measured maxima (host with FMA / x86-64 without; haswell gives the
  // host's for every function): exp 0.87 / 1.15, erf 0.84 / 0.93, tanh 1.50 / 1.50, sigmoid
  // 2.07 / 2.17, log 0.89 / 0.86, expm1 1.43 / 1.56, log1p 1.42 / 1.42, sin cos tan asin acos
  // atan 0.500 / 0.500, sinh 1.96 / 1.96, cosh 1.28 / 1.48, asinh 1.70 / 1.76, acosh 1.64 /
  // 1.64, atanh 1.81 / 1.86.
  double max_ulp;
};

// ln(FLT_MAX) = 88.7228391, ln(2^-126) = -87.33654, ln(2^-149) = -103.27893, ln(2^-150) =
// -103.97208; 0.5 / 4 / 3.9192 (erf: branch point, clamp, where 1 - erfc rounds to 1);
// 0.625 / 9.0109 (tanh: branch point, where it rounds to 1); sqrt(2) and sqrt(1/2) (log:
// the reduction's edges).
std::vector<Case> Cases() {
  return {
      {"exp", -110.0f, 90.0f, {88.7228391f, 88.0f, -87.33654f, -103.27893f, -103.97208f, -104.0f, 89.0f, 0.3465736f}, 1.5},
      {"erf", -5.0f, 5.0f, {0.5f, 4.0f, 3.9192059f, 1e-20f}, 1.5},
      {"tanh", -10.0f, 10.0f, {0.625f, 9.0109133f, 44.0f, 1e-20f}, 2},
      {"sigmoid", -110.0f, 110.0f, {87.33654f, 88.7228391f, 103.97208f, 104.0f}, 2.5},
      {"log", 0.0f, 4.0f, {1.0f, 1.41421356f, 0.70710678f, 2.0f, 0.5f, FLT_MIN}, 1},
      // expm1: |x| = 16 switches to exp(x) - 1; 0.3465736 is where k changes.
      {"expm1", -20.0f, 20.0f, {16.0f, 0.3465736f, 1e-20f, 88.7228391f, -16.6355f}, 2},
      // log1p: x = -1 (u = 0), tiny x (u = 1), x where 1 + x rounds.
      {"log1p", -1.0f, 4.0f, {-1.0f, 1e-20f, 0x1p-24f, 0.41421356f, -0.29289322f, 1e30f}, 2},
      // sin/cos/tan: multiples of pi/2 and pi/4 (reduction and quadrant edges), and the
      // float32 closest to a multiple of pi/2 at large magnitude (Payne-Hanek's hard case).
      {"sin", -20.0f, 20.0f, {1.5707964f, 3.1415927f, 0.78539819f, 2.3561945f, 1e6f, 0x1.921fb6p+0f, 1e38f}, 0.51},
      {"cos", -20.0f, 20.0f, {1.5707964f, 3.1415927f, 0.78539819f, 4.712389f, 1e6f, 1e38f}, 0.51},
      {"tan", -20.0f, 20.0f, {1.5707964f, 3.1415927f, 0.78539819f, 4.712389f, 1e6f}, 0.51},
      {"asin", -1.0f, 1.0f, {0.5f, 1.0f, 1e-20f}, 0.51},
      {"acos", -1.0f, 1.0f, {0.5f, 1.0f, 1e-20f}, 0.51},
      {"atan", -20.0f, 20.0f, {1.0f, 0.41421356f, 1e-20f, 1e20f}, 0.51},
      // sinh/cosh: 88 switches to (e/2) e, overflow near 89.415.
      {"sinh", -90.0f, 90.0f, {88.0f, 89.41599f, 16.0f, 1e-20f}, 2.2},
      {"cosh", -90.0f, 90.0f, {88.0f, 89.41599f}, 2},
      // asinh/acosh: 2^20 switches to log(2x); acosh(1) = 0.
      {"asinh", -30.0f, 30.0f, {0x1p20f, 1e-20f, 1.0f}, 2},
      {"acosh", 1.0f, 30.0f, {0x1p20f, 1.0f, 1e30f}, 2},
      {"atanh", -1.0f, 1.0f, {1.0f, 0.5f, 1e-20f}, 2},
  };
}

std::vector<std::string> Ops() {
  std::vector<std::string> ops;
  for (const Case& c : Cases()) ops.push_back(c.op);
  return ops;
}

void CheckAccuracy(const CpuTarget& target, const std::string& target_name) {
  Compiled k(MathKernels(Ops()), target);
  for (const Case& c : Cases()) {
    std::vector<float> in = Inputs(c.lo, c.hi, c.thresholds);
    for (const char* kind : {"s_", "v_"}) {
      std::vector<float> out = k.Run(kind + c.op, in);
      double worst = 0;
      float worst_x = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        double err = UlpError(out[i], Reference(c.op, in[i]));
        if (!(err <= worst)) {
          worst = err;
          worst_x = in[i];
        }
      }
      std::printf("%-8s %-8s %s: max error %.3f ulp at x = %.9g (%a)\n", target_name.c_str(), c.op.c_str(),
                  kind[0] == 's' ? "scalar" : "vector", worst, worst_x, worst_x);
      EXPECT_LE(worst, c.max_ulp) << target_name << " " << kind << c.op << " at x = " << worst_x << " ("
                                  << std::hexfloat << worst_x << std::defaultfloat << "): got "
                                  << k.Run(kind + c.op, {worst_x})[0] << ", want " << Reference(c.op, worst_x);
    }
  }
}

// ---------------------------------------------------------------- tests

TEST(FastMathTest, AccuracyOnTheHostCpu) { CheckAccuracy(CpuTarget::Host(), "host"); }

TEST(FastMathTest, AccuracyWithoutFma) {
  absl::StatusOr<CpuTarget> baseline = CpuTarget::Named("x86-64");
  ASSERT_TRUE(baseline.ok()) << baseline.status();
  CheckAccuracy(*baseline, "x86-64");
}

// AVX2 with FMA and without vscalefps (8-lane registers): the code a Haswell-class machine
// runs, between the host's AVX-512 and baseline x86-64.
TEST(FastMathTest, AccuracyOnAvx2) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "the host has no AVX2 / FMA";
  absl::StatusOr<CpuTarget> avx2 = CpuTarget::Named("haswell");
  ASSERT_TRUE(avx2.ok()) << avx2.status();
  CheckAccuracy(*avx2, "haswell");
}

TEST(FastMathTest, SpecialValuesAreExact) {
  Compiled k(MathKernels(Ops()), CpuTarget::Host());
  auto run = [&](const std::string& op, float x) {
    float s = k.Run("s_" + op, {x})[0];
    std::vector<float> v = k.Run("v_" + op, std::vector<float>(kLanes, x));
    for (float lane : v) EXPECT_EQ(std::memcmp(&lane, &s, sizeof s), 0) << op << "(" << x << "): lanes differ";
    return s;
  };
  EXPECT_EQ(run("exp", INFINITY), INFINITY);
  EXPECT_EQ(run("exp", -INFINITY), 0.0f);
  EXPECT_EQ(run("exp", 89.0f), INFINITY);
  EXPECT_EQ(run("exp", 88.72284f), INFINITY);  // just above ln(FLT_MAX)
  EXPECT_EQ(run("exp", 88.72283f), std::exp(88.72283f));
  EXPECT_EQ(run("exp", -104.0f), 0.0f);
  EXPECT_EQ(run("exp", -1000.0f), 0.0f);
  EXPECT_EQ(run("exp", 0.0f), 1.0f);
  EXPECT_EQ(run("exp", -0.0f), 1.0f);
  EXPECT_EQ(run("exp", -103.0f), std::exp(-103.0f));  // a denormal, correctly rounded
  EXPECT_EQ(run("erf", INFINITY), 1.0f);
  EXPECT_EQ(run("erf", -INFINITY), -1.0f);
  EXPECT_EQ(run("erf", 4.0f), 1.0f);
  EXPECT_EQ(run("erf", -1e30f), -1.0f);
  EXPECT_EQ(run("tanh", INFINITY), 1.0f);
  EXPECT_EQ(run("tanh", -INFINITY), -1.0f);
  EXPECT_EQ(run("tanh", -50.0f), -1.0f);
  EXPECT_EQ(run("sigmoid", INFINITY), 1.0f);
  EXPECT_EQ(run("sigmoid", -INFINITY), 0.0f);
  EXPECT_EQ(run("sigmoid", 0.0f), 0.5f);
  EXPECT_EQ(run("log", 1.0f), 0.0f);
  EXPECT_EQ(run("log", 0.0f), -INFINITY);
  EXPECT_EQ(run("log", -0.0f), -INFINITY);
  EXPECT_EQ(run("log", INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(run("log", -1.0f)));
  EXPECT_TRUE(std::isnan(run("log", -INFINITY)));
  for (const std::string& op : Ops()) {
    EXPECT_TRUE(std::isnan(run(op, NAN))) << op;
    EXPECT_TRUE(std::isnan(run(op, -NAN))) << op;
  }
  EXPECT_EQ(run("expm1", INFINITY), INFINITY);
  EXPECT_EQ(run("expm1", -INFINITY), -1.0f);
  EXPECT_EQ(run("log1p", -1.0f), -INFINITY);
  EXPECT_EQ(run("log1p", INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(run("log1p", -2.0f)));
  for (const char* op : {"sin", "cos", "tan"}) {
    EXPECT_TRUE(std::isnan(run(op, INFINITY))) << op;
    EXPECT_TRUE(std::isnan(run(op, -INFINITY))) << op;
  }
  EXPECT_EQ(run("cos", 0.0f), 1.0f);
  EXPECT_EQ(run("atan", INFINITY), static_cast<float>(M_PI / 2));
  EXPECT_EQ(run("atan", -INFINITY), static_cast<float>(-M_PI / 2));
  EXPECT_EQ(run("acos", -1.0f), static_cast<float>(M_PI));
  EXPECT_EQ(run("acos", 1.0f), 0.0f);
  EXPECT_TRUE(std::isnan(run("asin", 1.0000001f)));
  EXPECT_TRUE(std::isnan(run("acos", -1.0000001f)));
  EXPECT_EQ(run("sinh", INFINITY), INFINITY);
  EXPECT_EQ(run("sinh", -INFINITY), -INFINITY);
  EXPECT_EQ(run("sinh", 89.5f), INFINITY);
  EXPECT_EQ(run("cosh", -INFINITY), INFINITY);
  EXPECT_EQ(run("cosh", -89.5f), INFINITY);
  EXPECT_EQ(run("asinh", -INFINITY), -INFINITY);
  EXPECT_EQ(run("acosh", 1.0f), 0.0f);
  EXPECT_EQ(run("acosh", INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(run("acosh", 0.5f)));
  EXPECT_EQ(run("atanh", 1.0f), INFINITY);
  EXPECT_EQ(run("atanh", -1.0f), -INFINITY);
  EXPECT_TRUE(std::isnan(run("atanh", 1.5f)));
  // Odd functions keep the sign of zero.
  for (const char* op : {"erf", "tanh", "expm1", "log1p", "sin", "tan", "asin", "atan", "sinh", "asinh", "atanh"}) {
    EXPECT_TRUE(std::signbit(run(op, -0.0f)) && run(op, -0.0f) == 0.0f) << op;
    EXPECT_FALSE(std::signbit(run(op, 0.0f))) << op;
  }
}

TEST(FastMathTest, VectorLoopsCallNoLibm) {
  // The optimized IR of the SIMD kernels keeps the math in vector registers: no call to a
  // scalar libm function or to llvm.exp (which LLVM would expand into per-lane expf calls).
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr(MathKernels(Ops()), CpuTarget::Host(), /*optimize=*/true);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_THAT(*ir, HasSubstr("<16 x float>"));
  for (const char* fn : {"@expf", "@erff", "@tanhf", "@logf", "@llvm.exp.", "@llvm.log.", "@llvm.sin.", "@llvm.cos.",
                         "@sinf", "@cosf", "@tanf", "@asinf", "@acosf", "@atanf", "@sinhf", "@coshf", "@asinhf",
                         "@acoshf", "@atanhf", "@log1pf", "@expm1f", "@floor", "@llvm.floor.", "@llvm.roundeven."}) {
    EXPECT_THAT(*ir, Not(HasSubstr(fn))) << fn;
  }
  // The object itself: no undefined libm symbols (the shared object links with -lm, so this
  // checks the generated code, by name, in the ELF's dynamic symbol strings).
  absl::StatusOr<std::string> so = BuildCpuSharedObject(MathKernels(Ops()), CpuTarget::Host());
  ASSERT_TRUE(so.ok()) << so.status();
  for (const char* sym : {"expf", "erff", "tanhf", "logf", "sinf", "cosf", "tanf", "asinf", "acosf", "atanf", "sinhf",
                          "coshf", "asinhf", "acoshf", "atanhf", "log1pf", "expm1f"}) {
    EXPECT_EQ(so->find(std::string(sym) + '\0'), std::string::npos) << sym;
  }
}

// On AVX-512 the vector exp (and tanh, sigmoid, expm1 through it) scales by 2^k with
// vscalefps (one rounding) instead of two
// exponent-field factors: the same bits, checked against the scalar kernel (which keeps the
// factors) over the whole input set, the denormal results included. An AVX-512 target's IR
// calls the instruction's intrinsic, an AVX2 target's does not.
TEST(FastMathTest, ExpVectorsGiveTheScalarBitsWithOrWithoutScalef) {
  absl::StatusOr<CpuTarget> avx512 = CpuTarget::Named("skylake-avx512");
  absl::StatusOr<CpuTarget> avx2 = CpuTarget::Named("haswell");
  ASSERT_TRUE(avx512.ok() && avx2.ok());
  absl::StatusOr<std::string> ir512 = DumpCpuLlvmIr(MathKernels({"exp"}), *avx512, /*optimize=*/true);
  absl::StatusOr<std::string> ir2 = DumpCpuLlvmIr(MathKernels({"exp"}), *avx2, /*optimize=*/true);
  ASSERT_TRUE(ir512.ok() && ir2.ok());
  EXPECT_THAT(*ir512, HasSubstr("@llvm.x86.avx512.mask.scalef.ps.512"));
  EXPECT_THAT(*ir2, Not(HasSubstr("scalef")));

  // tanh, sigmoid and expm1 compute an exp inside, erf a 2^k of its own (a shift, on every
  // target): the same bits there too.
  const std::vector<std::string> ops = {"exp", "erf", "tanh", "sigmoid", "expm1"};
  Compiled k(MathKernels(ops), CpuTarget::Host());
  std::vector<float> in = Inputs(-110.0f, 95.0f, {-87.33654f, -103.27893f, -103.97208f, 88.7228391f});
  in.resize(in.size() / kLanes * kLanes);  // every input through the 16-lane loop
  for (const std::string& op : ops) {
    std::vector<float> scalar = k.Run("s_" + op, in);
    std::vector<float> vector = k.Run("v_" + op, in);
    int differ = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (std::memcmp(&scalar[i], &vector[i], sizeof(float)) != 0 && ++differ <= 5) {
        ADD_FAILURE() << op << "(" << in[i] << "): scalar " << scalar[i] << ", vector " << vector[i];
      }
    }
    EXPECT_EQ(differ, 0) << op;
  }
}

TEST(FastMathTest, Float16GoesThroughFloat32) {
  // out[i] = float32(op(float16(A[i]))), scalar and 16 lanes: float16 math is computed in
  // float32, so the result is the exact value rounded to half precision.
  NamedPrimFuncs funcs;
  for (const std::string& op : Ops()) {
    for (bool vector : {false, true}) {
      Var n = Var::Shape("n");
      Buffer a("A", DataType::Float32(), {n});
      Buffer out("out", DataType::Float32(), {n});
      auto f = [&](PrimExpr v) { return Cast(DataType::Float32(), Call(op, {Cast(DataType::Float(16), v)})); };
      Var io("io"), ii("ii"), i("i");
      PrimExpr idx = io * kLanes + ii;
      Stmt body = vector ? For(io, 0, FloorDiv(PrimExpr(n), PrimExpr(kLanes)), ForKind::kSerial,
                               For(ii, 0, kLanes, ForKind::kVectorized, BufferStore(out, f(a.Load({idx})), {idx})))
                         : For(i, 0, n, ForKind::kSerial, BufferStore(out, f(a.Load({i})), {i}));
      funcs.push_back({(vector ? "v_" : "s_") + op, PrimFunc({{a, Var()}, {out, Var()}}, body)});
    }
  }
  Compiled k(funcs, CpuTarget::Host());
  std::vector<float> in;
  for (int i = -512; i < 512; ++i) in.push_back(static_cast<float>(i) / 64);  // exact in half
  for (const std::string& op : Ops()) {
    for (const char* kind : {"s_", "v_"}) {
      std::vector<float> out = k.Run(kind + op, in);
      for (size_t i = 0; i < in.size(); ++i) {
        double want = Reference(op, in[i]);
        if (std::isnan(want) || std::isinf(want)) {
          EXPECT_TRUE(std::isnan(want) ? std::isnan(out[i]) : out[i] == want) << kind << op << "(" << in[i] << ")";
          continue;
        }
        // Half rounding: 2^-11 relative, or half the smallest normal half spacing.
        EXPECT_LE(std::fabs(out[i] - want), std::max(std::fabs(want) * 0x1p-11, 0x1p-25) * 1.01)
            << kind << op << "(" << in[i] << ")";
      }
    }
  }
}

TEST(FastMathTest, TransformerBlockKernelsCallNoLibm) {
  // The bundled transformer block's gelu (erf) and softmax (exp) kernels, as the pipeline
  // schedules them: the executable's kernel object imports none of libm's float functions.
  const std::string root = kiln::test::SourceDir();
  absl::StatusOr<std::string> text = support::ReadFile(std::string(root) + "/examples/models/transformer_block.kir");
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(*text, "transformer_block.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, relax::PipelineOptions(), &parsed->locations);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<std::string> bytes = BuildExecutable(*lowered, CpuTarget::Host());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  for (const char* sym : {"expf", "erff", "tanhf", "logf", "sinf", "cosf", "tanf", "asinf", "acosf", "atanf", "sinhf",
                          "coshf", "asinhf", "acoshf", "atanhf", "log1pf", "expm1f"}) {
    EXPECT_EQ(bytes->find(std::string(sym) + '\0'), std::string::npos) << sym;
  }
}

}  // namespace
}  // namespace kiln::codegen
