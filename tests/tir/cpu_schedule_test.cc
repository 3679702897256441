// ScheduleForCpu's loop structure on small PrimFuncs (the numbers it computes are checked
// by tests/codegen/schedule_numerics_test.cc, which compiles and runs them).
#include "tests/tir/schedule_workloads.h"
#include "tir/schedule_rules/cpu_schedule.h"
#include "tir/schedule/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "support/check.h"
#include "tir/structural_equal.h"
#include "tir/text_parser.h"
#include "tir/text_printer.h"

namespace kiln::tir {
namespace {

using testing::kMatmul;
using testing::kRowSum;

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

PrimFunc Parse(const std::string& prim_func_text) {
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(prim_func_text);
  KILN_CHECK(parsed.ok()) << parsed.status() << "\n" << prim_func_text;
  return parsed->func;
}

std::string Print(const PrimFunc& f) { return PrintPrimFunc(f, "f"); }

const char* k2d = R"(
prim_func @f(A: Buffer((n, m), float32), B: Buffer((n, m), float32)) {
  for i in serial(0, n) {
    for j in serial(0, m) {
      block "B" {
        vi = spatial(n, i)
        vj = spatial(m, j)
        B[vi, vj] = A[vi, vj] + 1.0
      }
    }
  }
})";



TEST(DefaultCpuScheduleTest, InjectiveVectorizesInnerAndGuardsTheTail) {
  std::string trace;
  absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(k2d), {.vector_lanes = 8, .num_threads = 4}, &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(trace,
            "split(\"j\", [-1, 8]) -> [\"j_0\", \"j_1\"]\n"
            "vectorize(\"j_1\")\n"
            "parallel(\"i\")\n"
            "guard_vectorized_tails()\n");
  EXPECT_TRUE(StructuralEqual(*f, Parse(R"(
prim_func @f(A: Buffer((n, m), float32), B: Buffer((n, m), float32)) {
  for i in parallel(0, n) {
    for j_0 in serial(0, floordiv(m + 7, 8)) {
      if 8 * j_0 < m - 7 {
        for j_1 in vectorized(0, 8) {
          block "B" {
            vi = spatial(n, i)
            vj = spatial(m, 8 * j_0 + j_1)
            B[vi, vj] = A[vi, vj] + 1.0
          }
        }
      } else {
        for j_1_tail in vectorized(0, min(max(m - 8 * j_0, 0), 8)) {
          block "B_tail" {
            vi_t = spatial(n, i)
            vj_t = spatial(m, 8 * j_0 + j_1_tail)
            B[vi_t, vj_t] = A[vi_t, vj_t] + 1.0
          }
        }
      }
    }
  }
})"))) << Print(*f);
}

TEST(DefaultCpuScheduleTest, MatmulIsTiledVectorizedAndDecomposed) {
  std::string trace;
  absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(kMatmul), {.vector_lanes = 8, .num_threads = 4}, &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  // m and n are symbolic: the function is versioned first (the copy gets wide tiles for
  // few rows, see FewRowsGetWideTiles), then this branch gets the register tiles.
  EXPECT_THAT(trace, StartsWith(
            "branch_on(\"m >= 64 || n < 128\") -> \"C_else\"\n"
            "cache_write(\"C\") -> \"C_write_back\"\n"
            "split(\"i\", [-1, 6]) -> [\"i_0\", \"i_1\"]\n"
            "split(\"j\", [-1, 16]) -> [\"j_0\", \"j_1\"]\n"
            "reorder([\"j_0\", \"i_0\", \"r\", \"i_1\", \"j_1\"])\n"
            "fuse([\"j_0\", \"i_0\"]) -> \"j_0_i_0_fused\"\n"
            "parallel(\"j_0_i_0_fused\")\n"
            "vectorize(\"j_1\")\n"
            "unroll(\"i_1\")\n"
            "decompose_reduction(\"C\", \"r\") -> \"C_init\"\n"
            "reverse_compute_at(\"C_write_back\", \"j_0_i_0_fused\")\n"
            "get_loops(\"C_write_back\") -> [\"j_0_i_0_fused\", \"ax0\", \"ax1\"]\n"
            "vectorize(\"ax1\")\n"
            "unroll(\"ax0\")\n"
            "cache_write(\"C_else\") -> \"C_else_write_back\"\n"));
  // (No steps of two rows in the row edge: k is symbolic, the panel may not fit in L1.)
  EXPECT_THAT(trace, EndsWith("guard_vectorized_tails()\n"));
  // The accumulator is a 6 x 16 tile inside the parallel loop (8 lanes: AVX2's 16
  // registers hold 12 accumulators, 2 loads and a broadcast), and the full tiles run
  // without lane conditions, apart from the edge tiles' serial copy.
  std::string text = Print(*f);
  EXPECT_THAT(text, HasSubstr("allocate C_local: Buffer((6, 16), float32, scope=\"local\")"));
  EXPECT_THAT(text, HasSubstr("C_local[i_1, j_1] = C_local[i_1, j_1] + A[vi, vk] * B[vk, vj]"));
  EXPECT_THAT(text, HasSubstr("C[vi_wb, vj_wb] = C_local[ax0, ax1]"));
}

TEST(DefaultCpuScheduleTest, FusedMatmulEpilogueRunsOnTheTile) {
  std::string trace;
  absl::StatusOr<PrimFunc> f =
      ScheduleForCpu(Parse(testing::kFusedMatmulBiasGelu), {.vector_lanes = 8, .num_threads = 4}, &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(trace, StartsWith("compute_inline(\"add\")\n"
                                "branch_on(\"m >= 64 || n < 128\") -> [\"matmul_else\", \"gelu_else\"]\n"
                                "cache_write(\"matmul\") -> \"matmul_write_back\"\n"
                                "reverse_compute_inline(\"gelu\")\n"));
  EXPECT_THAT(trace, HasSubstr("reverse_compute_at(\"matmul_write_back\", \"i1_0_i0_0_fused\")"));
  std::string text = Print(*f);
  // One parallel loop nest; the intermediates are gone and the tile is 6 x 16.
  EXPECT_EQ(text.find("allocate mm:"), std::string::npos) << text;
  EXPECT_EQ(text.find("allocate biased"), std::string::npos) << text;
  // One parallel loop nest in each branch of `if (m >= 64 ...)`.
  size_t first = text.find("parallel"), second = text.find("parallel", first + 1);
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_EQ(second, text.rfind("parallel")) << text;
  EXPECT_LT(text.find("if m >= 64"), first) << text;
  EXPECT_THAT(text, HasSubstr("allocate mm_local: Buffer((6, 16), float32, scope=\"local\")"));
  EXPECT_THAT(text, HasSubstr("out[v0_wb, v1_wb] = 0.5 * (mm_local[ax0, ax1] + bias[v1_wb])"));
}

// A constant width with enough column panels for the threads: each parallel iteration
// packs its panel of B (k x 32) and runs every row tile over it.
TEST(DefaultCpuScheduleTest, WideMatmulPacksTheRightOperandPanel) {
  std::string text = testing::kMatmul;
  text.replace(text.find("B: Buffer((k, n)"), 16, "B: Buffer((k, 1024)");
  text.replace(text.find("C: Buffer((m, n)"), 16, "C: Buffer((m, 1024)");
  text.replace(text.find("serial(0, n)"), 12, "serial(0, 1024)");
  text.replace(text.find("spatial(n, j)"), 13, "spatial(1024, j)");
  std::string trace;
  absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(text), {.vector_lanes = 16, .num_threads = 4}, &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(trace, HasSubstr("parallel(\"j_0\")\n"));
  EXPECT_THAT(trace, HasSubstr("reverse_compute_at(\"C_write_back\", \"i_0\")\n"));
  EXPECT_THAT(trace, HasSubstr("cache_read(\"C\", \"B\", \"j_0\") -> \"B_cache\"\n"));
  std::string printed = Print(*f);
  EXPECT_THAT(printed, HasSubstr("allocate B_local: Buffer((k, 32), float32, scope=\"local\")"));
  EXPECT_THAT(printed, HasSubstr("A[vi, vk] * B_local[r, j_1]"));
  // Symbolic or narrow widths keep the fused parallel loop over all tiles.
  ASSERT_TRUE(ScheduleForCpu(Parse(testing::kMatmul), {.vector_lanes = 16, .num_threads = 4}, &trace).ok());
  EXPECT_THAT(trace, Not(HasSubstr("cache_read")));
}

// A narrow constant weight (no wide tiles) of constant depth under a symbolic row count:
// the panels are packed only from 128 rows on (the copy of the whole weight per call does
// not pay for fewer), so the function is versioned on `m >= 128` and the copy reads B in
// place. A bound or a constant row count below 128 packs nothing and needs no version.
TEST(DefaultCpuScheduleTest, NarrowWeightIsPackedOnlyForManyRows) {
  auto narrow = [](const std::string& rows, const std::string& where) {
    std::string text = testing::kMatmul;
    text.replace(text.find("A: Buffer((m, k)"), 16, "A: Buffer((m, 64)");
    text.replace(text.find("serial(0, k)"), 12, "serial(0, 64)");
    text.replace(text.find("reduce(k, r)"), 12, "reduce(64, r)");
    text.replace(text.find("B: Buffer((k, n)"), 16, "B: Buffer((64, 128)");
    text.replace(text.find("C: Buffer((m, n)"), 16, "C: Buffer((m, 128)");
    text.replace(text.find("serial(0, n)"), 12, "serial(0, 128)");
    text.replace(text.find("spatial(n, j)"), 13, "spatial(128, j)");
    for (const char* from : {"Buffer((m, 64)", "Buffer((m, 128)", "serial(0, m)", "spatial(m, i)"}) {
      std::string to = from;
      to.replace(to.find('m'), 1, rows);
      text.replace(text.find(from), std::string(from).size(), to);
    }
    text.replace(text.find(") {"), 3, ")" + where + " {");
    return text;
  };
  std::string trace;
  absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(narrow("m", "")), {.vector_lanes = 16, .num_threads = 1}, &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(trace, HasSubstr("branch_on(\"m >= 128\") -> \"C_else\"\n"));
  EXPECT_THAT(trace, HasSubstr("cache_read(\"C\", \"B\", \"j_0\") -> \"B_cache\"\n"));
  std::string printed = Print(*f);
  EXPECT_THAT(printed, HasSubstr("A[vi, vk] * B_local[r, j_1]"));
  EXPECT_THAT(printed, HasSubstr("A[vi_3, vk_3] * B[vk_3, vj_3]"));
  for (const auto& [rows, where] : std::vector<std::pair<std::string, std::string>>{{"m", " where m <= 127"},
                                                                                     {"1", ""}}) {
    f = ScheduleForCpu(Parse(narrow(rows, where)), {.vector_lanes = 16, .num_threads = 1}, &trace);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_THAT(trace, Not(HasSubstr("branch_on"))) << rows << where;
    EXPECT_THAT(trace, Not(HasSubstr("cache_read"))) << rows << where;
  }
}

// Attention scores, (n x d) times (d x n): the symbolic width is at least the row count, so
// the panels keep the threads busy and each is packed once (its k rows would otherwise lie
// n floats apart, at n = 1024 all in the same L1 sets); the tail panel is copied under its
// guard.
TEST(DefaultCpuScheduleTest, SquareSymbolicMatmulPacksTheRightOperandPanel) {
  std::string text = testing::kMatmul;
  for (const char* from : {"Buffer((m, k)", "Buffer((m, n)", "serial(0, m)", "spatial(m, i)"}) {
    std::string to = from;
    to.replace(to.find('m'), 1, "n");
    text.replace(text.find(from), to.size(), to);
  }
  std::string trace;
  absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(text), {.vector_lanes = 16, .num_threads = 2}, &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(trace, HasSubstr("parallel(\"j_0\")\n"));
  EXPECT_THAT(trace, HasSubstr("cache_read(\"C\", \"B\", \"j_0\") -> \"B_cache\"\n"));
  EXPECT_THAT(Print(*f), HasSubstr("A[vi, vk] * B_local[r, j_1]"));
}

// The default schedule's trace, printed, parsed and replayed on the unscheduled function,
// gives the same function (the few-rows version and the tail guards included).
TEST(DefaultCpuScheduleTest, TracesOfTheNewRulesReplay) {
  std::string wide = testing::kMatmul;
  wide.replace(wide.find("B: Buffer((k, n)"), 16, "B: Buffer((k, 1024)");
  wide.replace(wide.find("C: Buffer((m, n)"), 16, "C: Buffer((m, 1024)");
  wide.replace(wide.find("serial(0, n)"), 12, "serial(0, 1024)");
  wide.replace(wide.find("spatial(n, j)"), 13, "spatial(1024, j)");
  for (const std::string& text : {std::string(testing::kMatmul), std::string(testing::kFusedMatmulBiasGelu), wide}) {
    PrimFunc func = Parse(text);
    std::string trace;
    absl::StatusOr<PrimFunc> f = ScheduleForCpu(func, {.vector_lanes = 16, .num_threads = 4}, &trace);
    ASSERT_TRUE(f.ok()) << f.status();
    absl::StatusOr<Trace> parsed = Trace::Parse(trace);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    Schedule again(func);
    absl::Status st = parsed->Replay(&again);
    ASSERT_TRUE(st.ok()) << st << "\n" << trace;
    EXPECT_TRUE(StructuralEqual(again.func(), *f)) << StructuralDiff(again.func(), *f) << "\n" << trace;
  }
}

// Few rows and wide columns get wide 16 x 256 tiles (each weight row read in long runs,
// GEMV-like). Symbolic sizes: one kernel, `if (m >= 64 || n < 256)` the 8 x 32 register
// tile, else the wide tile. Constants decide without a branch.
TEST(DefaultCpuScheduleTest, FewRowsGetWideTiles) {
  auto with = [](std::string text, const std::string& rows, const std::string& cols) {
    if (!rows.empty()) {
      text.replace(text.find("A: Buffer((m, k)"), 16, "A: Buffer((" + rows + ", k)");
      text.replace(text.find("serial(0, m)"), 12, "serial(0, " + rows + ")");
      text.replace(text.find("spatial(m, i)"), 13, "spatial(" + rows + ", i)");
    }
    if (!cols.empty()) {
      text.replace(text.find("B: Buffer((k, n)"), 16, "B: Buffer((k, " + cols + ")");
      text.replace(text.find("serial(0, n)"), 12, "serial(0, " + cols + ")");
      text.replace(text.find("spatial(n, j)"), 13, "spatial(" + cols + ", j)");
    }
    std::string c = "C: Buffer((" + (rows.empty() ? std::string("m") : rows) + ", " +
                    (cols.empty() ? std::string("n") : cols) + ")";
    text.replace(text.find("C: Buffer((m, n)"), 16, c);
    absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(text), {.vector_lanes = 16, .num_threads = 2});
    KILN_CHECK(f.ok()) << f.status();
    return Print(*f);
  };
  std::string text = with(kMatmul, "", "");
  EXPECT_THAT(text, HasSubstr("if m >= 64 || n < 256 {"));
  EXPECT_THAT(text, HasSubstr("Buffer((16, 256), float32, scope=\"local\")"));
  EXPECT_THAT(text, HasSubstr("Buffer((8, 32), float32, scope=\"local\")"));
  text = with(kMatmul, "", "4096");
  EXPECT_THAT(text, HasSubstr("if m >= 64 {"));
  text = with(kMatmul, "3", "");
  EXPECT_THAT(text, HasSubstr("if n < 256 {"));
  EXPECT_THAT(text, HasSubstr("Buffer((3, 256), float32, scope=\"local\")"));
  // A constant width: one tile per thread (4096 / 2 columns), walked in sub-tiles of 256.
  text = with(kMatmul, "3", "4096");
  EXPECT_THAT(text, Not(HasSubstr("if ")));
  EXPECT_THAT(text, HasSubstr("Buffer((3, 2048), float32, scope=\"local\")"));
  EXPECT_THAT(text, HasSubstr("C_local[i, 256 * j_1_0 + 32 * j_1_1_0 + j_1_1_1]"));
  // Narrow constant columns or many constant rows: the register tile alone.
  EXPECT_THAT(with(kMatmul, "", "256"), Not(HasSubstr("256), float32, scope=\"local\"")));
  EXPECT_THAT(with(kMatmul, "64", ""), Not(HasSubstr("256), float32, scope=\"local\"")));
  // Rows and columns of one size (attention scores, (n x d) . (d x n)): wide columns mean
  // many rows, so `n >= 64 || n < 256` always holds and no few-rows branch is compiled.
  text = with(kMatmul, "n", "n");
  EXPECT_THAT(text, Not(HasSubstr("if n >= 64")));
  EXPECT_THAT(text, Not(HasSubstr("_else")));
  EXPECT_THAT(text, HasSubstr("Buffer((8, 32), float32, scope=\"local\")"));
  EXPECT_THAT(text, Not(HasSubstr("256), float32, scope=\"local\"")));
}

// A wide tile of 16 rows over a model's weight (k, n constant, m symbolic) walks its rows in
// steps the registers hold, inside each k block and sub-tile, so every k block of the weight
// is read once for all 16 rows: 8-row steps with 32 registers (16 lanes), 4-row steps with
// 16 (8 lanes). The row-edge copy (m not a multiple of 16, GEMV) runs its row steps
// outermost in each k block, each row reading 8 weight rows across the whole tile; with
// 4-row steps a step whose rows are all in range runs them together instead.
// kMatmul with a model's weight: k = n = 4096 constant, the rows m symbolic.
// The printed function without its indentation, one statement per line.
std::string Unindented(const PrimFunc& f) {
  std::string printed;
  for (absl::string_view line : absl::StrSplit(Print(f), '\n')) {
    printed += std::string(absl::StripLeadingAsciiWhitespace(line)) + "\n";
  }
  return printed;
}

std::string MatmulOverA4096SquareWeight() {
  std::string text = kMatmul;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"A: Buffer((m, k)", "A: Buffer((m, 4096)"}, {"B: Buffer((k, n)", "B: Buffer((4096, 4096)"},
           {"C: Buffer((m, n)", "C: Buffer((m, 4096)"}, {"serial(0, n)", "serial(0, 4096)"},
           {"serial(0, k)", "serial(0, 4096)"}, {"spatial(n, j)", "spatial(4096, j)"},
           {"reduce(k, r)", "reduce(4096, r)"}}) {
    text.replace(text.find(from), from.size(), to);
  }
  return text;
}

