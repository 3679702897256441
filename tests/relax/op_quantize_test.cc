// Struct-info inference of dequantize (relax/op/quantize.cc).
#include <gtest/gtest.h>

#include <string>

#include "tests/relax/op_test_util.h"

namespace kiln::relax::testing {
namespace {

TEST(QuantizeTest, DequantizeShapesAndErrors) {
  const DataType u8 = DataType::UInt(8);
  tir::Var n = tir::Var::Shape("n");
  const Attrs q4 = {{"format", std::string("q4_0")}};
  const Attrs q8 = {{"format", std::string("q8_0")}, {"dtype", f16}};
  // 4 q4_0 blocks of 18 bytes per row: 128 weights; 2 q8_0 blocks of 34 bytes: 64.
  EXPECT_EQ(Infer("dequantize", {T({n, 72}, u8)}, q4), "Tensor((n, 128), float32)");
  EXPECT_EQ(Infer("dequantize", {T({3, n, 68}, u8)}, q8), "Tensor((3, n, 64), float16)");
  EXPECT_EQ(Infer("dequantize", {TNdim(2, u8)}, q4), "Tensor(ndim=2, float32)");
  EXPECT_EQ(Infer("dequantize", {T({n, 70}, u8)}, q4),
            "error: dequantize: the last dim of data (70) must be a constant multiple of 18, the bytes of a q4_0 "
            "block");
  EXPECT_EQ(Infer("dequantize", {T({4, n}, u8)}, q4),
            "error: dequantize: the last dim of data (n) must be a constant multiple of 18, the bytes of a q4_0 "
            "block");
  EXPECT_EQ(Infer("dequantize", {T({18}, i32)}, q4), "error: dequantize: data must be uint8 (the blocks' bytes), got int32");
  EXPECT_EQ(Infer("dequantize", {T({18}, u8)}), "error: dequantize: missing attribute format (\"q4_0\" or \"q8_0\")");
  EXPECT_EQ(Infer("dequantize", {T({18}, u8)}, {{"format", std::string("q5_k")}}),
            "error: dequantize: attribute format must be \"q4_0\" or \"q8_0\"");
  EXPECT_EQ(Infer("dequantize", {T({18}, u8)}, {{"format", std::string("q4_0")}, {"dtype", i32}}),
            "error: dequantize: dtype must be float32 or float16, got int32");
}

}  // namespace
}  // namespace kiln::relax::testing
