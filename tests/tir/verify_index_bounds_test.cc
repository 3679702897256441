// tir/verify_index_bounds.h on hand-written PrimFuncs in the text format: an index the loops
// certainly take out of range is an error at the access's line and column naming the function,
// buffer, dimension, index and the iteration that goes out; an index kept in range by the
// loops or a guard, or one the analyzer cannot decide, is not.
#include "tir/verify_index_bounds.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "tir/text_parser.h"

namespace kiln::tir {
namespace {

// The verifier's answer on the one PrimFunc of `text`.
absl::Status Verify(const std::string& text) {
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(text, "k.kir");
  if (!parsed.ok()) return absl::InternalError(absl::StrCat("does not parse: ", parsed.status().message()));
  return VerifyIndexBounds(parsed->func, parsed->name, &parsed->locations);
}

// A one-dimensional copy `B[i] = <rhs>` inside `loops`, A and B of extent n.
std::string Copy1d(const std::string& body, const std::string& shapes = "A: Buffer((n,), float32), B: Buffer((n,), float32)") {
  return absl::StrCat("prim_func @shift(", shapes, ") {\n", body, "}\n");
}

TEST(VerifyIndexBoundsTest, ReadPastTheEndOfASymbolicExtentIsAnErrorAtTheAccess) {
  absl::Status s = Verify(Copy1d("  for i in serial(0, n) {\n    B[i] = A[i + 1]\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "k.kir:3:12: error: prim_func 'shift': index 0 of buffer 'A' is i + 1, which takes values in [1, n]: "
            "n (at i = n - 1) is outside [0, n)");
}

TEST(VerifyIndexBoundsTest, ALoopOneShorterKeepsTheShiftedIndexInRange) {
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, n - 1) {\n    B[i] = A[i + 1]\n  }\n")).ok());
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(1, n - 2) {\n    B[i] = A[i + 1]\n  }\n")).ok());
}

TEST(VerifyIndexBoundsTest, ANegativeIndexIsAnError) {
  absl::Status s = Verify(Copy1d("  for i in serial(0, n) {\n    B[i] = A[i - 1]\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "k.kir:3:12: error: prim_func 'shift': index 0 of buffer 'A' is i - 1, which takes values in [-1, n - 2]: "
            "-1 (at i = 0) is outside [0, n)");
}

TEST(VerifyIndexBoundsTest, AStorePastTheEndIsAnErrorAtTheStore) {
  absl::Status s = Verify(Copy1d("  for i in serial(0, n) {\n    B[i + 1] = A[i]\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("k.kir:3:5: error: prim_func 'shift': index 0 of buffer 'B' is i + 1"),
            std::string::npos)
      << s.message();
}

TEST(VerifyIndexBoundsTest, ConstantExtentsGiveTheValueReached) {
  absl::Status s = Verify(Copy1d("  for i in serial(0, 8) {\n    B[i] = A[2 * i]\n  }\n",
                                 "A: Buffer((8,), float32), B: Buffer((8,), float32)"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is 2 * i, which takes values in [0, 14]: 14 (at i = 7) is outside [0, 8)"),
            std::string::npos)
      << s.message();
}

TEST(VerifyIndexBoundsTest, AnIfGuardKeepsTheAccessInRange) {
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, n) {\n    if i + 1 < n {\n      B[i] = A[i + 1]\n    }\n  }\n")).ok());
  // The else branch runs where the condition is false.
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, n) {\n    if i >= 1 {\n      B[i] = A[i - 1]\n    } else {\n"
                            "      B[i] = A[0]\n    }\n  }\n"))
                  .ok());
}

TEST(VerifyIndexBoundsTest, AGuardTooWeakStillLetsTheIndexOut) {
  // i < n - 1 leaves i = n - 2, where i + 2 is n.
  absl::Status s = Verify(Copy1d("  for i in serial(0, n) {\n    if i < n - 1 {\n      B[i] = A[i + 2]\n    }\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("n (at i = n - 2) is outside [0, n)"), std::string::npos) << s.message();
}

TEST(VerifyIndexBoundsTest, AnAssertBeforeTheAccessGuardsIt) {
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, n) {\n    assert i + 1 < n, \"i is last\"\n    B[i] = A[i + 1]\n  }\n"))
                  .ok());
}

TEST(VerifyIndexBoundsTest, ASelectMasksOnlyALoadThatIsItsTrueValue) {
  EXPECT_TRUE(
      Verify(Copy1d("  for i in serial(0, n) {\n    B[i] = select(i + 1 < n, A[i + 1], float32(0.0))\n  }\n")).ok());
  // docs/ir.md: any other true value is evaluated whatever the condition.
  EXPECT_FALSE(
      Verify(Copy1d("  for i in serial(0, n) {\n    B[i] = select(i + 1 < n, A[i + 1] * 2.0, float32(0.0))\n  }\n"))
          .ok());
}

TEST(VerifyIndexBoundsTest, BlockIterationVariablesAndPredicates) {
  const char* kOut = R"(prim_func @k(A: Buffer((n, m), float32), C: Buffer((n, m), float32)) {
  for i in serial(0, n) {
    for j in serial(0, m) {
      block "C" {
        vi = spatial(n, i)
        vj = spatial(m, j)
        C[vi, vj] = A[vi, vj + 1]
      }
    }
  }
}
)";
  absl::Status s = Verify(kOut);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "k.kir:7:21: error: prim_func 'k': index 1 of buffer 'A' is vj + 1, which takes values in [1, m]: m "
            "(at j = m - 1) is outside [0, m)");
  // A split with a non-dividing factor: the predicate keeps the padded iterations out.
  const char* kPredicated = R"(prim_func @k(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
  for o in serial(0, floordiv(n + 3, 4)) {
    for l in serial(0, 4) {
      block "B" {
        vi = spatial(n, o * 4 + l)
        where o * 4 + l < n
        B[vi] = A[vi]
      }
    }
  }
}
)";
  EXPECT_TRUE(Verify(kPredicated).ok());
}

