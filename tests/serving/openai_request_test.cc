#include "serving/openai_request.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kiln::serving {
namespace {

using ::testing::HasSubstr;

ApiRequest ParseOk(ApiEndpoint endpoint, const std::string& body) {
  ApiRequestResult result = ParseApiRequest(endpoint, body);
  EXPECT_TRUE(result.request.has_value()) << body << " -> " << result.error.message;
  return result.request ? *result.request : ApiRequest{};
}

ApiError ParseError(ApiEndpoint endpoint, const std::string& body) {
  ApiRequestResult result = ParseApiRequest(endpoint, body);
  EXPECT_FALSE(result.request.has_value()) << body;
  EXPECT_EQ(result.error.http_status, 400);
  EXPECT_EQ(result.error.type, "invalid_request_error");
  EXPECT_FALSE(result.error.message.empty());
  return result.error;
}

constexpr ApiEndpoint kCompletions = ApiEndpoint::kCompletions;
constexpr ApiEndpoint kChat = ApiEndpoint::kChatCompletions;

TEST(OpenAiRequest, CompletionWithEveryParameter) {
  ApiRequest request = ParseOk(kCompletions, R"({
    "model": "m", "prompt": "Once upon", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9,
    "top_k": 12, "min_p": 0.1, "presence_penalty": 0.5, "frequency_penalty": -0.5,
    "repetition_penalty": 1.1, "seed": 42, "stop": ["\n", "END"], "n": 3, "stream": true,
    "stream_options": {"include_usage": true}, "logprobs": 2, "logit_bias": {"15": -100, "7": 2.5},
    "ignore_eos": true, "user": "someone", "unknown_extension": {"x": 1}})");
  const GenerationRequest& g = request.generation;
  EXPECT_EQ(request.model, "m");
  ASSERT_TRUE(g.prompt.has_value());
  EXPECT_EQ(*g.prompt, "Once upon");
  EXPECT_FALSE(g.messages.has_value());
  EXPECT_EQ(g.max_tokens, 7);
  EXPECT_DOUBLE_EQ(g.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(g.sampling.top_p, 0.9);
  EXPECT_EQ(g.sampling.top_k, 12);
  EXPECT_DOUBLE_EQ(g.sampling.min_p, 0.1);
  EXPECT_DOUBLE_EQ(g.sampling.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(g.sampling.frequency_penalty, -0.5);
  EXPECT_DOUBLE_EQ(g.sampling.repeat_penalty, 1.1);
  ASSERT_TRUE(g.sampling.seed.has_value());
  EXPECT_EQ(*g.sampling.seed, 42u);
  EXPECT_THAT(g.stop, ::testing::ElementsAre("\n", "END"));
  EXPECT_EQ(g.n, 3);
  EXPECT_TRUE(request.stream);
  EXPECT_TRUE(request.include_usage);
  EXPECT_TRUE(request.logprobs);
  EXPECT_EQ(g.top_logprobs, 2);
  EXPECT_EQ(g.sampling.logit_bias.size(), 2u);
  EXPECT_FLOAT_EQ(g.sampling.logit_bias.at(15), -100);
  EXPECT_FLOAT_EQ(g.sampling.logit_bias.at(7), 2.5);
  EXPECT_TRUE(g.ignore_eos);
}

TEST(OpenAiRequest, DefaultsAreLlamaServersAndNullIsAbsent) {
  ApiRequest request = ParseOk(kCompletions, R"({"prompt": "x", "temperature": null, "stop": null, "seed": null})");
  const SamplingParams defaults;
  EXPECT_EQ(request.generation.max_tokens, 16);  // OpenAI's completions default
  EXPECT_DOUBLE_EQ(request.generation.sampling.temperature, defaults.temperature);
  EXPECT_EQ(request.generation.sampling.top_k, defaults.top_k);
  EXPECT_FALSE(request.generation.sampling.seed.has_value());
  EXPECT_TRUE(request.generation.stop.empty());
  EXPECT_FALSE(request.stream);
  EXPECT_FALSE(request.logprobs);
  EXPECT_EQ(request.generation.n, 1);
  EXPECT_TRUE(request.model.empty());

  ApiRequestDefaults chat_defaults;
  chat_defaults.chat_max_tokens = 2048;
  ApiRequestResult chat = ParseApiRequest(kChat, R"({"messages": [{"role": "user", "content": "hi"}]})", chat_defaults);
  ASSERT_TRUE(chat.request);
  EXPECT_EQ(chat.request->generation.max_tokens, 2048);
  // Only a max_tokens the client asked for must fit in the context (the engine refuses it
  // otherwise); a default ends at the context's end.
  EXPECT_FALSE(request.generation.max_tokens_must_fit);
  EXPECT_FALSE(chat.request->generation.max_tokens_must_fit);
  EXPECT_TRUE(ParseOk(kCompletions, R"({"prompt": "x", "max_tokens": 4})").generation.max_tokens_must_fit);
  EXPECT_TRUE(ParseOk(kChat, R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 4})")
                  .generation.max_tokens_must_fit);
  EXPECT_FALSE(ParseOk(kCompletions, R"({"prompt": "x", "max_tokens": null})").generation.max_tokens_must_fit);
}

TEST(OpenAiRequest, PromptForms) {
  EXPECT_EQ(*ParseOk(kCompletions, R"({"prompt": ["one"]})").generation.prompt, "one");
  EXPECT_THAT(*ParseOk(kCompletions, R"({"prompt": [1, 2, 3]})").generation.prompt_tokens, ::testing::ElementsAre(1, 2, 3));
  EXPECT_THAT(*ParseOk(kCompletions, R"({"prompt": [[4, 5]]})").generation.prompt_tokens, ::testing::ElementsAre(4, 5));
  EXPECT_THAT(ParseError(kCompletions, R"({"prompt": ["a", "b"]})").message, HasSubstr("one prompt per request"));
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": []})").param, "prompt");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": [[]]})").param, "prompt");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": [1, -2]})").param, "prompt");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": [1, 2.5]})").param, "prompt");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": [1, 4294967296]})").param, "prompt");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": 5})").param, "prompt");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": [true]})").param, "prompt");
  EXPECT_THAT(ParseError(kCompletions, R"({"max_tokens": 5})").message, HasSubstr("'prompt' is required"));
}

