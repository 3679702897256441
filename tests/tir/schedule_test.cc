// Schedule primitives, text in / text out: each primitive on a small PrimFunc is compared
// (structurally) with the hand-written expected function; errors name the primitive and
// the loop or block; a trace prints and replays to a structurally equal function.
#include "tests/tir/schedule_workloads.h"
#include "tir/schedule/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "support/check.h"
#include "tir/interpreter.h"
#include "tir/structural_equal.h"
#include "tir/text_parser.h"
#include "tir/text_printer.h"

namespace kiln::tir {
namespace {

using testing::kFusedMatmulBiasGelu;
using testing::kMatmul;

using ::testing::HasSubstr;

PrimFunc Parse(const std::string& prim_func_text) {
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(prim_func_text);
  KILN_CHECK(parsed.ok()) << parsed.status() << "\n" << prim_func_text;
  return parsed->func;
}

std::string Print(const PrimFunc& f) { return PrintPrimFunc(f, "f"); }

#define EXPECT_FUNC_EQ(actual, expected_text)                                                   \
  do {                                                                                          \
    PrimFunc expected_ = Parse(expected_text);                                                  \
    EXPECT_TRUE(StructuralEqual((actual), expected_)) << "actual:\n"                            \
                                                      << Print(actual) << "\nexpected:\n"       \
                                                      << Print(expected_);                      \
  } while (0)

const char* kScale = R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    block "B" {
      vi = spatial(n, i)
      B[vi] = A[vi] * 2.0
    }
  }
})";

const char* kScale128 = R"(
prim_func @f(A: Buffer((128,), float32), B: Buffer((128,), float32)) {
  for i in serial(0, 128) {
    block "B" {
      vi = spatial(128, i)
      B[vi] = A[vi] * 2.0
    }
  }
})";

const char* k2d = R"(
prim_func @f(A: Buffer((n, 64), float32), B: Buffer((n, 64), float32)) {
  for i in serial(0, n) {
    for j in serial(0, 64) {
      block "B" {
        vi = spatial(n, i)
        vj = spatial(64, j)
        B[vi, vj] = A[vi, vj] + 1.0
      }
    }
  }
})";


TEST(ScheduleTest, SplitExactConstantExtent) {
  Schedule s(Parse(kScale128));
  absl::StatusOr<std::vector<std::string>> loops = s.Split("i", {-1, 16});
  ASSERT_TRUE(loops.ok()) << loops.status();
  EXPECT_EQ(*loops, (std::vector<std::string>{"i_0", "i_1"}));
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((128,), float32), B: Buffer((128,), float32)) {
  for i_0 in serial(0, 8) {
    for i_1 in serial(0, 16) {
      block "B" {
        vi = spatial(128, 16 * i_0 + i_1)
        B[vi] = A[vi] * 2.0
      }
    }
  }
})");
}

TEST(ScheduleTest, SplitSymbolicExtentAddsPredicate) {
  Schedule s(Parse(kScale));
  ASSERT_TRUE(s.Split("i", {-1, 16}).ok());
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
  for i_0 in serial(0, floordiv(n + 15, 16)) {
    for i_1 in serial(0, 16) {
      block "B" {
        vi = spatial(n, 16 * i_0 + i_1)
        where 16 * i_0 + i_1 < n
        B[vi] = A[vi] * 2.0
      }
    }
  }
})");
}

TEST(ScheduleTest, SplitThreeWaysWithInnerInferred) {
  Schedule s(Parse(kScale128));
  ASSERT_TRUE(s.Split("i", {2, -1, 8}).ok());
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((128,), float32), B: Buffer((128,), float32)) {
  for i_0 in serial(0, 2) {
    for i_1 in serial(0, 8) {
      for i_2 in serial(0, 8) {
        block "B" {
          vi = spatial(128, 64 * i_0 + 8 * i_1 + i_2)
          B[vi] = A[vi] * 2.0
        }
      }
    }
  }
})");
}

TEST(ScheduleTest, SplitLoopWithoutBlockGuardsWithIf) {
  Schedule s(Parse(R"(
prim_func @f(A: Buffer((n,), float32)) {
  for i in serial(0, n) {
    A[i] = 1.0
  }
})"));
  ASSERT_TRUE(s.Split("i", {-1, 4}).ok());
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((n,), float32)) {
  for i_0 in serial(0, floordiv(n + 3, 4)) {
    for i_1 in serial(0, 4) {
      if 4 * i_0 + i_1 < n {
        A[4 * i_0 + i_1] = 1.0
      }
    }
  }
})");
}

TEST(ScheduleTest, FuseTwoLoops) {
  Schedule s(Parse(k2d));
  absl::StatusOr<std::string> fused = s.Fuse({"i", "j"});
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(*fused, "i_j_fused");
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((n, 64), float32), B: Buffer((n, 64), float32)) {
  for i_j_fused in serial(0, 64 * n) {
    block "B" {
      vi = spatial(n, floordiv(i_j_fused, 64))
      vj = spatial(64, floormod(i_j_fused, 64))
      B[vi, vj] = A[vi, vj] + 1.0
    }
  }
})");
}

TEST(ScheduleTest, ReorderMatmulLoops) {
  Schedule s(Parse(kMatmul));
  ASSERT_TRUE(s.Reorder({"r", "i"}).ok());
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((m, k), float32), B: Buffer((k, n), float32), C: Buffer((m, n), float32)) {
  for r in serial(0, k) {
    for j in serial(0, n) {
      for i in serial(0, m) {
        block "C" {
          vi = spatial(m, i)
          vj = spatial(n, j)
          vk = reduce(k, r)
          init {
            C[vi, vj] = 0.0
          }
          C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        }
      }
    }
  }
})");
}

TEST(ScheduleTest, LoopKinds) {
  Schedule s(Parse(k2d));
  ASSERT_TRUE(s.Parallel("i").ok());
  ASSERT_TRUE(s.Vectorize("j").ok());
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((n, 64), float32), B: Buffer((n, 64), float32)) {
  for i in parallel(0, n) {
    for j in vectorized(0, 64) {
      block "B" {
        vi = spatial(n, i)
        vj = spatial(64, j)
        B[vi, vj] = A[vi, vj] + 1.0
      }
    }
  }
})");
  Schedule u(Parse(kScale128));
  ASSERT_TRUE(u.Unroll("i").ok());
  EXPECT_THAT(Print(u.func()), HasSubstr("for i in unroll(0, 128)"));
}

TEST(ScheduleTest, DecomposeReductionMovesInitBeforeLoop) {
  Schedule s(Parse(kMatmul));
  absl::StatusOr<std::string> init = s.DecomposeReduction("C", "r");
  ASSERT_TRUE(init.ok()) << init.status();
  EXPECT_EQ(*init, "C_init");
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((m, k), float32), B: Buffer((k, n), float32), C: Buffer((m, n), float32)) {
  for i in serial(0, m) {
    for j in serial(0, n) {
      block "C_init" {
        vi_init = spatial(m, i)
        vj_init = spatial(n, j)
        C[vi_init, vj_init] = 0.0
      }
      for r in serial(0, k) {
        block "C" {
          vi = spatial(m, i)
          vj = spatial(n, j)
          vk = reduce(k, r)
          C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        }
      }
    }
  }
})");
}

TEST(ScheduleTest, DecomposeReductionAtOuterLoopCopiesSpatialLoops) {
  Schedule s(Parse(kMatmul));
  ASSERT_TRUE(s.Reorder({"r", "j"}).ok());  // i r j
  ASSERT_TRUE(s.DecomposeReduction("C", "r").ok());
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((m, k), float32), B: Buffer((k, n), float32), C: Buffer((m, n), float32)) {
  for i in serial(0, m) {
    for j_init in serial(0, n) {
      block "C_init" {
        vi_init = spatial(m, i)
        vj_init = spatial(n, j_init)
        C[vi_init, vj_init] = 0.0
      }
    }
    for r in serial(0, k) {
      for j in serial(0, n) {
        block "C" {
          vi = spatial(m, i)
          vj = spatial(n, j)
          vk = reduce(k, r)
          C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        }
      }
    }
  }
})");
}

TEST(ScheduleTest, ComputeInlineElementwiseProducer) {
  Schedule s(Parse(R"(
prim_func @f(A: Buffer((n,), float32), C: Buffer((n,), float32)) {
  allocate T: Buffer((n,), float32) {
    for i in serial(0, n) {
      block "T" {
        vi = spatial(n, i)
        T[vi] = A[vi] * 2.0
      }
    }
    for j in serial(0, n) {
      block "C" {
        vj = spatial(n, j)
        C[vj] = T[vj] + 1.0
      }
    }
  }
})"));
  ASSERT_TRUE(s.ComputeInline("T").ok());
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((n,), float32), C: Buffer((n,), float32)) {
  for j in serial(0, n) {
    block "C" {
      vj = spatial(n, j)
      C[vj] = A[vj] * 2.0 + 1.0
    }
  }
})");
  Schedule out(Parse(kScale));
  absl::Status st = out.ComputeInline("B");
  EXPECT_THAT(st.message(), HasSubstr("compute_inline: block 'B' writes the parameter 'B'"));
}

const char* kChain = R"(
prim_func @f(A: Buffer((n,), float32), C: Buffer((n,), float32)) {
  allocate T1: Buffer((n,), float32) {
    allocate T2: Buffer((n,), float32) {
      for i in serial(0, n) {
        block "T1" {
          vi = spatial(n, i)
          T1[vi] = A[vi] * 2.0
        }
      }
      for j in serial(0, n) {
        block "T2" {
          vj = spatial(n, j)
          T2[vj] = T1[vj] + T1[vj]
        }
      }
      for k in serial(0, n) {
        block "C" {
          vk = spatial(n, k)
          C[vk] = T2[vk] - 1.0
        }
      }
    }
  }
})";

