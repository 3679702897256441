// kiln.cublas.gemm_XY's checks, which run before cuBLAS or a GPU is touched: each mistake a
// caller can make is one line naming the kernel. The tensors only claim to be on cuda:0
// (their data is never read). The numerics need a GPU: tests/codegen/cuda_cublas_test.cc.
#include <cstdint>
#include <string>
#include <vector>

#include "builtins/default_builtins.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vm/cuda_device.h"

namespace kiln::builtins {
namespace {

using ::testing::HasSubstr;

struct Ctx : KilnCallContext {
  std::string error;
};

void SetError(KilnCallContext* ctx, const char* message) { static_cast<Ctx*>(ctx)->error = message; }

// A tensor's metadata on cuda:0 (or `device`), data a dummy address.
struct Fake {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLTensor t{};
  Fake(std::vector<int64_t> s, DLDataType dtype = {kDLFloat, 32, 1}, DLDevice device = {kDLCUDA, 0})
      : shape(std::move(s)) {
    static char dummy[64];
    t.data = dummy;
    t.device = device;
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dtype;
    t.shape = shape.data();
  }
};

std::string Call(const char* name, Fake& a, Fake& b, Fake& out, DLDevice device = {kDLCUDA, 0}) {
  const vm::BuiltinRegistry::LibraryKernel* k = DefaultRegistry().FindKernel(name);
  EXPECT_NE(k, nullptr) << name;
  if (k == nullptr) return "";
  Ctx ctx{};
  ctx.set_error = SetError;
  ctx.device = device;
  KilnArg args[3];
  Fake* fakes[3] = {&a, &b, &out};
  for (int i = 0; i < 3; ++i) {
    args[i].value.tensor = &fakes[i]->t;
    args[i].type_code = kKilnArgTensor;
  }
  int32_t rc = k->fn(args, 3, &ctx);
  EXPECT_NE(rc, 0) << name << " succeeded";
  EXPECT_EQ(ctx.error.find('\n'), std::string::npos) << ctx.error;
  return ctx.error;
}

constexpr DLDataType kF16{kDLFloat, 16, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};

TEST(CublasKernels, RefusesWhatItCannotCompute) {
  Fake a({4, 8}), b({8, 5}), out({4, 5});
  EXPECT_THAT(Call("kiln.cublas.gemm_nn", a, b, out, {kDLCPU, 0}),
              HasSubstr("kiln.cublas.gemm_nn runs on a CUDA device, not cpu"));
  Fake host({8, 5}, {kDLFloat, 32, 1}, {kDLCPU, 0});
  EXPECT_THAT(Call("kiln.cublas.gemm_nn", a, host, out), HasSubstr("a tensor is on cpu, not cuda:0"));
  Fake wrong_k({7, 5});
  EXPECT_THAT(Call("kiln.cublas.gemm_nn", a, wrong_k, out),
              HasSubstr("shapes do not match a @ b = out: a [4, 8], b [7, 5], out [4, 5]"));
  // b^T: b holds [n, k]; here it is [8, 5], so k = 5 does not match a's 8.
  EXPECT_THAT(Call("kiln.cublas.gemm_nt", a, b, out), HasSubstr("shapes do not match a @ b^T = out"));
  Fake ints_a({4, 8}, kI32), ints_b({8, 5}, kI32), ints_out({4, 5}, kI32);
  EXPECT_THAT(Call("kiln.cublas.gemm_nn", ints_a, ints_b, ints_out), HasSubstr("needs float32 operands and result"));
  Fake half_out({4, 5}, kF16);
  EXPECT_THAT(Call("kiln.cublas.gemm_nn", a, b, half_out), HasSubstr("needs float32 operands and result"));
  Fake half_a({4, 8}, kF16);
  EXPECT_THAT(Call("kiln.cublas.gemm_nn", half_a, b, out), HasSubstr("needs float32 operands and result"));
  Fake vec({8});
  Fake vec_out({4});
  EXPECT_THAT(Call("kiln.cublas.gemm_nn", a, vec, vec_out), HasSubstr("needs operands of rank 2 or more"));
  // Batches: each operand has out's leading axes or only 1s.
  Fake a3({2, 4, 8}), b3({3, 8, 5}), out3({2, 4, 5});
  EXPECT_THAT(Call("kiln.cublas.gemm_nn", a3, b3, out3), HasSubstr("each operand's leading axes must be out's or all 1"));
  Fake strided({4, 8});
  strided.strides = {1, 4};
  strided.t.strides = strided.strides.data();
  EXPECT_THAT(Call("kiln.cublas.gemm_nn", strided, b, out), HasSubstr("needs compact row-major tensors"));
}

// With valid arguments and no GPU, the call fails at the device (or at cuBLAS where the
// library is missing), in one line naming the kernel.
TEST(CublasKernels, WithoutAGpuTheCallSaysWhy) {
  if (vm::CudaDriverAvailable().ok()) GTEST_SKIP() << "a CUDA driver is present here";
  Fake a({2, 4, 8}), b({8, 5}), out({2, 4, 5});
  const std::string error = Call("kiln.cublas.gemm_nn", a, b, out);
  EXPECT_THAT(error, HasSubstr("kiln.cublas.gemm_nn: "));
  EXPECT_THAT(error, ::testing::AnyOf(HasSubstr("no CUDA driver found (libcuda.so.1)"), HasSubstr("cuBLAS not found")));
}

}  // namespace
}  // namespace kiln::builtins