TEST(DefaultCpuScheduleTest, WideTileRowsStepThroughRegisters) {
  const std::string text = MatmulOverA4096SquareWeight();
  for (int lanes : {16, 8}) {
    SCOPED_TRACE(lanes);
    const int step = lanes == 16 ? 8 : 4;
    absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(text), {.vector_lanes = lanes, .num_threads = 2});
    ASSERT_TRUE(f.ok()) << f.status();
    const std::string printed = Unindented(*f);
    // The packed wide tiles hold 64 rows, so the register tiles start at 65.
    EXPECT_THAT(printed, HasSubstr("if m >= 65 {"));
    EXPECT_THAT(printed, HasSubstr("Buffer((16, 2048), float32, scope=\"local\")"));
    const int sub_tiles = 2048 / (16 * lanes);  // of 8 vector pairs
    // Full tiles: k block, sub-tile, row step, pair, k in the block, rows unrolled, lanes.
    // These unpacked tiles are the version of fewer than 32 rows, BranchOn's copy of the
    // few-rows version (names `_else_else`); the packed tiles take 32-64 rows.
    const std::string e = "_else_else";
    const std::string full = absl::StrCat(
        "for r", e, "_0 in serial(0, 256) {\n"
        "for j", e, "_1_0 in serial(0, ", sub_tiles, ") {\n"
        "for i", e, "_1_0 in serial(0, ", 16 / step, ") {\n"
        "for j", e, "_1_1_0 in serial(0, 8) {\n"
        "for r", e, "_1 in serial(0, 16) {\n"
        "for i", e, "_1_1 in unroll(0, ", step, ") {\n"
        "for j", e, "_1_1_1 in vectorized(0, ", 2 * lanes, ") {");
    EXPECT_THAT(printed, HasSubstr(full)) << printed;
    // Row edges: row step, 8 weight rows, rows, sub-tile, pair, the 8 unrolled, lanes. With
    // 4-row steps (8 lanes) only the partial step (`_part`, under its guards) runs per row;
    // whole steps keep the rows innermost: 8 weight rows, sub-tile, pair, the 8, rows, lanes.
    // Each pair first prefetches its 8 weight rows 256 floats ahead, once per 64 bytes (2
    // lines of a 512-bit pair, 1 of a 256-bit one), in the step's first row only
    // (prefetch_ahead, matmul.stream_prefetch).
    const std::string p = lanes == 16 ? "" : "_part";
    const std::string edge = absl::StrCat(
        "for r", e, "_1_edge_0", p, " in serial(0, 2) {\n"
        "for i", e, "_1_1_edge", p, " in unroll(0, ", step, ") {\n"
        "for j", e, "_1_0_edge", p, " in serial(0, ", sub_tiles, ") {\n"
        "for j", e, "_1_1_0_edge", p, " in serial(0, 8) {\n"
        "if i", e, "_1_1_edge", p, " == 0 && ", step, " * i", e, "_1_0_edge + 16 * floormod(j", e, "_0_i", e,
        "_0_fused, floordiv(m + 15, 16)) < m {\n"
        "for r", e, "_1_edge_1", p, "_prefetch in unroll(0, 8) {\n",
        lanes == 16 ? absl::StrCat("for j", e, "_1_1_1_edge", p, "_prefetch in unroll(0, 2) {\n") : "",
        "evaluate prefetch(B[16 * r", e, "_0_edge + 8 * r", e, "_1_edge_0", p, " + r", e, "_1_edge_1", p, "_prefetch, ");
    EXPECT_THAT(printed, HasSubstr(edge)) << printed;
    EXPECT_THAT(printed, HasSubstr(absl::StrCat("floordiv(m + 15, 16)) + 256])\n")));
    EXPECT_THAT(printed, HasSubstr(absl::StrCat("for r", e, "_1_edge_1", p, " in unroll(0, 8) {\n"
                                                "for j", e, "_1_1_1_edge", p, " in vectorized(0, ", 2 * lanes, ") {\n"
                                                "block \"C", e, "_edge", p, "\" {")));
    if (lanes == 16) {
      EXPECT_THAT(printed, HasSubstr(absl::StrCat("for r", e, "_0_edge in serial(0, 256) {\n"
                                                  "for i", e, "_1_0_edge in serial(0, 2) {\n"
                                                  "for r", e, "_1_edge_0 in serial(0, 2) {")))
          << printed;
      continue;
    }
    const std::string whole = absl::StrCat(
        "for r", e, "_0_edge in serial(0, 256) {\n"
        "for i", e, "_1_0_edge in serial(0, 4) {\n"
        "if 4 * i", e, "_1_0_edge + 16 * floormod(j", e, "_0_i", e, "_0_fused, floordiv(m + 15, 16)) < m - 3 {\n"
        "for r", e, "_1_edge_0 in serial(0, 2) {\n"
        "for j", e, "_1_0_edge in serial(0, ", sub_tiles, ") {\n"
        "for j", e, "_1_1_0_edge in serial(0, 8) {\n"
        "for r", e, "_1_edge_1 in unroll(0, 8) {\n"
        "for i", e, "_1_1_edge in unroll(0, 4) {\n"
        "for j", e, "_1_1_1_edge in vectorized(0, 16) {");
    EXPECT_THAT(printed, HasSubstr(whole)) << printed;
  }
}

