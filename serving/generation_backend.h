// What the HTTP server needs from an engine: submit, abort, drain, statistics and a few
// facts about the model. Engine provides it through EngineBackend (engine_backend.h); tests
// of the server give it a scripted backend, so the HTTP layer is tested without a model.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "serving/engine.h"

namespace kiln::serving {

class GenerationBackend {
 public:
  virtual ~GenerationBackend() = default;
  // As Engine::Submit, Abort, Drain and Stats (thread-safe).
  virtual absl::StatusOr<int64_t> Submit(GenerationRequest request, TokenCallback callback) = 0;
  virtual void Abort(int64_t request_id) = 0;
  virtual void Drain() = 0;
  virtual EngineStats Stats() const = 0;
  virtual const std::string& model_name() const = 0;
  virtual int64_t context_length() const = 0;
  // A token's bytes (for logprobs); empty for an id outside the vocabulary.
  virtual std::string TokenBytes(int32_t token) const = 0;
};

}  // namespace kiln::serving