// Several blocks in one call: the result of inlining them one after another, in any order.
TEST(ScheduleTest, ComputeInlineManyBlocksAtOnce) {
  Schedule one_by_one(Parse(kChain));
  ASSERT_TRUE(one_by_one.ComputeInline("T1").ok());
  ASSERT_TRUE(one_by_one.ComputeInline("T2").ok());
  EXPECT_FUNC_EQ(one_by_one.func(), R"(
prim_func @f(A: Buffer((n,), float32), C: Buffer((n,), float32)) {
  for k in serial(0, n) {
    block "C" {
      vk = spatial(n, k)
      C[vk] = A[vk] * 2.0 + A[vk] * 2.0 - 1.0
    }
  }
})");
  for (const std::vector<std::string>& order : {std::vector<std::string>{"T1", "T2"}, {"T2", "T1"}}) {
    Schedule s(Parse(kChain));
    ASSERT_TRUE(s.ComputeInline(order).ok());
    EXPECT_TRUE(StructuralEqual(s.func(), one_by_one.func())) << Print(s.func());
  }
  Schedule s(Parse(kChain));
  ASSERT_TRUE(s.ComputeInline(std::vector<std::string>{"T1", "T2"}).ok());
  EXPECT_EQ(s.trace().ToString(), "compute_inline([\"T1\", \"T2\"])\n");
  Schedule again(Parse(kChain));
  ASSERT_TRUE(Trace::Parse(s.trace().ToString())->Replay(&again).ok());
  EXPECT_TRUE(StructuralEqual(again.func(), s.func()));
  // One block that cannot be inlined refuses the whole call.
  Schedule refused(Parse(kChain));
  PrimFunc before = refused.func();
  EXPECT_THAT(refused.ComputeInline(std::vector<std::string>{"T1", "C"}).message(),
              HasSubstr("compute_inline: block 'C' writes the parameter 'C'"));
  EXPECT_TRUE(refused.func().same_as(before));
  EXPECT_TRUE(refused.trace().instructions().empty());
  EXPECT_THAT(refused.ComputeInline(std::vector<std::string>{"T1", "T1"}).message(),
              HasSubstr("block 'T1' is given twice"));
  EXPECT_EQ(schedule_primitive::InlinableBlocks(Parse(kChain), {"C", "T2", "T1", "nope"}),
            (std::vector<std::string>{"T2", "T1"}));
}

// A producer reading an intermediate whose allocation ends before the consumer (a float16
// matmul's float32 accumulator allocated around the matmul and its cast only): inlining the
// cast moves the accumulator's load into the consumer, so its allocation moves out to
// enclose it (before the fix: "buffer acc is used outside its decl_buffer" at codegen).
TEST(ScheduleTest, ComputeInlineHoistsAnAllocationItsLoadsEscape) {
  Schedule s(Parse(R"(
prim_func @f(A: Buffer((n,), float16), C: Buffer((n,), float32)) {
  allocate T: Buffer((n,), float16) {
    allocate acc: Buffer((n,), float32) {
      for i in serial(0, n) {
        block "acc" {
          vi = spatial(n, i)
          acc[vi] = cast(float32, A[vi]) * 2.0
        }
      }
      for j in serial(0, n) {
        block "T" {
          vj = spatial(n, j)
          T[vj] = cast(float16, acc[vj])
        }
      }
    }
    for k in serial(0, n) {
      block "C" {
        vk = spatial(n, k)
        C[vk] = cast(float32, T[vk])
      }
    }
  }
})"));
  ASSERT_TRUE(s.ComputeInline("T").ok());
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((n,), float16), C: Buffer((n,), float32)) {
  allocate acc: Buffer((n,), float32) {
    for i in serial(0, n) {
      block "acc" {
        vi = spatial(n, i)
        acc[vi] = cast(float32, A[vi]) * 2.0
      }
    }
    for k in serial(0, n) {
      block "C" {
        vk = spatial(n, k)
        C[vk] = cast(float32, cast(float16, acc[vk]))
      }
    }
  }
})");
}

// Loop versioning: each version then takes its own schedule, and the trace replays both.
TEST(ScheduleTest, BranchOnVersionsTheBody) {
  PrimFunc func = Parse(kScale);
  const Var n(std::static_pointer_cast<const VarNode>(func->params[0].buffer->shape[0].node()));
  Schedule s(func);
  absl::StatusOr<std::vector<std::string>> copy = s.BranchOn(GE(n, IntImm(DataType::Int64(), 64)));
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(*copy, std::vector<std::string>{"B_else"});
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
  if n >= 64 {
    for i in serial(0, n) {
      block "B" {
        vi = spatial(n, i)
        B[vi] = A[vi] * 2.0
      }
    }
  } else {
    for i_else in serial(0, n) {
      block "B_else" {
        vi_e = spatial(n, i_else)
        B[vi_e] = A[vi_e] * 2.0
      }
    }
  }
})");
  ASSERT_TRUE(s.Split("i", {-1, 16}).ok());
  ASSERT_TRUE(s.Parallel("i_else").ok());
  EXPECT_EQ(s.trace().ToString(),
            "branch_on(\"n >= 64\") -> \"B_else\"\n"
            "split(\"i\", [-1, 16]) -> [\"i_0\", \"i_1\"]\n"
            "parallel(\"i_else\")\n");
  Schedule again(func);
  absl::Status st = Trace::Parse(s.trace().ToString())->Replay(&again);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(StructuralEqual(again.func(), s.func())) << Print(again.func());

  EXPECT_THAT(Schedule(func).BranchOn(n).status().message(), HasSubstr("branch_on: the condition must be a bool"));
  Var outside("z");
  EXPECT_THAT(Schedule(func).BranchOn(LT(outside, n)).status().message(),
              HasSubstr("branch_on: condition 'z < n': branch_on:1:1: error: undefined variable 'z'"));
}

// BranchOn with a loop versions that loop alone; the trace names it and replays.
TEST(ScheduleTest, BranchOnALoopVersionsThatLoopOnly) {
  PrimFunc func = Parse(kScale);
  const Var n(std::static_pointer_cast<const VarNode>(func->params[0].buffer->shape[0].node()));
  Schedule s(func);
  ASSERT_TRUE(s.Split("i", {-1, 16}).ok());
  absl::StatusOr<std::vector<std::string>> copy = s.BranchOn(EQ(n, IntImm(DataType::Int64(), 1)), "i_1");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(*copy, std::vector<std::string>{"B_else"});
  const std::string printed = Print(s.func());
  EXPECT_THAT(printed, HasSubstr("for i_0 in serial(0, floordiv(n + 15, 16)) {\n    if n == 1 {\n      for i_1 in"))
      << printed;
  EXPECT_THAT(printed, HasSubstr("} else {\n      for i_1_else in serial(0, 16) {")) << printed;
  EXPECT_EQ(s.trace().ToString(),
            "split(\"i\", [-1, 16]) -> [\"i_0\", \"i_1\"]\n"
            "branch_on(\"n == 1\", \"i_1\") -> \"B_else\"\n");
  Schedule again(func);
  absl::Status st = Trace::Parse(s.trace().ToString())->Replay(&again);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(StructuralEqual(again.func(), s.func())) << Print(again.func());
  EXPECT_THAT(Schedule(func).BranchOn(EQ(n, IntImm(DataType::Int64(), 1)), "nowhere").status().message(),
              HasSubstr("branch_on"));
}

// The lane tail of a split that does not divide the extent runs in a copy vectorized over
// the lanes in range only (a loop of symbolic extent: the code generator masks it).
TEST(ScheduleTest, GuardVectorizedTailsRunsTheLanesInRangeAsAShorterVector) {
  Schedule s(Parse(kScale));
  ASSERT_TRUE(s.Split("i", {-1, 8}).ok());
  ASSERT_TRUE(s.Vectorize("i_1").ok());
  ASSERT_TRUE(s.GuardVectorizedTails().ok());
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
  for i_0 in serial(0, floordiv(n + 7, 8)) {
    if 8 * i_0 < n - 7 {
      for i_1 in vectorized(0, 8) {
        block "B" {
          vi = spatial(n, 8 * i_0 + i_1)
          B[vi] = A[vi] * 2.0
        }
      }
    } else {
      for i_1_tail in vectorized(0, min(max(n - 8 * i_0, 0), 8)) {
        block "B_tail" {
          vi_t = spatial(n, 8 * i_0 + i_1_tail)
          B[vi_t] = A[vi_t] * 2.0
        }
      }
    }
  }
})");
  EXPECT_EQ(s.trace().instructions().back().ToString(), "guard_vectorized_tails()");
  Schedule again(Parse(kScale));
  ASSERT_TRUE(Trace::Parse(s.trace().ToString())->Replay(&again).ok());
  EXPECT_TRUE(StructuralEqual(again.func(), s.func()));
}

