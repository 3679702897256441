// The HTTP server against a scripted backend (no model): routes, errors, streaming,
// aborts on disconnect, and draining. A real engine behind `kiln serve` is
// tests/tools/serve_tool_test.sh.
#include "serving/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"

namespace kiln::serving {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// Generates "t0 ", "t1 ", ... for each choice, one every `interval`, then stops; an aborted
// request ends with finish_reason abort.
class ScriptedBackend : public GenerationBackend {
 public:
  ~ScriptedBackend() override { JoinAll(); }

  absl::StatusOr<int64_t> Submit(GenerationRequest request, TokenCallback callback) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (draining_) return absl::UnavailableError("draining");
    if (!submit_status.ok()) return submit_status;
    const int64_t id = next_id_++;
    requests_.push_back(request);
    const int tokens = tokens_per_choice;
    const auto interval = token_interval;
    const auto queued_for = queue_time;
    threads_.emplace_back([this, id, request = std::move(request), callback = std::move(callback), tokens, interval,
                           queued_for] {
      int64_t generated = 0;
      // Queued: nothing is sent until admitted; an abort meanwhile ends the request.
      for (const auto admitted = std::chrono::steady_clock::now() + queued_for;
           std::chrono::steady_clock::now() < admitted;) {
        if (IsAborted(id)) {
          for (int choice = 0; choice < request.n; ++choice) callback(Finished(id, choice, FinishReason::kAbort, 0));
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      for (int i = 0; i < tokens; ++i) {
        if (IsAborted(id)) {
          for (int choice = 0; choice < request.n; ++choice) callback(Finished(id, choice, FinishReason::kAbort, generated));
          return;
        }
        for (int choice = 0; choice < request.n; ++choice) {
          TokenEvent event;
          event.request_id = id;
          event.choice = choice;
          event.token = i;
          event.text = absl::StrCat("t", i, " ");
          event.logprob = -1;
          callback(event);
        }
        ++generated;
        std::this_thread::sleep_for(interval);
      }
      for (int choice = 0; choice < request.n; ++choice) callback(Finished(id, choice, FinishReason::kLength, generated));
    });
    return id;
  }

  void Abort(int64_t request_id) override {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_.insert(request_id);
  }

  void Drain() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      draining_ = true;
    }
    JoinAll();
  }

  EngineStats Stats() const override {
    EngineStats stats;
    stats.queued = 5;
    stats.kv_pages_free = 99;
    return stats;
  }
  const std::string& model_name() const override { return name_; }
  int64_t context_length() const override { return 2048; }
  std::string TokenBytes(int32_t token) const override { return absl::StrCat("t", token, " "); }

  bool IsAborted(int64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return aborted_.count(id) > 0;
  }
  std::vector<GenerationRequest> requests() {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

  absl::Status submit_status;
  int tokens_per_choice = 3;
  std::chrono::milliseconds token_interval{0};
  std::chrono::milliseconds queue_time{0};  // before the first token

 private:
  static TokenEvent Finished(int64_t id, int choice, FinishReason reason, int64_t generated) {
    TokenEvent event;
    event.request_id = id;
    event.choice = choice;
    event.finished = true;
    event.finish_reason = reason;
    event.prompt_tokens = 4;
    event.completion_tokens = generated;
    return event;
  }

  void JoinAll() {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      threads.swap(threads_);
    }
    for (std::thread& thread : threads) thread.join();
  }

