// SplitLoopsAtGuards: text in / text out, and the interpreter's results unchanged at every
// size around the split point.
#include "tir/transform/split_loops_at_guards.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/tir/transform/transform_test_util.h"
#include "tir/interpreter.h"

namespace kiln::tir::transform {
namespace {

using testing::Canonical;
using testing::ParseFunc;
using testing::Print;

// A vector loop over a symbolic row as GuardVectorizedTails leaves it: whole steps of 4,
// then a tail step.
constexpr const char* kGuardedSteps = R"TIR(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) where n <= 64 {
  for i in serial(0, floordiv(n + 3, 4)) {
    if 4 * i < n - 3 {
      for l in serial(0, 4) {
        B[4 * i + l] = A[4 * i + l] * 2.0
      }
    } else {
      for t in serial(0, min(max(n - 4 * i, 0), 4)) {
        B[4 * i + t] = A[4 * i + t] + 100.0
      }
    }
  }
})TIR";

TEST(SplitLoopsAtGuardsTest, WholeStepsAndTailBecomeTwoLoops) {
  std::string printed = Print(SplitLoopsAtGuards(ParseFunc(kGuardedSteps)));
  // The prefix runs to ceil((n - 3) / 4) = floordiv(n, 4), clamped to the loop's range;
  // the tail loop has its own variable and no condition is left.
  EXPECT_EQ(printed.find("if 4 * i"), std::string::npos) << printed;
  EXPECT_NE(printed.find("for i_rest in serial("), std::string::npos) << printed;
  EXPECT_NE(printed.find("B[4 * i_rest + t]"), std::string::npos) << printed;
}

// Runs `f` on A = 0, 1, 2, ... of n elements; returns B (pre-filled with -1).
std::vector<float> Interpret(const PrimFunc& f, int64_t n) {
  std::vector<float> a(n), b(n, -1.0f);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>(i);
  HostBuffer in = HostBuffer::ReadOnly(DataType::Float32(), {n}, reinterpret_cast<const uint8_t*>(a.data()));
  HostBuffer out = HostBuffer::Writable(DataType::Float32(), {n}, reinterpret_cast<uint8_t*>(b.data()));
  absl::Status status = RunPrimFunc(f, {&in, &out});
  EXPECT_TRUE(status.ok()) << status;
  return b;
}

TEST(SplitLoopsAtGuardsTest, SameResultsAtEverySize) {
  PrimFunc before = ParseFunc(kGuardedSteps);
  PrimFunc after = SplitLoopsAtGuards(before);
  for (int64_t n : {0, 1, 3, 4, 5, 7, 8, 9, 16, 17, 63, 64}) {
    EXPECT_EQ(Interpret(before, n), Interpret(after, n)) << "n = " << n;
  }
}

TEST(SplitLoopsAtGuardsTest, EveryComparisonKindAndNoElse) {
  // i <= 5 holds for i in [2, 6): the prefix starts at the loop's own min. Without an else
  // there is no second loop. `i > n - 4` is false first (a suffix): left alone.
  PrimFunc f = ParseFunc(R"TIR(
prim_func @f(A: Buffer((n,), float32)) where n <= 64 {
  for i in serial(2, 10) {
    if i <= 5 {
      A[i] = 1.0
    }
  }
  for j in serial(0, n) {
    if j > n - 4 {
      A[j] = 2.0
    }
  }
})TIR");
  EXPECT_EQ(Print(SplitLoopsAtGuards(f)), Canonical(R"TIR(
prim_func @f(A: Buffer((n,), float32)) where n <= 64 {
  for i in serial(2, 4) {
    A[i] = 1.0
  }
  for j in serial(0, n) {
    if j > n - 4 {
      A[j] = 2.0
    }
  }
})TIR"));
}

// GuardSteps' form (tir/schedule/schedule.h): whole steps of 3 rows, else a step whose first
// row is in range with a condition per row; steps past it run nothing. The rest splits again:
// whole steps, then the partial steps, then no loop at all for the steps out of range.
constexpr const char* kStepGuards = R"TIR(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) where n <= 64 {
  for s in serial(0, 5) {
    if 3 * s < n - 2 {
      for r in serial(0, 3) {
        B[3 * s + r] = A[3 * s + r] * 2.0
      }
    } else {
      if 3 * s < n {
        for r in serial(0, 3) {
          if 3 * s + r < n {
            B[3 * s + r] = A[3 * s + r] + 100.0
          }
        }
      }
    }
  }
})TIR";

