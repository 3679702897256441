// Compiles a GGUF test model for the host CPU and writes the executable next to it
// (`<gguf_path>.kx`), as `kiln compile` would; returns that path, or "" after a test failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/compile_gguf_model.h"
#include "codegen/cpu_target.h"
#include "support/file_io.h"
#include "tir/target.h"

namespace kiln::llm_test {

inline std::string CompileTestModel(const std::string& gguf_path, int64_t max_tokens) {
  codegen::ModelCompileOptions options;
  absl::StatusOr<tir::Target> target = codegen::ResolveCpuTarget(tir::Target::Cpu());
  EXPECT_TRUE(target.ok()) << target.status();
  if (!target.ok()) return "";
  options.pipeline.target = *target;
  options.cpu = *codegen::ToCpuTarget(*target);
  options.max_tokens = max_tokens;
  options.progress = false;
  absl::StatusOr<std::string> bytes = codegen::CompileGgufModel(gguf_path, options);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  if (!bytes.ok()) return "";
  const std::string kx = gguf_path + ".kx";
  EXPECT_TRUE(support::WriteFile(kx, *bytes).ok());
  return kx;
}

}  // namespace kiln::llm_test