TEST(OpenAiRequest, ChatMessages) {
  ApiRequest request = ParseOk(kChat, R"({"messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]},
      {"role": "assistant", "content": null},
      {"role": "user", "content": "again", "name": "bob"}],
      "max_completion_tokens": 9, "logprobs": true, "top_logprobs": 3})");
  ASSERT_TRUE(request.generation.messages.has_value());
  const auto& messages = *request.generation.messages;
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0].role, "system");
  EXPECT_EQ(messages[0].content, "Be brief.");
  // Text parts are joined by a newline, as llama.cpp's server joins them.
  EXPECT_EQ(messages[1].content, "Hello \nthere");
  EXPECT_EQ(messages[2].role, "assistant");
  EXPECT_EQ(messages[2].content, "");
  EXPECT_EQ(request.generation.max_tokens, 9);
  // Empty parts: none before the first text (llama.cpp's common_chat_msg joins so), kept after.
  ApiRequest parts = ParseOk(kChat, R"({"messages": [{"role": "user", "content": [
      {"type": "text", "text": ""}, {"type": "text", "text": "b"}, {"type": "text", "text": ""},
      {"type": "text", "text": "c"}]}]})");
  ASSERT_TRUE(parts.generation.messages.has_value());
  EXPECT_EQ((*parts.generation.messages)[0].content, "b\n\nc");
  EXPECT_TRUE(request.logprobs);
  EXPECT_EQ(request.generation.top_logprobs, 3);

  EXPECT_EQ(ParseError(kChat, R"({})").param, "messages");
  EXPECT_EQ(ParseError(kChat, R"({"messages": []})").param, "messages");
  EXPECT_EQ(ParseError(kChat, R"({"messages": "hi"})").param, "messages");
  EXPECT_EQ(ParseError(kChat, R"({"messages": [3]})").param, "messages[0]");
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"content": "x"}]})").param, "messages[0].role");
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "wizard", "content": "x"}]})").param, "messages[0].role");
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user"}]})").param, "messages[0].content");
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user", "content": 7}]})").param, "messages[0].content");
  // Null content is an assistant turn's only (one that called tools); OpenAI refuses it elsewhere.
  EXPECT_THAT(ParseError(kChat, R"({"messages": [{"role": "user", "content": null}]})").message,
              HasSubstr("'messages[0].content' must be a string or a list of text parts, not null"));
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "system", "content": null}]})").param, "messages[0].content");
  EXPECT_THAT(ParseError(kChat, R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})")
                  .message,
              HasSubstr("text only"));
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})").param,
            "messages[0].content[0]");
  // Chat logprobs: top_logprobs needs logprobs.
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})").param,
            "top_logprobs");
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 2})").param, "logprobs");
}

