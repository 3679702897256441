// Replaying a default schedule: for every PrimFunc the pipeline schedules — each operator's
// legalization (every case of tests/codegen/op_cases.h), at its symbolic shapes and at
// constant ones, and fused kernels (matmul + bias + gelu, the example models' kernels) — the
// trace ScheduleForCpu reports, printed, parsed and replayed on a Schedule of the
// unscheduled function, gives a function structurally equal to the scheduled one. Tuning
// records are stored as such text, so this is what makes them replayable.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/annotate_patterns.h"
#include "relax/transform/dead_code_elimination.h"
#include "relax/transform/fold_constants.h"
#include "relax/transform/fuse_ops.h"
#include "relax/transform/fuse_tir.h"
#include "relax/transform/legalize_ops.h"
#include "support/file_io.h"
#include "support/status_macros.h"
#include "tests/codegen/op_cases.h"
#include "tests/source_dir.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/trace.h"
#include "tir/schedule_rules/cpu_schedule.h"
#include "tir/structural_equal.h"

namespace kiln::op_cases {
namespace {

// The module as the pipeline hands it to `schedule`, for libraries none: legalized and fused.
absl::StatusOr<relax::IRModule> BeforeSchedule(const std::string& text) {
  KILN_ASSIGN_OR_RETURN(relax::ParsedModule parsed, relax::ParseModule(text));
  KILN_ASSIGN_OR_RETURN(relax::IRModule m, relax::NormalizeModule(parsed.module, &parsed.locations));
  KILN_ASSIGN_OR_RETURN(m, relax::FoldConstants(m));
  KILN_ASSIGN_OR_RETURN(m, relax::LegalizeOps(m));
  KILN_ASSIGN_OR_RETURN(m, relax::AnnotatePatterns(m));
  KILN_ASSIGN_OR_RETURN(m, relax::FuseOps(m));
  KILN_ASSIGN_OR_RETURN(m, relax::FuseTir(m));
  return relax::DeadCodeElimination(m);
}

// Schedules `func` with the default rules and checks that its trace round-trips through
// text and replays to the same function; counts it in `scheduled` when the trace is not
// empty.
void ExpectTraceReplays(const tir::PrimFunc& func, const std::string& name, int lanes, int* scheduled) {
  std::string trace;
  absl::StatusOr<tir::PrimFunc> f = tir::ScheduleForCpu(func, {.vector_lanes = lanes, .num_threads = 4}, &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<tir::Trace> parsed = tir::Trace::Parse(trace);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << trace;
  EXPECT_EQ(parsed->ToString(), trace);
  tir::Schedule again(func);
  absl::Status st = parsed->Replay(&again);
  ASSERT_TRUE(st.ok()) << st << "\n" << trace;
  EXPECT_TRUE(tir::StructuralEqual(again.func(), *f))
      << tir::StructuralDiff(again.func(), *f) << "\ntrace:\n" << trace << "\nscheduled:\n"
      << relax::PrintPrimFunc(*f, name);
  *scheduled += !trace.empty();
}

// Every PrimFunc of `text`, before `schedule`, at 8 and 16 lanes. Returns how many had a
// non-empty trace.
int ExpectTracesReplay(const std::string& text, const std::string& what) {
  absl::StatusOr<relax::IRModule> module = BeforeSchedule(text);
  EXPECT_TRUE(module.ok()) << what << ": " << module.status() << "\n" << text;
  if (!module.ok()) return 0;
  int scheduled = 0;
  for (const relax::IRModule::Entry& entry : module->entries()) {
    if (!entry.prim_func()) continue;
    for (int lanes : {8, 16}) {
      SCOPED_TRACE(absl::StrCat(what, ": ", entry.name, ", ", lanes, " lanes"));
      ExpectTraceReplays(*entry.prim_func(), entry.name, lanes, &scheduled);
    }
  }
  return scheduled;
}

// The case at one of its sizes: every symbolic dim replaced by its value.
std::string ConstantModuleText(const Case& c, const std::map<std::string, int64_t>& size) {
  std::string text = ModuleText(c);
  for (const auto& [name, value] : size) {
    text = std::regex_replace(text, std::regex("\\b" + name + "\\b"), std::to_string(value));
  }
  return text;
}

class ScheduleReplayTest : public ::testing::TestWithParam<Case> {};

TEST_P(ScheduleReplayTest, TraceReplaysAtSymbolicAndConstantShapes) {
  const Case& c = GetParam();
  // (Some kernels get no rule: a reduction to a scalar, a folded constant.)
  ExpectTracesReplay(ModuleText(c), "symbolic");
  // A size other than 1 (1 makes loops that the rules leave alone), as constants.
  const std::map<std::string, int64_t>& size = c.sizes.size() > 1 ? c.sizes[1] : c.sizes[0];
  ExpectTracesReplay(ConstantModuleText(c, size), "constant");
}

INSTANTIATE_TEST_SUITE_P(AllOps, ScheduleReplayTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The cases above call every operator with a legalization (the harness's list is the
// registry's): an operator without a case fails here too.
TEST(ScheduleReplayCoverageTest, EveryLegalizedOperatorIsReplayed) {
  std::set<std::string> covered;
  for (const Case& c : AllCases()) {
    std::set<std::string> ops = OperatorsOf(c);
    covered.insert(ops.begin(), ops.end());
  }
  for (const std::string& name : LegalizedOperators()) {
    EXPECT_TRUE(covered.count(name)) << "operator '" << name << "' has no case in tests/codegen/op_cases.h";
  }
}

// Fused kernels: the matmul epilogue (bias + gelu, residual add), softmax, layer_norm, at
// symbolic and constant sizes.
TEST(ScheduleReplayFusedTest, FusedKernelsReplay) {
  for (const std::string& rows : {std::string("n"), std::string("37"), std::string("1")}) {
    for (const std::string& cols : {std::string("m"), std::string("384")}) {
      std::string text = absl::StrCat(
          "module {\n  func @main(x: Tensor((", rows, ", 64), float32), w: Tensor((64, ", cols,
          "), float32), b: Tensor((", cols, ",), float32), r: Tensor((", rows, ", ", cols,
          "), float32), g: Tensor((", cols, ",), float32)) -> Object {\n    dataflow {\n"
          "      %mm = R.matmul(x, w)\n      %biased = R.add(%mm, b)\n      %act = R.gelu(%biased)\n"
          "      %res = R.add(%act, r)\n      %sm = R.softmax(%res, axis=-1)\n"
          "      %ln = R.layer_norm(%sm, g, b, axes=[-1])\n      out = R.multiply(%ln, r)\n    }\n"
          "    return out\n  }\n}\n");
      EXPECT_GT(ExpectTracesReplay(text, absl::StrCat("fused ", rows, " x ", cols)), 0);
    }
  }
}

TEST(ScheduleReplayFusedTest, ExampleModelsReplay) {
  std::filesystem::path dir = std::filesystem::path(kiln::test::SourceDir()) / "examples/models";
  int models = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".kir") continue;
    absl::StatusOr<std::string> text = support::ReadFile(entry.path().string());
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_GT(ExpectTracesReplay(*text, entry.path().filename().string()), 0);
    ++models;
  }
  EXPECT_GE(models, 2);
}

}  // namespace
}  // namespace kiln::op_cases
