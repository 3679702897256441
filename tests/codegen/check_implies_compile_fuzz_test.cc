// `kiln check` accepting a module promises that `kiln compile` compiles it (or says why,
// naming where): check_implies_compile_test.cc holds that for the modules under tests/ and
// examples/; this test holds it for those modules with the mistakes a new user makes (another
// data type, a wrong or huge number, another operator, one symbolic dimension swapped for
// another, an argument dropped). The parser's fuzz test (tests/relax/text_fuzz_test.cc) stops
// at the checker; here every mutant the checker accepts goes through the whole pipeline and
// BuildExecutable, so a pass that aborts, or refuses it without saying where, is caught.
//
// Seeded and deterministic: KILN_FUZZ_ITERATIONS mutants (default 40, a few seconds),
// KILN_FUZZ_SEED the seed. hunt17's campaign through the `kiln` binary (1,900 such mutants,
// docs/ir.md "Errors") found no crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "relax/well_formed.h"
#include "support/file_io.h"
#include "tests/source_dir.h"

namespace kiln::codegen {
namespace {

using ::testing::HasSubstr;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  return std::strtoll(value, nullptr, 10);
}

// The CPU-compilable modules (gpu_kernel.kir names a cuda target).
std::vector<std::string> Corpus() {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path root(test::SourceDir());
  for (const char* dir : {"examples/models", "tests/relax/modules"}) {
    for (const auto& entry : std::filesystem::directory_iterator(root / dir)) {
      if (entry.path().extension() == ".kir" && entry.path().filename() != "gpu_kernel.kir") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> texts;
  for (const auto& path : files) {
    absl::StatusOr<std::string> text = support::ReadFile(path.string());
    if (text.ok()) texts.push_back(*text);
  }
  return texts;
}

// One mistake in `text`, at a place the seed picks among the matches of its kind.
class Mistakes {
 public:
  explicit Mistakes(uint64_t seed) : rng_(seed) {}

  std::string Make(const std::string& text) {
    switch (Below(5)) {
      case 0:
        return ReplaceOne(text, std::regex(R"(\b(float|int|uint|bfloat)(8|16|32|64)\b|\bbool\b)"),
                          {"float32", "float16", "float64", "int32", "int64", "bool", "uint8", "bfloat16"});
      case 1: return ReplaceOne(text, std::regex(R"(\b\d+\b)"), {"0", "1", "-1", "3", "4097", "2147483648", "1099511627776"});
      case 2:
        return ReplaceOne(text, std::regex(R"(R\.(\w+)\b)"),
                          {"add", "multiply", "matmul", "relu", "softmax", "sum", "max", "reshape", "permute_dims",
                           "concat", "take", "exp", "where", "mean", "astype"},
                          /*group=*/1);
      case 3: return ReplaceOne(text, std::regex(R"(\b[a-z]\b)"), {"n", "m", "b", "k", "s", "x", "y"});
      default: return ReplaceOne(text, std::regex(R"(, [%\w]+\))"), {")"});  // a last argument dropped
    }
  }

 private:
  // `text` with one match of `pattern` (its `group`), picked by the seed, replaced by one of `choices`.
  std::string ReplaceOne(const std::string& text, const std::regex& pattern, const std::vector<std::string>& choices,
                         int group = 0) {
    std::vector<std::smatch> matches;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it) {
      matches.push_back(*it);
    }
    if (matches.empty()) return text;
    const std::smatch& m = matches[Below(matches.size())];
    const size_t at = static_cast<size_t>(m.position(group));
    return text.substr(0, at) + choices[Below(choices.size())] + text.substr(at + static_cast<size_t>(m.length(group)));
  }

  size_t Below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  std::mt19937_64 rng_;
};

TEST(CheckImpliesCompileFuzz, MutantsTheCheckerAcceptsCompile) {
  const std::vector<std::string> corpus = Corpus();
  ASSERT_GE(corpus.size(), 20u) << "the .kir modules were not found under " << test::SourceDir();
  Mistakes mistakes(static_cast<uint64_t>(EnvInt("KILN_FUZZ_SEED", 20261127)));
  const int64_t iterations = EnvInt("KILN_FUZZ_ITERATIONS", 40);
  int64_t checked = 0, compiled = 0;
  for (int64_t i = 0; i < iterations; ++i) {
    const std::string mutant = mistakes.Make(corpus[static_cast<size_t>(i) % corpus.size()]);
    absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(mutant, "mutant.kir");
    if (!parsed.ok()) continue;
    absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed->module, &parsed->locations);
    if (!normalized.ok() || !relax::CheckWellFormed(*normalized).ok()) continue;
    ++checked;
    relax::PipelineOptions options;
    options.check_well_formed = true;
    absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, options, &parsed->locations);
    absl::Status built = lowered.ok() ? BuildExecutable(*lowered, CpuTarget::Host()).status() : lowered.status();
    if (built.ok()) {
      ++compiled;
      continue;
    }
    // What the checker cannot see (an operator that cannot be legalized for a parameter of
    // unknown dtype) may stop the compiler, with an error that says where: never a crash, an
    // internal error or a message without the function.
    EXPECT_EQ(built.code(), absl::StatusCode::kInvalidArgument) << built << "\n" << mutant;
    EXPECT_THAT(std::string(built.message()), HasSubstr("function '")) << mutant;
  }
  // Most mistakes are caught by the parser or the checker; some (another float type, another
  // elementwise operator) still check, and those are the point.
  if (iterations >= 40) {
    EXPECT_GT(compiled, 0);
  }
}

}  // namespace
}  // namespace kiln::codegen
