// Relax modules with call_tir to hand-written PrimFuncs, compiled through the pipeline and
// BuildExecutable to .kx bytes, loaded and run by the VM; results are checked against
// naive loops written here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace kiln::codegen {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::shared_ptr<const vm::Executable>> Compile(const std::string& text) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, "test.kir");
  if (!parsed.ok()) return parsed.status();
  relax::PipelineOptions options;
  options.check_well_formed = true;
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, options, &parsed->locations);
  if (!lowered.ok()) return lowered.status();
  absl::StatusOr<std::string> bytes = BuildExecutable(*lowered, CpuTarget::Host());
  if (!bytes.ok()) return bytes.status();
  return vm::Executable::Load(*bytes, builtins::DefaultRegistry());
}

std::shared_ptr<const vm::Executable> MustCompile(const std::string& text) {
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = Compile(text);
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? *exe : nullptr;
}

vm::Tensor Random(std::vector<int64_t> shape, uint32_t seed) {
  vm::Tensor t = *vm::Tensor::Empty(shape, vm::DTypeFloat32());
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data_as<float>()[i] = static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 250.0f;
  }
  return t;
}

std::vector<float> Data(const vm::Tensor& t) { return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel()); }

constexpr char kAddKernel[] = R"(
  prim_func @add_kernel(A: Buffer((n, 4), float32), B: Buffer((n, 4), float32), C: Buffer((n, 4), float32)) where n <= 65536 {
    for i in parallel(0, n) {
      for j in vectorized(0, 4) {
        block "C" {
          vi = spatial(n, i)
          vj = spatial(4, j)
          C[vi, vj] = A[vi, vj] + B[vi, vj]
        }
      }
    }
  }
)";

TEST(VmCodegenTest, ElementwiseAddOverSymbolicRows) {
  auto exe = MustCompile(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32), y: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) where n <= 65536 {
    dataflow {
      gv: Tensor((n, 4), float32) = R.call_tir(@add_kernel, (x, y), out_sinfo=Tensor((n, 4), float32))
    }
    return gv
  }
)") + kAddKernel + "}\n");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  for (int64_t n : {1, 7, 300}) {
    vm::Tensor x = Random({n, 4}, 1), y = Random({n, 4}, 2);
    absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x), vm::Value(y)});
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->as_tensor().shape(), (std::vector<int64_t>{n, 4}));
    std::vector<float> got = Data(r->as_tensor());
    for (int64_t i = 0; i < n * 4; ++i) ASSERT_EQ(got[i], x.data_as<float>()[i] + y.data_as<float>()[i]) << i;
  }
  // A wrong input shape is the VM's signature error, naming parameter, dimension and variable.
  absl::StatusOr<vm::Value> bad = machine.Invoke("main", {vm::Value(Random({7, 4}, 1)), vm::Value(Random({8, 4}, 2))});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("function 'main' parameter 'y' dimension 0 (n): expected 7"));
  absl::StatusOr<vm::Value> bad_rank = machine.Invoke("main", {vm::Value(Random({7}, 1)), vm::Value(Random({7, 4}, 2))});
  ASSERT_FALSE(bad_rank.ok());
  EXPECT_THAT(std::string(bad_rank.status().message()), HasSubstr("parameter 'x'"));
}

TEST(VmCodegenTest, MatmulWithReductionBlock) {
  auto exe = MustCompile(R"(module {
  func @main(a: Tensor((m, 16), float32), b: Tensor((16, 8), float32)) -> Tensor((m, 8), float32) {
    gv = R.call_tir(@matmul, (a, b), out_sinfo=Tensor((m, 8), float32))
    return gv
  }
  prim_func @matmul(A: Buffer((m, 16), float32), B: Buffer((16, 8), float32), C: Buffer((m, 8), float32)) {
    for io in serial(0, floordiv(m + 31, 32)) {
      for ii in serial(0, 32) {
        for j in serial(0, 8) {
          for k in serial(0, 16) {
            block "C" {
              vi = spatial(m, io * 32 + ii)
              vj = spatial(8, j)
              vk = reduce(16, k)
              where io * 32 + ii < m
              init {
                C[vi, vj] = 0.0
              }
              C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
            }
          }
        }
      }
    }
  }
})");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  for (int64_t m : {1, 7, 300}) {
    vm::Tensor a = Random({m, 16}, 3), b = Random({16, 8}, 4);
    absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(a), vm::Value(b)});
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->as_tensor().shape(), (std::vector<int64_t>{m, 8}));
    std::vector<float> got = Data(r->as_tensor());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < 8; ++j) {
        double want = 0;
        for (int64_t k = 0; k < 16; ++k) want += double(a.data_as<float>()[i * 16 + k]) * b.data_as<float>()[k * 8 + j];
        ASSERT_NEAR(got[i * 8 + j], want, 1e-3) << i << "," << j;
      }
    }
  }
}

