#include "tir/const_int_bound.h"

#include <cstdint>
#include <random>

#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

int64_t RefFloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

// A random interval in [-30, 30], sometimes unbounded on one side or both.
IntBound RandomBound(std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> value(-30, 30);
  int64_t a = value(rng);
  int64_t b = value(rng);
  IntBound out{std::min(a, b), std::max(a, b)};
  int shape = std::uniform_int_distribution<int>(0, 9)(rng);
  if (shape == 0) out.min = IntBound::kNegInf;
  if (shape == 1) out.max = IntBound::kPosInf;
  if (shape == 2) out = IntBound{};
  return out;
}

// A value inside `b`; unbounded ends stand for values far out (but not overflowing).
int64_t Sample(const IntBound& b, std::mt19937& rng) {
  int64_t lo = b.min == IntBound::kNegInf ? -100000 : b.min;
  int64_t hi = b.max == IntBound::kPosInf ? 100000 : b.max;
  if (b.min == IntBound::kNegInf && hi < lo) lo = hi - 100000;
  if (b.max == IntBound::kPosInf && hi < lo) hi = lo + 100000;
  int pick = std::uniform_int_distribution<int>(0, 3)(rng);
  if (pick == 0) return lo;
  if (pick == 1) return hi;
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

TEST(ConstIntBound, IntervalArithmeticContainsEveryResult) {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 20000; ++iter) {
    IntBound a = RandomBound(rng);
    IntBound b = RandomBound(rng);
    IntBound sum = BoundAdd(a, b);
    IntBound neg = BoundNeg(a);
    IntBound product = BoundMul(a, b);
    IntBound quotient = BoundFloorDiv(a, b);
    IntBound remainder = BoundFloorMod(a, b);
    IntBound low = BoundMin(a, b);
    IntBound high = BoundMax(a, b);
    for (int p = 0; p < 8; ++p) {
      int64_t x = Sample(a, rng);
      int64_t y = Sample(b, rng);
      ASSERT_TRUE(sum.Contains(x + y)) << x << " + " << y;
      ASSERT_TRUE(neg.Contains(-x)) << "-" << x;
      ASSERT_TRUE(product.Contains(x * y)) << x << " * " << y;
      ASSERT_TRUE(low.Contains(std::min(x, y)));
      ASSERT_TRUE(high.Contains(std::max(x, y)));
      if (y != 0) {
        int64_t q = RefFloorDiv(x, y);
        ASSERT_TRUE(quotient.Contains(q)) << "floordiv(" << x << ", " << y << ") = " << q << " outside ["
                                          << quotient.min << ", " << quotient.max << "]";
        ASSERT_TRUE(remainder.Contains(x - y * q)) << "floormod(" << x << ", " << y << ")";
      }
    }
  }
}

TEST(ConstIntBound, EndsReadUnambiguously) {
  // A finite result never lands on the opposite infinity.
  IntBound top = MakeBound(IntBound::kPosInf, IntBound::kPosInf);
  EXPECT_LT(top.min, IntBound::kPosInf);
  IntBound bottom = MakeBound(IntBound::kNegInf, IntBound::kNegInf);
  EXPECT_GT(bottom.max, IntBound::kNegInf);
  EXPECT_EQ(DTypeBound(DataType::Int(8)).min, -128);
  EXPECT_EQ(DTypeBound(DataType::UInt(8)).max, 255);
  EXPECT_EQ(DTypeBound(DataType::UInt(64)).max, IntBound::kPosInf);
  EXPECT_EQ(DTypeBound(DataType::Bool()).max, 1);
  // A divisor range containing zero: zero is excluded (division by zero is undefined).
  IntBound q = BoundFloorDiv(IntBound{10, 20}, IntBound{0, 5});
  EXPECT_EQ(q.min, 2);
  EXPECT_EQ(q.max, 20);
}

}  // namespace
}  // namespace kiln::tir
