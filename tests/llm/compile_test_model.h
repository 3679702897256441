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

// llama_cpp_numerics: the default arithmetic (8-bit activations, the kiln.ggml.* layer
// builtins: llama.cpp's floats); false: float32 activations and the compiled operators, the
// closest to the exact result (what the float64 naive pass without quantized activations
// computes).
inline std::string CompileTestModel(const std::string& gguf_path, int64_t max_tokens, bool llama_cpp_numerics = true) {
  codegen::ModelCompileOptions options;
  options.pipeline.libraries.quantize_activations = llama_cpp_numerics;
  options.ggml_numerics = llama_cpp_numerics;
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