// match_cast binds n from a rank-only parameter; outputs of n + 1 and 2 * n elements are
// allocated from IntOps on the bound register; the result is a tuple.
TEST(VmCodegenTest, MatchCastSymbolicOutputShapesAndTupleReturn) {
  auto exe = MustCompile(R"(module {
  func @main(x: Tensor(ndim=1, float32)) -> Tuple(Tensor(ndim=1, float32), Tensor(ndim=1, float32)) {
    y: Tensor((n,), float32) = match_cast(x, Tensor((n,), float32))
    z = R.call_tir(@pad1, (y,), out_sinfo=Tensor((n + 1,), float32))
    w = R.call_tir(@concat, (y, z), out_sinfo=Tensor((2 * n + 1,), float32))
    t = (z, w)
    return t
  }
  prim_func @pad1(A: Buffer((n,), float32), B: Buffer((n + 1,), float32)) {
    for i in serial(0, n + 1) {
      if i < n {
        B[i] = A[i]
      } else {
        B[i] = 0.5
      }
    }
  }
  prim_func @concat(A: Buffer((n,), float32), B: Buffer((n + 1,), float32), C: Buffer((2 * n + 1,), float32)) {
    for i in serial(0, 2 * n + 1) {
      if i < n {
        C[i] = A[i]
      } else {
        C[i] = B[i - n]
      }
    }
  }
})");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  for (int64_t n : {1, 7, 300}) {
    vm::Tensor x = Random({n}, 5);
    absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x)});
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->kind(), vm::Value::Kind::kTuple);
    const vm::Tensor& z = r->as_tuple()[0].as_tensor();
    const vm::Tensor& w = r->as_tuple()[1].as_tensor();
    ASSERT_EQ(z.shape(), (std::vector<int64_t>{n + 1}));
    ASSERT_EQ(w.shape(), (std::vector<int64_t>{2 * n + 1}));
    std::vector<float> want_z(x.data_as<float>(), x.data_as<float>() + n);
    want_z.push_back(0.5f);
    std::vector<float> want_w(x.data_as<float>(), x.data_as<float>() + n);
    want_w.insert(want_w.end(), want_z.begin(), want_z.end());
    EXPECT_EQ(Data(z), want_z);
    EXPECT_EQ(Data(w), want_w);
  }
  absl::StatusOr<vm::Value> bad = machine.Invoke("main", {vm::Value(Random({2, 2}, 1))});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("parameter 'x'"));
}

TEST(VmCodegenTest, CompoundDimensionsAreCheckedAtRunTime) {
  auto exe = MustCompile(R"(module {
  func @main(x: Tensor((n,), float32), z: Tensor((n + 1,), float32), w: Tensor(ndim=1, float32)) -> Tensor((2 * n + 1,), float32) {
    v: Tensor((2 * n + 1,), float32) = match_cast(w, Tensor((2 * n + 1,), float32))
    r = R.call_tir(@concat, (x, z), out_sinfo=Tensor((2 * n + 1,), float32))
    return r
  }
  prim_func @concat(A: Buffer((n,), float32), B: Buffer((n + 1,), float32), C: Buffer((2 * n + 1,), float32)) {
    for i in serial(0, 2 * n + 1) {
      if i < n {
        C[i] = A[i]
      } else {
        C[i] = B[i - n]
      }
    }
  }
})");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  absl::StatusOr<vm::Value> ok = machine.Invoke("main", {vm::Value(Random({3}, 1)), vm::Value(Random({4}, 2)), vm::Value(Random({7}, 3))});
  ASSERT_TRUE(ok.ok()) << ok.status();
  absl::StatusOr<vm::Value> bad_param = machine.Invoke("main", {vm::Value(Random({3}, 1)), vm::Value(Random({5}, 2)), vm::Value(Random({7}, 3))});
  ASSERT_FALSE(bad_param.ok());
  EXPECT_THAT(std::string(bad_param.status().message()), HasSubstr("parameter 'z' dimension 0 (n + 1): expected 4"));
  absl::StatusOr<vm::Value> bad_cast = machine.Invoke("main", {vm::Value(Random({3}, 1)), vm::Value(Random({4}, 2)), vm::Value(Random({8}, 3))});
  ASSERT_FALSE(bad_cast.ok());
  EXPECT_THAT(std::string(bad_cast.status().message()), HasSubstr("match_cast 'v' dimension 0 (2 * n + 1): expected 7"));
}

