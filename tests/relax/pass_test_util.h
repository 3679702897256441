// Helpers for the graph-pass tests: a module from text, normalized as the pipeline's first
// pass leaves it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "relax/block_builder.h"
#include "relax/ir_module.h"
#include "relax/text_parser.h"

namespace kiln::relax::testing {

// Parses and normalizes `text` (errors located in "test.kir"); a failure fails the test and
// gives an empty module.
inline IRModule Normalized(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseModule(text, "test.kir");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return IRModule();
  absl::StatusOr<IRModule> normalized = NormalizeModule(parsed->module, &parsed->locations);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  return normalized.ok() ? *normalized : IRModule();
}

}  // namespace kiln::relax::testing
