// Compiling a GGUF model to an executable, shared by `kiln compile MODEL.gguf` and
// `kiln generate` (which caches the result).
//
// The executable references the GGUF file rather than copying it: its weights are external
// constants named as in the file (relax/models/llama_builder.h), and its metadata records the
// file (`kiln.model.gguf`: the absolute path, `kiln.model.gguf_bytes`: its size) so that
// `kiln generate MODEL.kx` finds the weights again, plus `kiln.model.config` (a summary).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/cpu_target.h"
#include "relax/transform/pipeline.h"
#include "vm/builtin_registry.h"

namespace kiln::codegen {

struct ModelCompileOptions {
  relax::PipelineOptions pipeline;  // its target must be resolved (codegen::ResolveCpuTarget)
  CpuTarget cpu;
  int64_t max_tokens = 0;           // tokens per call (0: the model's context length)
  bool ggml_numerics = true;        // relax::models::LlamaBuildOptions::ggml_numerics: the
                                    // kiln.ggml.* builtins on a CPU, the operators with
                                    // numerics = "ggml" on a cuda or vulkan target
  bool ggml_avx2_build = false;     // LlamaBuildOptions::ggml_avx2_build (GPU targets): the
                                    // tools set it from builtins::ActiveGgmlSimd()
  bool progress = true;             // one line on stderr when starting and when done
  // BuildExecutable's kiln_runtime: the registry the "kiln." builtins must come from.
  const vm::BuiltinRegistry* kiln_runtime = nullptr;
};

// The bytes of the executable.
absl::StatusOr<std::string> CompileGgufModel(const std::string& gguf_path, const ModelCompileOptions& options);

}  // namespace kiln::codegen
