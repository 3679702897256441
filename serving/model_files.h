// Where models and compiled models live on disk.
//
//  - The model cache: $KILN_MODEL_DIR, default ~/.cache/kiln/models. scripts/fetch_model.sh
//    puts the bundled model (SmolLM2-135M-Instruct Q4_1 GGUF) there; never the repository.
//  - The compiled-model cache: $KILN_CACHE_DIR, default ~/.cache/kiln/compiled: executables
//    compiled from a GGUF by `kiln generate`, keyed by the model file and the target.
#pragma once

#include <string>

namespace kiln::serving {

inline constexpr const char* kBundledModelName = "SmolLM2-135M-Instruct.Q4_1.gguf";

std::string ModelDir();
// ModelDir()/kBundledModelName, whether or not it exists.
std::string BundledModelPath();
std::string CompiledModelDir();

}  // namespace kiln::serving