TEST(OpenAiRequest, MalformedBodies) {
  EXPECT_THAT(ParseError(kCompletions, "").message, HasSubstr("not valid JSON"));
  EXPECT_THAT(ParseError(kCompletions, "{\"prompt\": \"x\"").message, HasSubstr("not valid JSON"));
  EXPECT_THAT(ParseError(kCompletions, "{\"prompt\": 'x'}").message, HasSubstr("not valid JSON"));
  EXPECT_THAT(ParseError(kCompletions, "{\"prompt\": \"x\"} trailing").message, HasSubstr("not valid JSON"));
  EXPECT_THAT(ParseError(kCompletions, "[1, 2]").message, HasSubstr("must be a JSON object"));
  EXPECT_THAT(ParseError(kCompletions, "\"text\"").message, HasSubstr("must be a JSON object"));
  EXPECT_THAT(ParseError(kCompletions, "{\"prompt\": NaN}").message, HasSubstr("not valid JSON"));
  // Invalid UTF-8 in a string, raw or as an unpaired surrogate escape.
  EXPECT_THAT(ParseError(kCompletions, "{\"prompt\": \"a\xff\xfe\"}").message, HasSubstr("not valid JSON"));
  EXPECT_THAT(ParseError(kCompletions, "{\"prompt\": \"\xc3\"}").message, HasSubstr("not valid JSON"));
  EXPECT_THAT(ParseError(kCompletions, R"({"prompt": "\ud800"})").message, HasSubstr("not valid JSON"));
  // Deep nesting is refused before parsing; brackets inside strings do not count.
  EXPECT_THAT(ParseError(kCompletions, std::string(100000, '[') + std::string(100000, ']')).message,
              HasSubstr("deeper than"));
  ParseOk(kCompletions, R"({"prompt": ")" + std::string(1000, '[') + R"("})");
  // The error body is valid JSON even when the message quotes invalid bytes.
  ApiError error = ParseError(kCompletions, "{\"prompt\": \xff}");
  nlohmann::json parsed = nlohmann::json::parse(error.ToJson());
  EXPECT_TRUE(parsed["error"]["message"].is_string());
}

TEST(OpenAiRequest, WrongTypesNameTheField) {
  struct Case {
    const char* field;
    const char* value;
  };
  const Case cases[] = {
      {"max_tokens", "\"10\""}, {"max_tokens", "10.5"},     {"max_tokens", "1.0"},  {"temperature", "\"hot\""},
      {"top_p", "true"},        {"top_k", "2.5"},           {"min_p", "[]"},        {"presence_penalty", "{}"},
      {"frequency_penalty", "\"1\""}, {"repetition_penalty", "false"}, {"seed", "1.5"}, {"seed", "\"7\""},
      {"stop", "5"},            {"stop", "[\"a\", 5]"},     {"n", "\"2\""},         {"stream", "1"},
      {"logprobs", "true"},     {"logit_bias", "[1]"},      {"ignore_eos", "\"yes\""}, {"model", "7"},
  };
  for (const Case& c : cases) {
    const std::string body = std::string(R"({"prompt": "x", ")") + c.field + "\": " + c.value + "}";
    EXPECT_EQ(ParseError(kCompletions, body).param, c.field) << body;
  }
  // 2^64 parses as floating point; it is named as the integer it is (it said "non-integer").
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": "x", "seed": 18446744073709551616})").message,
            "'seed' must be an integer, not an integer beyond 64 bits");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": "x", "seed": 1e30})").message,
            "'seed' must be an integer, not an integer beyond 64 bits");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": "x", "seed": 0.5})").message,
            "'seed' must be an integer, not a non-integer number");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": "x", "stream": true, "stream_options": 3})").param, "stream_options");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": 1}})").param,
            "stream_options.include_usage");
}