// matmul.gemv_rows_per_pass: the row edge's update is versioned on its own (branch_on
// scoped to its k-block loop, nothing else copied) for a one-row edge (m = 1, 17, ..), which
// reads 16 weight rows per pass: per k block, row step and row, sub-tile, pair, the 16
// unrolled, lanes. The copy keeps the other row counts' order (8 weight rows per pass, and
// AVX2's whole 4-row steps). The default (0) has no such version.
TEST(DefaultCpuScheduleTest, GemvRowsPerPassVersionsTheRowEdgeAlone) {
  const std::string text = MatmulOverA4096SquareWeight();
  absl::StatusOr<CpuScheduleKnobs> knobs = CpuScheduleKnobs::Parse("matmul.gemv_rows_per_pass=16");
  ASSERT_TRUE(knobs.ok()) << knobs.status();
  for (int lanes : {16, 8}) {
    SCOPED_TRACE(lanes);
    std::string trace;
    absl::StatusOr<PrimFunc> f =
        ScheduleForCpu(Parse(text), {.vector_lanes = lanes, .num_threads = 2, .knobs = *knobs}, &trace);
    ASSERT_TRUE(f.ok()) << f.status();
    const std::string printed = Unindented(*f);
    const std::string e = "_else_else";  // the unpacked tiles: fewer than 32 rows
    const int step = lanes == 16 ? 8 : 4;
    EXPECT_THAT(trace, HasSubstr(absl::StrCat("branch_on(\"floormod(m, 16) == 1\", \"r", e, "_0_edge\") -> \"C", e,
                                              "_edge_else\"")));
    const std::string one_row = absl::StrCat(
        "if floormod(m, 16) == 1 {\n"
        "for r", e, "_0_edge in serial(0, 256) {\n"
        "for i", e, "_1_0_edge in serial(0, ", 16 / step, ") {\n"
        "for i", e, "_1_1_edge in unroll(0, ", step, ") {\n"
        "for j", e, "_1_0_edge in serial(0, ", 2048 / (16 * lanes), ") {\n"
        "for j", e, "_1_1_0_edge in serial(0, 8) {\n"
        "if i", e, "_1_1_edge == 0 && ");
    EXPECT_THAT(printed, HasSubstr(one_row)) << printed;
    // (each pair's 16 weight rows prefetched ahead in the step's first row, then)
    EXPECT_THAT(printed, HasSubstr(absl::StrCat("for r", e, "_1_edge in unroll(0, 16) {\n"
                                                "for j", e, "_1_1_1_edge in vectorized(0, ", 2 * lanes, ") {\n"
                                                "block \"C", e, "_edge\" {")))
        << printed;
    EXPECT_THAT(trace, HasSubstr(absl::StrCat("prefetch_ahead(\"C", e, "_edge\", \"j", e, "_1_1_0_edge\", \"B\", \"i", e,
                                              "_1_1_edge\", 256)")));
    // The other row counts: 8 weight rows per pass (per row on AVX-512; AVX2's whole steps
    // under guard_steps).
    EXPECT_THAT(printed, HasSubstr(absl::StrCat("} else {\nfor r", e, "_0_edge_else in serial(0, 256) {\n")));
    EXPECT_THAT(printed, HasSubstr(absl::StrCat("for r", e, "_1_edge_else_", lanes == 16 ? "0" : "0_part",
                                                " in serial(0, 2) {")))
        << printed;
    if (lanes == 8) {
      EXPECT_THAT(trace, HasSubstr("guard_steps(\"i_else_else_1_0_edge_else\")"));
    }
    // The trace replays to the same function.
    absl::StatusOr<Trace> parsed = Trace::Parse(trace);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    Schedule again(Parse(text));
    absl::Status st = parsed->Replay(&again);
    ASSERT_TRUE(st.ok()) << st << "\n" << trace;
    EXPECT_TRUE(StructuralEqual(again.func(), *f)) << StructuralDiff(again.func(), *f);
    absl::StatusOr<PrimFunc> plain = ScheduleForCpu(Parse(text), {.vector_lanes = lanes, .num_threads = 2});
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_THAT(Print(*plain), Not(HasSubstr("floormod(m, 16) == 1")));
  }
}