TEST(VerifyIndexBoundsTest, AReductionAndItsInit) {
  const char* kSum = R"(prim_func @sum(A: Buffer((n, k), float32), S: Buffer((n,), float32)) {
  for i in serial(0, n) {
    for r in serial(0, k) {
      block "S" {
        vi = spatial(n, i)
        vr = reduce(k, r)
        init {
          S[vi] = float32(0.0)
        }
        S[vi] = S[vi] + A[vi, vr]
      }
    }
  }
}
)";
  EXPECT_TRUE(Verify(kSum).ok());
}

TEST(VerifyIndexBoundsTest, InnerLoopsWhoseExtentsDependOnOuterOnes) {
  // i = n never reaches the body: the inner loop is empty there.
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, n + 1) {\n    for j in serial(0, n - i) {\n      B[i] = A[j]\n"
                            "    }\n  }\n"))
                  .ok());
  // A triangle: j < i <= n - 1.
  EXPECT_TRUE(
      Verify(Copy1d("  for i in serial(0, n) {\n    for j in serial(0, i) {\n      B[i] = A[j + 1]\n    }\n  }\n"))
          .ok());
  absl::Status s =
      Verify(Copy1d("  for i in serial(0, n) {\n    for j in serial(0, i + 1) {\n      B[i] = A[j + 1]\n    }\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("n (at j = n - 1) is outside [0, n)"), std::string::npos) << s.message();
}

TEST(VerifyIndexBoundsTest, LetVariablesAreFollowed) {
  absl::Status s = Verify(Copy1d("  for i in serial(0, n) {\n    let t = i + 1 {\n      B[i] = A[t]\n    }\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("index 0 of buffer 'A' is t, which takes values in [1, n]"), std::string::npos)
      << s.message();
}

// An index in range only for the smallest sizes is out for every larger one, which the
// signature allows too: the error names the sizes. Before, only an index out for every size
// was refused, and these compiled to reads past the buffer's end for n >= 2 (n >= 3).
TEST(VerifyIndexBoundsTest, AnIndexInRangeOnlyForSmallSizesIsAnError) {
  absl::Status s = Verify(Copy1d("  for i in serial(0, n) {\n    B[i] = A[2 * i]\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is 2 * i, which takes values in [0, 2 * n - 2]: 2 * n - 2 (at i = n - 1) is outside "
                             "[0, n) for n >= 2"),
            std::string::npos)
      << s.message();
  s = Verify(Copy1d("  for i in serial(0, n) {\n    for j in serial(0, i + 1) {\n      B[i] = A[i + j]\n    }\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("2 * n - 2 (at i = n - 1, j = n - 1) is outside [0, n) for n >= 2"), std::string::npos)
      << s.message();
  s = Verify(Copy1d("  for i in serial(0, n) {\n    for j in serial(0, i) {\n      B[i] = A[i + j]\n    }\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("for n >= 3"), std::string::npos) << s.message();
  s = Verify(Copy1d("  for i in serial(0, n) {\n    B[i] = A[floordiv(n, 2) + i]\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("for n >= 2"), std::string::npos) << s.message();
  // Two sizes growing together.
  s = Verify(Copy1d("  for i in serial(0, n) {\n    for j in serial(0, m) {\n      B[i] = A[i + j]\n    }\n  }\n",
                    "A: Buffer((n,), float32), B: Buffer((n,), float32), C: Buffer((m,), float32)"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("for n, m >= 2"), std::string::npos) << s.message();
  // In range for every size: accepted.
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, n) {\n    B[i] = A[2 * i]\n  }\n",
                            "A: Buffer((2 * n - 1,), float32), B: Buffer((n,), float32)"))
                  .ok());
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, n) {\n    B[i] = A[n - 1 - i]\n  }\n")).ok());
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, n) {\n    B[i] = A[floordiv(i, 2) + floordiv(n, 2)]\n  }\n")).ok());
  // A declared upper bound keeps the sizes small enough.
  EXPECT_TRUE(Verify("prim_func @shift(A: Buffer((n,), float32), B: Buffer((n,), float32)) where n <= 1 {\n"
                     "  for i in serial(0, n) {\n    B[i] = A[2 * i]\n  }\n}\n")
                  .ok());
  s = Verify("prim_func @shift(A: Buffer((n,), float32), B: Buffer((n,), float32)) where n <= 2 {\n"
             "  for i in serial(0, n) {\n    B[i] = A[2 * i]\n  }\n}\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("for n >= 2"), std::string::npos) << s.message();
  // A scalar that is not a size (it may be negative, or the caller keeps it small) is not
  // assumed to grow.
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, n) {\n    B[i] = A[i + s]\n  }\n",
                            "A: Buffer((n,), float32), B: Buffer((n,), float32), s: int64"))
                  .ok());
}

TEST(VerifyIndexBoundsTest, WhatTheAnalyzerCannotDecideIsAccepted) {
  // Different symbols: m may be larger than n.
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, m) {\n    B[i] = A[i]\n  }\n",
                            "A: Buffer((n,), float32), B: Buffer((m,), float32)"))
                  .ok());
  // A data-dependent index is checked when the kernel runs, if at all.
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, n) {\n    B[i] = A[I[i]]\n  }\n",
                            "A: Buffer((n,), float32), I: Buffer((n,), int64), B: Buffer((n,), float32)"))
                  .ok());
  // A guard on the data.
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, n) {\n    if I[i] < 0 {\n      B[i] = A[i + 1]\n    }\n  }\n",
                            "A: Buffer((n,), float32), I: Buffer((n,), int64), B: Buffer((n,), float32)"))
                  .ok());
}