TEST(VmCodegenTest, IfOnABoolParameterAndOnASymbolicComparison) {
  auto exe = MustCompile(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32), flag: Prim(bool)) -> Tensor((n, 4), float32) {
    r: Tensor((n, 4), float32) = if flag {
      a = R.call_tir(@add_kernel, (x, x), out_sinfo=Tensor((n, 4), float32))
      yield a
    } else {
      yield x
    }
    big = R.prim(n > 5)
    s: Tensor((n, 4), float32) = if big {
      b = R.call_tir(@add_kernel, (r, x), out_sinfo=Tensor((n, 4), float32))
      yield b
    } else {
      yield r
    }
    return s
  }
)") + kAddKernel + "}\n");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  for (int64_t n : {1, 7, 300}) {
    for (bool flag : {false, true}) {
      vm::Tensor x = Random({n, 4}, 6);
      absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x), vm::Value(flag)});
      ASSERT_TRUE(r.ok()) << r.status();
      std::vector<float> got = Data(r->as_tensor());
      for (int64_t i = 0; i < n * 4; ++i) {
        float v = x.data_as<float>()[i];
        float want = flag ? v + v : v;
        if (n > 5) want = want + v;
        ASSERT_EQ(got[i], want) << "n=" << n << " flag=" << flag << " i=" << i;
      }
    }
  }
}

// A tuple parameter's fields bind their symbolic dims and are checked against each other
// (kiln compile failed with "symbolic variable 'n' is not bound here"); a nested tuple too.
TEST(VmCodegenTest, TupleParameterFieldsBindAndCheckSymbolicDims) {
  auto exe = MustCompile(std::string(R"(module {
  func @main(t: Tuple(Tensor((n, 4), float32), Tuple(Tensor((n, 4), float32), Shape((m,))))) -> Tensor((n, 4), float32) {
    a = t[0]
    inner = t[1]
    b = inner[0]
    c = R.call_tir(@add_kernel, (a, b), out_sinfo=Tensor((n, 4), float32))
    return c
  }
)") + kAddKernel + "}\n");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  auto tuple = [](vm::Tensor a, vm::Tensor b) {
    return vm::Value::FromTuple({vm::Value(a), vm::Value::FromTuple({vm::Value(b), vm::Value::FromShape({2})})});
  };
  vm::Tensor x = Random({5, 4}, 1), y = Random({5, 4}, 2);
  absl::StatusOr<vm::Value> r = machine.Invoke("main", {tuple(x, y)});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<float> c = Data(r->as_tensor());
  for (int64_t i = 0; i < 20; ++i) ASSERT_EQ(c[i], x.data_as<float>()[i] + y.data_as<float>()[i]);
  absl::StatusOr<vm::Value> bad = machine.Invoke("main", {tuple(x, Random({6, 4}, 3))});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("parameter 't' field 1 field 0 dimension 0 (n): expected 5"));
  absl::StatusOr<vm::Value> bad_width = machine.Invoke("main", {tuple(Random({5, 3}, 4), y)});
  ASSERT_FALSE(bad_width.ok());
  EXPECT_THAT(std::string(bad_width.status().message()), HasSubstr("parameter 't' field 0 dimension 1: expected 4"));
  // A field missing is named at the call, not at the first use of the field.
  absl::StatusOr<vm::Value> short_inner =
      machine.Invoke("main", {vm::Value::FromTuple({vm::Value(x), vm::Value::FromTuple({vm::Value(y)})})});
  ASSERT_FALSE(short_inner.ok());
  EXPECT_THAT(std::string(short_inner.status().message()),
              HasSubstr("parameter 't' field 1: expected a tuple of 2, got tuple of 1"));
}

