// Whatever `kiln check` accepts, `kiln compile` compiles: every .kir module under tests/ and
// examples/ that parses, normalizes and is well formed goes through the whole pipeline and
// BuildExecutable for the CPU. A module that cannot run on the CPU by its nature is listed
// below with the reason, and the compiler must say that reason, naming where.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/build_executable.h"
#include "codegen/nvrtc_compiler.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "relax/well_formed.h"
#include "support/file_io.h"
#include "tests/source_dir.h"

namespace kiln::codegen {
namespace {

using ::testing::HasSubstr;

struct Exception {
  std::string reason;                  // why the module cannot be compiled for the CPU
  std::vector<std::string> error_has;  // what the compiler's error must say
};

// Relative paths from the source root.
const std::map<std::string, Exception>& Exceptions() {
  // gpu_kernel.kir's PrimFunc names a cuda target: its kernel goes through the CUDA path,
  // which needs NVRTC where the test runs.
  static const auto* exceptions = [] {
    auto* e = new std::map<std::string, Exception>();
    if (!codegen::NvrtcAvailable().ok()) {
      (*e)["tests/relax/modules/gpu_kernel.kir"] = {
          "its PrimFunc names a cuda target and NVRTC is not installed here", {"compiling CUDA kernels", "NVRTC"}};
    }
    return e;
  }();
  return *exceptions;
}

std::vector<std::string> KirFiles() {
  std::vector<std::string> files;
  const std::filesystem::path root(test::SourceDir());
  for (const char* dir : {"tests", "examples"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / dir)) {
      if (entry.is_regular_file() && entry.path().extension() == ".kir") {
        files.push_back(std::filesystem::relative(entry.path(), root).string());
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// What `kiln check` does: parse, normalize, check well-formedness.
bool CheckAccepts(const std::string& text, const std::string& path) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, path);
  if (!parsed.ok()) return false;
  absl::StatusOr<relax::IRModule> module = relax::NormalizeModule(parsed->module, &parsed->locations);
  return module.ok() && relax::CheckWellFormed(*module).ok();
}

absl::Status Compile(const std::string& text, const std::string& path) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, path);
  if (!parsed.ok()) return parsed.status();
  relax::PipelineOptions options;
  options.check_well_formed = true;
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, options, &parsed->locations);
  if (!lowered.ok()) return lowered.status();
  return BuildExecutable(*lowered, CpuTarget::Host()).status();
}

TEST(CheckImpliesCompile, EveryCheckedModuleCompilesForTheCpu) {
  std::vector<std::string> files = KirFiles();
  ASSERT_GE(files.size(), 20u) << "the .kir modules were not found under " << test::SourceDir();
  int compiled = 0;
  std::set<std::string> excepted;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    absl::StatusOr<std::string> text = support::ReadFile(test::SourceDir() + "/" + file);
    ASSERT_TRUE(text.ok()) << text.status();
    if (!CheckAccepts(*text, file)) continue;
    absl::Status status = Compile(*text, file);
    auto exception = Exceptions().find(file);
    if (exception == Exceptions().end()) {
      EXPECT_TRUE(status.ok()) << "kiln check accepts " << file << " but compiling it fails: " << status;
      compiled += status.ok();
      continue;
    }
    excepted.insert(file);
    ASSERT_FALSE(status.ok()) << file << " is listed as not compilable for the CPU (" << exception->second.reason
                              << ") but it compiles: take it off the list";
    for (const std::string& part : exception->second.error_has) {
      EXPECT_THAT(std::string(status.message()), HasSubstr(part)) << "the error should say why: " << exception->second.reason;
    }
  }
  for (const auto& [file, exception] : Exceptions()) {
    EXPECT_TRUE(excepted.count(file) > 0) << file << " is listed as an exception but was not found or not checked";
  }
  EXPECT_GE(compiled, 20);
}

}  // namespace
}  // namespace kiln::codegen