  std::string name_ = "tiny-model";
  std::mutex mutex_;
  bool draining_ = false;
  int64_t next_id_ = 1;
  std::set<int64_t> aborted_;
  std::vector<GenerationRequest> requests_;
  std::vector<std::thread> threads_;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions options = {}, std::chrono::milliseconds heartbeat = std::chrono::milliseconds(50)) {
    signal(SIGPIPE, SIG_IGN);  // writes to a closed connection fail instead of killing the test
    options.host = "127.0.0.1";
    options.port = 0;
    options.http_threads = 8;
    options.heartbeat = heartbeat;
    options.max_body_bytes = 1 << 20;
    server_ = std::make_unique<HttpServer>(backend_, options);
    ASSERT_TRUE(server_->Bind().ok());
    runner_ = std::thread([this] { run_status_ = server_->Run(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
    for (int attempt = 0; attempt < 200; ++attempt) {
      if (client_->Get("/health")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "the server did not answer /health";
  }

  void TearDown() override {
    if (server_) server_->Stop();
    if (runner_.joinable()) runner_.join();
  }

  httplib::Result Post(const std::string& path, const std::string& body, const httplib::Headers& headers = {}) {
    return client_->Post(path, headers, body, "application/json");
  }

  // An error reply's JSON, checked to have OpenAI's shape.
  Json ErrorBody(const httplib::Result& result, int status) {
    EXPECT_TRUE(result);
    if (!result) return Json();
    EXPECT_EQ(result->status, status) << result->body;
    EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
    Json body = Json::parse(result->body, nullptr, false);
    EXPECT_TRUE(body.is_object() && body.contains("error")) << result->body;
    if (!body.is_object() || !body.contains("error")) return Json();
    EXPECT_TRUE(body["error"]["message"].is_string());
    EXPECT_TRUE(body["error"]["type"].is_string());
    return body["error"];
  }

  ScriptedBackend backend_;
  std::unique_ptr<HttpServer> server_;
  std::thread runner_;
  absl::Status run_status_;
  std::unique_ptr<httplib::Client> client_;
};

// The JSON payloads of an SSE body (keep-alive comments skipped); the last is "[DONE]".
std::vector<std::string> SsePayloads(const std::string& body) {
  std::vector<std::string> payloads;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    const std::string event = body.substr(at, end - at);
    at = end + 2;
    if (event.rfind(":", 0) == 0) continue;
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    payloads.push_back(event.substr(6));
  }
  return payloads;
}

TEST_F(HttpServerTest, HealthModelsAndMetrics) {
  Start();
  auto health = client_->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(Json::parse(health->body)["status"], "ok");

  auto models = client_->Get("/v1/models");
  ASSERT_TRUE(models);
  Json list = Json::parse(models->body);
  EXPECT_EQ(list["object"], "list");
  ASSERT_EQ(list["data"].size(), 1u);
  EXPECT_EQ(list["data"][0]["id"], "tiny-model");
  EXPECT_EQ(list["data"][0]["object"], "model");
  auto one = client_->Get("/v1/models/tiny-model");
  ASSERT_TRUE(one);
  EXPECT_EQ(Json::parse(one->body)["id"], "tiny-model");
  EXPECT_EQ(ErrorBody(client_->Get("/v1/models/other"), 404)["code"], "model_not_found");

  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->get_header_value("Content-Type"), HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(metrics->body, HasSubstr("\nkiln_requests_queued 5\n"));
  EXPECT_THAT(metrics->body, HasSubstr("\nkiln_kv_cache_pages_free 99\n"));
  EXPECT_THAT(metrics->body, HasSubstr("kiln_http_responses_total{code=\"200\"}"));
  EXPECT_THAT(metrics->body, HasSubstr("kiln_http_responses_total{code=\"404\"} 1\n"));
}

TEST_F(HttpServerTest, CompletionAndChatWholeReplies) {
  Start();
  auto completion = Post("/v1/completions", R"({"model": "tiny-model", "prompt": "hi", "max_tokens": 3, "n": 2})");
  ASSERT_TRUE(completion);
  ASSERT_EQ(completion->status, 200) << completion->body;
  Json body = Json::parse(completion->body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["model"], "tiny-model");
  ASSERT_EQ(body["choices"].size(), 2u);
  EXPECT_EQ(body["choices"][0]["text"], "t0 t1 t2 ");
  EXPECT_EQ(body["choices"][1]["text"], "t0 t1 t2 ");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(body["usage"]["completion_tokens"], 6);

  auto chat = Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}], "temperature": 0})");
  ASSERT_TRUE(chat);
  ASSERT_EQ(chat->status, 200) << chat->body;
  Json reply = Json::parse(chat->body);
  EXPECT_EQ(reply["object"], "chat.completion");
  EXPECT_EQ(reply["choices"][0]["message"]["content"], "t0 t1 t2 ");
  // What reached the engine.
  std::vector<GenerationRequest> requests = backend_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(*requests[0].prompt, "hi");
  EXPECT_EQ(requests[0].n, 2);
  ASSERT_TRUE(requests[1].messages.has_value());
  EXPECT_EQ((*requests[1].messages)[0].content, "hi");
  EXPECT_EQ(requests[1].sampling.temperature, 0);
  EXPECT_EQ(requests[1].max_tokens, 2048);  // chat without max_tokens: up to the context
}