TEST(SplitLoopsAtGuardsTest, StepGuardsBecomeWholeStepsThenPartialSteps) {
  PrimFunc before = ParseFunc(kStepGuards);
  PrimFunc after = SplitLoopsAtGuards(before);
  std::string printed = Print(after);
  EXPECT_EQ(printed.find("if 3 * s"), std::string::npos) << printed;
  EXPECT_NE(printed.find("for s_rest in serial("), std::string::npos) << printed;
  EXPECT_EQ(printed.find("if 3 * s_rest < n {"), std::string::npos) << printed;
  for (int64_t n : {0, 1, 2, 3, 4, 5, 6, 7, 14, 15, 16}) {
    EXPECT_EQ(Interpret(before, n), Interpret(after, n)) << "n = " << n;
  }
}

TEST(SplitLoopsAtGuardsTest, LeavesDataDependentAndNonSerialLoopsAlone) {
  // A condition that reads a buffer, a parallel loop and a condition that is not linear in
  // the loop variable all keep their loops.
  const char* text = R"TIR(
prim_func @f(A: Buffer((8,), int64), B: Buffer((8,), float32)) {
  for i in serial(0, 8) {
    if i < A[0] {
      B[i] = 1.0
    }
  }
  for j in parallel(0, 8) {
    if j < 4 {
      B[j] = 2.0
    }
  }
  for k in serial(0, 8) {
    if floormod(k, 2) < 1 {
      B[k] = 3.0
    }
  }
})TIR";
  EXPECT_EQ(Print(SplitLoopsAtGuards(ParseFunc(text))), Canonical(text));
}

// A guard that does not use the loop around it (a wide tile's `is this vector pair whole?`
// under its k steps and rows) moves above that loop, then splits the loop it tests.
constexpr const char* kGuardUnderInnerLoops = R"TIR(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) where n <= 64 {
  for p in serial(0, floordiv(n + 3, 4)) {
    for k in serial(0, 2) {
      for r in unroll(0, 2) {
        if 4 * p < n - 3 {
          for l in serial(0, 4) {
            B[4 * p + l] = B[4 * p + l] + A[4 * p + l] * 2.0
          }
        } else {
          for t in serial(0, min(max(n - 4 * p, 0), 4)) {
            B[4 * p + t] = B[4 * p + t] + A[4 * p + t] + 100.0
          }
        }
      }
    }
  }
})TIR";

TEST(SplitLoopsAtGuardsTest, GuardFreeOfTheInnerLoopsMovesUpAndSplits) {
  PrimFunc before = ParseFunc(kGuardUnderInnerLoops);
  PrimFunc after = SplitLoopsAtGuards(before);
  std::string printed = Print(after);
  EXPECT_EQ(printed.find("if 4 * p"), std::string::npos) << printed;
  EXPECT_NE(printed.find("for p_rest in serial("), std::string::npos) << printed;
  EXPECT_NE(printed.find("for k_else in serial(0, 2)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("for r_else in unroll(0, 2)"), std::string::npos) << printed;
  for (int64_t n : {0, 1, 3, 4, 5, 7, 8, 9, 16, 17, 63, 64}) {
    EXPECT_EQ(Interpret(before, n), Interpret(after, n)) << "n = " << n;
  }
}

// A guard on a vectorized or parallel loop's body stays where it is (the vectorizer and the
// thread pool handle those loops whole).
TEST(SplitLoopsAtGuardsTest, GuardStaysInVectorizedLoops) {
  const char* text = R"TIR(
prim_func @f(A: Buffer((n,), float32)) where n <= 64 {
  for i in vectorized(0, 4) {
    if n > 8 {
      A[i] = 1.0
    }
  }
})TIR";
  EXPECT_EQ(Print(SplitLoopsAtGuards(ParseFunc(text))), Canonical(text));
}

}  // namespace
}  // namespace kiln::tir::transform
