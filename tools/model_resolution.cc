#include "tools/model_resolution.h"

#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "builtins/ggml_simd.h"
#include "codegen/cpu_target.h"
#include "formats/gguf_file.h"
#include "formats/llama_config.h"
#include "serving/model_files.h"
#include "serving/tokenizer.h"
#include "support/mapped_file.h"
#include "tir/target.h"
#include "tools/compiled_model_cache.h"
#include "vm/device.h"
#include "vm/executable.h"

namespace kiln::tools {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The GGUF a .kx was compiled from (its metadata), checked to still be there.
absl::StatusOr<std::string> GgufOfExecutable(const std::string& path) {
  absl::StatusOr<std::shared_ptr<const support::MappedFile>> image = support::MappedFile::Open(path);
  if (!image.ok()) return image.status();
  absl::StatusOr<vm::Executable::Contents> contents = vm::Executable::Decode(*image);
  if (!contents.ok()) return absl::Status(contents.status().code(), absl::StrCat(path, ": ", contents.status().message()));
  auto it = contents->metadata.find("kiln.model.gguf");
  if (it == contents->metadata.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not compiled from a GGUF model (no 'kiln.model.gguf' in its metadata)"));
  }
  if (!std::filesystem::exists(it->second)) {
    return absl::NotFoundError(absl::StrCat(path, ": its weights file ", it->second, " is missing"));
  }
  return it->second;
}

// What a .gguf's metadata can get wrong outside the model's tensors (its tokenizer: token
// ids past the vocabulary, a vocabulary larger than the embedding table) is read before
// anything compiles: the error comes in a second, not after the compile.
absl::Status CheckTokenizerOfGguf(const std::string& path) {
  absl::StatusOr<std::shared_ptr<const formats::GgufFile>> gguf = formats::GgufFile::Open(path);
  // A missing or unreadable file: the compile (or the load) says so in its own words.
  if (!gguf.ok()) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<const serving::Tokenizer>> tokenizer = serving::Tokenizer::FromGguf(**gguf);
  if (!tokenizer.ok()) return tokenizer.status();
  absl::StatusOr<formats::LlamaConfig> config = formats::LlamaConfig::FromGguf(**gguf);
  if (!config.ok()) return config.status();
  if ((*tokenizer)->vocab_size() > config->vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the tokenizer has ", (*tokenizer)->vocab_size(),
                                                   " tokens, the model's vocabulary (token_embd.weight) ",
                                                   config->vocab_size));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ResolvedModel> ResolveModel(std::string model, int64_t threads, bool recompile,
                                           std::string device) {
  if (device.empty()) device = "cpu";
  // A device that is not here is one line before anything is compiled for it.
  if (device != "cpu") {
    if (absl::StatusOr<vm::Device*> available = vm::GetDevice(device); !available.ok()) return available.status();
  }
  if (model.empty()) {
    model = serving::BundledModelPath();
    if (!std::filesystem::exists(model)) {
      return absl::NotFoundError(absl::StrCat("the bundled model is not in ", serving::ModelDir(),
                                              ": run scripts/fetch_model.sh (or give a MODEL.gguf)"));
    }
  }
  ResolvedModel resolved;
  if (EndsWith(model, ".kx")) {
    resolved.executable = model;
    absl::StatusOr<std::string> gguf = GgufOfExecutable(model);
    if (!gguf.ok()) return gguf.status();
    resolved.gguf_path = *gguf;
    if (absl::Status checked = CheckTokenizerOfGguf(*gguf); !checked.ok()) return checked;
    return resolved;
  }
  resolved.gguf_path = model;
  if (absl::Status checked = CheckTokenizerOfGguf(model); !checked.ok()) return checked;
  codegen::ModelCompileOptions compile;
  const std::string kind = device.substr(0, device.find(':'));  // cpu, vulkan or cuda: GetDevice knew it
  const bool gpu = kind != "cpu";
  // A GPU executable's host code (argument checks, launches) runs on any x86-64, as with
  // `kiln compile --target vulkan`; its matmuls are the generated kernels (no CPU library).
  absl::StatusOr<tir::Target> target = codegen::ResolveCpuTarget(
      gpu ? tir::Target::Cpu("x86-64") : tir::Target::Cpu("host", 0, threads > 0 ? static_cast<int>(threads) : 2));
  if (!target.ok()) return target.status();
  compile.pipeline.target = kind == "vulkan" ? tir::Target::Vulkan() : kind == "cuda" ? tir::Target::Cuda() : *target;
  if (gpu) {
    compile.pipeline.libraries.openblas = false;
    compile.pipeline.libraries.quantized = false;
    // The device kernels compute the llama.cpp build this CPU would get, as the host builtins do.
    compile.ggml_avx2_build = builtins::ActiveGgmlSimd() == builtins::GgmlSimd::kAvx2;
  }
  absl::StatusOr<codegen::CpuTarget> cpu = codegen::ToCpuTarget(*target);
  if (!cpu.ok()) return cpu.status();
  compile.cpu = *cpu;
  absl::StatusOr<CachedModel> cached = CompiledModelFor(model, compile, recompile);
  if (!cached.ok()) return cached.status();
  resolved.executable = cached->path;
  return resolved;
}

}  // namespace kiln::tools