// The loops of a packed wide tile over a 4096 x 4096 weight, one thread: per k block of 256
// weight rows and 128-column sub-tile the copy into the panel, then `steps` row steps of
// `rows` rows, pairs, the block's k, the rows unrolled and the lanes. Each (row step, pair)
// first prefetches its share of the next panel's 256 rows (prefetch_next; 256 / (steps x 8)
// rows, 8 lines of 128 floats each): the next sub-tile's, or after the second sub-tile the
// next k block's first; none after the last block's last sub-tile.
constexpr const char* kPackedWideKBlockLoops =
    "for r_else_0 in serial(0, 16) {\n"
    "for j_else_1_1_0 in serial(0, 2) {\n"
    "allocate B_local_2: Buffer((256, 128), float32, scope=\"local\") {";
std::string PackedWideRowSteps(int steps, int rows) {
  const int per = 256 / (steps * 8);
  return absl::StrCat("for i_else_1_1_0 in serial(0, ", steps, ") {\n",
                      "for j_else_1_1_1_0 in serial(0, 8) {\n"
                      "if j_else_1_1_0 + 2 * r_else_0 < 31 {\n"
                      "for B_cache_1_prefetch_row in unroll(0, ", per, ") {\n",
                      "for B_cache_1_prefetch_line in unroll(0, 8) {\n"
                      "evaluate prefetch(B[B_cache_1_prefetch_row + ", 8 * per, " * i_else_1_1_0 + ", per,
                      " * j_else_1_1_1_0 + 256 * r_else_0 + 256 * floordiv(j_else_1_1_0 + 1, 2), 256 * j_else_0 + "
                      "128 * floormod(j_else_1_1_0 + 1, 2) + min(16 * B_cache_1_prefetch_line, 127)])\n"
                      "}\n}\n}\n"
                      "for r_else_1_1 in serial(0, 256) {\n"
                      "for i_else_1_1_1 in unroll(0, ", rows, ") {\n",
                      "for j_else_1_1_1_1 in vectorized(0, 16) {");
}

