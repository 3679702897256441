#include "tir/expr.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "tir/buffer.h"

namespace kiln::tir {
namespace {

TEST(DataType, PrintsAndParses) {
  for (DataType t : {DataType::Int64(), DataType::UInt(8), DataType::Float(16),
                     DataType::BFloat(16), DataType::Bool(), DataType::Float(32, 8)}) {
    absl::StatusOr<DataType> parsed = DataType::Parse(t.ToString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, t) << t.ToString();
  }
  EXPECT_EQ(DataType::Float(32, 4).ToString(), "float32x4");
  EXPECT_FALSE(DataType::Parse("float13").ok());
  EXPECT_FALSE(DataType::Parse("int").ok());
  EXPECT_FALSE(DataType::Parse("uint64x0").ok());
}

// The spellings of other tools (and kiln run --input) that the text parsers name the text
// format's data type for.
TEST(DataType, LongNameOfAShorthand) {
  EXPECT_EQ(DataType::LongName("f32"), "float32");
  EXPECT_EQ(DataType::LongName("fp16"), "float16");
  EXPECT_EQ(DataType::LongName("bf16"), "bfloat16");
  EXPECT_EQ(DataType::LongName("i64"), "int64");
  EXPECT_EQ(DataType::LongName("u8"), "uint8");
  EXPECT_EQ(DataType::LongName("f32x4"), "float32x4");
  EXPECT_EQ(DataType::LongName("double"), "float64");
  EXPECT_EQ(DataType::LongName("float"), "float32");
  for (const char* other : {"int", "i", "f", "fp", "index", "f13", "i3", "u", "float32", "x", "f32y", ""}) {
    EXPECT_EQ(DataType::LongName(other), "") << other;
  }
}

TEST(DataType, SubByteIntegersArePacked) {
  for (const char* name : {"int4", "uint4", "int2", "uint1", "int4x8"}) {
    absl::StatusOr<DataType> parsed = DataType::Parse(name);
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.status();
    EXPECT_EQ(parsed->ToString(), name);
    EXPECT_TRUE(parsed->is_sub_byte());
  }
  EXPECT_FALSE(DataType::Parse("int3").ok());
  EXPECT_FALSE(DataType::Parse("float4").ok());
  EXPECT_FALSE(DataType::Int(8).is_sub_byte());
  EXPECT_FALSE(DataType::Bool().is_sub_byte());
  // n int4 elements take ceil(n / 2) bytes; whole-byte types n * bytes().
  EXPECT_EQ(DataType::Int(4).StorageBytes(0), 0);
  EXPECT_EQ(DataType::Int(4).StorageBytes(1), 1);
  EXPECT_EQ(DataType::Int(4).StorageBytes(5), 3);
  EXPECT_EQ(DataType::UInt(4).StorageBytes(32), 16);
  EXPECT_EQ(DataType::UInt(2).StorageBytes(9), 3);
  EXPECT_EQ(DataType::UInt(1).StorageBytes(17), 3);
  EXPECT_EQ(DataType::Float(16).StorageBytes(5), 10);
  EXPECT_EQ(DataType::Float(32, 4).StorageBytes(3), 48);
  EXPECT_EQ(DataType::Int(4).bytes(), 1);  // a lone int4 still takes a byte
  EXPECT_EQ(DataType::Int(4, 8).bytes(), 4);
}

TEST(PrimExpr, PrintsWithMinimalParentheses) {
  Var n = Var::Shape("n");
  Var m = Var::Shape("m");
  EXPECT_EQ(ToString((n + 1) * 2 - 2 * n), "(n + 1) * 2 - 2 * n");
  EXPECT_EQ(ToString(n - (m - 1)), "n - (m - 1)");
  EXPECT_EQ(ToString(n - m - 1), "n - m - 1");
  EXPECT_EQ(ToString(FloorDiv(4 * n + 2, 2)), "floordiv(4 * n + 2, 2)");
  EXPECT_EQ(ToString(And(LT(n, m), Not(EQ(n, 0)))), "n < m && !(n == 0)");
  EXPECT_EQ(ToString(Cast(DataType::Float32(), n)), "cast(float32, n)");
  EXPECT_EQ(ToString(IntImm(DataType::Int32(), 3)), "int32(3)");
  EXPECT_EQ(ToString(FloatImm(DataType::Float32(), 0.5)), "0.5");
  EXPECT_EQ(ToString(FloatImm(DataType::Float(64), 2)), "float64(2.0)");
  EXPECT_EQ(ToString(n * -3), "n * -3");
}

TEST(PrimExpr, BitOperationsPrintWithCPrecedence) {
  Var a("a", DataType::Int32());
  Var b("b", DataType::Int32());
  Var c("c", DataType::Int32());
  EXPECT_EQ(ToString(BitOr(a, BitXor(b, BitAnd(c, a)))), "a | b ^ c & a");
  EXPECT_EQ(ToString(BitAnd(BitOr(a, b), c)), "(a | b) & c");
  EXPECT_EQ(ToString(Shl(a, b + c)), "a << b + c");
  EXPECT_EQ(ToString(Shl(a, b) + c), "(a << b) + c");
  EXPECT_EQ(ToString(Shr(Shr(a, b), c)), "a >> b >> c");
  EXPECT_EQ(ToString(Shr(a, Shr(b, c))), "a >> (b >> c)");
  // & binds looser than ==, as in C: the printer parenthesizes.
  EXPECT_EQ(ToString(EQ(BitAnd(a, b), c)), "(a & b) == c");
  EXPECT_EQ(ToString(LT(Shl(a, b), c)), "a << b < c");
  EXPECT_EQ(ToString(BitNot(a + b)), "~(a + b)");
  EXPECT_EQ(ToString(BitNot(BitNot(a)) * b), "~~a * b");
  EXPECT_EQ(ToString(Reinterpret(DataType::Float32(), a)), "reinterpret(float32, a)");
  EXPECT_EQ(BitAnd(a, b).dtype(), DataType::Int32());
  EXPECT_EQ(Reinterpret(DataType::Int(64), Broadcast(a, 2)).dtype(), DataType::Int(64));
}

TEST(PrimExpr, ReinterpretNeedsEqualWidths) {
  EXPECT_EQ(ReinterpretError(DataType::UInt(16), DataType::Float(16)), "");
  EXPECT_EQ(ReinterpretError(DataType::Int(32, 4), DataType::Float(32, 4)), "");
  EXPECT_EQ(ReinterpretError(DataType::Float(32, 2), DataType::Int(64)), "");
  EXPECT_EQ(ReinterpretError(DataType::Int(32), DataType::Float(16)),
            "reinterpret from int32 to float16 changes the width (32 vs 16 bits)");
  EXPECT_EQ(ReinterpretError(DataType::Bool(), DataType::UInt(8)), "reinterpret does not take bool");
  EXPECT_EQ(ReinterpretError(DataType::UInt(8), DataType::Int(4, 2)),
            "reinterpret takes elements of at least 8 bits, not int4x2");
}

// The semantics of tir/expr.h, worked by hand.
TEST(PrimExpr, EvalBitwiseFollowsTheHeader) {
  const DataType i8 = DataType::Int(8), u8 = DataType::UInt(8), i64 = DataType::Int64(), u64 = DataType::UInt(64);
  EXPECT_EQ(EvalBitwise(ExprKind::kShl, i8, 1, 7), -128);
  EXPECT_EQ(EvalBitwise(ExprKind::kShl, i8, 3, 8), 0);
  EXPECT_EQ(EvalBitwise(ExprKind::kShl, i8, 3, -1), 0);
  EXPECT_EQ(EvalBitwise(ExprKind::kShr, i8, -100, 2), -25);
  EXPECT_EQ(EvalBitwise(ExprKind::kShr, i8, -100, 8), -1);
  EXPECT_EQ(EvalBitwise(ExprKind::kShr, i8, 100, 100), 0);
  EXPECT_EQ(EvalBitwise(ExprKind::kShr, u8, 0x80, 7), 1);
  EXPECT_EQ(EvalBitwise(ExprKind::kShr, u8, 0x80, 8), 0);
  EXPECT_EQ(EvalBitwise(ExprKind::kShl, u8, 0xff, 4), 0xf0);
  EXPECT_EQ(EvalBitwise(ExprKind::kShl, i64, 1, 63), INT64_MIN);
  EXPECT_EQ(EvalBitwise(ExprKind::kShl, i64, 1, 64), 0);
  EXPECT_EQ(EvalBitwise(ExprKind::kShr, i64, INT64_MIN, 63), -1);
  EXPECT_EQ(EvalBitwise(ExprKind::kShr, u64, -1, 63), 1);  // uint64 held as its bit pattern
  EXPECT_EQ(EvalBitwise(ExprKind::kBitXor, i8, -1, 0x0f), -16);
  EXPECT_EQ(EvalBitwise(ExprKind::kBitOr, u8, 0xf0, 0x0f), 0xff);
  EXPECT_EQ(EvalBitwise(ExprKind::kBitAnd, i8, -1, -128), -128);
  EXPECT_EQ(EvalBitNot(i8, 0), -1);
  EXPECT_EQ(EvalBitNot(u8, 0), 255);
  EXPECT_EQ(EvalBitNot(DataType::UInt(4), 5), 10);
}

TEST(PrimExpr, LiteralsTakeTheOtherOperandsType) {
  Var i("i", DataType::Int32());
  PrimExpr e = i + 1;
  EXPECT_EQ(e.dtype(), DataType::Int32());
  EXPECT_EQ(e.as<BinaryNode>()->b.dtype(), DataType::Int32());
  EXPECT_EQ(LT(i, IntImm(DataType::Int32(), 4)).dtype(), DataType::Bool());
}

TEST(PrimExpr, BufferLoadPrints) {
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {n, 4});
  Var i("i");
  EXPECT_EQ(ToString(a.Load({i, 3})), "A[i, 3]");
  EXPECT_EQ(a.Load({i, Ramp(0, 1, 4)}).dtype(), DataType::Float(32, 4));
}

}  // namespace
}  // namespace kiln::tir
