#include "serving/openai_response.h"

#include <chrono>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "serving/api_error.h"

namespace kiln::serving {
namespace {

using Json = nlohmann::json;

std::string Dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

// A token's text as JSON sees it: invalid UTF-8 (one byte of a character) is replaced by
// U+FFFD when dumped; "bytes" keeps the exact bytes.
Json BytesArray(std::string_view bytes) {
  Json array = Json::array();
  for (unsigned char c : bytes) array.push_back(static_cast<int>(c));
  return array;
}

std::string TokenBytes(const ResponseContext& context, int32_t token) {
  return context.token_bytes ? context.token_bytes(token) : std::string();
}

// Chat logprobs of one generated token: {"token", "logprob", "bytes", "top_logprobs": [...]}.
Json ChatLogprob(const ResponseContext& context, const TokenEvent& event) {
  const std::string bytes = TokenBytes(context, event.token);
  Json top = Json::array();
  for (const TokenLogprob& alternative : event.top_logprobs) {
    top.push_back({{"token", alternative.text}, {"logprob", alternative.logprob}, {"bytes", BytesArray(alternative.text)}});
  }
  return {{"token", bytes}, {"logprob", event.logprob}, {"bytes", BytesArray(bytes)}, {"top_logprobs", std::move(top)}};
}

// Completions logprobs of some generated tokens, text offsets counted from `offset`.
Json CompletionLogprobs(const ResponseContext& context, const std::vector<const TokenEvent*>& events, int64_t offset) {
  Json tokens = Json::array(), token_logprobs = Json::array(), top_logprobs = Json::array(),
       text_offset = Json::array();
  for (const TokenEvent* event : events) {
    const std::string bytes = TokenBytes(context, event->token);
    tokens.push_back(bytes);
    token_logprobs.push_back(event->logprob);
    Json top = Json::object();
    for (const TokenLogprob& alternative : event->top_logprobs) top[alternative.text] = alternative.logprob;
    top_logprobs.push_back(std::move(top));
    text_offset.push_back(offset);
    offset += static_cast<int64_t>(bytes.size());
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top_logprobs)},
          {"text_offset", std::move(text_offset)}};
}

Json Usage(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

bool ValidChoice(const ResponseContext& context, const TokenEvent& event) {
  return event.choice >= 0 && event.choice < context.choices;
}

}  // namespace

std::string NewResponseId(ApiEndpoint endpoint) {
  thread_local std::mt19937_64 random(std::random_device{}());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = endpoint == ApiEndpoint::kChatCompletions ? "chatcmpl-" : "cmpl-";
  for (int i = 0; i < 24; ++i) id.push_back(kHex[random() % 16]);
  return id;
}

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

const char* ApiFinishReason(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
    case FinishReason::kNone: break;
  }
  return "stop";
}

std::string SseEvent(std::string_view json) {
  std::string event = "data: ";
  event.append(json);
  event += "\n\n";
  return event;
}

// ---------------------------------------------------------------------------------------------
// CompletionCollector

CompletionCollector::CompletionCollector(ResponseContext context)
    : context_(std::move(context)), choices_(static_cast<size_t>(std::max(context_.choices, 0))) {}

void CompletionCollector::Add(const TokenEvent& event) {
  if (!ValidChoice(context_, event)) return;
  Choice& choice = choices_[static_cast<size_t>(event.choice)];
  if (choice.finished) return;
  choice.text += event.text;
  if (context_.logprobs && event.token >= 0) choice.logprob_events.push_back(event);
  if (!event.finished) return;
  choice.finished = true;
  choice.finish_reason = event.finish_reason;
  ++finished_choices_;
  prompt_tokens_ = event.prompt_tokens;
  completion_tokens_ += event.completion_tokens;
  if (event.finish_reason == FinishReason::kError && error_.ok()) {
    error_ = event.error.ok() ? absl::InternalError("generation failed") : event.error;
  }
}

std::string CompletionCollector::ToJson() const {
  const bool chat = context_.endpoint == ApiEndpoint::kChatCompletions;
  Json choices = Json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    const Choice& choice = choices_[i];
    Json logprobs = nullptr;
    if (context_.logprobs) {
      if (chat) {
        Json content = Json::array();
        for (const TokenEvent& event : choice.logprob_events) content.push_back(ChatLogprob(context_, event));
        logprobs = {{"content", std::move(content)}};
      } else {
        std::vector<const TokenEvent*> events;
        for (const TokenEvent& event : choice.logprob_events) events.push_back(&event);
        logprobs = CompletionLogprobs(context_, events, 0);
      }
    }
    Json out = {{"index", i}, {"logprobs", std::move(logprobs)}, {"finish_reason", ApiFinishReason(choice.finish_reason)}};
    if (chat) {
      out["message"] = {{"role", "assistant"}, {"content", choice.text}};
    } else {
      out["text"] = choice.text;
    }
    choices.push_back(std::move(out));
  }
  Json body = {{"id", context_.id},
               {"object", chat ? "chat.completion" : "text_completion"},
               {"created", context_.created},
               {"model", context_.model},
               {"choices", std::move(choices)},
               {"usage", Usage(prompt_tokens_, completion_tokens_)}};
  return Dump(body);
}