// The wide-tile knobs (cpu_knobs.h) that make the tiles of a 4096 x 4096 weight k-blocked and
// packed: 48-row tiles up to 128 rows, 6-row steps (the 6 x 2-vector register tile of AVX2),
// k blocks of 256 weight rows, each block of a 128-column sub-tile copied into a contiguous
// buffer before the row steps read it, and the accumulator reloaded once per k block.
// (Here and in PackedWideTilesAreTheDefault the register tiles of many rows keep one block
// of rows, matmul.left_block_rows=0: their blocks' second copy of the code would renumber
// the wide tiles' names checked below. ScheduleNumericsTest.MatmulLeftOperandInRowBlocks
// covers the blocks.)
TEST(DefaultCpuScheduleTest, WideTileKnobsBlockAndPackTheWeight) {
  const std::string text = MatmulOverA4096SquareWeight();
  absl::StatusOr<CpuScheduleKnobs> knobs = CpuScheduleKnobs::Parse(
      "matmul.row_tile=48 matmul.wide_step_rows=6 matmul.wide_k_block=256 matmul.wide_pack=1 "
      "matmul.wide_subtiles=2 matmul.many_rows=128 matmul.wide_step_vectors=2 matmul.left_block_rows=0");
  ASSERT_TRUE(knobs.ok()) << knobs.status();
  absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(text), {.vector_lanes = 8, .num_threads = 1, .knobs = *knobs});
  ASSERT_TRUE(f.ok()) << f.status();
  const std::string printed = Unindented(*f);
  // On 8 lanes the version of 16 rows and more (the packed tiles,
  // PackedWideTilesAreTheDefault) holds them, the knobs' 48-row tiles in 6-row steps in
  // place of the default's 64 rows in steps of 4; its loops are named after the unused
  // copy's (`j_else_1`), hence `_1_1`.
  EXPECT_THAT(printed, HasSubstr("if m >= 16 {\nif m >= 128 {"));
  EXPECT_THAT(printed, HasSubstr("Buffer((48, 256), float32, scope=\"local\")"));
  // Per k block and sub-tile: the copy, then row steps, pairs, the block's k, rows, lanes.
  EXPECT_THAT(printed, HasSubstr(kPackedWideKBlockLoops)) << printed;
  EXPECT_THAT(printed, HasSubstr(PackedWideRowSteps(8, 6))) << printed;
  // Without the packed version (its least rows at the register tiles' first) the wide tiles
  // copy nothing of the weight (the default packs from 16 rows on AVX2, 32 on AVX-512:
  // PackedWideTilesAreTheDefault).
  absl::StatusOr<CpuScheduleKnobs> unpacked =
      CpuScheduleKnobs::Parse("matmul.packed_least_rows=64 matmul.many_rows=64 matmul.left_block_rows=0");
  ASSERT_TRUE(unpacked.ok()) << unpacked.status();
  absl::StatusOr<PrimFunc> plain = ScheduleForCpu(Parse(text), {.vector_lanes = 16, .num_threads = 1, .knobs = *unpacked});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_THAT(Print(*plain), Not(HasSubstr("B_local_1")));
}