TEST(VerifyIndexBoundsTest, DeclaredBoundsAndGuardsOnSymbolsCount) {
  // The loop runs only for n >= 2, and then 2 * i + 2 reaches 2 * n - 2 >= n.
  absl::Status s = Verify(Copy1d("  for i in serial(0, n - 1) {\n    B[i] = A[2 * i + 2]\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("2 * n - 2 (at i = n - 2) is outside [0, n)"), std::string::npos) << s.message();
  // A guard on the symbols alone: only n >= 4 runs the loop.
  EXPECT_FALSE(Verify(Copy1d("  if n >= 4 {\n    for i in serial(0, n) {\n      B[i] = A[i + 1]\n    }\n  }\n")).ok());
  // An access that never runs reads nothing.
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, 0) {\n    B[i] = A[i + 1]\n  }\n")).ok());
}

TEST(VerifyIndexBoundsTest, VectorIndicesCountEveryLane) {
  absl::Status s = Verify(Copy1d("  for i in serial(0, 2) {\n    B[ramp(i * 4, 1, 4)] = A[ramp(i * 4 + 1, 1, 4)]\n  }\n",
                                 "A: Buffer((8,), float32), B: Buffer((8,), float32)"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("8 (at i = 1, lane = 3) is outside [0, 8)"), std::string::npos) << s.message();
  EXPECT_TRUE(Verify(Copy1d("  for i in serial(0, 2) {\n    B[ramp(i * 4, 1, 4)] = A[ramp(i * 4, 1, 4)]\n  }\n",
                            "A: Buffer((8,), float32), B: Buffer((8,), float32)"))
                  .ok());
}

TEST(VerifyIndexBoundsTest, AllocatedBuffersAreCheckedToo) {
  absl::Status s = Verify(Copy1d(
      "  allocate T: Buffer((n,), float32, scope=\"local\") {\n    for i in serial(0, n) {\n      T[i + 1] = A[i]\n"
      "    }\n  }\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("index 0 of buffer 'T' is i + 1"), std::string::npos) << s.message();
}

// Soundness on random kernels: two loops, an affine index, maybe a guard, extents constant or
// n + c. Whenever the verifier refuses one, running the loops finds an iteration that goes out
// for every n in [2, 40] for which the access runs, or, when the error says "for n >= T", for
// every n from T on (each of which runs it). (It never proves more than that.)
TEST(VerifyIndexBoundsTest, RandomKernelsRefusedOnlyWhenTheSizesNamedGoOut) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  // `coef * n + c` as text and as a value.
  struct Affine {
    int coef, c;
    std::string Text() const {
      if (coef == 0) return std::to_string(c);
      return absl::StrCat("n", c > 0 ? absl::StrCat(" + ", c) : c < 0 ? absl::StrCat(" - ", -c) : "");
    }
    int At(int n) const { return coef * n + c; }
  };
  auto extent = [&]() { return pick(0, 1) ? Affine{0, pick(0, 6)} : Affine{1, pick(-2, 2)}; };
  int refused = 0, thresholds = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Affine ext_i = extent(), ext_buf = extent();
    Affine ext_j = extent();
    int a = pick(-2, 2), b = pick(-2, 2), c = pick(-3, 3);
    bool guarded = pick(0, 1) == 1;
    int p = pick(-1, 1), q = pick(-1, 1);
    Affine r = extent();
    // Every extent is at least 0 for n >= 2; only those n are run.
    std::string index = absl::StrCat(a, " * i + ", b, " * j + ", c);
    std::string access = absl::StrCat("B[0] = A[", index, "]");
    if (guarded) access = absl::StrCat("if ", p, " * i + ", q, " * j < ", r.Text(), " {\n      ", access, "\n    }");
    std::string text = absl::StrCat("prim_func @k(A: Buffer((", ext_buf.Text(), ",), float32), B: Buffer((1,), float32), ",
                                    "N: Buffer((n,), float32))",
                                    " where n >= 2 {\n  for i in serial(0, ", ext_i.Text(), ") {\n    for j in serial(0, ",
                                    ext_j.Text(), ") {\n    ", access, "\n    }\n  }\n}\n");
    absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(text, "k.kir");
    ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
    absl::Status s = VerifyIndexBounds(parsed->func, "k");
    if (s.ok()) continue;
    ++refused;
    // "... for n >= T": every n from T on runs the access and goes out; else every n that
    // runs it does.
    int from = 2;
    size_t at = s.message().find(" for n >= ");
    if (at != std::string::npos) {
      from = std::max(from, std::stoi(std::string(s.message().substr(at + 10))));
      ++thresholds;
    }
    for (int n = 2; n <= 40; ++n) {
      bool runs = false, out = false;
      for (int i = 0; i < ext_i.At(n); ++i) {
        for (int j = 0; j < ext_j.At(n); ++j) {
          if (guarded && !(p * i + q * j < r.At(n))) continue;
          runs = true;
          int v = a * i + b * j + c;
          out |= v < 0 || v >= ext_buf.At(n);
        }
      }
      if (at != std::string::npos) {
        if (n >= from) {
          EXPECT_TRUE(runs && out) << "n = " << n << " is in bounds, yet refused:\n" << text << s;
        }
      } else {
        EXPECT_TRUE(!runs || out) << "n = " << n << " runs in bounds, yet refused:\n" << text << s;
      }
    }
  }
  EXPECT_GT(refused, 150);   // the property is not vacuous
  EXPECT_GT(thresholds, 10);  // nor is it for thresholds
}

}  // namespace
}  // namespace kiln::tir
