// The compiled-model cache of `kiln generate`: a GGUF model compiled for a target once, then
// loaded from serving::CompiledModelDir() on every later run.
//
// An entry is named `<model stem>-<key>.kx`, the key hashing what the executable depends on:
// the GGUF's absolute path, size and modification time, the resolved target (CPU, features,
// threads), the executable format version and the kiln binary itself (its size and
// modification time), so a rebuilt kiln or a changed model compiles afresh. Entries are
// written by renaming a complete file into place, so a crash never leaves half of one.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "codegen/compile_gguf_model.h"

namespace kiln::tools {

struct CachedModel {
  std::string path;       // the executable
  bool compiled = false;  // true when this call compiled it
};

// The cached executable for `gguf_path`, compiled now if there is none (or `recompile`).
absl::StatusOr<CachedModel> CompiledModelFor(const std::string& gguf_path, const codegen::ModelCompileOptions& options,
                                             bool recompile);

}  // namespace kiln::tools