// match_cast to a Tuple checks the value is a tuple of that many fields and matches the
// fields as a tuple parameter's (VM codegen refused it: "match_cast to Tuple(...) is not
// supported by VM codegen yet").
TEST(VmCodegenTest, MatchCastToATupleChecksItsFieldsAndBindsTheirDims) {
  auto exe = MustCompile(std::string(R"(module {
  func @main(o: Object) -> Tensor(ndim=2, float32) {
    t: Tuple(Tensor((n, 4), float32), Tensor((n, 4), float32)) = match_cast(o, Tuple(Tensor((n, 4), float32), Tensor((n, 4), float32)))
    a = t[0]
    b = t[1]
    c = R.call_tir(@add_kernel, (a, b), out_sinfo=Tensor((n, 4), float32))
    return c
  }
)") + kAddKernel + "}\n");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  vm::Tensor x = Random({5, 4}, 1), y = Random({5, 4}, 2);
  absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value::FromTuple({vm::Value(x), vm::Value(y)})});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<float> c = Data(r->as_tensor());
  for (int64_t i = 0; i < 20; ++i) ASSERT_EQ(c[i], x.data_as<float>()[i] + y.data_as<float>()[i]);
  auto error = [&](vm::Value arg) {
    absl::StatusOr<vm::Value> bad = machine.Invoke("main", {std::move(arg)});
    return bad.ok() ? std::string("ok") : std::string(bad.status().message());
  };
  EXPECT_THAT(error(vm::Value::FromTuple({vm::Value(x)})), HasSubstr("match_cast 't': expected a tuple of 2, got tuple of 1"));
  EXPECT_THAT(error(vm::Value(x)), HasSubstr("match_cast 't': expected a tuple of 2, got tensor float32[5, 4]"));
  EXPECT_THAT(error(vm::Value::FromTuple({vm::Value(x), vm::Value(Random({6, 4}, 3))})),
              HasSubstr("match_cast 't' field 1 dimension 0 (n): expected 5"));
}

// match_cast to a Func checks the value is a closure taking that many arguments (VM codegen
// refused it: "match_cast to Func(...) is not supported by VM codegen yet"); the arguments'
// and result's struct info are checked when it is called. A Func field of a Tuple match too.
TEST(VmCodegenTest, MatchCastToAFuncChecksItIsAClosureOfThatArity) {
  auto exe = MustCompile(std::string(R"(module {
  func @double(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    y = R.call_tir(@add_kernel, (x, x), out_sinfo=Tensor((n, 4), float32))
    return y
  }
  func @add(x: Tensor((n, 4), float32), y: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    z = R.call_tir(@add_kernel, (x, y), out_sinfo=Tensor((n, 4), float32))
    return z
  }
  func @main(o: Object, x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    f = match_cast(o, Func([Tensor((m, 4), float32)] -> Tensor((m, 4), float32)))
    y = f(x)
    return y
  }
  func @pair(o: Object, x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    t = match_cast(o, Tuple(Func([Tensor((m, 4), float32)] -> Tensor((m, 4), float32)), Func(... -> Object)))
    f = t[0]
    y = f(x)
    return y
  }
)") + kAddKernel + "}\n");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  vm::Tensor x = Random({3, 4}, 1);
  absl::StatusOr<vm::Value> twice = machine.MakeClosure("double", {});
  absl::StatusOr<vm::Value> add = machine.MakeClosure("add", {});
  absl::StatusOr<vm::Value> add_x = machine.MakeClosure("add", {vm::Value(x)});
  ASSERT_TRUE(twice.ok() && add.ok() && add_x.ok());
  auto run = [&](const char* fn, vm::Value o) -> std::string {
    absl::StatusOr<vm::Value> r = machine.Invoke(fn, {std::move(o), vm::Value(x)});
    if (!r.ok()) return std::string(r.status().message());
    std::vector<float> y = Data(r->as_tensor());
    for (int64_t i = 0; i < 12; ++i) {
      if (y[i] != 2 * x.data_as<float>()[i]) return "wrong values";
    }
    return "ok";
  };
  EXPECT_EQ(run("main", *twice), "ok");
  EXPECT_EQ(run("main", *add_x), "ok");  // add with x captured takes one argument
  EXPECT_THAT(run("main", *add), HasSubstr("match_cast 'f': expected a function of 1 argument, got 'add', which takes 2"));
  EXPECT_THAT(run("main", vm::Value(x)), HasSubstr("match_cast 'f': expected a function (closure), got tensor float32[3, 4]"));
  EXPECT_EQ(run("pair", vm::Value::FromTuple({*twice, *add})), "ok");  // Func(... -> Object): any closure
  EXPECT_THAT(run("pair", vm::Value::FromTuple({*add, *add})),
              HasSubstr("match_cast 't' field 0: expected a function of 1 argument, got 'add', which takes 2"));
  EXPECT_THAT(run("pair", vm::Value::FromTuple({*twice, vm::Value(x)})),
              HasSubstr("match_cast 't' field 1: expected a function (closure), got tensor"));
}

