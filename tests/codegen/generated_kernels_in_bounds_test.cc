// tir/verify_index_bounds.h refuses only what certainly goes out of bounds: every PrimFunc the
// compiler makes (each operator case legalized, then fused, with libraries off so that every
// operator becomes a kernel) and every PrimFunc of the example and test modules passes it. It
// runs on the user's PrimFuncs only (in normalize); this is what keeps it from ever refusing
// a correct one, tested on the largest set of correct kernels there is.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"
#include "tests/codegen/op_cases.h"
#include "tests/source_dir.h"
#include "tir/verify_index_bounds.h"

namespace kiln {
namespace {

// Every PrimFunc of `module` passes; returns how many there were.
int ExpectAllInBounds(const relax::IRModule& module, const std::string& what) {
  int checked = 0;
  for (const relax::IRModule::Entry& e : module.entries()) {
    if (e.prim_func() == nullptr) continue;
    absl::Status s = tir::VerifyIndexBounds(*e.prim_func(), e.name);
    EXPECT_TRUE(s.ok()) << what << ": " << s;
    ++checked;
  }
  return checked;
}

// The PrimFuncs of `text` as written, after legalize (one kernel per operator) and after
// fusion. `must_compile`: false for the test modules written only for the text format (an
// attribute no operator takes), which are checked as written only.
int CheckGenerated(const std::string& text, const std::string& what, bool must_compile = true) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, what);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return 0;
  int checked = ExpectAllInBounds(parsed->module, what);
  for (const char* stop : {"legalize", "deduplicate_prim_funcs"}) {
    relax::PipelineOptions options;
    options.libraries.openblas = false;
    options.libraries.quantized = false;
    options.stop_after = stop;
    absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, options, &parsed->locations);
    if (!must_compile && !lowered.ok() && lowered.status().message().find("prim_func '") == std::string::npos) break;
    EXPECT_TRUE(lowered.ok()) << what << ": " << lowered.status();
    if (lowered.ok()) checked += ExpectAllInBounds(*lowered, absl::StrCat(what, " after ", stop));
  }
  return checked;
}

TEST(GeneratedKernelsInBoundsTest, EveryOperatorCase) {
  int checked = 0;
  for (const op_cases::Case& c : op_cases::AllCases()) checked += CheckGenerated(op_cases::ModuleText(c), c.name);
  EXPECT_GT(checked, 300);
}

TEST(GeneratedKernelsInBoundsTest, EveryExampleAndTestModule) {
  int checked = 0;
  for (const char* folder : {"examples/models", "tests/relax/modules"}) {
    std::filesystem::path dir = std::filesystem::path(test::SourceDir()) / folder;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".kir") continue;
      absl::StatusOr<std::string> text = support::ReadFile(entry.path().string());
      ASSERT_TRUE(text.ok()) << text.status();
      checked += CheckGenerated(*text, entry.path().filename().string(), /*must_compile=*/false);
    }
  }
  EXPECT_GT(checked, 20);
}

}  // namespace
}  // namespace kiln