// A tail that gathers (a transpose's read, consecutive lanes 4 floats apart) runs its lanes
// unrolled, each under its own condition, instead of one masked gather per vector.
TEST(ScheduleTest, GuardVectorizedTailsUnrollsAGatheringTail) {
  const char* transpose = R"(
prim_func @f(A: Buffer((n, 4), float32), B: Buffer((4, n), float32)) {
  for i in serial(0, 4) {
    for j in serial(0, n) {
      block "B" {
        vi = spatial(4, i)
        vj = spatial(n, j)
        B[vi, vj] = A[vj, vi]
      }
    }
  }
})";
  Schedule s(Parse(transpose));
  ASSERT_TRUE(s.Split("j", {-1, 8}).ok());
  ASSERT_TRUE(s.Vectorize("j_1").ok());
  ASSERT_TRUE(s.GuardVectorizedTails().ok());
  const std::string printed = Print(s.func());
  EXPECT_THAT(printed, HasSubstr("for j_1 in vectorized(0, 8) {")) << printed;  // whole vectors as before
  EXPECT_THAT(printed, HasSubstr("for j_1_tail in unroll(0, 8) {")) << printed;
  EXPECT_THAT(printed, HasSubstr("where 8 * j_0 + j_1_tail < n")) << printed;
  // A tail reading consecutive lanes keeps its masked vector (the test above).
  Schedule scale(Parse(kScale));
  ASSERT_TRUE(scale.Split("i", {-1, 8}).ok());
  ASSERT_TRUE(scale.Vectorize("i_1").ok());
  ASSERT_TRUE(scale.GuardVectorizedTails().ok());
  EXPECT_THAT(Print(scale.func()), HasSubstr("vectorized(0, min(max(n - 8 * i_0, 0), 8))"));
}

// Steps of 3 rows over a symbolic row count: each step checks its rows once; whole steps
// run the body without the row condition, the last one a copy (`_part`) with it, steps
// past the rows nothing.
TEST(ScheduleTest, GuardStepsChecksEachStepOnce) {
  Schedule s(Parse(k2d));
  ASSERT_TRUE(s.Split("i", {-1, 3}).ok());
  ASSERT_TRUE(s.GuardSteps("i_0").ok());
  const std::string printed = Print(s.func());
  EXPECT_THAT(printed, HasSubstr("for i_0 in serial(0, floordiv(n + 2, 3)) {\n    if 3 * i_0 < n - 2 {\n"
                                 "      for i_1 in serial(0, 3) {"))
      << printed;
  EXPECT_THAT(printed, HasSubstr("    } else {\n      if 3 * i_0 < n {\n        for i_1_part in serial(0, 3) {"))
      << printed;
  EXPECT_THAT(printed, HasSubstr("block \"B_part\""));
  // Only the partial copy keeps the condition.
  EXPECT_EQ(printed.find("where"), printed.rfind("where")) << printed;
  EXPECT_EQ(s.trace().instructions().back().ToString(), "guard_steps(\"i_0\")");
  Schedule again(Parse(k2d));
  ASSERT_TRUE(Trace::Parse(s.trace().ToString())->Replay(&again).ok());
  EXPECT_TRUE(StructuralEqual(again.func(), s.func()));
}

// Steps of 2 rows: the partial step can only be its first row, so its copy is cut to that
// row and runs without the condition (kept, each row of the step would test it).
TEST(ScheduleTest, GuardStepsCutsAPartialStepOfTwoToItsFirstRow) {
  Schedule s(Parse(k2d));
  ASSERT_TRUE(s.Split("i", {-1, 2}).ok());
  ASSERT_TRUE(s.GuardSteps("i_0").ok());
  const std::string printed = Print(s.func());
  EXPECT_THAT(printed, HasSubstr("if 2 * i_0 < n - 1 {\n      for i_1 in serial(0, 2) {")) << printed;
  EXPECT_THAT(printed, HasSubstr("    } else {\n      if 2 * i_0 < n {\n        for i_1_part in serial(0, 1) {"))
      << printed;
  EXPECT_EQ(printed.find("where"), std::string::npos) << printed;
  Schedule again(Parse(k2d));
  ASSERT_TRUE(Trace::Parse(s.trace().ToString())->Replay(&again).ok());
  EXPECT_TRUE(StructuralEqual(again.func(), s.func()));
}

// An unrolled loop splits too (the register tiles' unrolled rows into steps); the parts are
// serial, to be unrolled again as wanted.
TEST(ScheduleTest, SplitTakesAnUnrolledLoop) {
  Schedule s(Parse(k2d));
  ASSERT_TRUE(s.Unroll("j").ok());
  absl::StatusOr<std::vector<std::string>> parts = s.Split("j", {-1, 2});
  ASSERT_TRUE(parts.ok()) << parts.status();
  const std::string printed = Print(s.func());
  EXPECT_THAT(printed, HasSubstr("for j_0 in serial(0, 32) {\n      for j_1 in serial(0, 2) {")) << printed;
}

TEST(ScheduleTest, GuardStepsErrors) {
  Schedule s(Parse(k2d));
  EXPECT_THAT(s.GuardSteps("x").ToString(), HasSubstr("guard_steps: no loop named 'x'"));
  // No condition at all, and one that does not change with the loop.
  EXPECT_THAT(s.GuardSteps("i").ToString(), HasSubstr("has no block condition that changes with its steps"));
  ASSERT_TRUE(s.Split("i", {-1, 3}).ok());
  EXPECT_THAT(s.GuardSteps("j").ToString(), HasSubstr("has no block condition that changes with its steps"));
  ASSERT_TRUE(s.Parallel("i_0").ok());
  EXPECT_THAT(s.GuardSteps("i_0").ToString(), HasSubstr("guard_steps: loop 'i_0' is not serial"));
}

TEST(ScheduleTest, CacheWriteComputesIntoALocalBufferAndCopiesBack) {
  Schedule s(Parse(kMatmul));
  absl::StatusOr<std::string> wb = s.CacheWrite("C");
  ASSERT_TRUE(wb.ok()) << wb.status();
  EXPECT_EQ(*wb, "C_write_back");
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((m, k), float32), B: Buffer((k, n), float32), C: Buffer((m, n), float32)) {
  allocate C_local: Buffer((m, n), float32, scope="local") {
    for i in serial(0, m) {
      for j in serial(0, n) {
        for r in serial(0, k) {
          block "C" {
            vi = spatial(m, i)
            vj = spatial(n, j)
            vk = reduce(k, r)
            init {
              C_local[vi, vj] = 0.0
            }
            C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
    for ax0 in serial(0, m) {
      for ax1 in serial(0, n) {
        block "C_write_back" {
          vi_wb = spatial(m, ax0)
          vj_wb = spatial(n, ax1)
          C[vi_wb, vj_wb] = C_local[vi_wb, vj_wb]
        }
      }
    }
  }
})");
}

TEST(ScheduleTest, CacheWriteErrors) {
  Schedule s(Parse(kMatmul));
  EXPECT_EQ(s.CacheWrite("X").status().message(), "cache_write: no block named 'X'");
  ASSERT_TRUE(s.Split("i", {-1, 4}).ok());
  EXPECT_THAT(s.CacheWrite("C").status().message(),
              HasSubstr("cache_write: block 'C' has a predicate; cache writes before splitting its loops"));
  Schedule t(Parse(R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    block "B" {
      vi = spatial(n, i)
      B[vi] = B[vi] + A[vi]
    }
  }
})"));
  EXPECT_THAT(t.CacheWrite("B").status().message(), HasSubstr("reads 'B' without an init"));
  Schedule u(Parse(R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32), C: Buffer((n,), float32)) {
  for i in serial(0, n) {
    block "B" {
      vi = spatial(n, i)
      B[vi] = A[vi]
      C[vi] = A[vi]
    }
  }
})"));
  EXPECT_THAT(u.CacheWrite("B").status().message(), HasSubstr("stores to 2 buffers"));
  Schedule v(Parse(R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    block "B" {
      vi = spatial(n, i)
      B[0] = A[vi]
    }
  }
})"));
  EXPECT_THAT(v.CacheWrite("B").status().message(), HasSubstr("not distinct spatial iteration variables"));
  EXPECT_EQ(s.trace().ToString(), "split(\"i\", [-1, 4]) -> [\"i_0\", \"i_1\"]\n");
  // After a cache read at 'i', the chain around the block starts below 'i': a write-back
  // after that chain would run once per row.
  Schedule w(Parse(kMatmul));
  ASSERT_TRUE(w.CacheRead("C", "A", "i").ok());
  EXPECT_THAT(w.CacheWrite("C").status().message(),
              HasSubstr("is bound to loop 'i', which is not part of the chain of loops directly around it"));
}

// The write-back moves under the column-tile loop and the cache shrinks to one 4 x 8 tile,
// indexed by the tile's own loops.
TEST(ScheduleTest, CacheReadPacksThePanelOneIterationReads) {
  Schedule s(Parse(kMatmul));
  ASSERT_TRUE(s.Split("j", {-1, 8}).ok());
  ASSERT_TRUE(s.Reorder({"j_0", "i", "r", "j_1"}).ok());
  absl::StatusOr<std::string> copy = s.CacheRead("C", "B", "j_0");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(*copy, "B_cache");
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((m, k), float32), B: Buffer((k, n), float32), C: Buffer((m, n), float32)) {
  for j_0 in serial(0, floordiv(n + 7, 8)) {
    allocate B_local: Buffer((k, 8), float32, scope="local") {
      for ax0 in serial(0, k) {
        for ax1 in serial(0, 8) {
          block "B_cache" {
            v0_cache = spatial(k, ax0)
            v1_cache = spatial(n, ax1 + 8 * j_0)
            where ax1 + 8 * j_0 < n
            B_local[ax0, ax1] = B[v0_cache, v1_cache]
          }
        }
      }
      for i in serial(0, m) {
        for r in serial(0, k) {
          for j_1 in serial(0, 8) {
            block "C" {
              vi = spatial(m, i)
              vj = spatial(n, 8 * j_0 + j_1)
              vk = reduce(k, r)
              where 8 * j_0 + j_1 < n
              init {
                C[vi, vj] = 0.0
              }
              C[vi, vj] = C[vi, vj] + A[vi, vk] * B_local[r, j_1]
            }
          }
        }
      }
    }
  }
})");
  EXPECT_THAT(s.CacheRead("C", "X", "j_0").status().message(),
              HasSubstr("cache_read: 'X' of block 'C' at loop 'j_0': the block does not read it"));
  EXPECT_THAT(s.CacheRead("C", "C", "j_0").status().message(), HasSubstr("it is written inside the loop"));
  EXPECT_THAT(s.CacheRead("B_cache", "B", "r").status().message(), HasSubstr("the loop does not enclose the block"));
  // The trace replays, cache_read included.
  Schedule again(Parse(kMatmul));
  ASSERT_TRUE(s.trace().Replay(&again).ok()) << s.trace().ToString();
  EXPECT_TRUE(StructuralEqual(again.func(), s.func()));
  EXPECT_THAT(s.trace().ToString(), HasSubstr("cache_read(\"C\", \"B\", \"j_0\") -> \"B_cache\"\n"));
}

