// The response side of the OpenAI API: an engine request's TokenEvents turned into the JSON
// body of a completion (CompletionCollector) or into server-sent events (StreamEncoder):
//
//   data: {"id": "chatcmpl-…", "object": "chat.completion.chunk", "choices": [{"delta": …}]}\n\n
//   …
//   data: {… "choices": [], "usage": {…}}\n\n        (stream_options.include_usage)
//   data: [DONE]\n\n
//
// Both are plain objects fed by one thread; the server feeds them from a queue the engine's
// callback fills. JSON is written with invalid UTF-8 replaced (a logprob alternative can be
// one byte of a character), never with an exception.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "serving/engine.h"
#include "serving/openai_request.h"

namespace kiln::serving {

struct ResponseContext {
  ApiEndpoint endpoint = ApiEndpoint::kCompletions;
  std::string id;       // NewResponseId()
  int64_t created = 0;  // Unix seconds
  std::string model;
  int choices = 1;      // the request's n
  bool logprobs = false;
  // A token's bytes, for logprobs (the generated token's text; "bytes" in chat logprobs).
  std::function<std::string(int32_t)> token_bytes;
};

// "cmpl-…" or "chatcmpl-…" followed by 24 random hex digits.
std::string NewResponseId(ApiEndpoint endpoint);
// The current time in Unix seconds, for `created`.
int64_t UnixSeconds();
// OpenAI's finish_reason: "stop", "length", or Kiln's "abort" / "error".
const char* ApiFinishReason(FinishReason reason);

// Collects a non-streaming request's events; ToJson() once finished() gives the body.
class CompletionCollector {
 public:
  explicit CompletionCollector(ResponseContext context);

  void Add(const TokenEvent& event);
  bool finished() const { return finished_choices_ == context_.choices; }
  // The first choice that ended in an error (the reply is then an error, not a completion).
  const absl::Status& error() const { return error_; }

  std::string ToJson() const;

 private:
  struct Choice {
    std::string text;
    FinishReason finish_reason = FinishReason::kNone;
    std::vector<TokenEvent> logprob_events;  // tokens with their logprobs, when asked
    bool finished = false;
  };
  ResponseContext context_;
  std::vector<Choice> choices_;
  int finished_choices_ = 0;
  int64_t prompt_tokens_ = 0;
  int64_t completion_tokens_ = 0;
  absl::Status error_;
};

// Encodes a streaming request's events as server-sent events.
class StreamEncoder {
 public:
  StreamEncoder(ResponseContext context, bool include_usage);

  // The first events, before any token: chat streams open each choice with the assistant
  // role, as OpenAI's do; completions send nothing.
  std::string Start();
  // The events for one engine event (possibly none: a token whose text is held back).
  std::string Encode(const TokenEvent& event);
  bool finished() const { return finished_choices_ == context_.choices; }
  // The usage event (when asked) and "data: [DONE]". Call once, after finished().
  std::string Finish();

 private:
  std::string Chunk(int choice, std::string_view text, const TokenEvent* logprobs,
                    std::optional<FinishReason> finish_reason) const;

  ResponseContext context_;
  bool include_usage_;
  std::vector<bool> choice_finished_;
  std::vector<int64_t> text_offsets_;  // completions logprobs: bytes of text so far per choice
  int finished_choices_ = 0;
  int64_t prompt_tokens_ = 0;
  int64_t completion_tokens_ = 0;
};

// One server-sent event carrying `json`: "data: <json>\n\n".
std::string SseEvent(std::string_view json);

}  // namespace kiln::serving