TEST(VmCodegenTest, CallsAnotherRelaxFunctionWithTuplesAndConstants) {
  auto exe = MustCompile(std::string(R"(module {
  func @double(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    y = R.call_tir(@add_kernel, (x, x), out_sinfo=Tensor((n, 4), float32))
    return y
  }
  func @main(x: Tensor((n, 4), float32), y: Tensor((n, 4), float32)) -> Tuple(Tensor((n, 4), float32), Tensor((n, 4), float32)) {
    a = @double(x)
    t = (a, y)
    b = t[1]
    c = R.call_tir(@add_kernel, (a, b), out_sinfo=Tensor((n, 4), float32))
    k = R.const(float32, [1, 4], [1.0, 2.0, 3.0, 4.0])
    d = R.call_tir(@add_row, (c, k), out_sinfo=Tensor((n, 4), float32))
    out = (d, a)
    return out
  }
  prim_func @add_row(A: Buffer((n, 4), float32), B: Buffer((1, 4), float32), C: Buffer((n, 4), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 4) {
        C[i, j] = A[i, j] + B[0, j]
      }
    }
  }
)") + kAddKernel + "}\n");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  for (int64_t n : {1, 7, 300}) {
    vm::Tensor x = Random({n, 4}, 7), y = Random({n, 4}, 8);
    absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x), vm::Value(y)});
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<float> d = Data(r->as_tuple()[0].as_tensor()), a = Data(r->as_tuple()[1].as_tensor());
    for (int64_t i = 0; i < n * 4; ++i) {
      float xv = x.data_as<float>()[i], yv = y.data_as<float>()[i];
      ASSERT_EQ(a[i], xv + xv);
      ASSERT_EQ(d[i], (xv + xv + yv) + static_cast<float>(i % 4 + 1));
    }
  }
}

// A symbolic scalar parameter reaches a kernel's scalar argument through tir_vars, and an
// output shape computed from it.
TEST(VmCodegenTest, SymbolicScalarParameterAndTirVars) {
  auto exe = MustCompile(R"(module {
  func @main(x: Tensor((n,), float32), k: Prim(int64, value=k)) -> Tensor((n + k,), float32) {
    y = R.call_tir(@scale, (x,), R.shape([k]), out_sinfo=Tensor((n + k,), float32))
    return y
  }
  prim_func @scale(A: Buffer((n,), float32), B: Buffer((n + k,), float32), k: int64) {
    for i in serial(0, n + k) {
      if i < n {
        B[i] = A[i] * cast(float32, k)
      } else {
        B[i] = cast(float32, i)
      }
    }
  }
})");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  for (int64_t n : {1, 7, 300}) {
    for (int64_t k : {0, 3}) {
      vm::Tensor x = Random({n}, 11);
      absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x), vm::Value(k)});
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->as_tensor().shape(), (std::vector<int64_t>{n + k}));
      std::vector<float> got = Data(r->as_tensor());
      for (int64_t i = 0; i < n + k; ++i) {
        float want = i < n ? x.data_as<float>()[i] * static_cast<float>(k) : static_cast<float>(i);
        ASSERT_EQ(got[i], want) << "n=" << n << " k=" << k << " i=" << i;
      }
    }
  }
}

// reshape (a view through kiln.reshape) and a condition using && || ! on symbolic values.
TEST(VmCodegenTest, ReshapeViewAndLogicalSymbolicCondition) {
  auto exe = MustCompile(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n * 4,), float32) {
    c = R.prim(n > 2 && !(n == 5) || n == 1)
    flat = R.reshape(x, R.shape([n * 4]))
    r: Tensor((n * 4,), float32) = if c {
      y = R.call_tir(@neg, (flat,), out_sinfo=Tensor((n * 4,), float32))
      yield y
    } else {
      yield flat
    }
    return r
  }
  prim_func @neg(A: Buffer((m,), float32), B: Buffer((m,), float32)) {
    for i in serial(0, m) {
      B[i] = 0.0 - A[i]
    }
  }
})");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  for (int64_t n : {1, 2, 5, 7, 300}) {
    vm::Tensor x = Random({n, 4}, 12);
    absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x)});
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->as_tensor().shape(), (std::vector<int64_t>{n * 4}));
    bool negate = (n > 2 && n != 5) || n == 1;
    std::vector<float> got = Data(r->as_tensor());
    for (int64_t i = 0; i < n * 4; ++i) ASSERT_EQ(got[i], negate ? -x.data_as<float>()[i] : x.data_as<float>()[i]) << n;
  }
}

