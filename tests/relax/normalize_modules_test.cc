// The text format's example modules (tests/relax/modules/*.kir) taken down the path every
// module the compiler reads takes: parse, normalize, check. Normalizing is idempotent through
// the text format: printing a normalized module and normalizing it again changes nothing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "relax/block_builder.h"
#include "relax/structural_equal.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/well_formed.h"
#include "tests/source_dir.h"

namespace kiln::relax {
namespace {

// Modules that do not normalize today, each for a reason outside the normalizer (found by
// this test). Remove an entry once its cause is fixed; the test then covers that module.
const std::set<std::string> kKnownInvalid = {
    // A syntax test: it spells every attribute kind, on an operator that takes none of them.
    "attrs.kir",
};

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Parse, normalize, check; then print, parse and normalize again. ASSERTs end only this
// module's check, so one broken module does not hide the others.
void CheckModule(const std::filesystem::path& path) {
  std::string name = path.filename().string();
  SCOPED_TRACE(name);
  absl::StatusOr<ParsedModule> parsed = ParseModule(ReadFile(path), name);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<IRModule> normalized = NormalizeModule(parsed->module);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  absl::Status well_formed = CheckWellFormed(*normalized);
  EXPECT_TRUE(well_formed.ok()) << well_formed;
  std::string printed = PrintModule(*normalized);
  absl::StatusOr<ParsedModule> reparsed = ParseModule(printed, name + " (printed)");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status() << "\n" << printed;
  absl::StatusOr<IRModule> again = NormalizeModule(reparsed->module);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(StructuralEqual(*normalized, *again)) << StructuralDiff(*normalized, *again);
}

TEST(NormalizeModulesTest, ExampleModulesNormalizeToWellFormedModules) {
  const std::string root = kiln::test::SourceDir();
  int checked = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(root) / "tests/relax/modules")) {
    std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".kir" || kKnownInvalid.count(name)) continue;
    CheckModule(entry.path());
    ++checked;
  }
  EXPECT_GE(checked, 15);
}

TEST(NormalizeModulesTest, ParsedErrorsNameFunctionAndBinding) {
  const char* text = R"(module {
  func @main(x: Tensor((n, 3), float32), w: Tensor((4, 8), float32)) {
    dataflow {
      lv0 = R.add(x, x)
      lv1 = R.matmul(lv0, w)
      gv = lv1
    }
    return gv
  }
})";
  absl::StatusOr<ParsedModule> parsed = ParseModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::Status status = NormalizeModule(parsed->module).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(status.message()).rfind("function 'main', binding 'lv1': matmul: inner dimensions differ", 0), 0u)
      << status;
  // With the parser's locations, the error points at the binding.
  status = NormalizeModule(parsed->module, &parsed->locations).status();
  EXPECT_EQ(std::string(status.message()).rfind("<input>:5:7: error: function 'main', binding 'lv1': matmul: ", 0), 0u)
      << status;
}

TEST(NormalizeModulesTest, ErrorLocationOfAParameterAndANestedBinding) {
  const char* text = R"(module {
  func @main(x: Tensor((n, 3), float32), c: Prim(bool)) {
    r = if c {
      inner: Tensor((n, 4), float32) = R.add(x, x)
      yield inner
    } else {
      yield x
    }
    return r
  }
})";
  absl::StatusOr<ParsedModule> parsed = ParseModule(text, "m.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(std::string(NormalizeModule(parsed->module, &parsed->locations).status().message()),
            "m.kir:4:7: error: function 'main', binding 'inner': annotation Tensor((n, 4), float32) "
            "contradicts the inferred Tensor((n, 3), float32)");
}

// A hand-written PrimFunc whose loop takes an index past its buffer is refused where the
// module is normalized (kiln check and the first pass of kiln compile), at the access.
TEST(NormalizeModulesTest, APrimFuncIndexOutOfBoundsIsRefusedAtTheAccess) {
  auto module = [](const std::string& extent) {
    return absl::StrCat(R"(module {
  prim_func @shift(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
    for i in serial(0, )", extent, R"() {
      B[i] = A[i + 1]
    }
  }
  func @main(x: Tensor((n,), float32)) -> Tensor((n,), float32) {
    y = R.call_tir(@shift, (x,), out_sinfo=Tensor((n,), float32))
    return y
  }
})");
  };
  absl::StatusOr<ParsedModule> parsed = ParseModule(module("n"), "m.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(std::string(NormalizeModule(parsed->module, &parsed->locations).status().message()),
            "m.kir:4:14: error: prim_func 'shift': index 0 of buffer 'A' is i + 1, which takes values in [1, n]: "
            "n (at i = n - 1) is outside [0, n)");
  parsed = ParseModule(module("n - 1"), "m.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(NormalizeModule(parsed->module, &parsed->locations).ok());
}

}  // namespace
}  // namespace kiln::relax
