// MakeKernelAbi, text in / text out: the prologue that unpacks and checks every argument.
#include "tir/transform/make_kernel_abi.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/tir/transform/transform_test_util.h"

namespace kiln::tir::transform {
namespace {

using testing::Canonical;
using testing::ParseFunc;
using testing::Print;
using ::testing::HasSubstr;

TEST(MakeKernelAbiTest, TensorsScalarsAndSymbolicDimensions) {
  // Scalar parameters are unpacked first, wherever they are; n is bound by A and checked in
  // B; m + 1 is checked after every tensor.
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((n, 4), float32), m: int64, B: Buffer((n, m + 1), int32), alpha: float32) where n <= 64 {
  B[0, 0] = cast(int32, A[0, 0] * alpha)
})TIR");
  absl::StatusOr<PrimFunc> abi = MakeKernelAbi(f);
  ASSERT_TRUE(abi.ok()) << abi.status();
  EXPECT_EQ(Print(*abi), Canonical(R"TIR(
prim_func @f(args: handle, num_args: int32) {
  attr calling_conv = "kernel_abi"
  assert num_args == int32(4), "expected 4 arguments, got {}", num_args
  assert arg_type_code(args, 1) == int32(1), "argument 1 (m): expected an int, got argument type code {} (0 tensor, 1 int, 2 float, 3 handle)", arg_type_code(args, 1)
  let m = arg_int(args, 1) {
    assert arg_type_code(args, 3) == int32(2), "argument 3 (alpha): expected a float, got argument type code {} (0 tensor, 1 int, 2 float, 3 handle)", arg_type_code(args, 3)
    let alpha = cast(float32, arg_float(args, 3)) {
      assert arg_type_code(args, 0) == int32(0), "argument 0 (A): expected a tensor, got argument type code {} (0 tensor, 1 int, 2 float, 3 handle)", arg_type_code(args, 0)
      let A_tensor = arg_handle(args, 0) {
        assert !is_null(A_tensor), "argument 0 (A): the tensor is null"
        assert tensor_device_type(A_tensor) == int32(1) || tensor_device_type(A_tensor) == int32(3), "argument 0 (A): expected a tensor in CPU memory, got DLPack device type {}", tensor_device_type(A_tensor)
        assert tensor_ndim(A_tensor) == int32(2), "argument 0 (A): expected 2 dimensions, got {}", tensor_ndim(A_tensor)
        assert tensor_dtype_code(A_tensor) == int32(2) && (tensor_dtype_bits(A_tensor) == int32(32) && tensor_dtype_lanes(A_tensor) == int32(1)), "argument 0 (A): expected dtype float32 (code 2 bits 32 lanes 1), got code {} bits {} lanes {}", tensor_dtype_code(A_tensor), tensor_dtype_bits(A_tensor), tensor_dtype_lanes(A_tensor)
        assert tensor_shape(A_tensor, 0) >= 0, "argument 0 (A) dimension 0: n = {} is below its declared lower bound 0", tensor_shape(A_tensor, 0)
        assert tensor_shape(A_tensor, 0) <= 64, "argument 0 (A) dimension 0: n = {} is above its declared upper bound 64", tensor_shape(A_tensor, 0)
        let n = tensor_shape(A_tensor, 0) {
          assert tensor_shape(A_tensor, 1) == 4, "argument 0 (A) dimension 1: expected 4, got {}", tensor_shape(A_tensor, 1)
          assert tensor_stride(A_tensor, 0, tensor_shape(A_tensor, 1)) == tensor_shape(A_tensor, 1) || tensor_shape(A_tensor, 0) == 1, "argument 0 (A) dimension 0: expected a compact row-major tensor (stride {}), got stride {}", tensor_shape(A_tensor, 1), tensor_stride(A_tensor, 0, tensor_shape(A_tensor, 1))
          assert tensor_stride(A_tensor, 1, 1) == 1 || tensor_shape(A_tensor, 1) == 1, "argument 0 (A) dimension 1: expected a compact row-major tensor (stride {}), got stride {}", 1, tensor_stride(A_tensor, 1, 1)
          assert arg_type_code(args, 2) == int32(0), "argument 2 (B): expected a tensor, got argument type code {} (0 tensor, 1 int, 2 float, 3 handle)", arg_type_code(args, 2)
          let B_tensor = arg_handle(args, 2) {
            assert !is_null(B_tensor), "argument 2 (B): the tensor is null"
            assert tensor_device_type(B_tensor) == int32(1) || tensor_device_type(B_tensor) == int32(3), "argument 2 (B): expected a tensor in CPU memory, got DLPack device type {}", tensor_device_type(B_tensor)
            assert tensor_ndim(B_tensor) == int32(2), "argument 2 (B): expected 2 dimensions, got {}", tensor_ndim(B_tensor)
            assert tensor_dtype_code(B_tensor) == int32(0) && (tensor_dtype_bits(B_tensor) == int32(32) && tensor_dtype_lanes(B_tensor) == int32(1)), "argument 2 (B): expected dtype int32 (code 0 bits 32 lanes 1), got code {} bits {} lanes {}", tensor_dtype_code(B_tensor), tensor_dtype_bits(B_tensor), tensor_dtype_lanes(B_tensor)
            assert tensor_shape(B_tensor, 0) == n, "argument 2 (B) dimension 0: expected {} (n), got {}", n, tensor_shape(B_tensor, 0)
            assert tensor_stride(B_tensor, 0, tensor_shape(B_tensor, 1)) == tensor_shape(B_tensor, 1) || tensor_shape(B_tensor, 0) == 1, "argument 2 (B) dimension 0: expected a compact row-major tensor (stride {}), got stride {}", tensor_shape(B_tensor, 1), tensor_stride(B_tensor, 0, tensor_shape(B_tensor, 1))
            assert tensor_stride(B_tensor, 1, 1) == 1 || tensor_shape(B_tensor, 1) == 1, "argument 2 (B) dimension 1: expected a compact row-major tensor (stride {}), got stride {}", 1, tensor_stride(B_tensor, 1, 1)
            assert tensor_shape(B_tensor, 1) == m + 1, "argument 2 (B) dimension 1: expected {} (m + 1), got {}", m + 1, tensor_shape(B_tensor, 1)
            decl_buffer A: Buffer((n, 4), float32) = tensor_data(A_tensor) {
              decl_buffer B: Buffer((n, m + 1), int32) = tensor_data(B_tensor) {
                B[0, 0] = cast(int32, A[0, 0] * alpha)
              }
            }
          }
        }
      }
    }
  }
})TIR"));
}

TEST(MakeKernelAbiTest, StridedBuffersBindTheirStrides) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((2, 3), float32, strides=(s, 1)), flag: bool) {
  A[1, 2] = select(flag, 1.0, 0.0)
})TIR");
  absl::StatusOr<PrimFunc> abi = MakeKernelAbi(f);
  ASSERT_TRUE(abi.ok()) << abi.status();
  std::string text = Print(*abi);
  EXPECT_THAT(text, HasSubstr("let flag = arg_int(args, 1) != 0 {"));
  EXPECT_THAT(text, HasSubstr("let s = tensor_stride(A_tensor, 0, tensor_shape(A_tensor, 1)) {"));
  EXPECT_THAT(text, HasSubstr("assert tensor_stride(A_tensor, 1, 1) == 1, \"argument 0 (A) stride 1: expected 1, got {}\""));
  EXPECT_THAT(text, HasSubstr("decl_buffer A: Buffer((2, 3), float32, strides=(s, 1)) = tensor_data(A_tensor) {"));
}