TEST(VmCodegenTest, RegistersAreKilledAfterTheirLastUse) {
  auto exe = MustCompile(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    a = R.call_tir(@add_kernel, (x, x), out_sinfo=Tensor((n, 4), float32))
    b = R.call_tir(@add_kernel, (a, a), out_sinfo=Tensor((n, 4), float32))
    c = R.call_tir(@add_kernel, (b, b), out_sinfo=Tensor((n, 4), float32))
    return c
  }
)") + kAddKernel + "}\n");
  ASSERT_NE(exe, nullptr);
  int kills = 0;
  for (const vm::Instruction& in : exe->contents().functions[0].code) kills += in.op == vm::Opcode::kKill;
  EXPECT_GE(kills, 3);  // x, a, b (and the allocations' own registers)
  vm::VirtualMachine machine(exe);
  vm::Tensor x = Random({3, 4}, 9);
  absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x)});
  ASSERT_TRUE(r.ok()) << r.status();
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(r->as_tensor().data_as<float>()[i], x.data_as<float>()[i] * 8);
}

// The memory-planning ops, written by hand: AllocStorage / AllocTensor instructions, a
// tensor placed at a symbolic byte offset, and the storage register released after its
// last use while the tensor (which keeps the memory alive) is returned.
TEST(VmCodegenTest, StorageOpsBecomeAllocStorageAndAllocTensor) {
  const std::string text = std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    s = R.alloc_storage(R.prim(n * 32))
    t = R.storage_tensor(s, R.prim(n * 16), R.shape([n, 4]), dtype=float32)
    y = R.call_tir_dps(@add_kernel, (x, x), (t,))
    return y
  }
  func @too_small(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    s = R.alloc_storage(R.prim(n * 16 - 4))
    t = R.storage_tensor(s, R.prim(0), R.shape([n, 4]), dtype=float32)
    y = R.call_tir_dps(@add_kernel, (x, x), (t,))
    return y
  }
)") + kAddKernel + "}\n";
  auto exe = MustCompile(text);
  ASSERT_NE(exe, nullptr);
  const vm::Function& fn = exe->contents().functions[0];
  int storage_reg = -1, storage_pc = -1, tensor_pc = -1, kill_pc = -1;
  for (size_t pc = 0; pc < fn.code.size(); ++pc) {
    const vm::Instruction& in = fn.code[pc];
    if (in.op == vm::Opcode::kAllocStorage) storage_reg = in.dst, storage_pc = static_cast<int>(pc);
    if (in.op == vm::Opcode::kAllocTensor) tensor_pc = static_cast<int>(pc);
    if (in.op == vm::Opcode::kKill && in.a == storage_reg) kill_pc = static_cast<int>(pc);
  }
  ASSERT_GE(storage_pc, 0);
  EXPECT_GT(tensor_pc, storage_pc);
  EXPECT_GT(kill_pc, tensor_pc) << "the storage register is released after its last use";
  vm::VirtualMachine machine(exe);
  vm::Tensor x = Random({5, 4}, 3);
  absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->as_tensor().shape(), (std::vector<int64_t>{5, 4}));
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(r->as_tensor().data_as<float>()[i], x.data_as<float>()[i] * 2);
  EXPECT_EQ(machine.storage_stats().storages, 1);
  EXPECT_EQ(machine.storage_stats().storage_bytes, 5 * 32);
  EXPECT_EQ(machine.storage_stats().tensor_bytes, 5 * 16);
  absl::StatusOr<vm::Value> bad = machine.Invoke("too_small", {vm::Value(x)});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("does not fit in storage of 76 bytes"));
}

TEST(VmCodegenTest, PrintBecomesABuiltinCall) {
  auto exe = MustCompile(R"(module {
  impure func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    y = R.print(x, R.prim(n), format="x = {}, n = {}")
    return x
  }
})");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  ::testing::internal::CaptureStdout();
  absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(Random({3, 4}, 1))});
  std::string printed = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(printed, "x = tensor float32[3, 4], n = int 3\n");
}

