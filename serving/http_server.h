// The OpenAI-compatible HTTP server of `kiln serve`, on cpp-httplib:
//
//   POST /v1/completions, /v1/chat/completions   JSON, or server-sent events with "stream": true
//   GET  /v1/models, /v1/models/{id}              the one model served
//   GET  /health                                  200 {"status": "ok"}; 503 while draining
//   GET  /metrics                                 Prometheus text (serving/metrics.h)
//
// Every error is an OpenAI-style JSON body (serving/api_error.h): 400 bad JSON or
// parameters (and a prompt longer than the context, from the engine), 401 a missing or
// wrong API key (`Authorization: Bearer KEY`, when one is set; /health and /metrics stay
// open), 404 an unknown model or route, 413 a body over max_body_bytes, 429 a full engine
// queue, 503 while draining.
//
// Each connection is served by one thread of a pool (http_threads): a streaming reply keeps
// its thread until it ends. A client that goes away mid-stream is noticed at the next write
// (a token, or a keep-alive comment sent after `heartbeat` without one) and its request is
// aborted, freeing its KV pages. Drain() finishes what is in flight (within drain_timeout)
// and stops the server.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "serving/generation_backend.h"

namespace kiln::serving {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                 // 0: any free port (port() says which)
  std::string api_key;             // empty: no authentication
  int http_threads = 128;          // connections served at once
  size_t max_body_bytes = 8 << 20;
  std::chrono::milliseconds heartbeat{1000};  // quiet time before a keep-alive comment on a stream
  // Drain(): how long requests in flight may run on; those still running then are aborted
  // (their streams end with finish_reason "abort" and [DONE]).
  std::chrono::milliseconds drain_timeout{30000};
};

class HttpServer {
 public:
  // `backend` must outlive the server.
  HttpServer(GenerationBackend& backend, HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port; an error names the address (in use, not local, ...).
  absl::Status Bind();
  int port() const;
  // Serves until Stop() or Drain(); returns after every connection thread has ended.
  absl::Status Run();
  // Stops accepting connections now; open streams end at their next write.
  void Stop();
  // Graceful shutdown: new generation requests get 503, the backend finishes every request
  // in flight (Backend::Drain; after drain_timeout the rest are aborted), the open streams
  // send their last events and [DONE], then Stop().
  // Thread-safe; returns when the server has stopped accepting connections.
  void Drain();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::serving
