// The Engine as the HTTP server's GenerationBackend.
#pragma once

#include <memory>

#include "serving/engine.h"
#include "serving/generation_backend.h"

namespace kiln::serving {

// `engine` must outlive the returned backend.
std::unique_ptr<GenerationBackend> MakeEngineBackend(Engine& engine);

}  // namespace kiln::serving
