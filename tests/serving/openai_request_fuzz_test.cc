// Fuzzing of the OpenAI request handling: mutated and generated bodies (malformed JSON,
// wrong types, huge numbers, huge strings, deep nesting, invalid UTF-8) must each give either
// a request within its documented ranges or a clear 400 whose body is valid JSON — never a
// crash, a hang or (under AddressSanitizer, scripts/sanitizer_tests.sh) a memory error.
//
// KILN_SERVING_FUZZ_SECONDS sets the time budget (default 3 per test).
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "serving/openai_request.h"

namespace kiln::serving {
namespace {

double BudgetSeconds() {
  const char* env = std::getenv("KILN_SERVING_FUZZ_SECONDS");
  return env ? std::atof(env) : 3.0;
}

const std::vector<std::string>& Seeds() {
  static const std::vector<std::string> seeds = {
      R"({"model": "m", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0.7, "top_p": 0.9})",
      R"({"prompt": [1, 2, 3], "n": 2, "stop": ["\n", "END"], "logprobs": 3, "seed": 7, "stream": true,)"
      R"( "stream_options": {"include_usage": true}})",
      R"({"prompt": [[5, 6]], "logit_bias": {"12": -100, "13": 5}, "top_k": 40, "min_p": 0.05, "ignore_eos": true})",
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],)"
      R"( "max_completion_tokens": 32, "logprobs": true, "top_logprobs": 2, "presence_penalty": 0.5})",
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}], "frequency_penalty": -1,)"
      R"( "repetition_penalty": 1.1, "response_format": {"type": "text"}, "tools": []})",
  };
  return seeds;
}

// Pieces that stress the parser and the field checks when spliced in anywhere.
const std::vector<std::string>& Dictionary() {
  static const std::vector<std::string> words = {
      "\"", "{", "}", "[", "]", ":", ",", "null", "true", "false", "-", "0", "-1", "1e999", "-1e999", "1e-999",
      "18446744073709551616", "9223372036854775808", "-9223372036854775809", "1.5", "NaN", "Infinity",
      "\"\\ud800\"", "\"\\udc00\\ud800\"", "\\u0000", "\xc3", "\xff", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\x80",
      "\"prompt\"", "\"messages\"", "\"max_tokens\"", "\"n\"", "\"stop\"", "\"logit_bias\"", "\"stream_options\"",
      "\"top_logprobs\"", "\"logprobs\"", "\"seed\"", "\"role\"", "\"content\"", "\"type\"", "\"text\"",
      "\"tools\"", "\"echo\"", "\"best_of\"",
  };
  return words;
}

std::string RandomBytes(std::mt19937_64& random, size_t length) {
  std::string bytes(length, '\0');
  for (char& c : bytes) c = static_cast<char>(random() & 0xff);
  return bytes;
}

std::string Mutate(std::mt19937_64& random, std::string body) {
  const int mutations = 1 + static_cast<int>(random() % 4);
  for (int m = 0; m < mutations; ++m) {
    const size_t at = body.empty() ? 0 : random() % (body.size() + 1);
    switch (random() % 8) {
      case 0:  // flip a byte
        if (!body.empty()) body[at % body.size()] ^= static_cast<char>(1 << (random() % 8));
        break;
      case 1:  // insert random bytes
        body.insert(at, RandomBytes(random, 1 + random() % 4));
        break;
      case 2:  // delete a range
        if (!body.empty()) body.erase(at % body.size(), 1 + random() % 8);
        break;
      case 3:  // duplicate a range
        if (!body.empty()) {
          const size_t from = random() % body.size();
          body.insert(at, body.substr(from, 1 + random() % 16));
        }
        break;
      case 4:
      case 5: {  // splice a dictionary word
        const auto& words = Dictionary();
        body.insert(at, words[random() % words.size()]);
        break;
      }
      case 6: {  // a huge string or number
        const std::string huge = random() % 2 ? absl::StrCat("\"", std::string(100000 + random() % 100000, 'a'), "\"")
                                              : std::string(5000, '9');
        body.insert(at, huge);
        break;
      }
      case 7: {  // deep nesting
        const size_t depth = 10 + random() % 200;
        body.insert(at, std::string(depth, random() % 2 ? '[' : '{'));
        break;
      }
    }
  }
  return body;
}

