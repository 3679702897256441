#include "serving/http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "serving/api_error.h"
#include "serving/http_task_queue.h"
#include "serving/metrics.h"
#include "serving/openai_request.h"
#include "serving/openai_response.h"
#include "serving/peer_connection.h"

namespace kiln::serving {
namespace {

using Json = nlohmann::json;
constexpr const char* kJson = "application/json";

// The events of one request, filled by the engine's loop thread (whose callback must be
// short) and drained by the HTTP thread that answers the request.
class EventQueue {
 public:
  void Push(const TokenEvent& event) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(event);
    }
    ready_.notify_one();
  }

  // What has arrived, waiting up to `timeout` for something.
  std::deque<TokenEvent> Take(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait_for(lock, timeout, [&] { return !events_.empty(); });
    return std::exchange(events_, {});
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<TokenEvent> events_;
};

// A streaming reply's state, shared by httplib's content provider and its releaser.
struct Stream {
  Stream(std::shared_ptr<EventQueue> queue, StreamEncoder encoder) : queue(std::move(queue)), encoder(std::move(encoder)) {}
  std::shared_ptr<EventQueue> queue;
  StreamEncoder encoder;
  int64_t request_id = -1;
  std::optional<PeerConnection> connection;  // watched while no event comes (queued, slow step)
  bool started = false;
  bool done = false;  // [DONE] written
  std::atomic<bool> released{false};
};

void Reply(httplib::Response& res, const ApiError& error) {
  res.status = error.http_status;
  res.set_content(error.ToJson(), kJson);
}

// The methods a route of this server answers, for a 405's Allow header; empty for a path
// that is no route at all (a 404). Kept next to the routes registered in Impl's constructor.
std::string AllowedMethods(std::string_view path) {
  if (path == "/v1/completions" || path == "/v1/chat/completions") return "POST";
  if (path == "/v1/models" || path.starts_with("/v1/models/") || path == "/health" || path == "/metrics") {
    return "GET, HEAD";  // httplib answers HEAD with a GET route
  }
  return "";
}

// Compares without an early exit, so the time taken says nothing about where a wrong key
// differs (only, as usual, about its length).
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < a.size(); ++i) difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  return difference == 0;
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(GenerationBackend& backend, HttpServerOptions options)
      : backend_(backend), options_(std::move(options)), created_(UnixSeconds()) {
    const int threads = std::max(options_.http_threads, 2);
    server_.new_task_queue = [threads] {
      auto* queue = new HttpTaskQueue(static_cast<size_t>(threads));
      if (queue->started() < static_cast<size_t>(threads)) {
        std::fprintf(stderr, "kiln serve: the system allowed %zu of the %d HTTP threads asked for; serving with those\n",
                     queue->started(), threads);
      }
      return queue;
    };
    server_.set_payload_max_length(options_.max_body_bytes);
    // Token chunks are small: without TCP_NODELAY, Nagle's algorithm and delayed ACKs hold
    // them back by up to 40 ms.
    server_.set_tcp_nodelay(true);
    // Debian's httplib (a shared library) listens with a backlog of 5: a burst of clients
    // connecting at once (64 in tests/tools/serve_load_test.py) overflows the accept queue
    // and connections are reset. The listening socket is remembered here (httplib's default
    // options kept) and Bind() listens on it again with a larger backlog, which Linux allows.
    //
    // httplib's default options set SO_REUSEPORT, with which a second server binds a port
    // already in use and the kernel splits the connections between the two: `kiln serve`
    // started twice on 8080 would answer half the requests from the other model, and never
    // say the port was taken. Only SO_REUSEADDR is set (a restarted server binds its port
    // while old connections linger in TIME_WAIT).
    server_.set_socket_options([this](socket_t sock) {
      const int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      listen_socket_ = sock;
    });
    server_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      HandleGeneration(ApiEndpoint::kCompletions, req, res);
    });
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      HandleGeneration(ApiEndpoint::kChatCompletions, req, res);
    });
    server_.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) { HandleModels(req, res); });
    // An empty id (`/v1/models/`) is an unknown model, not a method error.
    server_.Get(R"(/v1/models/(.*))", [this](const httplib::Request& req, httplib::Response& res) {
      HandleModel(req, res);
    });
    server_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      if (draining_) {
        res.status = 503;
        res.set_content(R"({"status":"draining"})", kJson);
      } else {
        res.set_content(R"({"status":"ok"})", kJson);
      }
    });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      HttpStats http;
      {
        std::lock_guard<std::mutex> lock(stats_mutex_);
        http = http_stats_;
      }
      res.set_content(PrometheusMetrics(backend_.Stats(), http), kPrometheusContentType);
    });
    // httplib's own errors (no route, body too large, unreadable request) get a JSON body.
    server_.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      ApiError error;
      const std::string allowed = AllowedMethods(req.path);
      if (res.status == 404 && !allowed.empty()) {
        // httplib answers 404 for a known path asked with another method (a GET on a POST
        // route); HTTP says 405, with the methods that would work.
        res.status = 405;
        res.set_header("Allow", allowed);
        error.message = absl::StrCat(req.method, " is not allowed on ", req.path, "; use ", allowed);
        error.code = "method_not_allowed";
      } else if (res.status == 404) {
        error.message = absl::StrCat("no route for ", req.method, " ", req.path);
        // The usual slips of a client's configuration: a base URL without /v1 (llama-server
        // also answers /chat/completions), or a path with a trailing slash.
        std::string meant = "/v1" + req.path;
        if (AllowedMethods(meant).empty() && req.path.size() > 1 && req.path.back() == '/') {
          meant = req.path.substr(0, req.path.size() - 1);
        }
        if (!AllowedMethods(meant).empty()) {
          absl::StrAppend(&error.message, "; did you mean ", meant, "? (an OpenAI client's base URL ends in /v1)");
        }
        error.code = "not_found";
      } else if (res.status == 400 && req.method == "POST" && !req.has_header("Content-Length") &&
                 !req.has_header("Transfer-Encoding")) {
        // httplib refuses a POST without a body length (curl -X POST with no -d). It also
        // stops reading headers at a line longer than CPPHTTPLIB_HEADER_MAX_LENGTH, so a
        // Content-Length after such a line is never seen: the reply names both causes.
        error.message = absl::StrCat("POST ", req.path,
                                     " needs a JSON body (with Content-Length or chunked encoding); if it sent one, a "
                                     "header line longer than ", CPPHTTPLIB_HEADER_MAX_LENGTH,
                                     " bytes cut the headers short");
      } else if (res.status == 413) {
        error.message = absl::StrCat("the request body is larger than ", options_.max_body_bytes, " bytes");
      } else if (res.status == 400) {
        // httplib's own 400s: it could not read the request line or headers.
        error.message = absl::StrCat("HTTP 400 for ", req.method, " ", req.path,
                                     ": the request's headers could not be read (malformed, or a header line longer "
                                     "than ", CPPHTTPLIB_HEADER_MAX_LENGTH, " bytes)");
      } else {
        error.message = absl::StrCat("HTTP ", res.status, " for ", req.method, " ", req.path);
      }
      error.http_status = res.status;
      if (res.status >= 500) error.type = "server_error";
      res.set_content(error.ToJson(), kJson);
      return httplib::Server::HandlerResponse::Handled;
    }));
    server_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr thrown) {
      ApiError error;
      error.http_status = 500;
      error.type = "server_error";
      error.message = "internal error";
      try {
        std::rethrow_exception(thrown);
      } catch (const std::exception& e) {
        error.message = absl::StrCat("internal error: ", e.what());
      } catch (...) {
      }
      Reply(res, error);
    });
    // Counted before the reply is written (httplib's post-routing handler runs for every
    // reply, errors included), so a client that reads /metrics right after a reply sees it;
    // the logger ran after the write, racing with the client's next request.
    server_.set_post_routing_handler([this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(stats_mutex_);
      ++http_stats_.responses_by_status[res.status];
    });
  }

  absl::Status Bind() {
    if (options_.port == 0) {
      port_ = server_.bind_to_any_port(options_.host);
      if (port_ < 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.host, " (any port)"));
    } else {
      if (options_.port < 0 || options_.port > 65535) {
        return absl::InvalidArgumentError(absl::StrCat("port ", options_.port, " is not in [0, 65535]"));
      }
      if (!server_.bind_to_port(options_.host, options_.port)) {
        return absl::UnavailableError(
            absl::StrCat("cannot listen on ", options_.host, ":", options_.port, " (in use, or not an address of this machine)"));
      }
      port_ = options_.port;
    }
    // The kernel caps the backlog at net.core.somaxconn.
    if (listen_socket_ >= 0 && ::listen(listen_socket_, kListenBacklog) != 0) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.host, ":", port_, ": ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }

  int port() const { return port_; }

  absl::Status Run() {
    if (port_ < 0) return absl::FailedPreconditionError("HttpServer::Run before a successful Bind");
    if (!server_.listen_after_bind() && !stopped_) {
      return absl::InternalError(absl::StrCat("the server on ", options_.host, ":", port_, " stopped accepting"));
    }
    return absl::OkStatus();
  }

  void Stop() {
    stopped_ = true;
    server_.stop();
  }

  void Drain() {
    draining_ = true;
    std::mutex mutex;
    std::condition_variable done;
    bool drained = false;
    std::thread drainer([&] {
      backend_.Drain();
      std::lock_guard<std::mutex> lock(mutex);
      drained = true;
      done.notify_all();
    });
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (!done.wait_for(lock, options_.drain_timeout, [&] { return drained; })) {
        // Out of patience: end what still runs; the engine sends each its last (abort) event.
        std::lock_guard<std::mutex> in_flight_lock(in_flight_mutex_);
        for (int64_t id : in_flight_) backend_.Abort(id);
      }
    }
    drainer.join();
    {
      // Every request has had its last event; let the open streams write theirs and [DONE].
      std::unique_lock<std::mutex> lock(streams_mutex_);
      streams_idle_.wait_for(lock, std::chrono::seconds(10), [&] { return open_streams_ == 0; });
    }
    Stop();
  }

 private:
  bool Authorized(const httplib::Request& req, httplib::Response& res) {
    if (options_.api_key.empty()) return true;
    const std::string header = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (header.size() > kBearer.size() && std::string_view(header).substr(0, kBearer.size()) == kBearer &&
        ConstantTimeEquals(std::string_view(header).substr(kBearer.size()), options_.api_key)) {
      return true;
    }
    ApiError error;
    error.http_status = 401;
    error.message = header.empty() ? "missing API key: send 'Authorization: Bearer KEY'" : "invalid API key";
    error.code = "invalid_api_key";
    Reply(res, error);
    return false;
  }

  Json ModelJson() const {
    return {{"id", backend_.model_name()}, {"object", "model"}, {"created", created_}, {"owned_by", "kiln"}};
  }

  void HandleModels(const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    Json body = {{"object", "list"}, {"data", Json::array({ModelJson()})}};
    res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), kJson);
  }

  void HandleModel(const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    const std::string id = req.matches.size() > 1 ? req.matches[1].str() : std::string();
    if (id != backend_.model_name()) return Reply(res, UnknownModel(id));
    res.set_content(ModelJson().dump(-1, ' ', false, Json::error_handler_t::replace), kJson);
  }

  ApiError UnknownModel(const std::string& model) const {
    ApiError error;
    error.http_status = 404;
    error.message = absl::StrCat("the model '", model, "' does not exist; this server serves '", backend_.model_name(), "'");
    error.param = "model";
    error.code = "model_not_found";
    return error;
  }

  void HandleGeneration(ApiEndpoint endpoint, const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    if (draining_) return Reply(res, ApiErrorFromStatus(absl::UnavailableError("the server is shutting down")));
    ApiRequestDefaults defaults;
    defaults.chat_max_tokens = backend_.context_length();
    ApiRequestResult parsed = ParseApiRequest(endpoint, req.body, defaults);
    if (!parsed.request) return Reply(res, parsed.error);
    ApiRequest& request = *parsed.request;
    if (!request.model.empty() && request.model != backend_.model_name()) return Reply(res, UnknownModel(request.model));

    ResponseContext context;
    context.endpoint = endpoint;
    context.id = NewResponseId(endpoint);
    context.created = UnixSeconds();
    context.model = backend_.model_name();
    context.choices = request.generation.n;
    context.logprobs = request.logprobs;
    context.token_bytes = [this](int32_t token) { return backend_.TokenBytes(token); };

    auto queue = std::make_shared<EventQueue>();
    // Registered before Submit so that Drain() waits for this stream's [DONE] too.
    if (request.stream) OpenStream();
    absl::StatusOr<int64_t> id =
        backend_.Submit(std::move(request.generation), [queue](const TokenEvent& event) { queue->Push(event); });
    if (!id.ok()) {
      if (request.stream) CloseStream();
      return Reply(res, ApiErrorFromStatus(id.status()));
    }
    TrackInFlight(*id, true);
    if (!request.stream) {
      AnswerWhole(std::move(context), *id, *queue, req, res);
      TrackInFlight(*id, false);
      return;
    }

    auto stream = std::make_shared<Stream>(queue, StreamEncoder(std::move(context), request.include_usage));
    stream->request_id = *id;
    stream->connection = PeerConnection::Find(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, stream](size_t, httplib::DataSink& sink) { return WriteStream(*stream, sink); },
        [this, stream](bool) {
          if (stream->released.exchange(true)) return;
          // Ended before [DONE]: the client went away (or the server stopped): free the pages.
          if (!stream->done) backend_.Abort(stream->request_id);
          TrackInFlight(stream->request_id, false);
          CloseStream();
        });
  }

  // A non-streaming reply: every event, then the whole body. Nothing is written before the
  // end, so a client that hangs up is noticed by watching its connection; its request is
  // then aborted, which frees its pages (or its queue slot).
  void AnswerWhole(ResponseContext context, int64_t id, EventQueue& queue, const httplib::Request& req,
                   httplib::Response& res) {
    std::optional<PeerConnection> connection =
        PeerConnection::Find(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
    CompletionCollector collector(std::move(context));
    while (!collector.finished()) {
      bool hung_up = false;
      for (const TokenEvent& event : TakeWhileConnected(queue, connection, &hung_up)) collector.Add(event);
      // Tokens coming steadily skip the check in TakeWhileConnected: nothing is written here.
      if (!hung_up && connection && !collector.finished()) hung_up = connection->HungUp();
      if (hung_up && !collector.finished()) {
        backend_.Abort(id);
        connection.reset();  // the abort's last event ends the loop; the reply goes nowhere
      }
    }
    if (!collector.error().ok()) return Reply(res, ApiErrorFromStatus(collector.error()));
    res.set_content(collector.ToJson(), kJson);
  }

  // What arrives within one heartbeat. While nothing does (a request still queued in the
  // engine, or a long prompt step) the connection is checked every kHangUpPoll, so a client
  // that went away gives its queue slot or pages back at once: a stream would otherwise only
  // notice at its second keep-alive write (the first after the peer's FIN still succeeds),
  // and a request admitted meanwhile would run a prompt step for nobody.
  std::deque<TokenEvent> TakeWhileConnected(EventQueue& queue, const std::optional<PeerConnection>& connection,
                                            bool* hung_up) {
    constexpr std::chrono::milliseconds kHangUpPoll{100};
    const auto deadline = std::chrono::steady_clock::now() + options_.heartbeat;
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      std::deque<TokenEvent> events = queue.Take(std::clamp(left, std::chrono::milliseconds(0), kHangUpPoll));
      if (!events.empty()) return events;
      if (connection && connection->HungUp()) {
        *hung_up = true;
        return {};
      }
      if (left <= kHangUpPoll) return {};
    }
  }

  // One call of httplib's chunked content provider: the events that arrived (or a keep-alive
  // comment when none did within the heartbeat). False ends the reply.
  bool WriteStream(Stream& stream, httplib::DataSink& sink) {
    std::string out;
    if (!stream.started) {
      stream.started = true;
      out = stream.encoder.Start();
    }
    if (out.empty()) {
      bool hung_up = false;
      for (const TokenEvent& event : TakeWhileConnected(*stream.queue, stream.connection, &hung_up)) {
        out += stream.encoder.Encode(event);
      }
      if (hung_up) return false;  // the releaser aborts the request
    }
    if (stream.encoder.finished()) {
      out += stream.encoder.Finish();
      if (!sink.write(out.data(), out.size())) return false;
      stream.done = true;
      sink.done();
      return true;
    }
    // An SSE comment: clients ignore it, and a closed connection fails the write.
    if (out.empty()) out = ": keep-alive\n\n";
    return sink.write(out.data(), out.size());
  }

  void TrackInFlight(int64_t id, bool in_flight) {
    std::lock_guard<std::mutex> lock(in_flight_mutex_);
    if (in_flight) {
      in_flight_.insert(id);
    } else {
      in_flight_.erase(id);
    }
  }

  void OpenStream() {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    ++open_streams_;
  }

  void CloseStream() {
    {
      std::lock_guard<std::mutex> lock(streams_mutex_);
      --open_streams_;
    }
    streams_idle_.notify_all();
  }

  GenerationBackend& backend_;
  HttpServerOptions options_;
  const int64_t created_;
  httplib::Server server_;
  int port_ = -1;
  // The listening socket httplib created (set in its socket-options callback), -1 before.
  std::atomic<int> listen_socket_{-1};
  static constexpr int kListenBacklog = 1024;
  std::atomic<bool> draining_{false};
  std::atomic<bool> stopped_{false};

  std::mutex stats_mutex_;
  HttpStats http_stats_;

  std::mutex in_flight_mutex_;
  std::set<int64_t> in_flight_;  // submitted requests whose replies are not complete

  std::mutex streams_mutex_;
  std::condition_variable streams_idle_;
  int64_t open_streams_ = 0;
};

HttpServer::HttpServer(GenerationBackend& backend, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(backend, std::move(options))) {}
HttpServer::~HttpServer() = default;

absl::Status HttpServer::Bind() { return impl_->Bind(); }
int HttpServer::port() const { return impl_->port(); }
absl::Status HttpServer::Run() { return impl_->Run(); }
void HttpServer::Stop() { impl_->Stop(); }
void HttpServer::Drain() { impl_->Drain(); }

}  // namespace kiln::serving
