// kiln serve: an OpenAI-compatible HTTP server for a language model. MODEL is taken as
// `kiln generate` takes it (tools/model_resolution.h); the engine (serving/engine.h) runs
// it with continuous batching, and serving/http_server.h answers HTTP. SIGTERM or SIGINT
// drains: requests in flight finish (within --drain-timeout, then they are aborted), new
// ones get 503, then the process exits 0.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "serving/engine.h"
#include "serving/engine_backend.h"
#include "serving/http_server.h"
#include "tools/commands.h"
#include "tools/model_resolution.h"
#include "tools/option_value.h"
#include "tools/usage_error.h"
#include "vm/thread_pool.h"

namespace kiln::tools {
namespace {

constexpr const char* kUsage =
    "usage: kiln serve [MODEL] [options]\n"
    "\n"
    "Serves a language model over HTTP with the OpenAI API: POST /v1/completions and\n"
    "/v1/chat/completions (JSON, or server-sent events with \"stream\": true), GET /v1/models,\n"
    "/health and /metrics (Prometheus). Requests are batched continuously. MODEL is a GGUF\n"
    "file (Llama family), compiled on first use and cached (KILN_CACHE_DIR), or a .kx\n"
    "compiled from one; without MODEL, the bundled SmolLM2-135M-Instruct (KILN_MODEL_DIR).\n"
    "Prints one line when it listens. SIGTERM or Ctrl-C drains: requests in flight finish\n"
    "(within --drain-timeout), new ones get 503, then it exits 0.\n"
    "\n"
    "  -m, --model MODEL      the model (the same as MODEL before the options)\n"
    "  --host H               address to listen on (default 127.0.0.1; 0.0.0.0 for all)\n"
    "  --port P               TCP port (default 8080; 0: any free port, printed)\n"
    "  --api-key K            require 'Authorization: Bearer K' on /v1/ routes (default:\n"
    "                         KILN_API_KEY, or none); /health and /metrics stay open\n"
    "  --model-name NAME      the model's id in the API (default: the GGUF's general.name\n"
    "                         or file name)\n"
    "  -t, --threads N        threads for kernels (default: KILN_NUM_THREADS or the cores)\n"
    "  --max-running N        sequences decoded together in one step (default 64)\n"
    "  --max-queued N         waiting requests before 429 (default 256)\n"
    "  --prefill-chunk N      prompt tokens prefilled per step at most (default 256)\n"
    "  --prefill-time-ratio R while streams decode, prompt tokens in a step take at most R times\n"
    "                         the decode's time (default 0.5: inter-token latency at most 1.5x idle)\n"
    "  -c, --kv-cache-tokens N  KV cache size in tokens over all sequences (default: the\n"
    "                         model's context, at most 32768; also --ctx-size)\n"
    "  --no-prefix-cache      do not reuse the KV pages of shared prompt prefixes\n"
    "  --http-threads N       connections served at once (default: max-running + 64)\n"
    "  --drain-timeout S      on SIGTERM, seconds requests in flight may run on before they\n"
    "                         are aborted (default 30)\n"
    "  --device NAME          run the model on NAME: cpu (default), vulkan, vulkan:N, cuda,\n"
    "                         cuda:N (a .gguf is compiled for it; docs/llm.md)\n"
    "  --recompile            compile the GGUF model again even if it is cached\n"
    "  -v, --verbose          print the model and its executable to stderr\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "kiln serve: %s\n", message.c_str());
  return 1;
}

int Usage(const std::string& message) { return UsageError("serve", message); }

}  // namespace

