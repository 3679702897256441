// The bundle scripts/gpu_check.sh runs on a GPU machine without the compiler
// (tests/gpu_check/gpu_op_check.cc): per case that compiled its executable, then per size
// its inputs and the reference's output as .npy, listed in DIR/MANIFEST:
//     case NAME FILE.kx RTOL ATOL SIZES INPUTS
// (inputs NAME.<size>.in<k>.npy, expected NAME.<size>.out.npy); cases that did not compile,
// or return tuples, are listed as "# skipped NAME: why".
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "formats/npy.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "support/file_io.h"
#include "tests/codegen/gpu_compile.h"
#include "tests/codegen/op_cases.h"
#include "tests/codegen/op_check.h"
#include "tests/reference/reference_evaluator.h"

namespace kiln::op_cases {

inline void WriteGpuBundle(const std::string& dir, const std::vector<Case>& cases,
                           const std::function<const GpuCompiled&(const Case&)>& compile) {
  using reference::HostTensor;
  using reference::RefValue;
  std::string manifest;
  int written = 0;
  for (const Case& c : cases) {
    const GpuCompiled& compiled = compile(c);
    if (!compiled.status.ok()) {
      absl::StrAppend(&manifest, "# skipped ", c.name, ": ", compiled.status.message().substr(0, 200), "\n");
      continue;
    }
    absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(ModuleText(c));
    ASSERT_TRUE(parsed.ok());
    absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed->module);
    ASSERT_TRUE(normalized.ok());
    ASSERT_TRUE(support::WriteFile(absl::StrCat(dir, "/", c.name, ".kx"), compiled.bytes).ok());
    std::mt19937 rng(1234);
    bool tuple = false;
    for (size_t s = 0; s < c.sizes.size() && !tuple; ++s) {
      std::vector<RefValue> inputs;
      for (size_t k = 0; k < c.params.size(); ++k) {
        HostTensor t = RandomTensor(c.params[k], c.sizes[s], rng);
        formats::NpyType type{t.dtype().is_bool() ? 'b' : t.dtype().is_float() ? 'f' : t.dtype().is_uint() ? 'u' : 'i',
                              std::max(1, t.dtype().bits() / 8)};
        ASSERT_TRUE(formats::WriteNpy(absl::StrCat(dir, "/", c.name, ".", s, ".in", k, ".npy"), type, t.shape(),
                                      t.bytes().data(), t.bytes().size())
                        .ok());
        inputs.emplace_back(std::move(t));
      }
      absl::StatusOr<RefValue> expected = reference::Evaluate(*normalized, "main", inputs);
      ASSERT_TRUE(expected.ok()) << expected.status();
      if (!expected->is_tensor()) {
        tuple = true;
        break;
      }
      const HostTensor& e = expected->tensor();
      formats::NpyType type{e.dtype().is_bool() ? 'b' : e.dtype().is_float() ? 'f' : e.dtype().is_uint() ? 'u' : 'i',
                            std::max(1, e.dtype().bits() / 8)};
      ASSERT_TRUE(formats::WriteNpy(absl::StrCat(dir, "/", c.name, ".", s, ".out.npy"), type, e.shape(),
                                    e.bytes().data(), e.bytes().size())
                      .ok());
    }
    if (tuple) {
      absl::StrAppend(&manifest, "# skipped ", c.name, ": tuple results\n");
      continue;
    }
    absl::StrAppend(&manifest, "case ", c.name, " ", c.name, ".kx ", c.rtol, " ", c.atol, " ", c.sizes.size(), " ",
                    c.params.size(), "\n");
    ++written;
  }
  ASSERT_TRUE(support::WriteFile(absl::StrCat(dir, "/MANIFEST"), manifest).ok());
  EXPECT_GT(written, 0);
}

}  // namespace kiln::op_cases
