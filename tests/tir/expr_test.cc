#include "tir/expr.h"

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