TEST(ScheduleTest, ReverseComputeAtMovesTheWriteBackUnderTheTileAndCompactsTheCache) {
  Schedule s(Parse(kMatmul));
  ASSERT_TRUE(s.CacheWrite("C").ok());
  ASSERT_TRUE(s.Split("i", {-1, 4}).ok());
  ASSERT_TRUE(s.Split("j", {-1, 8}).ok());
  ASSERT_TRUE(s.Reorder({"i_0", "j_0", "r", "i_1", "j_1"}).ok());
  absl::Status st = s.ReverseComputeAt("C_write_back", "j_0");
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((m, k), float32), B: Buffer((k, n), float32), C: Buffer((m, n), float32)) {
  for i_0 in serial(0, floordiv(m + 3, 4)) {
    for j_0 in serial(0, floordiv(n + 7, 8)) {
      allocate C_local: Buffer((4, 8), float32, scope="local") {
        for r in serial(0, k) {
          for i_1 in serial(0, 4) {
            for j_1 in serial(0, 8) {
              block "C" {
                vi = spatial(m, 4 * i_0 + i_1)
                vj = spatial(n, 8 * j_0 + j_1)
                vk = reduce(k, r)
                where 8 * j_0 + j_1 < n && 4 * i_0 + i_1 < m
                init {
                  C_local[i_1, j_1] = 0.0
                }
                C_local[i_1, j_1] = C_local[i_1, j_1] + A[vi, vk] * B[vk, vj]
              }
            }
          }
        }
        for ax0 in serial(0, 4) {
          for ax1 in serial(0, 8) {
            block "C_write_back" {
              vi_wb = spatial(m, ax0 + 4 * i_0)
              vj_wb = spatial(n, ax1 + 8 * j_0)
              where ax0 + 4 * i_0 < m && ax1 + 8 * j_0 < n
              C[vi_wb, vj_wb] = C_local[ax0, ax1]
            }
          }
        }
      }
    }
  }
})");
}

TEST(ScheduleTest, ReverseComputeAtErrors) {
  Schedule s(Parse(kMatmul));
  ASSERT_TRUE(s.CacheWrite("C").ok());
  // Under the reduction loop, an iteration has not finished its elements.
  EXPECT_THAT(s.ReverseComputeAt("C_write_back", "r").message(),
              HasSubstr("block 'C' reduces over a loop at or above 'r'"));
  EXPECT_THAT(s.ReverseComputeAt("C", "i").message(), HasSubstr("the block is a reduction"));
  EXPECT_THAT(s.ReverseComputeAt("C_write_back", "ax0").message(), HasSubstr("already under the loop"));
  EXPECT_THAT(s.ReverseComputeAt("C_write_back", "q").message(), HasSubstr("no loop named 'q'"));
  // A consumer of another nest's output cannot move under this one.
  Schedule t(Parse(R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32), C: Buffer((n,), float32)) {
  for i in serial(0, n) {
    block "B" {
      vi = spatial(n, i)
      B[vi] = A[vi] * 2.0
    }
  }
  for j in serial(0, n) {
    block "C" {
      vj = spatial(n, j)
      C[vj] = A[vj] + 1.0
    }
  }
})"));
  EXPECT_THAT(t.ReverseComputeAt("C", "i").message(),
              HasSubstr("must read exactly one buffer written under the loop, found 0"));
  // Elementwise consumer of a producer split by 4: it follows each chunk.
  Schedule u(Parse(R"(
prim_func @f(A: Buffer((n,), float32), C: Buffer((n,), float32)) {
  allocate B: Buffer((n,), float32) {
    for i in serial(0, n) {
      block "B" {
        vi = spatial(n, i)
        B[vi] = A[vi] * 2.0
      }
    }
    for j in serial(0, n) {
      block "C" {
        vj = spatial(n, j)
        C[vj] = B[vj] + 1.0
      }
    }
  }
})"));
  ASSERT_TRUE(u.Split("i", {-1, 4}).ok());
  ASSERT_TRUE(u.ReverseComputeAt("C", "i_0").ok());
  EXPECT_FUNC_EQ(u.func(), R"(
prim_func @f(A: Buffer((n,), float32), C: Buffer((n,), float32)) {
  allocate B: Buffer((n,), float32) {
    for i_0 in serial(0, floordiv(n + 3, 4)) {
      for i_1 in serial(0, 4) {
        block "B" {
          vi = spatial(n, 4 * i_0 + i_1)
          where 4 * i_0 + i_1 < n
          B[vi] = A[vi] * 2.0
        }
      }
      for j in serial(0, 4) {
        block "C" {
          vj = spatial(n, 4 * i_0 + j)
          where 4 * i_0 + j < n
          C[vj] = B[vj] + 1.0
        }
      }
    }
  }
})");
}

TEST(ScheduleTest, ReverseComputeInlineFoldsTheEpilogueIntoTheWriteBack) {
  Schedule s(Parse(kFusedMatmulBiasGelu));
  ASSERT_TRUE(s.ComputeInline("add").ok());
  ASSERT_TRUE(s.CacheWrite("matmul").ok());
  absl::Status st = s.ReverseComputeInline("gelu");
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((m, k), float32), W: Buffer((k, n), float32), bias: Buffer((n,), float32), out: Buffer((m, n), float32)) {
  allocate mm_local: Buffer((m, n), float32, scope="local") {
    for i0 in serial(0, m) {
      for i1 in serial(0, n) {
        for k0 in serial(0, k) {
          block "matmul" {
            v0 = spatial(m, i0)
            v1 = spatial(n, i1)
            vk0 = reduce(k, k0)
            init {
              mm_local[v0, v1] = 0.0
            }
            mm_local[v0, v1] = mm_local[v0, v1] + A[v0, vk0] * W[vk0, v1]
          }
        }
      }
    }
    for ax0 in serial(0, m) {
      for ax1 in serial(0, n) {
        block "matmul_write_back" {
          v0_wb = spatial(m, ax0)
          v1_wb = spatial(n, ax1)
          out[v0_wb, v1_wb] = 0.5 * (mm_local[v0_wb, v1_wb] + bias[v1_wb]) * (1.0 + erf((mm_local[v0_wb, v1_wb] + bias[v1_wb]) * 0.707106781))
        }
      }
    }
  }
})");
  // The trace of all three replays to the same function.
  Schedule again(Parse(kFusedMatmulBiasGelu));
  ASSERT_TRUE(s.trace().Replay(&again).ok()) << s.trace().ToString();
  EXPECT_TRUE(StructuralEqual(again.func(), s.func()));
}