// AVX2 over a constant weight (k a multiple of 256): a second version for 16-64 rows takes
// the packed wide tiles (64 rows in 4-row register steps, k blocks of 256 weight rows copied
// into a contiguous panel), fewer rows keep the unpacked tiles and their streaming edge, 65
// and more the register tiles; the version that no row count reaches (many rows and fewer
// than 16) is left as plain loops. In the packed tiles' row edge each 4-row step checks its rows
// once (guard_steps): whole steps without conditions, the short last one with them. The
// edge packs its panel once, unguarded (the rows' guard already failed there; guarded again,
// a never-run copy of the k loops kept LLVM from holding the edge's accumulators in
// registers). The structure in vector-pair steps (4 x 2, matmul.wide_step_vectors=2); the
// default 4 x 3 steps after it; AVX-512's tiles (8 x 2 steps, k blocks of 64) at the end.
TEST(DefaultCpuScheduleTest, PackedWideTilesAreTheDefault) {
  const std::string text = MatmulOverA4096SquareWeight();
  std::string trace;
  absl::StatusOr<CpuScheduleKnobs> pairs =
      CpuScheduleKnobs::Parse("matmul.wide_step_vectors=2 matmul.left_block_rows=0");
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  absl::StatusOr<PrimFunc> f =
      ScheduleForCpu(Parse(text), {.vector_lanes = 8, .num_threads = 1, .knobs = *pairs}, &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  const std::string printed = Unindented(*f);
  EXPECT_THAT(trace, HasSubstr("branch_on(\"m >= 65\")"));
  EXPECT_THAT(trace, HasSubstr("branch_on(\"m >= 16\")"));
  EXPECT_THAT(trace, HasSubstr("guard_steps(\"i_else_1_1_0_edge\")"));
  // The full tiles and both versions of the row edge's steps prefetch the next panel; in the
  // edge, whose steps beyond its rows do not run, the rows are shared between the 4 x 8
  // (row step, pair) iterations of the least rows (16) and repeated by the later steps.
  EXPECT_THAT(trace, HasSubstr("prefetch_next(\"B_cache_1\", \"r_else_0\", \"j_else_1_1_1_0\")\n"));
  EXPECT_THAT(trace, HasSubstr("prefetch_next(\"B_cache_1_edge\", \"r_else_0_edge\", \"j_else_1_1_1_0_edge\", 32)"));
  EXPECT_THAT(trace,
              HasSubstr("prefetch_next(\"B_cache_1_edge\", \"r_else_0_edge\", \"j_else_1_1_1_0_edge_part\", 32)"));
  EXPECT_THAT(printed, HasSubstr("evaluate prefetch(B[B_cache_1_edge_prefetch_row + 256 * r_else_0_edge + 256 * "
                                 "floordiv(j_else_1_1_0_edge + 1, 2) + 8 * floormod(8 * i_else_1_1_0_edge + "
                                 "j_else_1_1_1_0_edge, 32), "))
      << printed;
  EXPECT_THAT(printed, HasSubstr("if m >= 16 {\nif m >= 65 {"));
  // Two sub-tiles of 128 columns.
  EXPECT_THAT(printed, HasSubstr("Buffer((64, 256), float32, scope=\"local\")"));
  EXPECT_THAT(printed, HasSubstr(kPackedWideKBlockLoops)) << printed;
  EXPECT_THAT(printed, HasSubstr(PackedWideRowSteps(16, 4))) << printed;
  // The row edge's steps: whole ones without conditions, the rest with them.
  EXPECT_THAT(printed, HasSubstr("for j_else_1_1_0_edge in serial(0, 2) {\n"
                                 "allocate B_local_3: Buffer((256, 128), float32, scope=\"local\") {"))
      << printed;
  EXPECT_THAT(printed, Not(HasSubstr("B_local_4")));
  EXPECT_THAT(printed, HasSubstr("for i_else_1_1_0_edge in serial(0, 16) {\n"
                                 "if 64 * i_else_0 + 4 * i_else_1_1_0_edge < m - 3 {\n"
                                 "for j_else_1_1_1_0_edge in serial(0, 8) {"))
      << printed;
  // Without the knobs (the packed panels' and the streamed edge's), no prefetch.
  absl::StatusOr<CpuScheduleKnobs> no_prefetch =
      CpuScheduleKnobs::Parse("matmul.wide_step_vectors=2 matmul.wide_prefetch=0 matmul.stream_prefetch=0 "
                              "matmul.left_block_rows=0");
  ASSERT_TRUE(no_prefetch.ok()) << no_prefetch.status();
  absl::StatusOr<PrimFunc> plain =
      ScheduleForCpu(Parse(text), {.vector_lanes = 8, .num_threads = 1, .knobs = *no_prefetch});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_THAT(Print(*plain), Not(HasSubstr("prefetch")));
  EXPECT_THAT(printed, HasSubstr("} else {\nif 64 * i_else_0 + 4 * i_else_1_1_0_edge < m {\n"
                                 "for j_else_1_1_1_0_edge_part in serial(0, 8) {"))
      << printed;
  // The version no row count reaches keeps its plain loops (no tile).
  EXPECT_THAT(printed, HasSubstr("block \"C_else_1\""));
  EXPECT_THAT(printed, Not(HasSubstr("C_else_1_write_back")));
  // The trace replays to the same function.
  absl::StatusOr<Trace> parsed = Trace::Parse(trace);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  Schedule replayed(Parse(text));
  ASSERT_TRUE(parsed->Replay(&replayed).ok());
  EXPECT_TRUE(StructuralEqual(replayed.func(), *f));
  // By default the steps are 4 x 3 (three vectors of 8 columns, 384-column tiles of two
  // 192-column sub-tiles), their accumulators renamed for per-term addressing; the trace
  // replays to the same function.
  std::string trace3;
  absl::StatusOr<CpuScheduleKnobs> unblocked = CpuScheduleKnobs::Parse("matmul.left_block_rows=0");
  ASSERT_TRUE(unblocked.ok()) << unblocked.status();
  absl::StatusOr<PrimFunc> f3 =
      ScheduleForCpu(Parse(text), {.vector_lanes = 8, .num_threads = 1, .knobs = *unblocked}, &trace3);
  ASSERT_TRUE(f3.ok()) << f3.status();
  const std::string printed3 = Unindented(*f3);
  // (The register tiles of many rows, 4 x 3 vectors over this large weight, come first and
  // hold the unnumbered names: RegisterTileVectors.)
  EXPECT_THAT(printed3, HasSubstr("allocate C_local_steps: Buffer((4, 24), float32, scope=\"local\")"));
  EXPECT_THAT(printed3, HasSubstr("allocate C_local_steps_2: Buffer((64, 384), float32, scope=\"local\")"));
  EXPECT_THAT(printed3, HasSubstr("allocate B_local_2: Buffer((256, 192), float32, scope=\"local\")"));
  EXPECT_THAT(printed3, HasSubstr("for i_else_1_1_1 in unroll(0, 4) {\n"
                                  "for j_else_1_1_1_1_0 in unroll(0, 3) {\n"
                                  "for j_else_1_1_1_1_1 in vectorized(0, 8) {"))
      << printed3;
  EXPECT_THAT(printed3, HasSubstr("attr local_address_per_term = \"C_local_steps\""));
  EXPECT_THAT(trace3, HasSubstr("address_steps_per_term()"));
  absl::StatusOr<Trace> parsed3 = Trace::Parse(trace3);
  ASSERT_TRUE(parsed3.ok()) << parsed3.status();
  Schedule replayed3(Parse(text));
  ASSERT_TRUE(parsed3->Replay(&replayed3).ok());
  EXPECT_TRUE(StructuralEqual(replayed3.func(), *f3)) << StructuralDiff(replayed3.func(), *f3);
  // AVX-512: the packed version too, in 8-row steps of a vector pair over one 256-column
  // sub-tile and k blocks of 64, its row edge's prefetch shared by the 4 steps of 32 rows.
  std::string trace16;
  ASSERT_TRUE(ScheduleForCpu(Parse(text), {.vector_lanes = 16, .num_threads = 2}, &trace16).ok());
  EXPECT_THAT(trace16, HasSubstr("branch_on(\"m >= 65\") -> \"C_else\"\nbranch_on(\"m >= 32\")"));
  EXPECT_THAT(trace16, HasSubstr("split(\"j_else\", [-1, 256])"));
  EXPECT_THAT(trace16, HasSubstr("split(\"r_else\", [-1, 64])"));
  EXPECT_THAT(trace16, HasSubstr("split(\"i_else_1_1\", [-1, 8])"));
  EXPECT_THAT(trace16, HasSubstr("split(\"j_else_1_1\", [-1, 32])"));
  EXPECT_THAT(trace16, HasSubstr("guard_steps(\"i_else_1_1_0_edge\")"));
  EXPECT_THAT(trace16, HasSubstr("prefetch_next(\"B_cache_1_edge\", \"r_else_0_edge\", \"j_else_1_1_0_edge\", 32)"));
}

TEST(DefaultCpuScheduleTest, MatmulWithTransposedRightOperandIsNotVectorized) {
  // B[vj, vk]: vectorizing j would gather with stride k.
  std::string text = kMatmul;
  text.replace(text.find("B: Buffer((k, n)"), 16, "B: Buffer((n, k)");
  text.replace(text.find("B[vk, vj]"), 9, "B[vj, vk]");
  std::string trace;
  absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(text), {.vector_lanes = 8, .num_threads = 4}, &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(trace, HasSubstr("split(\"j\", [-1, 16])"));
  EXPECT_THAT(trace, Not(HasSubstr("vectorize(\"j_1\")")));
}

// A row reduction over contiguous elements: per-lane partial sums in a vectorized loop
// (rfactor; four vectors of lanes for a symbolic row, four dependency chains, the rest in
// vector steps into the first vector, the last under a vector as one step of lanes in
// range), the rows in parallel. A reduction reading its
// elements with a stride stays scalar.
TEST(DefaultCpuScheduleTest, ReductionVectorizesTheRowAndRunsRowsInParallel) {
  const std::string lanes =
      "rfactor(\"B\", \"r\", 64, 16) -> [\"B_rf\", \"B_rf_init\", \"B_rf_tail\", \"B_rf_half\", \"B_rf_half_1\", "
      "\"B_rf_half_2\", \"B_rf_half_3\", \"B_rf_half_4\", \"B_rf_tail_vector\"]\n"
      "get_loops(\"B_rf\") -> [\"i\", \"r_0\", \"r_1\"]\nvectorize(\"r_1\")\n"
      "get_loops(\"B_rf_init\") -> [\"i\", \"r_init\"]\nvectorize(\"r_init\")\n"
      "get_loops(\"B_rf_tail\") -> [\"i\", \"r_tail\"]\nvectorize(\"r_tail\")\n"
      "get_loops(\"B_rf_half\") -> [\"i\", \"r_half\"]\nvectorize(\"r_half\")\n"
      "get_loops(\"B_rf_half_1\") -> [\"i\", \"r_half_1\"]\nvectorize(\"r_half_1\")\n"
      "get_loops(\"B_rf_half_2\") -> [\"i\", \"r_half_2\"]\nvectorize(\"r_half_2\")\n"
      "get_loops(\"B_rf_half_3\") -> [\"i\", \"r_half_3\"]\nvectorize(\"r_half_3\")\n"
      "get_loops(\"B_rf_half_4\") -> [\"i\", \"r_half_4\"]\nvectorize(\"r_half_4\")\n"
      "get_loops(\"B_rf_tail_vector\") -> [\"i\", \"r_tail_0\", \"r_tail_1\"]\nvectorize(\"r_tail_1\")\n";
  std::string trace;
  absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(kRowSum), {.vector_lanes = 16, .num_threads = 8}, &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(trace, lanes + "parallel(\"i\")\nguard_vectorized_tails()\n");
  // Every row runs the lanes' edge copy: its tail of at most 15 lanes never fills the 16
  // lanes the whole-vector copy needs (`15 < floormod(m, 16)`, a branch dropped as decided).
  EXPECT_THAT(Print(*f), HasSubstr("for r_1_edge in vectorized(0, 64)"));
  EXPECT_THAT(Print(*f), HasSubstr("for r_tail_1_edge in vectorized(0, 16)"));
  absl::StatusOr<PrimFunc> single = ScheduleForCpu(Parse(kRowSum), {.vector_lanes = 16, .num_threads = 1}, &trace);
  EXPECT_EQ(trace, lanes + "guard_vectorized_tails()\n");
  absl::StatusOr<PrimFunc> column = ScheduleForCpu(Parse(R"(
prim_func @f(A: Buffer((m, n), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    for r in serial(0, m) {
      block "B" {
        vi = spatial(n, i)
        vr = reduce(m, r)
        init {
          B[vi] = 0.0
        }
        B[vi] = B[vi] + A[vr, vi]
      }
    }
  }
})"), {.vector_lanes = 16, .num_threads = 8}, &trace);
  ASSERT_TRUE(column.ok()) << column.status();
  EXPECT_EQ(trace, "parallel(\"i\")\n");
}

// A reduction over blocks of 16 (a quantized matmul's shape: x[i, b * 16 + r]) reads
// consecutive elements in its innermost loop plus an offset that does not depend on it: its
// lanes are contiguous, so it is vectorized like a plain row. A stride (r * 2) is not.
TEST(DefaultCpuScheduleTest, ReductionReadingAnOffsetRowIsVectorized) {
  auto blocked = [](const std::string& index) {
    return R"(
prim_func @f(A: Buffer((n, 64), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    for b in serial(0, 2) {
      for r in serial(0, 16) {
        block "B" {
          vi = spatial(n, i)
          vb = reduce(2, b)
          vr = reduce(16, r)
          init {
            B[vi] = 0.0
          }
          B[vi] = B[vi] + A[vi, )" + index + R"(]
        }
      }
    }
  }
})";
  };
  std::string trace;
  absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(blocked("vb * 16 + vr")), {.vector_lanes = 8, .num_threads = 2}, &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(trace, StartsWith("rfactor(\"B\", \"r\", 8)"));
  EXPECT_THAT(Print(*f), HasSubstr("for r_1 in vectorized(0, 8)"));
  absl::StatusOr<PrimFunc> strided = ScheduleForCpu(Parse(blocked("vb + vr * 2")), {.vector_lanes = 8, .num_threads = 2}, &trace);
  ASSERT_TRUE(strided.ok()) << strided.status();
  EXPECT_EQ(trace, "parallel(\"i\")\n");
}

const char* kWithLocal = R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    block "B" {
      vi = spatial(n, i)
      alloc T: Buffer((1,), float32, scope="local")
      T[0] = A[vi] * 2.0
      B[vi] = T[0] + 1.0
    }
  }
})";