int ServeCommand(int argc, char** argv) {
  std::string model, host = "127.0.0.1", model_name, device;
  std::string api_key = std::getenv("KILN_API_KEY") ? std::getenv("KILN_API_KEY") : "";
  int64_t port = 8080, threads = 0, kv_tokens = 0, http_threads = 0, drain_seconds = 30;
  serving::EngineOptions engine_options;
  bool recompile = false, verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string v;
    auto value = [&](const char* flag) { return OptionValue(argc, argv, &i, flag, &v); };
    auto int_value = [&](int64_t* out, int64_t min, int64_t max) {
      return absl::SimpleAtoi(v, out) && *out >= min && *out <= max;
    };
    constexpr int64_t kLarge = 1 << 30;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (value("--model") || value("-m")) {  // llama-server's spelling of the positional MODEL
      if (!model.empty()) return Usage("one model at a time ('" + model + "' and '" + v + "')");
      model = v;
    } else if (value("--host")) {
      if (v.empty()) return Usage("--host needs an address");
      host = v;
    } else if (value("--port")) {
      if (!int_value(&port, 0, 65535)) return Usage("--port needs a port number in [0, 65535], got '" + v + "'");
    } else if (value("--api-key")) {
      if (v.empty()) return Usage("--api-key needs a non-empty key");
      api_key = v;
    } else if (value("--device")) {
      if (v.empty()) return Usage("--device needs a device name");
      device = v;
    } else if (value("--model-name")) {
      if (v.empty()) return Usage("--model-name needs a name");
      model_name = v;
    } else if (value("--threads") || value("-t")) {
      if (!int_value(&threads, 1, vm::ThreadPool::kMaxThreads)) {
        return Usage(absl::StrCat("--threads needs an integer in [1, ", vm::ThreadPool::kMaxThreads, "], got '", v, "'"));
      }
    } else if (value("--max-running")) {
      if (!int_value(&engine_options.max_running, 1, 4096)) {
        return Usage("--max-running needs an integer in [1, 4096], got '" + v + "'");
      }
    } else if (value("--max-queued")) {
      // A request waits in the queue while it is admitted, even on an idle server: 0 would
      // refuse every request.
      if (!int_value(&engine_options.max_queued, 1, kLarge)) {
        return Usage("--max-queued needs a positive integer, got '" + v + "'");
      }
    } else if (value("--prefill-chunk")) {
      if (!int_value(&engine_options.step_prefill_tokens, 1, kLarge)) {
        return Usage("--prefill-chunk needs a positive integer, got '" + v + "'");
      }
    } else if (value("--prefill-time-ratio")) {
      double ratio = 0;
      if (!absl::SimpleAtod(v, &ratio) || !(ratio > 0) || ratio > 1000) {
        return Usage("--prefill-time-ratio needs a number in (0, 1000], got '" + v + "'");
      }
      engine_options.prefill_time_ratio = ratio;
    } else if (value("--kv-cache-tokens") || value("--ctx-size") || value("-c")) {
      if (!int_value(&kv_tokens, 1, kLarge)) return Usage("--kv-cache-tokens needs a positive integer, got '" + v + "'");
    } else if (value("--http-threads")) {
      if (!int_value(&http_threads, 2, 65536)) return Usage("--http-threads needs an integer in [2, 65536], got '" + v + "'");
    } else if (value("--drain-timeout")) {
      if (!int_value(&drain_seconds, 0, 86400)) {
        return Usage("--drain-timeout needs a number of seconds in [0, 86400], got '" + v + "'");
      }
    } else if (arg == "--no-prefix-cache") {
      engine_options.prefix_caching = false;
    } else if (arg == "--recompile") {
      recompile = true;
    } else if (arg == "-v" || arg == "--verbose") {
      verbose = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage(UnknownOptionMessage(arg, kUsage));
    } else if (model.empty()) {
      model = arg;
    } else {
      return Usage("one model at a time ('" + model + "' and '" + arg + "')");
    }
  }

  // Signals: SIGTERM and SIGINT are blocked in every thread (threads inherit the mask, so
  // this comes before any is started) and taken by one waiting thread, which drains. A
  // write to a client that hung up must fail with EPIPE, not kill the server.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  if (threads > 0) setenv("KILN_NUM_THREADS", absl::StrCat(threads).c_str(), 1);  // before the pool starts
  absl::StatusOr<ResolvedModel> resolved = ResolveModel(model, threads, recompile, device);
  if (!resolved.ok()) return Fail(std::string(resolved.status().message()));
  if (verbose) {
    std::fprintf(stderr, "kiln serve: model %s, executable %s\n", resolved->gguf_path.c_str(),
                 resolved->executable.c_str());
  }

  engine_options.executable_path = resolved->executable;
  engine_options.weights_path = resolved->gguf_path;
  engine_options.model_name = model_name;
  engine_options.runner.kv_cache_tokens = kv_tokens;
  engine_options.runner.device = device;
  engine_options.threads = static_cast<int>(threads);
  absl::StatusOr<std::unique_ptr<serving::Engine>> engine = serving::Engine::Load(engine_options);
  if (!engine.ok()) return Fail(std::string(engine.status().message()));
  if (!(*engine)->chat_template_fallback().empty()) {
    std::fprintf(stderr, "kiln serve: note: %s has no tokenizer.chat_template; chat requests use %s, as llama.cpp does\n",
                 resolved->gguf_path.c_str(), (*engine)->chat_template_fallback().c_str());
  }
  std::unique_ptr<serving::GenerationBackend> backend = serving::MakeEngineBackend(**engine);

  serving::HttpServerOptions server_options;
  server_options.host = host;
  server_options.port = static_cast<int>(port);
  server_options.api_key = api_key;
  server_options.http_threads =
      static_cast<int>(http_threads > 0 ? http_threads : std::min<int64_t>(engine_options.max_running + 64, 65536));
  server_options.drain_timeout = std::chrono::seconds(drain_seconds);
  serving::HttpServer server(*backend, server_options);
  if (absl::Status bound = server.Bind(); !bound.ok()) return Fail(std::string(bound.message()));

  std::atomic<bool> serving{true};
  std::thread signal_waiter([&] {
    const timespec poll = {0, 200 * 1000 * 1000};
    while (serving) {
      const int received = sigtimedwait(&stop_signals, nullptr, &poll);
      if (received != SIGTERM && received != SIGINT) continue;
      const long long in_flight = (*engine)->Stats().running + (*engine)->Stats().queued;
      std::fprintf(stderr, "kiln serve: %s: draining (finishing %lld request%s in flight)\n",
                   received == SIGTERM ? "SIGTERM" : "SIGINT", in_flight, in_flight == 1 ? "" : "s");
      server.Drain();
      return;
    }
  });

  std::printf("kiln serve: listening on http://%s:%d (model '%s', %d-token context)\n", host.c_str(), server.port(),
              (*engine)->model_name().c_str(), static_cast<int>((*engine)->context_length()));
  std::fflush(stdout);
  const absl::Status ran = server.Run();
  serving = false;
  signal_waiter.join();
  if (!ran.ok()) return Fail(std::string(ran.message()));
  std::fprintf(stderr, "kiln serve: stopped\n");
  return 0;
}

}  // namespace kiln::tools