TEST(ScheduleTest, ReverseComputeInlineErrors) {
  Schedule s(Parse(kFusedMatmulBiasGelu));
  EXPECT_THAT(s.ReverseComputeInline("matmul").message(), HasSubstr("block 'matmul' is a reduction"));
  // 'add' reads the matmul's output, written by a reduction.
  EXPECT_THAT(s.ReverseComputeInline("add").message(), HasSubstr("which is not a single non-reduction store"));
  Schedule t(Parse(kScale));
  EXPECT_THAT(t.ReverseComputeInline("B").message(),
              HasSubstr("must read exactly one buffer that a block of the function writes, found 0"));
  // Two readers of the intermediate: folding one would lose the other's input.
  Schedule u(Parse(R"(
prim_func @f(A: Buffer((n,), float32), C: Buffer((n,), float32), D: Buffer((n,), float32)) {
  allocate B: Buffer((n,), float32) {
    for i in serial(0, n) {
      block "B" {
        vi = spatial(n, i)
        B[vi] = A[vi] * 2.0
      }
    }
    for j in serial(0, n) {
      block "C" {
        vj = spatial(n, j)
        C[vj] = B[vj] + 1.0
      }
    }
    for l in serial(0, n) {
      block "D" {
        vl = spatial(n, l)
        D[vl] = B[vl] - 1.0
      }
    }
  }
})"));
  EXPECT_THAT(u.ReverseComputeInline("C").message(), HasSubstr("is not the only reader of 'B'"));
  EXPECT_EQ(u.trace().ToString(), "");
}

TEST(ScheduleTest, GetLoopsAndGetBlock) {
  Schedule s(Parse(kMatmul));
  EXPECT_EQ(*s.GetLoops("C"), (std::vector<std::string>{"i", "j", "r"}));
  EXPECT_EQ(*s.GetBlock("C"), "C");
  EXPECT_EQ(s.GetBlock("D").status().message(), "get_block: no block named 'D'");
}

TEST(ScheduleTest, ErrorsNameThePrimitiveAndTheLoop) {
  Schedule s(Parse(kMatmul));
  EXPECT_EQ(s.Split("x", {-1, 4}).status().message(), "split: no loop named 'x'");
  EXPECT_THAT(s.Split("i", {-1, -1}).status().message(), HasSubstr("at most one factor may be -1"));
  EXPECT_THAT(s.Split("i", {0, 4}).status().message(), HasSubstr("factor 0 is not positive"));
  EXPECT_THAT(s.Split("i", {4}).status().message(), HasSubstr("needs at least two factors"));
  EXPECT_THAT(s.Split("i", {4, 4}).status().message(), HasSubstr("cover 16 iterations but its extent is m"));
  EXPECT_EQ(s.Parallel("r").message(), "parallel: loop 'r' is bound to reduction variable 'vk' of block 'C'");
  EXPECT_THAT(s.Vectorize("j").message(), HasSubstr("non-constant extent n"));
  EXPECT_THAT(s.Unroll("j").message(), HasSubstr("unroll: loop 'j' has the non-constant extent n"));
  EXPECT_THAT(s.Fuse({"i", "r"}).status().message(), HasSubstr("fuse: loop 'r' is not the whole body of loop 'i'"));
  EXPECT_THAT(s.Reorder({"i", "i"}).message(), HasSubstr("given twice"));
  EXPECT_THAT(s.DecomposeReduction("C", "x").status().message(), HasSubstr("no loop named 'x'"));
  ASSERT_TRUE(s.Parallel("i").ok());
  EXPECT_THAT(s.Parallel("i").message(), HasSubstr("parallel: loop 'i' is already parallel"));
  EXPECT_THAT(s.Split("i", {-1, 4}).status().message(), HasSubstr("split: loop 'i' is parallel"));
  // Nothing failed was recorded.
  EXPECT_EQ(s.trace().ToString(), "parallel(\"i\")\n");
}

TEST(ScheduleTest, ParallelRefusesLoopsWritingOneElement) {
  Schedule s(Parse(R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((1,), float32), C: Buffer((n,), float32)) {
  for i in serial(0, n) {
    block "acc" {
      vi = spatial(n, i)
      alloc T: Buffer((1,), float32, scope="local")
      T[0] = A[vi]
      C[vi] = T[0]
      B[0] = B[0] + T[0]
    }
  }
})"));
  EXPECT_EQ(s.Parallel("i").message(),
            "parallel: every iteration of loop 'i' writes 'B' (in block 'acc') at the same place");
}

TEST(ScheduleTest, DecomposeReductionErrors) {
  const char* two = R"(
prim_func @f(A: Buffer((8,), float32), B: Buffer((1,), float32), C: Buffer((8,), float32)) {
  for i in serial(0, 8) {
    block "B" {
      vk = reduce(8, i)
      init {
        B[0] = 0.0
      }
      B[0] = B[0] + A[vk]
    }
  }
  for j in serial(0, 8) {
    block "C" {
      vj = spatial(8, j)
      C[vj] = A[vj]
    }
  }
})";
  Schedule s(Parse(two));
  EXPECT_EQ(s.DecomposeReduction("B", "j").status().message(),
            "decompose_reduction: loop 'j' is not in block 'B''s loop nest");
  EXPECT_THAT(s.DecomposeReduction("C", "j").status().message(), HasSubstr("block 'C' has no init"));
  Schedule m(Parse(kMatmul));
  ASSERT_TRUE(m.Reorder({"r", "i"}).ok());  // r j i
  EXPECT_THAT(m.DecomposeReduction("C", "j").status().message(),
              HasSubstr("reduction variable 'vk' of block 'C' is bound to a loop outside 'j'"));
}

TEST(ScheduleTest, ReorderRefusesLoopsOfDifferentNests) {
  Schedule s(Parse(R"(
prim_func @f(A: Buffer((8,), float32), B: Buffer((8,), float32)) {
  for i in serial(0, 8) {
    A[i] = 0.0
  }
  for j in serial(0, 8) {
    B[j] = 0.0
  }
})"));
  EXPECT_THAT(s.Reorder({"i", "j"}).message(), HasSubstr("not one chain of directly nested loops"));
}

// A loop whose range uses an outer loop of the chain (a column edge's pairs cut at its last
// column, under its sub-tiles) may move as long as that loop stays outside it.
TEST(ScheduleTest, ReorderKeepsARangeBelowTheLoopItUses) {
  const char* text = R"(
prim_func @f(A: Buffer((64, 8), float32)) {
  for a in serial(0, 4) {
    for b in serial(0, min(13 - 4 * a, 4)) {
      for r in serial(0, 8) {
        block "A" {
          vi = spatial(64, 4 * a + b)
          vr = spatial(8, r)
          A[vi, vr] = 1.0
        }
      }
    }
  }
})";
  Schedule ok(Parse(text));
  ASSERT_TRUE(ok.Reorder({"r", "a", "b"}).ok());
  EXPECT_EQ(*ok.GetLoops("A"), (std::vector<std::string>{"r", "a", "b"}));
  Schedule refused(Parse(text));
  EXPECT_THAT(refused.Reorder({"b", "a"}).message(), HasSubstr("depends on a loop of the nest that would be inside it"));
}

TEST(ScheduleTest, NewLoopNamesAvoidExistingOnes) {
  Schedule s(Parse(R"(
prim_func @f(A: Buffer((8,), float32), B: Buffer((8,), float32)) {
  for i in serial(0, 8) {
    block "A" {
      vi = spatial(8, i)
      A[vi] = 0.0
    }
  }
  for i_1 in serial(0, 8) {
    block "B" {
      vi2 = spatial(8, i_1)
      B[vi2] = 0.0
    }
  }
})"));
  EXPECT_EQ(*s.GetLoops("A"), (std::vector<std::string>{"i"}));
  EXPECT_EQ(*s.GetLoops("B"), (std::vector<std::string>{"i_1"}));
  ASSERT_TRUE(s.Split("i", {2, 4}).ok());
  // "i_1" is taken, so the split's inner loop gets another name.
  EXPECT_EQ(*s.GetLoops("A"), (std::vector<std::string>{"i_0", "i_1_1"}));
}

TEST(ScheduleTest, SplitKeepsTheLoopTypeAndNonZeroStart) {
  Schedule s(Parse(R"(
prim_func @f(A: Buffer((n,), float32), m: int32) {
  for t in serial(int32(2), m) {
    A[cast(int64, t)] = 0.0
  }
})"));
  ASSERT_TRUE(s.Split("t", {-1, 8}).ok());
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((n,), float32), m: int32) {
  for t_0 in serial(int32(0), floordiv(m + int32(7), int32(8))) {
    for t_1 in serial(int32(0), int32(8)) {
      if int32(8) * t_0 + t_1 < m {
        A[cast(int64, int32(8) * t_0 + t_1 + int32(2))] = 0.0
      }
    }
  }
})");
}

TEST(ScheduleTest, LoopsSharingANameGetUniqueHandles) {
  // Built by hand: the parser would refuse two loops named i.
  Buffer a("A", DataType::Float32(), {8});
  Var i1("i"), i2("i");
  Stmt body = SeqStmt({For(i1, 0, 8, ForKind::kSerial, BufferStore(a, FloatImm(DataType::Float32(), 0.0), {i1})),
                       For(i2, 0, 8, ForKind::kSerial, BufferStore(a, FloatImm(DataType::Float32(), 1.0), {i2}))});
  PrimFunc func({PrimFuncParam{a, Var()}}, body);
  Schedule s(func);
  EXPECT_TRUE(StructuralEqual(s.func(), func));
  ASSERT_TRUE(s.Unroll("i").ok());
  ASSERT_TRUE(s.Parallel("i_1").ok());
  EXPECT_EQ(Print(s.func()),
            "prim_func @f(A: Buffer((8,), float32)) {\n"
            "  for i in unroll(0, 8) {\n"
            "    A[i] = 0.0\n"
            "  }\n"
            "  for i_1 in parallel(0, 8) {\n"
            "    A[i_1] = 1.0\n"
            "  }\n"
            "}\n");
}

TEST(ScheduleTest, TraceParseErrorsAndEscapes) {
  EXPECT_EQ(Trace::Parse("split(\"i\", [-1, 4]) -> [\"i_0\", \"i_1\"]\nsplit(\"i_0\" [2])\n").status().message(),
            "trace line 2 column 13: expected ',' and the factors");
  EXPECT_THAT(Trace::Parse("fuse(\"a\")").status().message(), HasSubstr("expected '['"));
  EXPECT_THAT(Trace::Parse("parallel(\"a\") x").status().message(), HasSubstr("expected the end of the line"));
  Trace t;
  t.Append({"get_block", {"odd \"name\" \\"}, {}, {"odd \"name\" \\"}});
  absl::StatusOr<Trace> back = Trace::Parse(t.ToString());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->instructions()[0].inputs[0], "odd \"name\" \\");
  EXPECT_EQ(back->ToString(), t.ToString());
}

// branch_on's condition is stored as its text and read back with tir::ParsePrimExpr
// against the function's variables.
TEST(ScheduleTest, TraceExpressionsReadBack) {
  const Var n = Var::Shape("n"), m = Var::Shape("m");
  const Var p("p", DataType::Int32());
  for (const char* text : {"n >= 64 || m < 256", "floordiv(n + 7, 8) * 8 - m != 0 && !(n == 1)",
                           "select(n < m, n, m) <= max(n, floormod(m, 3))", "int32(5) < p",
                           "cast(int64, p) + n > -3", "true"}) {
    absl::StatusOr<PrimExpr> e = ParsePrimExpr(text, {n, m, p});
    ASSERT_TRUE(e.ok()) << text << ": " << e.status();
    EXPECT_EQ(ToString(*e), text);
  }
  EXPECT_THAT(ParsePrimExpr("q > 1", {n}).status().message(), HasSubstr("undefined variable 'q'"));
  EXPECT_THAT(ParsePrimExpr("n >= 64 m", {n}).status().message(), HasSubstr("expected end of input"));
  EXPECT_THAT(ParsePrimExpr("n > 1", {n, Var::Shape("n")}).status().message(), HasSubstr("two variables are named 'n'"));
  // The instructions without names and with expressions print and parse back.
  const std::string text =
      "compute_inline([\"a\", \"b\"])\ncompute_inline(\"c\")\nbranch_on(\"n >= 64 || m < 256\") -> \"B_else\"\n"
      "guard_vectorized_tails()\n";
  absl::StatusOr<Trace> trace = Trace::Parse(text);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->ToString(), text);
  EXPECT_EQ(trace->instructions()[2].inputs, std::vector<std::string>{"n >= 64 || m < 256"});
}