TEST(OpenAiRequest, OutOfRangeValuesNameTheField) {
  struct Case {
    const char* field;
    const char* value;
  };
  const Case cases[] = {
      {"max_tokens", "0"},           {"max_tokens", "-1"},          {"max_tokens", "99999999999"},
      {"max_tokens", "18446744073709551615"}, {"max_tokens", "1e400"},
      {"temperature", "-0.1"},       {"temperature", "2.5"},        {"temperature", "1e308"},
      {"top_p", "0"},                {"top_p", "1.01"},             {"top_k", "-2"},
      {"min_p", "-0.5"},             {"min_p", "1.5"},              {"presence_penalty", "2.1"},
      {"frequency_penalty", "-3"},   {"repetition_penalty", "0"},   {"repetition_penalty", "3"},
      {"n", "0"},                    {"n", "17"},                   {"logprobs", "21"},
      {"logprobs", "-1"},            {"stop", "\"\""},              {"logit_bias", "{\"x\": 1}"},
      {"logit_bias", "{\"-5\": 1}"}, {"logit_bias", "{\"5\": 101}"}, {"logit_bias", "{\"5\": \"1\"}"},
      {"logit_bias", "{\"99999999999\": 1}"},
  };
  for (const Case& c : cases) {
    const std::string body = std::string(R"({"prompt": "x", ")") + c.field + "\": " + c.value + "}";
    ApiRequestResult result = ParseApiRequest(kCompletions, body);
    if (std::string(c.value) == "1e400") {
      // Beyond double: the parser's error (not valid JSON) or the range check.
      EXPECT_FALSE(result.request.has_value()) << body;
      continue;
    }
    EXPECT_EQ(ParseError(kCompletions, body).param, c.field) << body;
  }
  // Limits on sizes.
  std::string many_stops = R"({"prompt": "x", "stop": [)";
  for (int i = 0; i <= kMaxStopStrings; ++i) many_stops += std::string(i ? "," : "") + "\"s\"";
  EXPECT_EQ(ParseError(kCompletions, many_stops + "]}").param, "stop");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": "x", "stop": ")" + std::string(kMaxStopStringBytes + 1, 'a') + "\"}").param,
            "stop");
  // Boundaries that are allowed.
  ApiRequest edge = ParseOk(kCompletions, R"({"prompt": "x", "temperature": 0, "top_p": 1, "top_k": -1, "n": 16,
      "seed": -1, "logprobs": 0, "stop": "s", "logit_bias": {"0": -100}})");
  EXPECT_EQ(edge.generation.sampling.top_k, 0);
  EXPECT_EQ(*edge.generation.sampling.seed, ~uint64_t{0});
  EXPECT_EQ(edge.generation.n, 16);
  EXPECT_TRUE(edge.logprobs);
  EXPECT_EQ(edge.generation.top_logprobs, 0);
  EXPECT_THAT(edge.generation.stop, ::testing::ElementsAre("s"));
}

TEST(OpenAiRequest, UnsupportedFeaturesAreRefusedNotIgnored) {
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "f"}}]})").param, "tools");
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user", "content": "x"}],
      "response_format": {"type": "json_object"}})").param, "response_format");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": "x", "echo": true})").param, "echo");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": "x", "suffix": "end"})").param, "suffix");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": "x", "best_of": 2})").param, "best_of");
  EXPECT_EQ(ParseError(kCompletions, R"({"prompt": "x", "stream_options": {"include_usage": true}})").param,
            "stream_options");
  // Asking for audio output, web search or a forced tool call (hunt19: ignored before).
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user", "content": "x"}],
      "modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}})").param, "modalities");
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user", "content": "x"}],
      "audio": {"voice": "alloy", "format": "wav"}})").param, "audio");
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user", "content": "x"}], "web_search_options": {}})").param,
            "web_search_options");
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})").param,
            "tool_choice");
  EXPECT_EQ(ParseError(kChat, R"({"messages": [{"role": "user", "content": "x"}],
      "tool_choice": {"type": "function", "function": {"name": "f"}}})").param, "tool_choice");
  // Their neutral values pass.
  ParseOk(kChat, R"({"messages": [{"role": "user", "content": "x"}], "tools": [], "response_format": {"type": "text"}})");
  ParseOk(kChat, R"({"messages": [{"role": "user", "content": "x"}], "modalities": ["text"], "tool_choice": "none",
      "audio": null})");
  ParseOk(kChat, R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "auto"})");
  ParseOk(kCompletions, R"({"prompt": "x", "echo": false, "suffix": null, "best_of": 1})");
}

TEST(OpenAiRequest, ErrorJsonHasOpenAiShape) {
  ApiError error = ParseError(kCompletions, R"({"prompt": "x", "top_p": 7})");
  nlohmann::json body = nlohmann::json::parse(error.ToJson());
  ASSERT_TRUE(body.contains("error"));
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "top_p");
  EXPECT_TRUE(body["error"]["code"].is_null());
  EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr("'top_p' must be in (0, 1]"));
}

TEST(OpenAiRequest, EngineStatusesBecomeHttpStatuses) {
  EXPECT_EQ(ApiErrorFromStatus(absl::InvalidArgumentError("prompt too long")).http_status, 400);
  EXPECT_EQ(ApiErrorFromStatus(absl::OutOfRangeError("context")).http_status, 400);
  ApiError full = ApiErrorFromStatus(absl::ResourceExhaustedError("queue full"));
  EXPECT_EQ(full.http_status, 429);
  EXPECT_EQ(full.message, "queue full");
  EXPECT_EQ(ApiErrorFromStatus(absl::UnavailableError("draining")).http_status, 503);
  EXPECT_EQ(ApiErrorFromStatus(absl::NotFoundError("x")).http_status, 404);
  ApiError internal = ApiErrorFromStatus(absl::InternalError("boom"));
  EXPECT_EQ(internal.http_status, 500);
  EXPECT_EQ(internal.type, "server_error");
}

}  // namespace
}  // namespace kiln::serving
