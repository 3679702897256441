// Hand-built executables shared by the VM tests and tools tests.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "builtins/default_builtins.h"
#include "support/file_io.h"
#include "vm/executable.h"
#include "vm/executable_builder.h"

namespace kiln::vm::testing {

inline std::string TestKernelObject() {
  absl::StatusOr<std::string> bytes = support::ReadFile(KILN_TEST_KERNELS_PATH);
  return bytes.ok() ? *bytes : std::string();
}

// main(x: f32[n, 4], y: f32[n, 4]) -> f32[n, 4] = 3 * x + y through the C kernel `axpy`,
// with the output placed in planned storage of n * 16 bytes.
// sum_to(k: int) -> int = 0 + 1 + ... + k, as a loop of If/Goto.
// fib(k: int) -> int, recursive bytecode calls.
// add_lib(a: f32[m], b: f32[m]) -> f32[m] through the library kernel kiln.add_f32.
// pair(x: f32[n, 4]) -> tuple (row_sum(x) reshaped to [n, 1], shape_of(x)).
// add_weights(a: f32[128]) -> a + W with W[i] = i / 4, a constant large enough for the
// weights section (kSampleWeightsConstant is its index).
// get_weights() -> W itself.
// choose(flag: bool, a: int, b: int) -> flag ? a : b.
// identity(x) -> x, of any kind.
inline constexpr int32_t kSampleWeightsConstant = 0;
inline Tensor SampleWeights() {
  Tensor w = *Tensor::Empty({128}, DTypeFloat32());
  for (int i = 0; i < 128; ++i) w.data_as<float>()[i] = static_cast<float>(i) / 4;
  return w;
}

inline std::string BuildSampleExecutable() {
  ExecutableBuilder b;
  b.SetCpuObject(TestKernelObject());
  int32_t axpy = b.DeclareKernel("axpy", "ttti");
  int32_t row_sum = b.DeclareKernel("row_sum", "tt");
  int32_t add_lib = b.DeclareKernel("kiln.add_f32", "ttt", KernelDecl::Source::kLibrary);
  int32_t alloc = b.DeclareBuiltin("kiln.alloc_tensor", "(shape, int) -> tensor");
  int32_t tuple_make = b.DeclareBuiltin("kiln.tuple_make", "(any...) -> tuple");
  int32_t shape_of = b.DeclareBuiltin("kiln.shape_of", "(tensor) -> shape");
  int32_t reshape = b.DeclareBuiltin("kiln.reshape", "(tensor, shape) -> tensor");
  const DLDataType f32 = DTypeFloat32();
  int32_t weights = b.AddConstant(Value(SampleWeights()));

  {
    FunctionBuilder& f = b.AddFunction("main", {TensorParam("x", f32, {Dim::Sym("n"), Dim::Fixed(4)}),
                                                 TensorParam("y", f32, {Dim::Sym("n"), Dim::Fixed(4)})});
    int32_t bytes = f.NewRegister(), storage = f.NewRegister(), shape = f.NewRegister(), out = f.NewRegister();
    f.IntOp(bytes, IntOpKind::kMul, Operand::Reg(f.sym("n")), Operand::Imm(16));
    f.AllocStorage(storage, Operand::Reg(bytes));
    f.MakeShape(shape, {Operand::Reg(f.sym("n")), Operand::Imm(4)});
    f.SetDebugName("out");
    f.AllocTensor(out, storage, Operand::Imm(0), shape, f32);
    f.SetDebugName("axpy");
    f.CallKernel(axpy, {Operand::Reg(f.param(0)), Operand::Reg(f.param(1)), Operand::Reg(out), Operand::Imm(3)});
    f.Kill(storage);
    f.Ret(out);
  }
  {
    FunctionBuilder& f = b.AddFunction("sum_to", {IntParam("k")});
    int32_t i = f.NewRegister(), acc = f.NewRegister(), cond = f.NewRegister();
    FunctionBuilder::Label loop = f.NewLabel(), done = f.NewLabel();
    f.IntOp(i, IntOpKind::kAdd, Operand::Imm(0), Operand::Imm(0));
    f.IntOp(acc, IntOpKind::kAdd, Operand::Imm(0), Operand::Imm(0));
    f.Bind(loop);
    f.IntOp(cond, IntOpKind::kLE, Operand::Reg(i), Operand::Reg(f.param(0)));
    f.If(cond, done);
    f.IntOp(acc, IntOpKind::kAdd, Operand::Reg(acc), Operand::Reg(i));
    f.IntOp(i, IntOpKind::kAdd, Operand::Reg(i), Operand::Imm(1));
    f.Goto(loop);
    f.Bind(done);
    f.Ret(acc);
  }
  {
    int32_t self = static_cast<int32_t>(2);  // fib is the third function
    FunctionBuilder& f = b.AddFunction("fib", {IntParam("k")});
    int32_t small = f.NewRegister(), a = f.NewRegister(), c = f.NewRegister(), r1 = f.NewRegister(),
            r2 = f.NewRegister(), sum = f.NewRegister();
    FunctionBuilder::Label recurse = f.NewLabel();
    f.IntOp(small, IntOpKind::kLT, Operand::Reg(f.param(0)), Operand::Imm(2));
    f.If(small, recurse);
    f.Ret(f.param(0));
    f.Bind(recurse);
    f.IntOp(a, IntOpKind::kSub, Operand::Reg(f.param(0)), Operand::Imm(1));
    f.IntOp(c, IntOpKind::kSub, Operand::Reg(f.param(0)), Operand::Imm(2));
    f.CallFunction(r1, self, {Operand::Reg(a)});
    f.CallFunction(r2, self, {Operand::Reg(c)});
    f.IntOp(sum, IntOpKind::kAdd, Operand::Reg(r1), Operand::Reg(r2));
    f.Ret(sum);
  }
  {
    FunctionBuilder& f = b.AddFunction("add_lib", {TensorParam("a", f32, {Dim::Sym("m")}),
                                                    TensorParam("b", f32, {Dim::Sym("m")})});
    int32_t shape = f.NewRegister(), out = f.NewRegister();
    f.MakeShape(shape, {Operand::Reg(f.sym("m"))});
    f.CallBuiltin(out, alloc, {Operand::Reg(shape), Operand::Imm(PackDType(f32))});
    f.CallKernel(add_lib, {Operand::Reg(f.param(0)), Operand::Reg(f.param(1)), Operand::Reg(out)});
    f.Ret(out);
  }
  {
    FunctionBuilder& f = b.AddFunction("pair", {TensorParam("x", f32, {Dim::Sym("n"), Dim::Fixed(4)})});
    int32_t shape = f.NewRegister(), sums = f.NewRegister(), shape2 = f.NewRegister(), col = f.NewRegister(),
            xs = f.NewRegister(), tuple = f.NewRegister();
    f.MakeShape(shape, {Operand::Reg(f.sym("n"))});
    f.CallBuiltin(sums, alloc, {Operand::Reg(shape), Operand::Imm(PackDType(f32))});
    f.CallKernel(row_sum, {Operand::Reg(f.param(0)), Operand::Reg(sums)});
    f.MakeShape(shape2, {Operand::Reg(f.sym("n")), Operand::Imm(1)});
    f.CallBuiltin(col, reshape, {Operand::Reg(sums), Operand::Reg(shape2)});
    f.CallBuiltin(xs, shape_of, {Operand::Reg(f.param(0))});
    f.CallBuiltin(tuple, tuple_make, {Operand::Reg(col), Operand::Reg(xs)});
    f.Ret(tuple);
  }
  {
    FunctionBuilder& f = b.AddFunction("add_weights", {TensorParam("a", f32, {Dim::Fixed(128)})});
    int32_t shape = f.NewRegister(), w = f.NewRegister(), out = f.NewRegister();
    f.LoadConst(w, weights);
    f.MakeShape(shape, {Operand::Imm(128)});
    f.CallBuiltin(out, alloc, {Operand::Reg(shape), Operand::Imm(PackDType(f32))});
    f.CallKernel(add_lib, {Operand::Reg(f.param(0)), Operand::Reg(w), Operand::Reg(out)});
    f.Ret(out);
  }
  {
    FunctionBuilder& f = b.AddFunction("get_weights", {});
    int32_t w = f.NewRegister();
    f.LoadConst(w, weights);
    f.Ret(w);
  }
  {
    ParamSpec flag;
    flag.name = "flag";
    flag.kind = Value::Kind::kBool;
    FunctionBuilder& f = b.AddFunction("choose", {flag, IntParam("a"), IntParam("b")});
    FunctionBuilder::Label otherwise = f.NewLabel();
    f.If(f.param(0), otherwise);
    f.Ret(f.param(1));
    f.Bind(otherwise);
    f.Ret(f.param(2));
  }
  {
    FunctionBuilder& f = b.AddFunction("identity", {AnyParam("x")});
    f.Ret(f.param(0));
  }
  absl::StatusOr<std::string> bytes = b.Build();
  return bytes.ok() ? *bytes : std::string("build failed: ") + std::string(bytes.status().message());
}

}  // namespace kiln::vm::testing