TEST(ScheduleTest, TracePrintsAndReplays) {
  PrimFunc original = Parse(kMatmul);
  Schedule s(original);
  std::vector<std::string> loops = *s.GetLoops("C");
  std::vector<std::string> i = *s.Split(loops[0], {-1, 4});
  std::vector<std::string> j = *s.Split(loops[1], {-1, 16});
  ASSERT_TRUE(s.Reorder({i[0], j[0], loops[2], i[1], j[1]}).ok());
  std::string fused = *s.Fuse({i[0], j[0]});
  ASSERT_TRUE(s.Parallel(fused).ok());
  ASSERT_TRUE(s.Vectorize(j[1]).ok());
  ASSERT_TRUE(s.DecomposeReduction("C", loops[2]).ok());
  EXPECT_EQ(s.trace().ToString(),
            "get_loops(\"C\") -> [\"i\", \"j\", \"r\"]\n"
            "split(\"i\", [-1, 4]) -> [\"i_0\", \"i_1\"]\n"
            "split(\"j\", [-1, 16]) -> [\"j_0\", \"j_1\"]\n"
            "reorder([\"i_0\", \"j_0\", \"r\", \"i_1\", \"j_1\"])\n"
            "fuse([\"i_0\", \"j_0\"]) -> \"i_0_j_0_fused\"\n"
            "parallel(\"i_0_j_0_fused\")\n"
            "vectorize(\"j_1\")\n"
            "decompose_reduction(\"C\", \"r\") -> \"C_init\"\n");
  Schedule again(original);
  ASSERT_TRUE(s.trace().Replay(&again).ok());
  EXPECT_TRUE(StructuralEqual(again.func(), s.func())) << Print(again.func()) << "\n" << Print(s.func());
  EXPECT_FALSE(StructuralEqual(again.func(), original));
  // The printed trace parses back to the same instructions.
  absl::StatusOr<Trace> parsed = Trace::Parse(s.trace().ToString());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->ToString(), s.trace().ToString());
  Schedule from_text(original);
  ASSERT_TRUE(parsed->Replay(&from_text).ok());
  EXPECT_TRUE(StructuralEqual(from_text.func(), s.func()));
  // A trace that does not fit the function says which instruction failed.
  Schedule other(Parse(k2d));
  absl::Status st = s.trace().Replay(&other);
  EXPECT_THAT(st.message(), HasSubstr("replaying instruction 0 (get_loops(\"C\")"));
}


// ---------------------------------------------------------------- rfactor

const char* kRowMax40 = R"(
prim_func @f(A: Buffer((n, 40), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    for r in serial(0, 40) {
      block "B" {
        vi = spatial(n, i)
        vr = reduce(40, r)
        init {
          B[vi] = float32(-inf)
        }
        B[vi] = max(B[vi], A[vi, vr])
      }
    }
  }
})";

// 40 = 2 * 16 + 8: the main loops cover 32 elements in 16 lanes, the tail 8 into lane 0;
// every lane starts at max's identity; the combine halves the lanes (16 -> 8 -> 4 -> 2),
// then the block takes the last two and the init.
TEST(ScheduleTest, RFactorSplitsTheReductionIntoLanes) {
  Schedule s(Parse(kRowMax40));
  absl::StatusOr<std::vector<std::string>> names = s.RFactor("B", "r", 16);
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(*names,
            (std::vector<std::string>{"B_rf", "B_rf_init", "B_rf_tail", "B_rf_half", "B_rf_half_1", "B_rf_half_2"}));
  std::string printed = Print(s.func());
  EXPECT_THAT(printed, HasSubstr("allocate B_lanes: Buffer((16,), float32, scope=\"local\")")) << printed;
  EXPECT_THAT(printed, HasSubstr("B_lanes[vr_init] = float32(-inf)")) << printed;
  EXPECT_THAT(printed, HasSubstr("for r_0 in serial(0, 2)")) << printed;
  EXPECT_THAT(printed, HasSubstr("for r_1 in serial(0, 16)")) << printed;
  EXPECT_THAT(printed, HasSubstr("for r_tail in serial(0, 8)")) << printed;
  EXPECT_THAT(printed, HasSubstr("B_lanes[vr_1] = max(B_lanes[vr_1], A[vi, vr_0 * 16 + vr_1])")) << printed;
  EXPECT_THAT(printed, HasSubstr("B_lanes[0] = max(B_lanes[0], A[vi_1, 32 + vr_tail])")) << printed;
  EXPECT_THAT(printed, HasSubstr("B_lanes_8[vr_half] = max(B_lanes[vr_half], B_lanes[vr_half + 8])")) << printed;
  EXPECT_THAT(printed, HasSubstr("B_lanes_2[vr_half_2] = max(B_lanes_4[vr_half_2], B_lanes_4[vr_half_2 + 2])"))
      << printed;
  EXPECT_THAT(printed, HasSubstr("B[vi_2] = max(float32(-inf), max(B_lanes_2[0], B_lanes_2[1]))")) << printed;
  // The lane loops can be vectorized; the trace prints, parses and replays.
  ASSERT_TRUE(s.Vectorize("r_1").ok());
  ASSERT_TRUE(s.Vectorize("r_init").ok());
  ASSERT_TRUE(s.Vectorize("r_half").ok());
  EXPECT_EQ(s.trace().ToString(),
            "rfactor(\"B\", \"r\", 16) -> [\"B_rf\", \"B_rf_init\", \"B_rf_tail\", \"B_rf_half\", \"B_rf_half_1\", "
            "\"B_rf_half_2\"]\nvectorize(\"r_1\")\nvectorize(\"r_init\")\nvectorize(\"r_half\")\n");
  absl::StatusOr<Trace> parsed = Trace::Parse(s.trace().ToString());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  Schedule again(Parse(kRowMax40));
  ASSERT_TRUE(parsed->Replay(&again).ok()) << s.trace().ToString();
  EXPECT_TRUE(StructuralEqual(again.func(), s.func()));
}

// Tail lanes: 300 = 4 * 64 + 2 * 16 + 12. The 44 elements after the four rounds of 64 run
// as two steps of 16 lanes into the first 16 lanes, the last 12 as one step of 16 lanes
// whose lanes from 12 on do nothing (`where r_tail < 12`: vectorized, GuardVectorizedTails
// blends it); replayed from
// the printed trace (rfactor with two integers) to the same function.
TEST(ScheduleTest, RFactorWithTailLanesRunsTheRestInVectorSteps) {
  const std::string text = absl::StrReplaceAll(kRowMax40, {{"40", "300"}});
  Schedule s(Parse(text));
  absl::StatusOr<std::vector<std::string>> names = s.RFactor("B", "r", 64, 16);
  ASSERT_TRUE(names.ok()) << names.status();
  ASSERT_FALSE(names->empty());
  EXPECT_EQ(names->back(), "B_rf_tail_vector");
  std::string printed = Print(s.func());
  EXPECT_THAT(printed, HasSubstr("for r_0 in serial(0, 4)")) << printed;
  EXPECT_THAT(printed, HasSubstr("for r_tail_0 in serial(0, 2)")) << printed;
  EXPECT_THAT(printed, HasSubstr("for r_tail_1 in serial(0, 16)")) << printed;
  EXPECT_THAT(printed, HasSubstr("for r_tail in serial(0, 16)")) << printed;
  EXPECT_THAT(printed, HasSubstr("where r_tail < 12")) << printed;
  EXPECT_THAT(printed,
              HasSubstr("B_lanes[vr_tail_1] = max(B_lanes[vr_tail_1], A[vi_1, 256 + vr_tail_0 * 16 + vr_tail_1])"))
      << printed;
  EXPECT_THAT(printed, HasSubstr("B_lanes[vr_tail] = max(B_lanes[vr_tail], A[vi_2, 288 + vr_tail])")) << printed;
  ASSERT_TRUE(s.Vectorize("r_1").ok());
  ASSERT_TRUE(s.Vectorize("r_tail_1").ok());
  EXPECT_THAT(s.trace().ToString(), HasSubstr("rfactor(\"B\", \"r\", 64, 16)"));
  absl::StatusOr<Trace> parsed = Trace::Parse(s.trace().ToString());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  Schedule again(Parse(text));
  ASSERT_TRUE(parsed->Replay(&again).ok()) << s.trace().ToString();
  EXPECT_TRUE(StructuralEqual(again.func(), s.func()));

  Schedule wrong(Parse(text));
  EXPECT_EQ(wrong.RFactor("B", "r", 64, 24).status().message(),
            "rfactor: tail lanes must divide the 64 lanes and be in [2, 64), got 24");
}

