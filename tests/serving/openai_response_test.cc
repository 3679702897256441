#include "serving/openai_response.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kiln::serving {
namespace {

using Json = nlohmann::json;

ResponseContext Context(ApiEndpoint endpoint, int choices = 1, bool logprobs = false) {
  ResponseContext context;
  context.endpoint = endpoint;
  context.id = "id-1";
  context.created = 1700000000;
  context.model = "tiny";
  context.choices = choices;
  context.logprobs = logprobs;
  context.token_bytes = [](int32_t token) { return "<" + std::to_string(token) + ">"; };
  return context;
}

TokenEvent Token(int choice, int32_t token, std::string text) {
  TokenEvent event;
  event.choice = choice;
  event.token = token;
  event.text = std::move(text);
  event.logprob = -0.5f;
  return event;
}

TokenEvent Last(int choice, FinishReason reason, int64_t prompt_tokens, int64_t completion_tokens) {
  TokenEvent event;
  event.choice = choice;
  event.finished = true;
  event.finish_reason = reason;
  event.prompt_tokens = prompt_tokens;
  event.completion_tokens = completion_tokens;
  return event;
}

// The JSON payloads of a server-sent event stream, checking its framing on the way.
std::vector<std::string> SsePayloads(const std::string& stream) {
  std::vector<std::string> payloads;
  size_t at = 0;
  while (at < stream.size()) {
    EXPECT_EQ(stream.compare(at, 6, "data: "), 0) << stream.substr(at);
    const size_t end = stream.find("\n\n", at);
    EXPECT_NE(end, std::string::npos);
    if (end == std::string::npos) break;
    payloads.push_back(stream.substr(at + 6, end - at - 6));
    at = end + 2;
  }
  return payloads;
}

TEST(OpenAiResponse, ChatCompletionBody) {
  CompletionCollector collector(Context(ApiEndpoint::kChatCompletions, 2));
  collector.Add(Token(0, 5, "Hel"));
  collector.Add(Token(1, 6, "Bye"));
  collector.Add(Token(0, 7, "lo"));
  EXPECT_FALSE(collector.finished());
  collector.Add(Last(0, FinishReason::kStop, 4, 2));
  EXPECT_FALSE(collector.finished());
  collector.Add(Last(1, FinishReason::kLength, 4, 1));
  collector.Add(Token(1, 9, "ignored after the last event"));
  ASSERT_TRUE(collector.finished());
  EXPECT_TRUE(collector.error().ok());
  Json body = Json::parse(collector.ToJson());
  EXPECT_EQ(body["id"], "id-1");
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["created"], 1700000000);
  EXPECT_EQ(body["model"], "tiny");
  ASSERT_EQ(body["choices"].size(), 2u);
  EXPECT_EQ(body["choices"][0]["index"], 0);
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(body["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(body["choices"][1]["message"]["content"], "Bye");
  EXPECT_EQ(body["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(body["usage"]["completion_tokens"], 3);
  EXPECT_EQ(body["usage"]["total_tokens"], 7);
}

TEST(OpenAiResponse, CompletionBodyWithLogprobs) {
  CompletionCollector collector(Context(ApiEndpoint::kCompletions, 1, /*logprobs=*/true));
  TokenEvent first = Token(0, 11, "ab");
  first.top_logprobs = {{11, "ab", -0.5f}, {12, "\xc3", -1.5f}};  // one byte of a character
  collector.Add(first);
  collector.Add(Token(0, 3, "c"));
  collector.Add(Last(0, FinishReason::kStop, 2, 2));
  Json body = Json::parse(collector.ToJson());
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "abc");
  const Json& logprobs = body["choices"][0]["logprobs"];
  EXPECT_EQ(logprobs["tokens"], Json::array({"<11>", "<3>"}));
  EXPECT_EQ(logprobs["token_logprobs"], Json::array({-0.5, -0.5}));
  EXPECT_EQ(logprobs["text_offset"], Json::array({0, 4}));
  EXPECT_EQ(logprobs["top_logprobs"][0]["ab"], -0.5);
  EXPECT_EQ(logprobs["top_logprobs"][0]["\xef\xbf\xbd"], -1.5);  // the lone byte replaced by U+FFFD
}

TEST(OpenAiResponse, ChatLogprobsCarryBytes) {
  CompletionCollector collector(Context(ApiEndpoint::kChatCompletions, 1, true));
  TokenEvent event = Token(0, 65, "A");
  event.top_logprobs = {{65, "A", -0.1f}};
  collector.Add(event);
  collector.Add(Last(0, FinishReason::kStop, 1, 1));
  Json body = Json::parse(collector.ToJson());
  const Json& content = body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 1u);
  EXPECT_EQ(content[0]["token"], "<65>");
  EXPECT_EQ(content[0]["bytes"], Json::array({60, 54, 53, 62}));
  EXPECT_FLOAT_EQ(content[0]["logprob"].get<float>(), -0.5f);
  EXPECT_EQ(content[0]["top_logprobs"][0]["token"], "A");
  EXPECT_EQ(content[0]["top_logprobs"][0]["bytes"], Json::array({65}));
}

TEST(OpenAiResponse, ErrorEventMakesTheCollectorFail) {
  CompletionCollector collector(Context(ApiEndpoint::kCompletions));
  TokenEvent last = Last(0, FinishReason::kError, 1, 0);
  last.error = absl::InternalError("the model failed");
  collector.Add(last);
  ASSERT_TRUE(collector.finished());
  EXPECT_EQ(collector.error().message(), "the model failed");
}

TEST(OpenAiResponse, ChatStreamChunks) {
  StreamEncoder encoder(Context(ApiEndpoint::kChatCompletions), /*include_usage=*/true);
  std::string stream = encoder.Start();
  stream += encoder.Encode(Token(0, 1, "Hi"));
  stream += encoder.Encode(Token(0, 2, ""));  // held back (a stop string may follow): nothing
  TokenEvent last = Last(0, FinishReason::kStop, 3, 2);
  last.token = 4;
  last.text = "!";
  stream += encoder.Encode(last);
  ASSERT_TRUE(encoder.finished());
  stream += encoder.Finish();
  ASSERT_TRUE(stream.size() >= 14 && stream.substr(stream.size() - 14) == "data: [DONE]\n\n") << stream;
  std::vector<std::string> payloads = SsePayloads(stream);
  ASSERT_EQ(payloads.size(), 6u) << stream;
  EXPECT_EQ(payloads.back(), "[DONE]");
  std::vector<Json> chunks;
  for (size_t i = 0; i + 1 < payloads.size(); ++i) chunks.push_back(Json::parse(payloads[i]));
  for (const Json& chunk : chunks) {
    EXPECT_EQ(chunk["id"], "id-1");
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    EXPECT_TRUE(chunk.contains("usage"));
  }
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(chunks[0]["usage"].is_null());
  EXPECT_EQ(chunks[1]["choices"][0]["delta"]["content"], "Hi");
  EXPECT_TRUE(chunks[1]["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(chunks[2]["choices"][0]["delta"]["content"], "!");
  EXPECT_EQ(chunks[3]["choices"][0]["delta"], Json::object());
  EXPECT_EQ(chunks[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(chunks[4]["choices"].empty());
  EXPECT_EQ(chunks[4]["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(chunks[4]["usage"]["completion_tokens"], 2);
  EXPECT_EQ(chunks[4]["usage"]["total_tokens"], 5);
}

TEST(OpenAiResponse, CompletionStreamWithoutUsageHasNoUsageField) {
  StreamEncoder encoder(Context(ApiEndpoint::kCompletions, 2), /*include_usage=*/false);
  std::string stream = encoder.Start();
  EXPECT_EQ(stream, "");
  stream += encoder.Encode(Token(1, 1, "b"));
  stream += encoder.Encode(Token(0, 2, "a"));
  stream += encoder.Encode(Last(1, FinishReason::kLength, 2, 1));
  EXPECT_FALSE(encoder.finished());
  stream += encoder.Encode(Last(0, FinishReason::kStop, 2, 1));
  EXPECT_TRUE(encoder.finished());
  stream += encoder.Finish();
  std::vector<std::string> payloads = SsePayloads(stream);
  ASSERT_EQ(payloads.size(), 5u);
  Json first = Json::parse(payloads[0]);
  EXPECT_EQ(first["object"], "text_completion");
  EXPECT_EQ(first["choices"][0]["index"], 1);
  EXPECT_EQ(first["choices"][0]["text"], "b");
  EXPECT_FALSE(first.contains("usage"));
  EXPECT_EQ(Json::parse(payloads[2])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(Json::parse(payloads[3])["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(payloads[4], "[DONE]");
}

TEST(OpenAiResponse, StreamErrorBecomesAnErrorEvent) {
  StreamEncoder encoder(Context(ApiEndpoint::kCompletions), false);
  TokenEvent last = Last(0, FinishReason::kError, 1, 0);
  last.error = absl::InternalError("kernel failed");
  std::vector<std::string> payloads = SsePayloads(encoder.Encode(last));
  ASSERT_EQ(payloads.size(), 2u);
  Json error = Json::parse(payloads[0]);
  EXPECT_EQ(error["error"]["message"], "kernel failed");
  EXPECT_EQ(error["error"]["type"], "server_error");
  EXPECT_EQ(Json::parse(payloads[1])["choices"][0]["finish_reason"], "error");
}

TEST(OpenAiResponse, EventsOfUnknownChoicesAreIgnored) {
  StreamEncoder encoder(Context(ApiEndpoint::kCompletions), false);
  EXPECT_EQ(encoder.Encode(Token(5, 1, "x")), "");
  EXPECT_EQ(encoder.Encode(Token(-1, 1, "x")), "");
  CompletionCollector collector(Context(ApiEndpoint::kCompletions));
  collector.Add(Last(3, FinishReason::kStop, 1, 1));
  EXPECT_FALSE(collector.finished());
}

TEST(OpenAiResponse, IdsAndFinishReasons) {
  const std::string a = NewResponseId(ApiEndpoint::kChatCompletions);
  const std::string b = NewResponseId(ApiEndpoint::kChatCompletions);
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a.size(), 9u + 24u);
  EXPECT_NE(a, b);
  EXPECT_EQ(NewResponseId(ApiEndpoint::kCompletions).rfind("cmpl-", 0), 0u);
  EXPECT_GT(UnixSeconds(), 1600000000);
  EXPECT_STREQ(ApiFinishReason(FinishReason::kStop), "stop");
  EXPECT_STREQ(ApiFinishReason(FinishReason::kLength), "length");
  EXPECT_STREQ(ApiFinishReason(FinishReason::kAbort), "abort");
  EXPECT_STREQ(ApiFinishReason(FinishReason::kError), "error");
}

}  // namespace
}  // namespace kiln::serving
