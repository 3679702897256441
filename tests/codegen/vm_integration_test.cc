// Generated kernels inside an executable, run by the VM: the compiler's CPU object is
// carried in the file's CPU kernel section, resolved at load time and called with the VM's
// own call context (its thread pool, workspace and error reporting).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "builtins/default_builtins.h"
#include "support/check.h"
#include "codegen/cpu_shared_object.h"
#include "tir/stmt.h"
#include "vm/executable.h"
#include "vm/executable_builder.h"
#include "vm/virtual_machine.h"

namespace kiln::codegen {
namespace {

using ::testing::HasSubstr;
using tir::Buffer;
using tir::DataType;
using tir::PrimFunc;
using tir::PrimFuncParam;
using tir::Var;

// out[i, j] = x[i, j] + y[i, j] with the rows in parallel.
PrimFunc ParallelAdd() {
  Var n = Var::Shape("n");
  Buffer x("x", DataType::Float32(), {n, 4}), y("y", DataType::Float32(), {n, 4}), out("out", DataType::Float32(), {n, 4});
  Var i("i"), j("j");
  tir::Stmt body = tir::For(i, 0, n, tir::ForKind::kParallel,
                            tir::For(j, 0, 4, tir::ForKind::kSerial,
                                     tir::BufferStore(out, x.Load({i, j}) + y.Load({i, j}), {i, j})));
  return PrimFunc({PrimFuncParam{x, Var()}, PrimFuncParam{y, Var()}, PrimFuncParam{out, Var()}}, body);
}

// main(x, y) allocates out[n, 4] and calls the generated kernel. The VM checks only the
// rank of its parameters, so shape mismatches reach the kernel's own prologue.
std::shared_ptr<const vm::Executable> BuildExecutable() {
  absl::StatusOr<std::string> so = BuildCpuSharedObject({{"padd", ParallelAdd()}}, CpuTarget::Host());
  KILN_CHECK(so.ok()) << so.status();
  vm::ExecutableBuilder b;
  b.SetCpuObject(*so);
  int32_t padd = b.DeclareKernel("padd", "ttt");
  int32_t alloc = b.DeclareBuiltin("kiln.alloc_tensor", "(shape, int) -> tensor");
  int32_t shape_of = b.DeclareBuiltin("kiln.shape_of", "(tensor) -> shape");
  const DLDataType f32 = vm::DTypeFloat32();
  vm::FunctionBuilder& f = b.AddFunction(
      "main", {vm::TensorParam("x", f32, {vm::Dim::Any(), vm::Dim::Any()}),
               vm::TensorParam("y", f32, {vm::Dim::Any(), vm::Dim::Any()})});
  int32_t shape = f.NewRegister(), out = f.NewRegister();
  f.CallBuiltin(shape, shape_of, {vm::Operand::Reg(f.param(0))});
  f.CallBuiltin(out, alloc, {vm::Operand::Reg(shape), vm::Operand::Imm(vm::PackDType(f32))});
  f.SetDebugName("padd");
  f.CallKernel(padd, {vm::Operand::Reg(f.param(0)), vm::Operand::Reg(f.param(1)), vm::Operand::Reg(out)});
  f.Ret(out);
  absl::StatusOr<std::string> bytes = b.Build();
  KILN_CHECK(bytes.ok()) << bytes.status();
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe =
      vm::Executable::Load(*bytes, builtins::DefaultRegistry());
  KILN_CHECK(exe.ok()) << exe.status();
  return *exe;
}

vm::Tensor Iota(std::vector<int64_t> shape, float start) {
  vm::Tensor t = *vm::Tensor::Empty(shape, vm::DTypeFloat32());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = start + static_cast<float>(i);
  return t;
}

TEST(CodegenVmIntegrationTest, GeneratedKernelRunsInsideTheVm) {
  vm::VirtualMachine machine(BuildExecutable());
  for (int64_t n : {1, 3, 50}) {
    vm::Tensor x = Iota({n, 4}, 1.0f), y = Iota({n, 4}, -7.0f);
    absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(x), vm::Value(y)});
    ASSERT_TRUE(r.ok()) << r.status();
    const vm::Tensor& out = r->as_tensor();
    ASSERT_EQ(out.shape(), (std::vector<int64_t>{n, 4}));
    for (int64_t e = 0; e < n * 4; ++e) EXPECT_EQ(out.data_as<float>()[e], x.data_as<float>()[e] + y.data_as<float>()[e]);
  }
}

TEST(CodegenVmIntegrationTest, KernelPrologueErrorsReachTheCaller) {
  vm::VirtualMachine machine(BuildExecutable());
  absl::StatusOr<vm::Value> r = machine.Invoke("main", {vm::Value(Iota({7, 4}, 0)), vm::Value(Iota({8, 4}, 0))});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("kernel padd: argument 1 (y) dimension 0: expected 7 (n), got 8"));
  // The VM is usable after the error.
  absl::StatusOr<vm::Value> ok = machine.Invoke("main", {vm::Value(Iota({2, 4}, 0)), vm::Value(Iota({2, 4}, 0))});
  EXPECT_TRUE(ok.ok()) << ok.status();
}

}  // namespace
}  // namespace kiln::codegen