// A stateful builtin the tests register next to the default ones: it scales a tensor by an
// int and counts its calls in the object it is bound to.
class CallCounter final : public vm::TypedObject<CallCounter> {
 public:
  static constexpr char kTypeName[] = "test.call_counter";
  int64_t calls = 0;
};

absl::Status ScaleAndCount(vm::BuiltinContext& ctx, const vm::Value* const* args, int, vm::Value* result) {
  absl::StatusOr<CallCounter*> counter = ctx.state_as<CallCounter>();
  if (!counter.ok()) return counter.status();
  ++(*counter)->calls;
  const vm::Tensor& x = args[0]->as_tensor();
  absl::StatusOr<vm::Tensor> out = vm::Tensor::Empty(x.shape(), x.dtype(), ctx.device);
  if (!out.ok()) return out.status();
  for (int64_t i = 0; i < x.numel(); ++i) out->data_as<float>()[i] = x.data_as<float>()[i] * static_cast<float>(args[1]->as_int());
  *result = vm::Value(*out);
  return absl::OkStatus();
}

absl::Status CallsSoFar(vm::BuiltinContext& ctx, const vm::Value* const*, int, vm::Value* result) {
  absl::StatusOr<CallCounter*> counter = ctx.state_as<CallCounter>();
  if (!counter.ok()) return counter.status();
  *result = vm::Value((*counter)->calls);
  return absl::OkStatus();
}

// (closure, any...) -> any: runs a compiled function from inside a builtin, as a KV cache
// object runs attention kernels.
absl::Status Apply(vm::BuiltinContext& ctx, const vm::Value* const* args, int n, vm::Value* result) {
  std::vector<vm::Value> rest;
  for (int i = 1; i < n; ++i) rest.push_back(*args[i]);
  absl::StatusOr<vm::Value> r = ctx.vm->InvokeClosure(*args[0], rest.data(), rest.size());
  if (!r.ok()) return r.status();
  *result = *r;
  return absl::OkStatus();
}

vm::BuiltinRegistry TestRegistry(std::shared_ptr<CallCounter> counter, const char* scale_signature) {
  vm::BuiltinRegistry r;
  builtins::RegisterMemoryBuiltins(r);
  builtins::RegisterStructureBuiltins(r);
  builtins::RegisterTensorKernels(r);
  r.RegisterBuiltin("test.scale_and_count", scale_signature, ScaleAndCount, counter);
  r.RegisterBuiltin("test.calls_so_far", "() -> int", CallsSoFar, counter);
  r.RegisterBuiltin("test.apply", "(closure, any...) -> any", Apply);
  return r;
}

absl::StatusOr<std::string> CompileToBytes(const std::string& text) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, "test.kir");
  if (!parsed.ok()) return parsed.status();
  relax::PipelineOptions options;
  options.check_well_formed = true;
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, options, &parsed->locations);
  if (!lowered.ok()) return lowered.status();
  return BuildExecutable(*lowered, CpuTarget::Host());
}

constexpr char kCallBuiltinModule[] = R"(module {
  impure func @main(x: Tensor((n, 4), float32)) -> Tuple(Tensor((n, 4), float32), Prim(int64)) {
    y: Tensor((n, 4), float32) = R.call_builtin(R.extern("test.scale_and_count"), x, R.prim(3), out_sinfo=Tensor((n, 4), float32))
    z = R.add(y, x)
    w: Tensor((n, 4), float32) = R.call_builtin(R.extern("test.scale_and_count"), z, R.prim(n), out_sinfo=Tensor((n, 4), float32))
    c: Prim(int64) = R.call_builtin(R.extern("test.calls_so_far"), out_sinfo=Prim(int64))
    r = (w, c)
    return r
  }
})";