// The scalar copy made for the vector tail defines its own block allocation, so the result
// still defines every buffer once and round-trips through text.
TEST(DefaultCpuScheduleTest, TailCopyDefinesItsOwnBuffers) {
  absl::StatusOr<PrimFunc> f = ScheduleForCpu(Parse(kWithLocal), {.vector_lanes = 8, .num_threads = 2});
  ASSERT_TRUE(f.ok()) << f.status();
  std::string text = Print(*f);
  EXPECT_THAT(text, HasSubstr("alloc T_1: Buffer((1,), float32, scope=\"local\")")) << text;
  EXPECT_TRUE(StructuralEqual(Parse(text), *f)) << text;
}

// A block writing one element from every iteration is not injective: no parallel loop.
TEST(DefaultCpuScheduleTest, BlockWritingTheSameElementIsLeftAlone) {
  PrimFunc func = Parse(R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((), float32)) {
  for i in serial(0, n) {
    block "acc" {
      vi = spatial(n, i)
      B[] = B[] + A[vi]
    }
  }
})");
  std::string trace;
  absl::StatusOr<PrimFunc> f = ScheduleForCpu(func, {.vector_lanes = 8, .num_threads = 4}, &trace);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(trace, "");
  EXPECT_TRUE(StructuralEqual(*f, func));
}

TEST(DefaultCpuScheduleTest, RejectsBadOptions) {
  EXPECT_THAT(ScheduleForCpu(Parse(k2d), {.vector_lanes = 0, .num_threads = 1}).status().message(),
              HasSubstr("vector_lanes must be in [1, 64], got 0"));
  EXPECT_THAT(ScheduleForCpu(Parse(k2d), {.vector_lanes = 8, .num_threads = 0}).status().message(),
              HasSubstr("num_threads must be >= 1"));
}

}  // namespace
}  // namespace kiln::tir