// A well-formed object whose known fields hold values of random types and sizes.
std::string Generate(std::mt19937_64& random) {
  static const char* fields[] = {"model", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature",
                                 "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
                                 "repetition_penalty", "seed", "stop", "n", "stream", "stream_options", "logprobs",
                                 "top_logprobs", "logit_bias", "ignore_eos", "echo", "suffix", "best_of", "tools",
                                 "response_format"};
  auto value = [&](auto& self, int depth) -> std::string {
    switch (random() % (depth > 3 ? 6 : 9)) {
      case 0: return "null";
      case 1: return random() % 2 ? "true" : "false";
      case 2: return std::to_string(static_cast<int64_t>(random()) >> (random() % 64));
      case 3: return absl::StrCat(std::uniform_real_distribution<double>(-3, 3)(random));
      case 4: return absl::StrCat("1e", static_cast<int>(random() % 700) - 350);
      case 5: {  // a string, sometimes with invalid UTF-8
        std::string text = random() % 3 ? std::string(random() % 64, 'x') : RandomBytes(random, random() % 16);
        for (char& c : text) {
          if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = 'q';
        }
        return absl::StrCat("\"", text, "\"");
      }
      case 6: {
        std::string array = "[";
        const int n = static_cast<int>(random() % 5);
        for (int i = 0; i < n; ++i) absl::StrAppend(&array, i ? "," : "", self(self, depth + 1));
        return array + "]";
      }
      case 7: {
        std::string object = "{";
        const int n = static_cast<int>(random() % 4);
        for (int i = 0; i < n; ++i) {
          const char* key = random() % 2 ? fields[random() % std::size(fields)] : (random() % 2 ? "role" : "content");
          absl::StrAppend(&object, i ? "," : "", "\"", key, "\":", self(self, depth + 1));
        }
        return object + "}";
      }
      default:  // a plausible message list
        return absl::StrCat(R"([{"role": "user", "content": )", self(self, depth + 1), "}]");
    }
  };
  std::string body = "{";
  const int n = 1 + static_cast<int>(random() % 6);
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&body, i ? "," : "", "\"", fields[random() % std::size(fields)], "\":", value(value, 0));
  }
  return body + "}";
}

void Check(ApiEndpoint endpoint, const std::string& body) {
  ApiRequestResult result = ParseApiRequest(endpoint, body);
  if (result.request) {
    const ApiRequest& request = *result.request;
    const GenerationRequest& g = request.generation;
    const int inputs = g.prompt.has_value() + g.prompt_tokens.has_value() + g.messages.has_value();
    ASSERT_EQ(inputs, 1) << body;
    ASSERT_GE(g.max_tokens, 1) << body;
    ASSERT_TRUE(g.n >= 1 && g.n <= kMaxChoices) << body;
    ASSERT_TRUE(g.top_logprobs >= 0 && g.top_logprobs <= kMaxCompletionLogprobs) << body;
    ASSERT_TRUE(g.sampling.temperature >= 0 && g.sampling.temperature <= 2) << body;
    ASSERT_TRUE(g.sampling.top_p > 0 && g.sampling.top_p <= 1) << body;
    ASSERT_GE(g.sampling.top_k, 0) << body;
    ASSERT_LE(g.stop.size(), static_cast<size_t>(kMaxStopStrings)) << body;
    for (const std::string& stop : g.stop) ASSERT_FALSE(stop.empty()) << body;
    return;
  }
  ASSERT_EQ(result.error.http_status, 400) << body;
  ASSERT_FALSE(result.error.message.empty()) << body;
  nlohmann::json reply = nlohmann::json::parse(result.error.ToJson(), nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(reply.is_object() && reply["error"]["message"].is_string()) << body;
}

template <typename MakeBody>
void Fuzz(uint64_t seed, MakeBody make_body) {
  std::mt19937_64 random(seed);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(BudgetSeconds());
  int64_t cases = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string body = make_body(random);
    Check(ApiEndpoint::kCompletions, body);
    Check(ApiEndpoint::kChatCompletions, body);
    if (::testing::Test::HasFatalFailure()) return;
    ++cases;
  }
  std::printf("%lld bodies\n", static_cast<long long>(cases));
}

TEST(OpenAiRequestFuzz, MutatedBodies) {
  Fuzz(0x5eed, [](std::mt19937_64& random) { return Mutate(random, Seeds()[random() % Seeds().size()]); });
}

TEST(OpenAiRequestFuzz, GeneratedBodies) {
  Fuzz(0xfeed, [](std::mt19937_64& random) { return Generate(random); });
}

}  // namespace
}  // namespace kiln::serving
