// Struct-info inference of dequantize, quantized_matmul (relax/op/quantize.cc) and
// rotary_embedding (relax/op/positional.cc).
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
  EXPECT_EQ(Infer("dequantize", {T({18}, u8)}),
            "error: dequantize: missing attribute format (\"q4_0\", \"q4_1\", \"q8_0\", \"q5_0\", \"q5_1\", \"q2_K\", \"q3_K\", \"q4_K\", \"q5_K\", \"q6_K\", \"iq4_nl\" or \"iq4_xs\")");
  EXPECT_EQ(Infer("dequantize", {T({18}, u8)}, {{"format", std::string("q5_k")}}),
            "error: dequantize: attribute format must be \"q4_0\", \"q4_1\", \"q8_0\", \"q5_0\", \"q5_1\", \"q2_K\", \"q3_K\", \"q4_K\", \"q5_K\", \"q6_K\", \"iq4_nl\" or \"iq4_xs\"");
  // K-quants: 256 weights per super-block (q4_K 144 bytes, q6_K 210); q5_1: 32 in 24 bytes.
  EXPECT_EQ(Infer("dequantize", {T({n, 288}, u8)}, {{"format", std::string("q4_K")}}), "Tensor((n, 512), float32)");
  EXPECT_EQ(Infer("dequantize", {T({n, 48}, u8)}, {{"format", std::string("q5_1")}}), "Tensor((n, 64), float32)");
  EXPECT_EQ(Infer("dequantize", {T({n, 200}, u8)}, {{"format", std::string("q6_K")}}),
            "error: dequantize: the last dim of data (200) must be a constant multiple of 210, the bytes of a q6_K "
            "block");
  EXPECT_EQ(Infer("dequantize", {T({18}, u8)}, {{"format", std::string("q4_0")}, {"dtype", i32}}),
            "error: dequantize: dtype must be float32 or float16, got int32");
}

TEST(QuantizeTest, QuantizedMatmulShapesAndErrors) {
  const DataType u8 = DataType::UInt(8);
  tir::Var n = tir::Var::Shape("n");
  const Attrs q41 = {{"format", std::string("q4_1")}};
  // 576 weights per row: 18 q4_1 blocks of 20 bytes.
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 576}, f32), T({1536, 360}, u8)}, q41), "Tensor((n, 1536), float32)");
  EXPECT_EQ(Infer("quantized_matmul", {T({2, n, 576}, f32), T({7, 360}, u8)}, q41), "Tensor((2, n, 7), float32)");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 576}, f32), T({7, 324}, u8)}, {{"format", std::string("q4_0")}}),
            "Tensor((n, 7), float32)");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 512}, f32), T({7, 360}, u8)}, q41),
            "error: quantized_matmul: the last dim of x (512) must equal the 576 weights of each row of w (360 bytes "
            "of q4_1 blocks)");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 576}, f32), T({7, 361}, u8)}, q41),
            "error: quantized_matmul: the last dim of w (361) must be a constant multiple of 20, the bytes of a q4_1 "
            "block");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 576}, f16), T({7, 360}, u8)}, q41),
            "error: quantized_matmul: x must be float32, got float16");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 576}, f32), T({7, 360}, i32)}, q41),
            "error: quantized_matmul: w must be uint8 (the blocks' bytes), got int32");
  // 1536 weights per row: 6 q6_K super-blocks of 210 bytes, or 6 q5_K ones of 176.
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 1536}, f32), T({576, 1260}, u8)}, {{"format", std::string("q6_K")}}),
            "Tensor((n, 576), float32)");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 1024}, f32), T({576, 1056}, u8)}, {{"format", std::string("q5_K")}}),
            "error: quantized_matmul: the last dim of x (1024) must equal the 1536 weights of each row of w (1056 bytes "
            "of q5_K blocks)");
  // summation: "lanes", "blocks" (q4_0 / q8_0 / q4_K only) or "tiles" (q4_K / q5_K / q6_K only).
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 576}, f32), T({8, 324}, u8)},
                  {{"format", std::string("q4_0")}, {"summation", std::string("blocks")}}),
            "Tensor((n, 8), float32)");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 576}, f32), T({7, 360}, u8)},
                  {{"format", std::string("q4_1")}, {"summation", std::string("lanes")}}),
            "Tensor((n, 7), float32)");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 576}, f32), T({7, 360}, u8)},
                  {{"format", std::string("q4_1")}, {"summation", std::string("blocks")}}),
            "error: quantized_matmul: summation \"blocks\" is for q4_0, q8_0, q4_K, q2_K and iq4_nl weights, not q4_1");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 576}, f32), T({7, 360}, u8)},
                  {{"format", std::string("q4_1")}, {"summation", std::string("tree")}}),
            "error: quantized_matmul: attribute summation must be \"lanes\", \"blocks\" or \"tiles\"");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 1536}, f32), T({576, 1260}, u8)},
                  {{"format", std::string("q6_K")}, {"summation", std::string("blocks")}}),
            "error: quantized_matmul: summation \"blocks\" is for q4_0, q8_0, q4_K, q2_K and iq4_nl weights, not q6_K");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 1536}, f32), T({576, 864}, u8)},
                  {{"format", std::string("q4_K")}, {"summation", std::string("blocks")}}),
            "Tensor((n, 576), float32)");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 1536}, f32), T({576, 1260}, u8)},
                  {{"format", std::string("q6_K")}, {"summation", std::string("tiles")}}),
            "Tensor((n, 576), float32)");
  EXPECT_EQ(Infer("quantized_matmul", {T({n, 576}, f32), T({8, 324}, u8)},
                  {{"format", std::string("q4_0")}, {"summation", std::string("tiles")}}),
            "error: quantized_matmul: summation \"tiles\" is for q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs weights, not q4_0");
}

TEST(QuantizeTest, RotaryEmbeddingShapesAndErrors) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var m = tir::Var::Shape("m");
  const Attrs neox = {{"mode", std::string("neox")}, {"theta", 1e6}, {"rotary_dims", int64_t{32}}};
  EXPECT_EQ(Infer("rotary_embedding", {T({n, 9, 64}, f32), T({n}, i64)}), "Tensor((n, 9, 64), float32)");
  EXPECT_EQ(Infer("rotary_embedding", {T({n, 9, 64}, f32), T({n}, i32)}, neox), "Tensor((n, 9, 64), float32)");
  EXPECT_EQ(Infer("rotary_embedding", {T({n, 64}, f32), T({n}, i64)}),
            "error: rotary_embedding: x must be (n, heads, head_dim), got 2 dims");
  EXPECT_EQ(Infer("rotary_embedding", {T({4, 9, 64}, f32), T({5}, i64)}),
            "error: rotary_embedding: x has 4 rows but positions has 5");
  EXPECT_EQ(Infer("rotary_embedding", {T({n, 9, 64}, f32), T({m}, f32)}),
            "error: rotary_embedding: positions must be int32 or int64, got float32");
  EXPECT_EQ(Infer("rotary_embedding", {T({n, 9, 64}, f32), T({n}, i64)}, {{"rotary_dims", int64_t{66}}}),
            "error: rotary_embedding: rotary_dims (66) must be even, positive and at most the head dim 64");
  EXPECT_EQ(Infer("rotary_embedding", {T({n, 9, 64}, f32), T({n}, i64)}, {{"mode", std::string("gptj")}}),
            "error: rotary_embedding: attribute mode must be \"normal\" or \"neox\"");
}

}  // namespace
}  // namespace kiln::relax::testing