TEST(MakeKernelAbiTest, GpuTargetsCheckTheirDevice) {
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((4,), float32)) {
  attr target = "cuda -arch=sm_90"
  A[0] = 1.0
})TIR");
  absl::StatusOr<PrimFunc> abi = MakeKernelAbi(f);
  ASSERT_TRUE(abi.ok()) << abi.status();
  EXPECT_THAT(Print(*abi), HasSubstr("assert tensor_device_type(A_tensor) == int32(2), \"argument 0 (A): expected a tensor "
                                     "in CUDA memory, got DLPack device type {}\""));
}

TEST(MakeKernelAbiTest, ErrorsNameTheArgument) {
  PrimFunc bad({{Buffer("A", DataType::Float32(), {Var::Shape("k") + 1}), Var()}}, Evaluate(0));
  absl::StatusOr<PrimFunc> error = MakeKernelAbi(bad);
  ASSERT_FALSE(error.ok());
  EXPECT_THAT(error.status().message(),
              HasSubstr("argument 0 (A) dimension 0: the shape expression k + 1 uses k, which no argument defines"));
  PrimFunc vector({PrimFuncParam{Buffer(), Var("v", DataType::Float(32, 4))}}, Evaluate(0));
  EXPECT_THAT(MakeKernelAbi(vector).status().message(), HasSubstr("scalar parameters must not be vectors"));
}

}  // namespace
}  // namespace kiln::tir::transform
