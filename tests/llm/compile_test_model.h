// Compiles a GGUF test model for the host CPU and writes the executable next to it
// (`<gguf_path>.kx`), as `kiln compile` would; returns that path, or "" after a test failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "builtins/ggml_simd.h"
#include "codegen/compile_gguf_model.h"
#include "codegen/cpu_target.h"
#include "support/file_io.h"
#include "tir/target.h"

namespace kiln::llm_test {

// llama_cpp_numerics: the default arithmetic (8-bit activations, the kiln.ggml.* layer
// builtins: llama.cpp's floats); false: float32 activations and the compiled operators, the
// closest to the exact result (what the float64 naive pass without quantized activations
// computes).
//
// gpu: compile for that GPU target instead (tir::Target::Vulkan() / Cuda(): every operator
// as device kernels, host code for a baseline x86-64, as `kiln generate --device` does),
// written to `<gguf_path>.<kind>.kx`; llama_cpp_numerics picks the same arithmetic there (the
// q8 quantized matmul and the numerics = "ggml" operators, or float32 activations and the
// standard operators).
inline std::string CompileTestModel(const std::string& gguf_path, int64_t max_tokens, bool llama_cpp_numerics = true,
                                    const std::optional<tir::Target>& gpu = std::nullopt) {
  codegen::ModelCompileOptions options;
  options.pipeline.libraries.quantize_activations = llama_cpp_numerics;
  options.ggml_numerics = llama_cpp_numerics;
  absl::StatusOr<tir::Target> target = codegen::ResolveCpuTarget(gpu ? tir::Target::Cpu("x86-64") : tir::Target::Cpu());
  EXPECT_TRUE(target.ok()) << target.status();
  if (!target.ok()) return "";
  options.pipeline.target = gpu ? *gpu : *target;
  if (gpu) {
    options.pipeline.libraries.openblas = false;
    options.pipeline.libraries.quantized = false;
    // The llama.cpp build whose floats the host builtins compute now (builtins/ggml_simd.h).
    options.ggml_avx2_build = builtins::ActiveGgmlSimd() == builtins::GgmlSimd::kAvx2;
  }
  options.cpu = *codegen::ToCpuTarget(*target);
  options.max_tokens = max_tokens;
  options.progress = false;
  absl::StatusOr<std::string> bytes = codegen::CompileGgufModel(gguf_path, options);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  if (!bytes.ok()) return "";
  const std::string kx = gguf_path + (gpu ? std::string(".") + tir::TargetKindName(gpu->kind) : std::string()) + ".kx";
  EXPECT_TRUE(support::WriteFile(kx, *bytes).ok());
  return kx;
}

}  // namespace kiln::llm_test
