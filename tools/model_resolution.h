// MODEL as `kiln generate` and `kiln serve` take it: a .gguf (compiled for this CPU once and
// cached, tools/compiled_model_cache.h), a .kx compiled from one (its metadata names the
// GGUF, whose weights it maps), or nothing: the bundled SmolLM2 in the model cache.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::tools {

struct ResolvedModel {
  std::string executable;  // the .kx to load
  std::string gguf_path;   // its weights, tokenizer and chat template
};

// `model` empty: the bundled model. `threads` (0: the default) is the thread count the
// executable is compiled for; `recompile` ignores a cached executable. `device` (a device
// name: "cpu", "vulkan", "cuda:1"; empty: "cpu") must be present here, and picks the target
// a .gguf is compiled for: the CPU, or the GPU kind of the device (its host code for a
// baseline x86-64). Errors say what is missing and how to get it.
absl::StatusOr<ResolvedModel> ResolveModel(std::string model, int64_t threads, bool recompile,
                                           std::string device = "cpu");

}  // namespace kiln::tools