// ---------------------------------------------------------------------------------------------
// StreamEncoder

StreamEncoder::StreamEncoder(ResponseContext context, bool include_usage)
    : context_(std::move(context)),
      include_usage_(include_usage),
      choice_finished_(static_cast<size_t>(std::max(context_.choices, 0)), false),
      text_offsets_(static_cast<size_t>(std::max(context_.choices, 0)), 0) {}

std::string StreamEncoder::Chunk(int choice, std::string_view text, const TokenEvent* logprobs_event,
                                 std::optional<FinishReason> finish_reason) const {
  const bool chat = context_.endpoint == ApiEndpoint::kChatCompletions;
  Json logprobs = nullptr;
  if (logprobs_event) {
    if (chat) {
      logprobs = {{"content", Json::array({ChatLogprob(context_, *logprobs_event)})}};
    } else {
      logprobs = CompletionLogprobs(context_, {logprobs_event}, text_offsets_[static_cast<size_t>(choice)]);
    }
  }
  Json out = {{"index", choice},
              {"logprobs", std::move(logprobs)},
              {"finish_reason", finish_reason ? Json(ApiFinishReason(*finish_reason)) : Json(nullptr)}};
  if (chat) {
    out["delta"] = finish_reason && text.empty() ? Json::object() : Json{{"content", text}};
  } else {
    out["text"] = text;
  }
  Json body = {{"id", context_.id},
               {"object", chat ? "chat.completion.chunk" : "text_completion"},
               {"created", context_.created},
               {"model", context_.model},
               {"choices", Json::array({std::move(out)})}};
  if (include_usage_) body["usage"] = nullptr;  // OpenAI: null on every chunk but the last
  return SseEvent(Dump(body));
}

std::string StreamEncoder::Start() {
  if (context_.endpoint != ApiEndpoint::kChatCompletions) return "";
  std::string out;
  for (int choice = 0; choice < context_.choices; ++choice) {
    Json delta = {{"role", "assistant"}, {"content", ""}};
    Json body = {{"id", context_.id},
                 {"object", "chat.completion.chunk"},
                 {"created", context_.created},
                 {"model", context_.model},
                 {"choices", Json::array({{{"index", choice}, {"delta", std::move(delta)}, {"logprobs", nullptr},
                                           {"finish_reason", nullptr}}})}};
    if (include_usage_) body["usage"] = nullptr;
    out += SseEvent(Dump(body));
  }
  return out;
}

std::string StreamEncoder::Encode(const TokenEvent& event) {
  if (!ValidChoice(context_, event) || choice_finished_[static_cast<size_t>(event.choice)]) return "";
  std::string out;
  const bool has_logprobs = context_.logprobs && event.token >= 0;
  if (!event.text.empty() || has_logprobs) {
    out += Chunk(event.choice, event.text, has_logprobs ? &event : nullptr, std::nullopt);
    if (has_logprobs) {
      text_offsets_[static_cast<size_t>(event.choice)] += static_cast<int64_t>(TokenBytes(context_, event.token).size());
    }
  }
  if (!event.finished) return out;
  choice_finished_[static_cast<size_t>(event.choice)] = true;
  ++finished_choices_;
  prompt_tokens_ = event.prompt_tokens;
  completion_tokens_ += event.completion_tokens;
  if (event.finish_reason == FinishReason::kError) {
    // The stream has begun (status 200 sent), so the error travels as an event, as vLLM's
    // does; the choice then ends with finish_reason "error".
    ApiError error = ApiErrorFromStatus(event.error.ok() ? absl::InternalError("generation failed") : event.error);
    out += SseEvent(error.ToJson());
  }
  out += Chunk(event.choice, "", nullptr, event.finish_reason);
  return out;
}

std::string StreamEncoder::Finish() {
  std::string out;
  if (include_usage_) {
    const bool chat = context_.endpoint == ApiEndpoint::kChatCompletions;
    Json body = {{"id", context_.id},
                 {"object", chat ? "chat.completion.chunk" : "text_completion"},
                 {"created", context_.created},
                 {"model", context_.model},
                 {"choices", Json::array()},
                 {"usage", Usage(prompt_tokens_, completion_tokens_)}};
    out += SseEvent(Dump(body));
  }
  out += "data: [DONE]\n\n";
  return out;
}

}  // namespace kiln::serving