TEST(VmCodegenTest, CallBuiltinReachesABuiltinWithState) {
  absl::StatusOr<std::string> bytes = CompileToBytes(kCallBuiltinModule);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  // The signature recorded from the call's struct info.
  absl::StatusOr<vm::Executable::Contents> contents = vm::Executable::Decode(*bytes);
  ASSERT_TRUE(contents.ok());
  bool recorded = false;
  for (const vm::BuiltinDecl& b : contents->builtins) {
    if (b.name == "test.scale_and_count") recorded = b.signature == "(tensor, int) -> tensor";
  }
  EXPECT_TRUE(recorded);

  auto counter = std::make_shared<CallCounter>();
  vm::BuiltinRegistry registry = TestRegistry(counter, "(tensor, int) -> tensor");
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, registry);
  ASSERT_TRUE(exe.ok()) << exe.status();
  vm::VirtualMachine machine(*exe);
  for (int64_t n : {1, 5}) {
    vm::Tensor x = Random({n, 4}, 7);
    absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x)});
    ASSERT_TRUE(r.ok()) << r.status();
    const vm::Tensor& w = r->as_tuple()[0].as_tensor();
    for (int64_t i = 0; i < n * 4; ++i) {
      float v = x.data_as<float>()[i];
      ASSERT_EQ(w.data_as<float>()[i], (v * 3 + v) * static_cast<float>(n)) << i;
    }
    EXPECT_EQ(r->as_tuple()[1].as_int(), counter->calls);
  }
  EXPECT_EQ(counter->calls, 4);

  // A runtime whose builtin takes something else refuses the executable at load.
  vm::BuiltinRegistry other = TestRegistry(counter, "(tensor, tensor) -> tensor");
  absl::StatusOr<std::shared_ptr<const vm::Executable>> refused = vm::Executable::Load(*bytes, other);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "builtin 'test.scale_and_count' has signature (tensor, tensor) -> tensor in this runtime but the "
            "executable expects (tensor, int) -> tensor");
}

TEST(VmCodegenTest, FunctionsUsedAsValuesAndCalledBackFromABuiltin) {
  absl::StatusOr<std::string> bytes = CompileToBytes(R"(module {
  func @square(x: Tensor((n,), float32)) -> Tensor((n,), float32) {
    y = R.multiply(x, x)
    return y
  }

  func @twice(f: Func([Tensor((n,), float32)] -> Tensor((n,), float32)), x: Tensor((n,), float32)) -> Tensor((n,), float32) {
    a = f(x)
    b = f(a)
    return b
  }

  impure func @main(x: Tensor((n,), float32)) -> Tensor((n,), float32) {
    f = @square
    a = f(x)
    b = @twice(f, a)
    c: Tensor((n,), float32) = R.call_builtin(R.extern("test.apply"), f, b, out_sinfo=Tensor((n,), float32))
    return c
  }
})");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  vm::BuiltinRegistry registry = TestRegistry(std::make_shared<CallCounter>(), "(tensor, int) -> tensor");
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, registry);
  ASSERT_TRUE(exe.ok()) << exe.status();
  vm::VirtualMachine machine(*exe);
  vm::Tensor x = *vm::Tensor::Empty({6}, vm::DTypeFloat32());
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = 0.5f + 0.25f * static_cast<float>(i);
  absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x)});
  ASSERT_TRUE(r.ok()) << r.status();
  for (int i = 0; i < 6; ++i) {
    double v = 0.5 + 0.25 * i;
    EXPECT_FLOAT_EQ(r->as_tensor().data_as<float>()[i], static_cast<float>(std::pow(v, 16))) << i;
  }
}

TEST(VmCodegenTest, MatchCastOfACallDefinesSymbolsUsedLater) {
  auto exe = MustCompile(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor(ndim=1, float32) {
    flat: Tensor((m,), float32) = match_cast(R.reshape(x, R.shape([n * 4])), Tensor((m,), float32))
    big: Tensor((m,), float32) = if R.prim(m > 8) {
      doubled = R.add(flat, flat)
      yield doubled
    } else {
      yield flat
    }
    return big
  }
})");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  for (int64_t n : {2, 3}) {
    vm::Tensor x = Random({n, 4}, 5);
    absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x)});
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->as_tensor().shape(), (std::vector<int64_t>{n * 4}));
    float scale = n * 4 > 8 ? 2.0f : 1.0f;
    for (int64_t i = 0; i < n * 4; ++i) ASSERT_EQ(r->as_tensor().data_as<float>()[i], x.data_as<float>()[i] * scale);
  }
}

TEST(VmCodegenTest, APrimFuncUsedAsAValueIsAClearError) {
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = Compile(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Object {
    f = @add_kernel
    return f
  }
)") + kAddKernel + "}\n");
  ASSERT_FALSE(exe.ok());
  EXPECT_THAT(std::string(exe.status().message()),
              HasSubstr("binding 'f': @add_kernel is not a Relax function of the module, so it cannot be used as a value"));
}

}  // namespace
}  // namespace kiln::codegen