// A symbolic extent: K / lanes full rounds, K % lanes in the tail; the sum's init (which
// need not be the identity) is applied once, in the combine.
TEST(ScheduleTest, RFactorSymbolicExtentKeepsTheInitForTheCombine) {
  Schedule s(Parse(R"(
prim_func @f(A: Buffer((n, m), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    for r in serial(0, m) {
      block "B" {
        vi = spatial(n, i)
        vr = reduce(m, r)
        init {
          B[vi] = 5.0
        }
        B[vi] = B[vi] + A[vi, vr] * 2.0
      }
    }
  }
})"));
  absl::StatusOr<std::vector<std::string>> names = s.RFactor("B", "r", 4);
  ASSERT_TRUE(names.ok()) << names.status();
  std::string printed = Print(s.func());
  EXPECT_THAT(printed, HasSubstr("B_lanes[vr_init] = 0.0")) << printed;
  EXPECT_THAT(printed, HasSubstr("B[vi_2] = 5.0 + (B_lanes_2[0] + B_lanes_2[1])")) << printed;
  EXPECT_THAT(printed, HasSubstr("vr_tail = reduce(")) << printed;
}

TEST(ScheduleTest, RFactorErrors) {
  Schedule s(Parse(kRowMax40));
  EXPECT_EQ(s.RFactor("X", "r", 16).status().message(), "rfactor: no block named 'X'");
  EXPECT_EQ(s.RFactor("B", "r", 1).status().message(), "rfactor: lanes must be in [2, 64], got 1");
  EXPECT_EQ(s.RFactor("B", "r", 64).status().message(),
            "rfactor: loop 'r' has 40 iterations, fewer than the 64 lanes");
  EXPECT_THAT(s.RFactor("B", "i", 16).status().message(), HasSubstr("loop 'i' must directly contain block 'B'"));
  Schedule t(Parse(kRowMax40));
  ASSERT_TRUE(t.DecomposeReduction("B", "r").ok());
  EXPECT_THAT(t.RFactor("B", "r", 16).status().message(), HasSubstr("block 'B' has no init"));
  Schedule u(Parse(kRowMax40));
  ASSERT_TRUE(u.Split("r", {-1, 8}).ok());
  EXPECT_THAT(u.RFactor("B", "r_1", 4).status().message(),
              HasSubstr("loop 'r_1' must be bound directly to exactly one reduction variable"));
  Schedule v(Parse(R"(
prim_func @f(A: Buffer((n, 32), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    for r in serial(0, 32) {
      block "B" {
        vi = spatial(n, i)
        vr = reduce(32, r)
        init {
          B[vi] = 0.0
        }
        B[vi] = B[vi] - A[vi, vr]
      }
    }
  }
})"));
  EXPECT_THAT(v.RFactor("B", "r", 16).status().message(), HasSubstr("does not combine with +, *, max or min"));
  Schedule w(Parse(R"(
prim_func @f(A: Buffer((n, 8, 32), float32), B: Buffer((n,), float32)) {
  for r0 in serial(0, 8) {
    for i in serial(0, n) {
      for r1 in serial(0, 32) {
        block "B" {
          vi = spatial(n, i)
          vr0 = reduce(8, r0)
          vr1 = reduce(32, r1)
          init {
            B[vi] = 0.0
          }
          B[vi] = B[vi] + A[vi, vr0, vr1]
        }
      }
    }
  }
})"));
  EXPECT_THAT(w.RFactor("B", "r1", 16).status().message(),
              HasSubstr("loop 'i' lies inside the reduction of block 'B' but a spatial variable"));
  EXPECT_EQ(s.trace().ToString(), "");
}


// ---------------------------------------------------------------- fuse_siblings

const char* kTwoPasses = R"(
prim_func @f(A: Buffer((n, 8), float32), B: Buffer((n, 8), float32)) {
  allocate S: Buffer((n,), float32) {
    for i in serial(0, n) {
      for r in serial(0, 8) {
        block "S" {
          vi = spatial(n, i)
          vr = reduce(8, r)
          init {
            S[vi] = 0.0
          }
          S[vi] = S[vi] + A[vi, vr]
        }
      }
    }
    for i2 in serial(0, n) {
      for j in serial(0, 8) {
        block "B" {
          vi2 = spatial(n, i2)
          vj = spatial(8, j)
          B[vi2, vj] = A[vi2, vj] / S[vi2]
        }
      }
    }
  }
})";

TEST(ScheduleTest, FuseSiblingsRunsBothPassesPerRow) {
  Schedule s(Parse(kTwoPasses));
  ASSERT_TRUE(s.FuseSiblings("i", "i2").ok());
  EXPECT_FUNC_EQ(s.func(), R"(
prim_func @f(A: Buffer((n, 8), float32), B: Buffer((n, 8), float32)) {
  allocate S: Buffer((n,), float32) {
    for i in serial(0, n) {
      for r in serial(0, 8) {
        block "S" {
          vi = spatial(n, i)
          vr = reduce(8, r)
          init {
            S[vi] = 0.0
          }
          S[vi] = S[vi] + A[vi, vr]
        }
      }
      for j in serial(0, 8) {
        block "B" {
          vi2 = spatial(n, i)
          vj = spatial(8, j)
          B[vi2, vj] = A[vi2, vj] / S[vi2]
        }
      }
    }
  }
})");
  EXPECT_EQ(s.trace().ToString(), "fuse_siblings(\"i\", \"i2\")\n");
  absl::StatusOr<Trace> parsed = Trace::Parse(s.trace().ToString());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  Schedule again(Parse(kTwoPasses));
  ASSERT_TRUE(parsed->Replay(&again).ok());
  EXPECT_TRUE(StructuralEqual(again.func(), s.func()));
}

TEST(ScheduleTest, FuseSiblingsErrors) {
  Schedule s(Parse(kTwoPasses));
  EXPECT_THAT(s.FuseSiblings("i2", "i").message(),
              HasSubstr("are not statements of one sequence, the first before the second"));
  EXPECT_THAT(s.FuseSiblings("i", "r").message(), HasSubstr("are not statements of one sequence"));
  ASSERT_TRUE(s.Parallel("i2").ok());
  EXPECT_THAT(s.FuseSiblings("i", "i2").message(), HasSubstr("are serial and parallel"));
  // The second pass reads the row before: fusing would read it before it is written.
  Schedule t(Parse(R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32), C: Buffer((n,), float32)) {
  for i in serial(0, n) {
    block "B" {
      vi = spatial(n, i)
      B[vi] = A[vi] * 2.0
    }
  }
  for i2 in serial(0, n - 1) {
    block "C" {
      vi2 = spatial(n - 1, i2)
      C[vi2] = B[vi2 + 1]
    }
  }
})"));
  EXPECT_THAT(t.FuseSiblings("i", "i2").message(), HasSubstr("have different ranges"));
  Schedule u(Parse(R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32), C: Buffer((n,), float32)) {
  for i in serial(0, n) {
    block "B" {
      vi = spatial(n, i)
      B[vi] = A[vi] * 2.0
    }
  }
  for i2 in serial(0, n) {
    block "C" {
      vi2 = spatial(n, i2)
      C[vi2] = B[n - 1 - vi2]
    }
  }
})"));
  EXPECT_THAT(u.FuseSiblings("i", "i2").message(),
              HasSubstr("both access 'B' (and one writes it) other than in one dimension indexed by the loop variable"));
}

// A 4 x 64 x 32 matmul whose weight is copied per k block of 16 rows and 16-column
// sub-tile: PrefetchNext has each of the 4 rows (loop i) prefetch 4 rows of the panel the
// next (k block, sub-tile) copies, one 64-byte line each, and nothing after the last.
constexpr const char* kConstantMatmul = R"(
prim_func @f(A: Buffer((4, 64), float32), B: Buffer((64, 32), float32), C: Buffer((4, 32), float32)) {
  for i in serial(0, 4) {
    for j in serial(0, 32) {
      for r in serial(0, 64) {
        block "C" {
          vi = spatial(4, i)
          vj = spatial(32, j)
          vk = reduce(64, r)
          init {
            C[vi, vj] = 0.0
          }
          C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        }
      }
    }
  }
})";

std::vector<float> RunMatmul(const PrimFunc& f) {
  std::vector<float> a(4 * 64), b(64 * 32), c(4 * 32, -1.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7) % 13) - 6.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 5) % 11) * 0.25f - 1.0f;
  HostBuffer ha = HostBuffer::ReadOnly(DataType::Float32(), {4, 64}, reinterpret_cast<const uint8_t*>(a.data()));
  HostBuffer hb = HostBuffer::ReadOnly(DataType::Float32(), {64, 32}, reinterpret_cast<const uint8_t*>(b.data()));
  HostBuffer hc = HostBuffer::Writable(DataType::Float32(), {4, 32}, reinterpret_cast<uint8_t*>(c.data()));
  absl::Status run = RunPrimFunc(f, {&ha, &hb, &hc});
  KILN_CHECK(run.ok()) << run;
  return c;
}