TEST_F(HttpServerTest, ChatStreamEndsWithUsageAndDone) {
  Start();
  auto result = Post("/v1/chat/completions",
                     R"({"messages": [{"role": "user", "content": "hi"}], "stream": true,
                         "stream_options": {"include_usage": true}})");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200);
  EXPECT_EQ(result->get_header_value("Content-Type"), "text/event-stream");
  std::vector<std::string> payloads = SsePayloads(result->body);
  ASSERT_GE(payloads.size(), 3u) << result->body;
  EXPECT_EQ(payloads.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 1 < payloads.size(); ++i) {
    Json chunk = Json::parse(payloads[i]);
    if (!chunk["choices"].empty() && chunk["choices"][0]["delta"].contains("content")) {
      text += chunk["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_EQ(text, "t0 t1 t2 ");
  Json usage = Json::parse(payloads[payloads.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 3);
}

TEST_F(HttpServerTest, ApiKey) {
  HttpServerOptions options;
  options.api_key = "sekret";
  Start(options);
  const std::string body = R"({"prompt": "hi"})";
  EXPECT_EQ(ErrorBody(Post("/v1/completions", body), 401)["code"], "invalid_api_key");
  EXPECT_EQ(ErrorBody(Post("/v1/completions", body, {{"Authorization", "Bearer wrong!"}}), 401)["code"],
            "invalid_api_key");
  EXPECT_EQ(ErrorBody(Post("/v1/completions", body, {{"Authorization", "sekret"}}), 401)["code"], "invalid_api_key");
  ErrorBody(client_->Get("/v1/models"), 401);
  auto ok = Post("/v1/completions", body, {{"Authorization", "Bearer sekret"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  // Probes stay open.
  EXPECT_EQ(client_->Get("/health")->status, 200);
  EXPECT_EQ(client_->Get("/metrics")->status, 200);
}

TEST_F(HttpServerTest, ErrorReplies) {
  Start();
  Json malformed = ErrorBody(Post("/v1/completions", "{\"prompt\": "), 400);
  EXPECT_THAT(malformed["message"].get<std::string>(), HasSubstr("not valid JSON"));
  EXPECT_EQ(ErrorBody(Post("/v1/completions", R"({"prompt": "x", "top_p": 3})"), 400)["param"], "top_p");
  EXPECT_EQ(ErrorBody(Post("/v1/chat/completions", R"({"model": "gpt-4", "messages": []})"), 400)["param"], "messages");
  EXPECT_EQ(ErrorBody(Post("/v1/chat/completions",
                           R"({"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})"), 404)["code"],
            "model_not_found");
  EXPECT_EQ(ErrorBody(client_->Get("/v2/nothing"), 404)["code"], "not_found");
  ErrorBody(Post("/v1/completions", std::string(2 << 20, ' ')), 413);

  backend_.submit_status = absl::ResourceExhaustedError("the queue holds 256 requests");
  Json full = ErrorBody(Post("/v1/completions", R"({"prompt": "x"})"), 429);
  EXPECT_EQ(full["message"], "the queue holds 256 requests");
  EXPECT_EQ(full["type"], "rate_limit_error");
  // A streaming request that cannot be submitted fails before the stream starts.
  ErrorBody(Post("/v1/completions", R"({"prompt": "x", "stream": true})"), 429);
  backend_.submit_status = absl::OutOfRangeError("the prompt has 5000 tokens; the context holds 2048");
  Json too_long = ErrorBody(Post("/v1/completions", R"({"prompt": "x"})"), 400);
  EXPECT_THAT(too_long["message"].get<std::string>(), HasSubstr("context holds"));
  EXPECT_EQ(too_long["code"], "context_length_exceeded");
}

// A route asked with the wrong method is a 405 naming the right one (what a user who tries
// `curl URL` on a POST route, or POSTs to /v1/models, needs to hear), not a 404.
TEST_F(HttpServerTest, WrongMethodOnARouteIs405WithAllow) {
  Start();
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    SCOPED_TRACE(path);
    auto get = client_->Get(path);
    Json error = ErrorBody(get, 405);
    EXPECT_EQ(get->get_header_value("Allow"), "POST");
    EXPECT_EQ(error["code"], "method_not_allowed");
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("use POST"));
    auto del = client_->Delete(path);
    ErrorBody(del, 405);
  }
  for (const char* path : {"/v1/models", "/v1/models/tiny-model", "/health", "/metrics"}) {
    SCOPED_TRACE(path);
    auto post = Post(path, "{}");
    ErrorBody(post, 405);
    EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  }
  // Unknown paths stay 404, whatever the method.
  EXPECT_EQ(ErrorBody(Post("/v1/embeddings", "{}"), 404)["code"], "not_found");
  EXPECT_EQ(ErrorBody(client_->Get("/v1/completion"), 404)["code"], "not_found");
  // A client whose base URL lacks /v1, or a path with a trailing slash, is told the route
  // it meant (hunt21).
  EXPECT_EQ(ErrorBody(Post("/chat/completions", "{}"), 404)["message"],
            "no route for POST /chat/completions; did you mean /v1/chat/completions? (an OpenAI client's base URL "
            "ends in /v1)");
  EXPECT_THAT(ErrorBody(Post("/v1/completions/", "{}"), 404)["message"].get<std::string>(),
              HasSubstr("did you mean /v1/completions?"));
  EXPECT_EQ(client_->Head("/health")->status, 200);
}

// A raw connection, so that the test can hang up in the middle of a stream.
int ConnectTo(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string RawPost(const std::string& body) {
  return absl::StrCat("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                      "Content-Length: ",
                      body.size(), "\r\n\r\n", body);
}

// Whether `condition` holds within 10 s (checked every 5 ms).
template <typename Condition>
bool WaitFor(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!condition() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

// A second server on a port in use fails to bind (httplib's default SO_REUSEPORT would let
// both listen and split the connections between them).
TEST_F(HttpServerTest, APortInUseIsAnError) {
  Start();
  HttpServerOptions options;
  options.host = "127.0.0.1";
  options.port = server_->port();
  HttpServer second(backend_, options);
  absl::Status bound = second.Bind();
  EXPECT_EQ(bound.code(), absl::StatusCode::kUnavailable) << bound;
  EXPECT_THAT(std::string(bound.message()), HasSubstr("in use"));
}

// `curl -X POST URL` with no -d sends no body length, which httplib refuses with a bare 400:
// the reply says what is missing.
// Sends `request` as raw bytes on a new connection and returns all the server answers.
std::string SendRaw(int port, const std::string& request) {
  const int fd = ConnectTo(port);
  if (fd < 0) return "connect failed";
  std::string received;
  if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) received.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return received;
}

TEST_F(HttpServerTest, PostWithoutABodySaysSo) {
  Start();
  const std::string received = SendRaw(
      server_->port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(received, HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(received, HasSubstr("POST /v1/chat/completions needs a JSON body"));
}

// A header line over httplib's 8 KiB limit ends the headers it reads, so the body's length
// after it is lost: the reply says so rather than only "needs a JSON body".
TEST_F(HttpServerTest, AnOversizedHeaderLineIsNamed) {
  Start();
  const std::string body = R"({"model": "m", "messages": [{"role": "user", "content": "hi"}]})";
  const std::string received =
      SendRaw(server_->port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nX-Big: " +
                                   std::string(10000, 'a') + "\r\nContent-Length: " + std::to_string(body.size()) +
                                   "\r\nConnection: close\r\n\r\n" + body);
  EXPECT_THAT(received, HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(received, HasSubstr("a header line longer than 8192 bytes cut the headers short"));
}

// hunt19: `/v1/models/` answered "GET is not allowed ...; use GET, HEAD"; a GET whose header
// line is too long answered only "HTTP 400".
TEST_F(HttpServerTest, AnEmptyModelIdAndAnOversizedGetHeaderAreNamed) {
  Start();
  Json error = ErrorBody(client_->Get("/v1/models/"), 404);
  EXPECT_EQ(error["code"], "model_not_found");
  const std::string received = SendRaw(
      server_->port(), "GET /v1/models HTTP/1.1\r\nHost: localhost\r\nX-Big: " + std::string(10000, 'a') +
                           "\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(received, HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(received, HasSubstr("a header line longer than 8192 bytes"));
}

TEST_F(HttpServerTest, ClientThatHangsUpMidStreamAbortsItsRequest) {
  backend_.tokens_per_choice = 100000;
  backend_.token_interval = std::chrono::milliseconds(2);
  Start();
  const int fd = ConnectTo(server_->port());
  ASSERT_GE(fd, 0);
  const std::string request = RawPost(R"({"prompt": "x", "stream": true, "max_tokens": 100000})");
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string received;
  char buffer[4096];
  while (received.find("t5 ") == std::string::npos) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    ASSERT_GT(n, 0);
    received.append(buffer, static_cast<size_t>(n));
  }
  EXPECT_THAT(received, HasSubstr("HTTP/1.1 200"));
  close(fd);
  EXPECT_TRUE(WaitFor([&] { return backend_.IsAborted(1); }));
}

// A stream still queued in the engine has nothing to write, so its hang-up is not seen by a
// failed write: the server watches the connection and aborts the request, freeing its queue
// slot, well before a keep-alive (a minute here) or its admission (a minute here too).
TEST_F(HttpServerTest, ClientThatHangsUpWhileQueuedAbortsItsRequest) {
  for (const bool stream : {true, false}) {
    SCOPED_TRACE(stream ? "stream" : "whole reply");
    backend_.queue_time = std::chrono::minutes(1);
    if (!server_) Start({}, std::chrono::minutes(1));
    const size_t submitted = backend_.requests().size();
    const int fd = ConnectTo(server_->port());
    ASSERT_GE(fd, 0);
    const std::string request =
        RawPost(absl::StrCat(R"({"prompt": "x", "max_tokens": 5, "stream": )", stream ? "true" : "false", "}"));
    ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    ASSERT_TRUE(WaitFor([&] { return backend_.requests().size() == submitted + 1; }));
    const int64_t id = static_cast<int64_t>(submitted) + 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // several connection checks of a live client
    EXPECT_FALSE(backend_.IsAborted(id));
    close(fd);
    EXPECT_TRUE(WaitFor([&] { return backend_.IsAborted(id); }));
  }
}

// A whole (non-streaming) reply is written only at the end, so the server watches the
// connection instead: a client gone before then has its request aborted.
TEST_F(HttpServerTest, ClientThatHangsUpBeforeAWholeReplyAbortsItsRequest) {
  backend_.tokens_per_choice = 100000;
  backend_.token_interval = std::chrono::milliseconds(2);
  Start();
  const int fd = ConnectTo(server_->port());
  ASSERT_GE(fd, 0);
  const std::string request = RawPost(R"({"prompt": "x", "max_tokens": 100000})");
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  ASSERT_TRUE(WaitFor([&] { return backend_.requests().size() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // several heartbeats of a live client
  EXPECT_FALSE(backend_.IsAborted(1));
  close(fd);
  EXPECT_TRUE(WaitFor([&] { return backend_.IsAborted(1); }));
}

// A client that stays gets its whole replies, two in turn on one kept-alive connection, and
// nothing is aborted: watching the connection (several heartbeats per reply) sees no hang-up.
TEST_F(HttpServerTest, ClientThatStaysGetsItsWholeRepliesWithoutAborts) {
  backend_.tokens_per_choice = 20;
  backend_.token_interval = std::chrono::milliseconds(10);  // 200 ms: four heartbeats
  Start();
  const int fd = ConnectTo(server_->port());
  ASSERT_GE(fd, 0);
  std::string received;
  char buffer[4096];
  for (const char* body : {R"({"prompt": "x", "max_tokens": 20})", R"({"prompt": "y"})"}) {
    const std::string request = RawPost(body);
    ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    const size_t before = received.size();
    while (received.find("\"usage\"", before) == std::string::npos) {
      const ssize_t n = read(fd, buffer, sizeof(buffer));
      ASSERT_GT(n, 0) << received;
      received.append(buffer, static_cast<size_t>(n));
    }
  }
  close(fd);
  EXPECT_THAT(received, HasSubstr("t19 "));
  EXPECT_THAT(received, Not(HasSubstr("\"abort\"")));
  EXPECT_FALSE(backend_.IsAborted(1));
  EXPECT_FALSE(backend_.IsAborted(2));
}

TEST_F(HttpServerTest, DrainFinishesOpenStreamsThenStops) {
  backend_.tokens_per_choice = 30;
  backend_.token_interval = std::chrono::milliseconds(10);
  Start();
  std::string streamed;
  std::thread client([&] {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(10, 0);
    auto result = client.Post("/v1/completions", R"({"prompt": "x", "stream": true})", "application/json");
    if (result) streamed = result->body;
  });
  // Drain once the stream is under way.
  while (backend_.requests().empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  server_->Drain();
  client.join();
  runner_.join();
  EXPECT_TRUE(run_status_.ok()) << run_status_;
  std::vector<std::string> payloads = SsePayloads(streamed);
  ASSERT_FALSE(payloads.empty());
  EXPECT_EQ(payloads.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 1 < payloads.size(); ++i) text += Json::parse(payloads[i])["choices"][0]["text"].get<std::string>();
  EXPECT_THAT(text, HasSubstr("t29 "));  // ran to its end, not cut off
  EXPECT_FALSE(backend_.IsAborted(1));
}

TEST_F(HttpServerTest, DrainAbortsWhatOutlastsItsTimeout) {
  backend_.tokens_per_choice = 1000000;
  backend_.token_interval = std::chrono::milliseconds(2);
  HttpServerOptions options;
  options.drain_timeout = std::chrono::milliseconds(200);
  Start(options);
  std::string streamed;
  std::thread client([&] {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(10, 0);
    auto result = client.Post("/v1/completions", R"({"prompt": "x", "stream": true})", "application/json");
    if (result) streamed = result->body;
  });
  while (backend_.requests().empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server_->Drain();
  client.join();
  runner_.join();
  EXPECT_TRUE(backend_.IsAborted(1));
  std::vector<std::string> payloads = SsePayloads(streamed);
  ASSERT_GE(payloads.size(), 2u) << streamed;
  EXPECT_EQ(payloads.back(), "[DONE]");
  EXPECT_EQ(Json::parse(payloads[payloads.size() - 2])["choices"][0]["finish_reason"], "abort");
}

// Mutated bodies through the whole server (request parsing is fuzzed at length in
// openai_request_fuzz_test.cc): every reply is a success or a 4xx, with a JSON body.
TEST_F(HttpServerTest, MutatedBodiesGetJsonReplies) {
  Start();
  const std::string seeds[] = {
      R"({"prompt": "hi", "max_tokens": 2, "stop": ["x"], "logit_bias": {"3": 1}, "n": 2})",
      R"({"messages": [{"role": "user", "content": "hi"}], "stream": true, "logprobs": true, "top_logprobs": 1})",
  };
  const std::string pieces[] = {"\xff", "\xc3", "\"\\ud800\"", "1e999", "18446744073709551616", "[[[[", "null", "\"",
                                ",", "}", std::string(3000, '7')};
  std::mt19937_64 random(7);
  for (int i = 0; i < 300; ++i) {
    std::string body = seeds[random() % 2];
    for (int m = 0; m < 1 + static_cast<int>(random() % 3); ++m) {
      const size_t at = random() % (body.size() + 1);
      if (random() % 2) {
        body.insert(at, pieces[random() % std::size(pieces)]);
      } else if (!body.empty()) {
        body[at % body.size()] = static_cast<char>(random() & 0xff);
      }
    }
    const std::string path = random() % 2 ? "/v1/completions" : "/v1/chat/completions";
    auto result = Post(path, body);
    ASSERT_TRUE(result) << body;
    ASSERT_TRUE(result->status == 200 || (result->status >= 400 && result->status < 500)) << result->status << " " << body;
    if (result->status != 200) {
      Json reply = Json::parse(result->body, nullptr, false);
      ASSERT_TRUE(reply.is_object() && reply["error"]["message"].is_string()) << result->body;
    }
  }
}

}  // namespace
}  // namespace kiln::serving
