#include "codegen/compile_gguf_model.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "codegen/build_executable.h"
#include "formats/gguf_file.h"
#include "relax/models/llama_builder.h"
#include "formats/llama_config.h"
#include "support/status_macros.h"

namespace kiln::codegen {

absl::StatusOr<std::string> CompileGgufModel(const std::string& gguf_path, const ModelCompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const formats::GgufFile> file, formats::GgufFile::Open(gguf_path));
  KILN_ASSIGN_OR_RETURN(formats::LlamaConfig config, formats::LlamaConfig::FromGguf(*file));
  if (options.progress) {
    std::fprintf(stderr, "kiln: compiling %s (%s)\n", gguf_path.c_str(), config.Summary().c_str());
  }
  relax::models::LlamaBuildOptions build;
  build.max_tokens = options.max_tokens;
  build.ggml_numerics = options.ggml_numerics;
  if (options.pipeline.target.is_gpu()) {
    // The kiln.ggml.* layer builtins are host code: on a GPU target the norms, RoPE and
    // SwiGLU are operators (numerics = "ggml" for llama.cpp's floats), compiled to device
    // kernels with the rest of each block; and, no library kernel there, the generated
    // quantized matmul computes what the options ask the CPU's library kernels for (8-bit
    // activations: llama.cpp's floats).
    build.ggml_operators = true;
    build.ggml_avx2_build = options.ggml_avx2_build;
    build.quantized_activations = options.pipeline.libraries.quantize_activations ? "q8" : "float32";
  }
  KILN_ASSIGN_OR_RETURN(relax::IRModule module, relax::models::BuildLlamaModule(*file, config, build));
  KILN_ASSIGN_OR_RETURN(relax::IRModule lowered, relax::RunPipeline(module, options.pipeline));
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(gguf_path, error);
  std::map<std::string, std::string> metadata = {
      {"kiln.model.gguf", error ? gguf_path : absolute.lexically_normal().string()},
      {"kiln.model.gguf_bytes", absl::StrCat(file->file_size())},
      {"kiln.model.config", config.Summary()},
      {"kiln.model.max_tokens", absl::StrCat(options.max_tokens > 0 ? options.max_tokens : config.context_length)},
  };
  KILN_ASSIGN_OR_RETURN(std::string bytes, BuildExecutable(lowered, options.cpu, metadata, options.kiln_runtime));
  if (options.progress) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "kiln: compiled in %.1f s\n", seconds);
  }
  return bytes;
}

}  // namespace kiln::codegen
