#include "serving/engine_backend.h"

#include <string>
#include <utility>

namespace kiln::serving {
namespace {

class EngineBackend final : public GenerationBackend {
 public:
  explicit EngineBackend(Engine& engine) : engine_(engine) {}

  absl::StatusOr<int64_t> Submit(GenerationRequest request, TokenCallback callback) override {
    return engine_.Submit(std::move(request), std::move(callback));
  }
  void Abort(int64_t request_id) override { engine_.Abort(request_id); }
  void Drain() override { engine_.Drain(); }
  EngineStats Stats() const override { return engine_.Stats(); }
  const std::string& model_name() const override { return engine_.model_name(); }
  int64_t context_length() const override { return engine_.context_length(); }
  std::string TokenBytes(int32_t token) const override {
    const Tokenizer& tokenizer = engine_.tokenizer();
    return tokenizer.IsValid(token) ? std::string(tokenizer.TokenBytes(token)) : std::string();
  }

 private:
  Engine& engine_;
};

}  // namespace

std::unique_ptr<GenerationBackend> MakeEngineBackend(Engine& engine) { return std::make_unique<EngineBackend>(engine); }

}  // namespace kiln::serving
