// Embedding Kiln's serving engine in a C++ program: load a compiled language model (.kx and
// the GGUF it was compiled from) once, then answer chat prompts read from stdin, one per
// line, streaming each answer's tokens to stdout as the engine produces them. Links only
// the runtime and serving libraries (Kiln::serving): no compiler, no LLVM.
//
//   kiln compile model.gguf -o model.kx
//   echo "What is the capital of France?" | kiln_server_example model.kx model.gguf [--max-tokens N]
//
// Decoding is greedy, so the same prompt always gets the same answer. A real server would
// submit requests from many threads at once; the engine batches them (docs/serving.md).
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <mutex>
#include <string>

#include "serving/engine.h"

namespace {

// The engine calls back on its loop thread; callbacks must be short, so they only queue the
// event, and the main thread prints it.
class EventQueue {
 public:
  void Push(const kiln::serving::TokenEvent& event) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(event);
    }
    ready_.notify_one();
  }
  kiln::serving::TokenEvent Pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !events_.empty(); });
    kiln::serving::TokenEvent event = std::move(events_.front());
    events_.pop_front();
    return event;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<kiln::serving::TokenEvent> events_;
};

int Usage(const char* program) {
  std::fprintf(stderr, "usage: %s MODEL.kx MODEL.gguf [--max-tokens N] < prompts.txt\n", program);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) return Usage(argv[0]);
  int64_t max_tokens = 64;
  if (argc == 5) {
    char* end = nullptr;
    max_tokens = std::strtoll(argv[4], &end, 10);
    if (std::string(argv[3]) != "--max-tokens" || *end != '\0' || max_tokens < 1) return Usage(argv[0]);
  }

  // 1. Load once: maps the executable and the weights, starts the engine's loop thread.
  kiln::serving::EngineOptions options;
  options.executable_path = argv[1];
  options.weights_path = argv[2];
  auto engine = kiln::serving::Engine::Load(options);
  if (!engine.ok()) {
    std::fprintf(stderr, "load failed: %s\n", std::string(engine.status().message()).c_str());
    return 1;
  }

  // 2. One request per line of stdin.
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    kiln::serving::GenerationRequest request;
    request.messages = std::vector<kiln::serving::ChatMessage>{{"user", line}};  // chat template applied
    request.sampling.temperature = 0;     // greedy
    request.max_tokens = max_tokens;
    EventQueue events;
    auto id = (*engine)->Submit(std::move(request),
                                [&events](const kiln::serving::TokenEvent& e) { events.Push(e); });
    if (!id.ok()) {  // e.g. a prompt longer than the context: say so and go on
      std::fprintf(stderr, "refused: %s\n", std::string(id.status().message()).c_str());
      continue;
    }
    // 3. Stream the text deltas; the last event says why the answer ended.
    for (;;) {
      kiln::serving::TokenEvent event = events.Pop();
      std::fwrite(event.text.data(), 1, event.text.size(), stdout);
      std::fflush(stdout);
      if (!event.finished) continue;
      if (event.finish_reason == kiln::serving::FinishReason::kError) {
        std::fprintf(stderr, "\nerror: %s\n", std::string(event.error.message()).c_str());
        return 1;
      }
      std::printf("\n");
      std::fprintf(stderr, "[%s: %lld prompt tokens, %lld generated]\n",
                   kiln::serving::FinishReasonName(event.finish_reason),
                   static_cast<long long>(event.prompt_tokens),
                   static_cast<long long>(event.completion_tokens));
      break;
    }
  }
  return 0;
}
