// Schedule primitives, text in / text out: each primitive on a small PrimFunc is compared
// (structurally) with the hand-written expected function; errors name the primitive and
// the loop or block; a trace prints and replays to a structurally equal function.
#include "tests/tir/schedule_workloads.h"
#include "tir/schedule/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "support/check.h"
#include "tir/structural_equal.h"

namespace kiln::tir {
namespace {

using testing::kMatmul;

using ::testing::HasSubstr;

PrimFunc Parse(const std::string& prim_func_text) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule("module {\n" + prim_func_text + "\n}\n");
  KILN_CHECK(parsed.ok()) << parsed.status() << "\n" << prim_func_text;
  for (const relax::IRModule::Entry& e : parsed->module.entries()) {
    if (e.prim_func()) return *e.prim_func();
  }
  KILN_CHECK(false) << "no prim_func";
  return PrimFunc();
}

std::string Print(const PrimFunc& f) { return relax::PrintPrimFunc(f, "f"); }

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
  allocate T: Buffer((n,), float32) {
    for j in serial(0, n) {
      block "C" {
        vj = spatial(n, j)
        C[vj] = A[vj] * 2.0 + 1.0
      }
    }
  }
})");
  Schedule out(Parse(kScale));
  absl::Status st = out.ComputeInline("B");
  EXPECT_THAT(st.message(), HasSubstr("compute_inline: block 'B' writes the parameter 'B'"));
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

}  // namespace
}  // namespace kiln::tir
