// The default CPU schedule (tir/schedule_rules/cpu_schedule.h) on every PrimFunc of the
// example modules. It lives with the Relax tests because those modules are whole Relax
// modules, read with the module parser; the rules themselves are tested on hand-written
// PrimFuncs in tests/tir/cpu_schedule_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "relax/text_parser.h"
#include "support/file_io.h"
#include "tests/source_dir.h"
#include "tir/schedule_rules/cpu_schedule.h"
#include "tir/structural_equal.h"
#include "tir/text_parser.h"
#include "tir/text_printer.h"

namespace kiln::relax {
namespace {

// Every PrimFunc of the example modules (GPU kernels, nested blocks, loops without blocks,
// already scheduled loops ...) goes through the rules without error, and the result prints
// to text that parses back to the same function.
TEST(DefaultCpuScheduleTest, ExampleModulesScheduleAndRoundTrip) {
  std::filesystem::path dir = std::filesystem::path(kiln::test::SourceDir()) / "tests/relax/modules";
  int scheduled = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".kir") continue;
    absl::StatusOr<std::string> text = support::ReadFile(entry.path().string());
    ASSERT_TRUE(text.ok()) << text.status();
    absl::StatusOr<ParsedModule> parsed = ParseModule(*text, entry.path().filename().string());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    for (const IRModule::Entry& e : parsed->module.entries()) {
      if (!e.prim_func()) continue;
      for (int lanes : {8, 16}) {
        absl::StatusOr<tir::PrimFunc> f =
            tir::ScheduleForCpu(*e.prim_func(), {.vector_lanes = lanes, .num_threads = 4});
        ASSERT_TRUE(f.ok()) << entry.path() << " " << e.name << ": " << f.status();
        std::string printed = tir::PrintPrimFunc(*f, "f");
        absl::StatusOr<tir::ParsedPrimFunc> again = tir::ParsePrimFunc(printed);
        ASSERT_TRUE(again.ok()) << again.status() << "\n" << printed;
        EXPECT_TRUE(tir::StructuralEqual(again->func, *f)) << entry.path() << " " << e.name << "\n" << printed;
        ++scheduled;
      }
    }
  }
  EXPECT_GT(scheduled, 10);
}

}  // namespace
}  // namespace kiln::relax