TEST(ScheduleTest, PrefetchNextFetchesTheNextPanelWhileThisOneIsUsed) {
  Schedule s(Parse(kConstantMatmul));
  ASSERT_TRUE(s.Split("r", {-1, 16}).ok());
  ASSERT_TRUE(s.Split("j", {-1, 16}).ok());
  ASSERT_TRUE(s.Reorder({"r_0", "j_0", "i", "r_1", "j_1"}).ok());
  absl::StatusOr<std::string> copy = s.CacheRead("C", "B", "j_0");
  ASSERT_TRUE(copy.ok()) << copy.status();
  absl::Status st = s.PrefetchNext(*copy, "r_0", "i");
  ASSERT_TRUE(st.ok()) << st;
  // Panel (r_0, j_0) is followed by (r_0, j_0 + 1), then by (r_0 + 1, 0): rows 16 r_0 +
  // 16 floordiv(j_0 + 1, 2) on, columns from 16 floormod(j_0 + 1, 2); row i's share is rows
  // 4 i .. 4 i + 3 of it.
  const std::string printed = Print(s.func());
  EXPECT_THAT(printed, HasSubstr(R"(for i in serial(0, 4) {
          if j_0 + 2 * r_0 < 7 {
            for B_cache_prefetch_row in unroll(0, 4) {
              evaluate prefetch(B[B_cache_prefetch_row + 4 * i + 16 * r_0 + 16 * floordiv(j_0 + 1, 2), 16 * floormod(j_0 + 1, 2)])
            }
          }
          for r_1 in serial(0, 16) {)"))
      << printed;
  // The prefetches change no result (the interpreter skips them; the copy is unchanged).
  EXPECT_EQ(RunMatmul(s.func()), RunMatmul(Parse(kConstantMatmul)));
  // The trace replays, prefetch_next included.
  EXPECT_THAT(s.trace().ToString(), HasSubstr("prefetch_next(\"B_cache\", \"r_0\", \"i\")\n"));
  Schedule again(Parse(kConstantMatmul));
  ASSERT_TRUE(s.trace().Replay(&again).ok()) << s.trace().ToString();
  EXPECT_TRUE(StructuralEqual(again.func(), s.func()));
  // Refused: a block that is not a copy, loops in the wrong places.
  EXPECT_THAT(s.PrefetchNext("C", "r_0", "i").message(), HasSubstr("block 'C' is not a copy"));
  EXPECT_THAT(s.PrefetchNext(*copy, "i", "r_1").message(),
              HasSubstr("loop 'i' does not enclose the loops of block 'B_cache'"));
  EXPECT_THAT(s.PrefetchNext(*copy, "r_0", "r_0").message(), HasSubstr("loop 'r_0' is not inside loop 'j_0'"));
  EXPECT_THAT(s.PrefetchNext(*copy, "r_0", "nope").message(), HasSubstr("nope"));
  EXPECT_THAT(s.PrefetchNext(*copy, "r_0", "i", 5).message(),
              HasSubstr("a cycle of 5 iterations, not between 1 and the 4 iterations of the loops down to 'i'"));
  // With a cycle of 2, rows 0 and 1 share the panel's rows (8 each) and rows 2 and 3 repeat
  // theirs (the steps of an edge tile that may not run); the trace keeps the cycle.
  Schedule cycled(Parse(kConstantMatmul));
  ASSERT_TRUE(cycled.Split("r", {-1, 16}).ok());
  ASSERT_TRUE(cycled.Split("j", {-1, 16}).ok());
  ASSERT_TRUE(cycled.Reorder({"r_0", "j_0", "i", "r_1", "j_1"}).ok());
  ASSERT_TRUE(cycled.CacheRead("C", "B", "j_0").ok());
  st = cycled.PrefetchNext("B_cache", "r_0", "i", 2);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_THAT(Print(cycled.func()), HasSubstr("for B_cache_prefetch_row in unroll(0, 8) {\n"
                                              "              evaluate prefetch(B[B_cache_prefetch_row + 16 * r_0 + 16 * "
                                              "floordiv(j_0 + 1, 2) + 8 * floormod(i, 2), 16 * floormod(j_0 + 1, 2)])"))
      << Print(cycled.func());
  EXPECT_THAT(cycled.trace().ToString(), HasSubstr("prefetch_next(\"B_cache\", \"r_0\", \"i\", 2)\n"));
  absl::StatusOr<Trace> reread = Trace::Parse(cycled.trace().ToString());
  ASSERT_TRUE(reread.ok()) << reread.status();
  Schedule replayed(Parse(kConstantMatmul));
  ASSERT_TRUE(reread->Replay(&replayed).ok());
  EXPECT_TRUE(StructuralEqual(replayed.func(), cycled.func()));
  EXPECT_EQ(RunMatmul(cycled.func()), RunMatmul(Parse(kConstantMatmul)));
  // A symbolic row count leaves no constant share of the rows per row.
  Schedule symbolic(Parse(absl::StrReplaceAll(kConstantMatmul, {{"(4, 64)", "(m, 64)"},
                                                                {"(4, 32)", "(m, 32)"},
                                                                {"spatial(4, i)", "spatial(m, i)"},
                                                                {"serial(0, 4)", "serial(0, m)"}})));
  ASSERT_TRUE(symbolic.Split("r", {-1, 16}).ok());
  ASSERT_TRUE(symbolic.Reorder({"r_0", "j", "i", "r_1"}).ok());
  ASSERT_TRUE(symbolic.CacheRead("C", "B", "j").ok());
  EXPECT_THAT(symbolic.PrefetchNext("B_cache", "r_0", "i").message(),
              HasSubstr("loop 'i' (sharing the prefetches) has no constant extent"));
}

// PrefetchAhead: each iteration of j_0 (a 16-float run of B's 8 rows r_1) first prefetches
// the same rows 64 floats further along; 16 floats are one 64-byte line, so one prefetch a
// row. With `first_of` i, only the first row of A asks (the others find B in cache).
// `s`'s trace printed, parsed back and replayed on `unscheduled` gives `s`'s function.
void ExpectTraceRoundTrips(const Schedule& s, const PrimFunc& unscheduled) {
  absl::StatusOr<Trace> reread = Trace::Parse(s.trace().ToString());
  ASSERT_TRUE(reread.ok()) << reread.status();
  Schedule again(unscheduled);
  ASSERT_TRUE(reread->Replay(&again).ok()) << s.trace().ToString();
  EXPECT_TRUE(StructuralEqual(again.func(), s.func())) << StructuralDiff(again.func(), s.func());
}

TEST(ScheduleTest, PrefetchAheadAsksForTheStreamAhead) {
  auto scheduled = [] {
    Schedule s(Parse(kConstantMatmul));
    KILN_CHECK(s.Split("r", {-1, 8}).ok());
    KILN_CHECK(s.Split("j", {-1, 16}).ok());
    KILN_CHECK(s.Reorder({"i", "r_0", "j_0", "r_1", "j_1"}).ok());
    return s;
  };
  Schedule s = scheduled();
  absl::Status st = s.PrefetchAhead("C", "j_0", "B", 64, "i");
  ASSERT_TRUE(st.ok()) << st;
  const std::string printed = Print(s.func());
  EXPECT_THAT(printed, HasSubstr(R"(for j_0 in serial(0, 2) {
        if i == 0 {
          for r_1_prefetch in unroll(0, 8) {
            evaluate prefetch(B[8 * r_0 + r_1_prefetch, 16 * j_0 + 64])
          }
        }
        for r_1 in serial(0, 8) {)"))
      << printed;
  EXPECT_EQ(RunMatmul(s.func()), RunMatmul(Parse(kConstantMatmul)));
  // The trace prints, parses and replays to the same function.
  EXPECT_THAT(s.trace().ToString(), HasSubstr("prefetch_ahead(\"C\", \"j_0\", \"B\", \"i\", 64)\n"));
  ExpectTraceRoundTrips(s, Parse(kConstantMatmul));
  // Without `first_of` every row prefetches; a run of 32 floats is two lines.
  Schedule wide(Parse(kConstantMatmul));
  ASSERT_TRUE(wide.Split("r", {-1, 8}).ok());
  ASSERT_TRUE(wide.Reorder({"i", "r_0", "r_1", "j"}).ok());
  st = wide.PrefetchAhead("C", "r_0", "B", 32);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_THAT(Print(wide.func()), HasSubstr(R"(for r_0 in serial(0, 8) {
      for r_1_prefetch in unroll(0, 8) {
        for j_prefetch in unroll(0, 2) {
          evaluate prefetch(B[8 * r_0 + r_1_prefetch, 16 * j_prefetch + 32])
        }
      }
      for r_1 in serial(0, 8) {)"))
      << Print(wide.func());
  EXPECT_THAT(wide.trace().ToString(), HasSubstr("prefetch_ahead(\"C\", \"r_0\", \"B\", 32)\n"));
  ExpectTraceRoundTrips(wide, Parse(kConstantMatmul));
  // Refused, with `s` unchanged.
  Schedule fresh = scheduled();
  EXPECT_THAT(fresh.PrefetchAhead("C", "j_0", "B", 0).message(),
              HasSubstr("the distance must be at least 1 element, got 0"));
  EXPECT_THAT(fresh.PrefetchAhead("C", "j_0", "A", 64).message(),
              HasSubstr("loop 'j_1' does not walk the last index of 'A' one element at a time"));
  EXPECT_THAT(fresh.PrefetchAhead("C", "j_0", "nope", 64).message(), HasSubstr("block 'C' does not read buffer 'nope'"));
  EXPECT_THAT(fresh.PrefetchAhead("C", "j_1", "B", 64).message(),
              HasSubstr("block 'C' has no loop of its own below 'j_1'"));
  EXPECT_THAT(fresh.PrefetchAhead("C", "j_0", "B", 64, "r_1").message(),
              HasSubstr("loop 'r_1' does not enclose loop 'j_0'"));
  ASSERT_TRUE(fresh.Reorder({"j_1", "r_1"}).ok());
  EXPECT_THAT(fresh.PrefetchAhead("C", "j_0", "B", 64).message(),
              HasSubstr("loop 'r_1' moves along a dimension of 'B' other than its last"));
  EXPECT_THAT(fresh.trace().ToString(), Not(HasSubstr("prefetch_ahead")));
  // A corrupt record is a parse error, not a crash.
  EXPECT_FALSE(Trace::Parse("prefetch_ahead(\"C\", \"j_0\", \"B\")\n").ok());
  EXPECT_FALSE(Trace::Parse("prefetch_ahead(\"C\", \"j_0\", \"B\", \"i\")\n").ok());
}

}  // namespace
}  // namespace kiln::tir
