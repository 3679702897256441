#include "serving/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kiln::serving {
namespace {

using Json = nlohmann::json;

// The deepest nesting of arrays and objects in `body`, counted outside strings. Checked
// before parsing so that a body of a million '[' costs a linear scan and a clear error,
// not a deep parse.
int NestingDepth(std::string_view body) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

const char* TypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    case Json::value_t::number_float: {
      // The JSON parser keeps integers past 64 bits (2^64) as floating point: not "non-integer".
      const double x = value.get<double>();
      return std::isfinite(x) && x == std::floor(x) && std::fabs(x) >= 0x1p63 ? "an integer beyond 64 bits"
                                                                               : "a non-integer number";
    }
    default: return "a number";
  }
}

// Reads the fields of the request object; the first problem becomes the error and every
// later read is a no-op that returns false.
class FieldReader {
 public:
  explicit FieldReader(const Json& body) : body_(body) {}

  bool failed() const { return error_.has_value(); }
  ApiError TakeError() { return std::move(*error_); }

  bool Fail(const std::string& param, std::string message, std::string code = "") {
    if (!error_) error_ = ApiError::BadRequest(std::move(message), param, std::move(code));
    return false;
  }

  // The field, or nullptr when it is absent or null.
  const Json* Get(const char* name) const {
    auto it = body_.find(name);
    if (it == body_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  bool WrongType(const std::string& param, const Json& value, const char* expected) {
    return Fail(param, absl::StrCat("'", param, "' must be ", expected, ", not ", TypeName(value)));
  }

  // A number within [low, high] (or (low, high] when low_open), NaN and infinities refused.
  bool Number(const char* name, double* out, double low, double high, bool low_open = false) {
    const Json* value = Get(name);
    if (failed()) return false;
    if (!value) return true;
    if (!value->is_number()) return WrongType(name, *value, "a number");
    const double x = value->get<double>();
    const bool in_range = std::isfinite(x) && (low_open ? x > low : x >= low) && x <= high;
    if (!in_range) {
      return Fail(name, absl::StrCat("'", name, "' must be in ", low_open ? "(" : "[", low, ", ", high, "], got ",
                                     value->dump()));
    }
    *out = x;
    return true;
  }

  // An integer within [low, high]; 1.0 is not an integer (as in OpenAI's API).
  bool Integer(const char* name, int64_t* out, int64_t low, int64_t high) {
    const Json* value = Get(name);
    if (failed()) return false;
    if (!value) return true;
    return IntegerValue(name, *value, out, low, high);
  }

  bool IntegerValue(const std::string& param, const Json& value, int64_t* out, int64_t low, int64_t high) {
    if (!value.is_number_integer()) return WrongType(param, value, "an integer");
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(high)) {
      return Fail(param, absl::StrCat("'", param, "' must be in [", low, ", ", high, "], got ", value.dump()));
    }
    const int64_t x = value.get<int64_t>();
    if (x < low || x > high) {
      return Fail(param, absl::StrCat("'", param, "' must be in [", low, ", ", high, "], got ", value.dump()));
    }
    *out = x;
    return true;
  }

  bool Bool(const char* name, bool* out) {
    const Json* value = Get(name);
    if (failed()) return false;
    if (!value) return true;
    if (!value->is_boolean()) return WrongType(name, *value, "a boolean");
    *out = value->get<bool>();
    return true;
  }

  bool String(const char* name, std::string* out) {
    const Json* value = Get(name);
    if (failed()) return false;
    if (!value) return true;
    if (!value->is_string()) return WrongType(name, *value, "a string");
    *out = value->get<std::string>();
    return true;
  }

 private:
  const Json& body_;
  std::optional<ApiError> error_;
};

void ReadSampling(FieldReader& fields, SamplingParams& sampling) {
  fields.Number("temperature", &sampling.temperature, 0, 2);
  fields.Number("top_p", &sampling.top_p, 0, 1, /*low_open=*/true);
  // top_k: vLLM's -1 and llama-server's 0 both mean no limit.
  int64_t top_k = sampling.top_k;
  if (fields.Integer("top_k", &top_k, -1, std::numeric_limits<int32_t>::max())) sampling.top_k = std::max<int64_t>(top_k, 0);
  fields.Number("min_p", &sampling.min_p, 0, 1);
  fields.Number("presence_penalty", &sampling.presence_penalty, -2, 2);
  fields.Number("frequency_penalty", &sampling.frequency_penalty, -2, 2);
  // vLLM's name, then llama-server's.
  fields.Number("repetition_penalty", &sampling.repeat_penalty, 0, 2, /*low_open=*/true);
  fields.Number("repeat_penalty", &sampling.repeat_penalty, 0, 2, /*low_open=*/true);
  if (const Json* seed = fields.Get("seed"); seed && !fields.failed()) {
    // Any 64-bit integer; negative seeds are their two's-complement bits.
    if (!seed->is_number_integer()) {
      fields.WrongType("seed", *seed, "an integer");
    } else {
      sampling.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
    }
  }
  if (const Json* bias = fields.Get("logit_bias"); bias && !fields.failed()) {
    if (!bias->is_object()) {
      fields.WrongType("logit_bias", *bias, "an object mapping token ids to biases");
      return;
    }
    constexpr size_t kMaxLogitBias = 1024;
    if (bias->size() > kMaxLogitBias) {
      fields.Fail("logit_bias", absl::StrCat("'logit_bias' has ", bias->size(), " entries; at most ", kMaxLogitBias));
      return;
    }
    for (const auto& [key, value] : bias->items()) {
      int32_t token = 0;
      if (!absl::SimpleAtoi(key, &token) || token < 0) {
        fields.Fail("logit_bias", absl::StrCat("'logit_bias' keys must be token ids (non-negative integers), got '",
                                               key, "'"));
        return;
      }
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < -100 ||
          value.get<double>() > 100) {
        fields.Fail("logit_bias", absl::StrCat("'logit_bias' values must be numbers in [-100, 100], got ",
                                               value.dump(), " for token ", key));
        return;
      }
      sampling.logit_bias[token] = value.get<float>();
    }
  }
}

void ReadStop(FieldReader& fields, std::vector<std::string>& stop) {
  const Json* value = fields.Get("stop");
  if (!value || fields.failed()) return;
  auto add = [&](const Json& item) {
    if (!item.is_string()) return fields.WrongType("stop", item, "a string or a list of strings");
    std::string text = item.get<std::string>();
    if (text.empty()) return fields.Fail("stop", "'stop' strings must not be empty");
    if (text.size() > kMaxStopStringBytes) {
      return fields.Fail("stop", absl::StrCat("'stop' strings are at most ", kMaxStopStringBytes, " bytes, got ",
                                              text.size()));
    }
    stop.push_back(std::move(text));
    return true;
  };
  if (value->is_array()) {
    if (value->size() > static_cast<size_t>(kMaxStopStrings)) {
      fields.Fail("stop", absl::StrCat("'stop' has ", value->size(), " strings; at most ", kMaxStopStrings));
      return;
    }
    for (const Json& item : *value) {
      if (!add(item)) return;
    }
  } else {
    add(*value);
  }
}

// Token ids of a prompt given as [1, 2, 3].
bool ReadTokenIds(FieldReader& fields, const Json& array, std::vector<int32_t>& tokens) {
  if (array.empty()) return fields.Fail("prompt", "'prompt' is an empty list of tokens");
  tokens.reserve(array.size());
  for (const Json& item : array) {
    int64_t token = 0;
    if (!fields.IntegerValue("prompt", item, &token, 0, std::numeric_limits<int32_t>::max())) return false;
    tokens.push_back(static_cast<int32_t>(token));
  }
  return true;
}

// /v1/completions' prompt: a string, a list holding one string, a list of token ids, or a
// list holding one list of token ids. Several prompts in one request are refused.
void ReadPrompt(FieldReader& fields, GenerationRequest& generation) {
  const Json* prompt = fields.Get("prompt");
  if (fields.failed()) return;
  if (!prompt) {
    fields.Fail("prompt", "'prompt' is required");
    return;
  }
  if (prompt->is_string()) {
    generation.prompt = prompt->get<std::string>();
    return;
  }
  if (!prompt->is_array()) {
    fields.WrongType("prompt", *prompt, "a string, a list of token ids, or a list holding one of those");
    return;
  }
  if (prompt->empty()) {
    fields.Fail("prompt", "'prompt' is an empty list");
    return;
  }
  const Json& first = prompt->front();
  if (first.is_number()) {
    std::vector<int32_t> tokens;
    if (ReadTokenIds(fields, *prompt, tokens)) generation.prompt_tokens = std::move(tokens);
    return;
  }
  if (prompt->size() > 1) {
    fields.Fail("prompt", absl::StrCat("'prompt' holds ", prompt->size(),
                                       " prompts; Kiln takes one prompt per request (send several requests)"));
    return;
  }
  if (first.is_string()) {
    generation.prompt = first.get<std::string>();
  } else if (first.is_array()) {
    std::vector<int32_t> tokens;
    if (ReadTokenIds(fields, first, tokens)) generation.prompt_tokens = std::move(tokens);
  } else {
    fields.WrongType("prompt", first, "a string or a list of token ids (inside the list)");
  }
}

// A message's content: a string, or a list of {"type": "text", "text": ...} parts joined by
// newlines (as llama.cpp's server joins them, so "a" and "b" do not run together as "ab";
// empty leading parts add none: ["", "b"] is "b", ["a", "", "c"] is "a\n\nc").
// Only an assistant turn may have null content (it only called tools); OpenAI refuses a null
// system or user content with a 400, and so does this server.
bool ReadContent(FieldReader& fields, const std::string& param, const Json& content, bool null_allowed,
                 std::string& out) {
  if (content.is_null() && null_allowed) return true;
  if (content.is_string()) {
    out = content.get<std::string>();
    return true;
  }
  if (!content.is_array()) return fields.WrongType(param, content, "a string or a list of text parts");
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string part_param = absl::StrCat(param, "[", i, "]");
    if (!part.is_object()) return fields.WrongType(part_param, part, "an object");
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) {
      return fields.Fail(part_param, absl::StrCat("'", part_param, ".type' must be a string"));
    }
    if (type->get<std::string>() != "text") {
      return fields.Fail(part_param, absl::StrCat("content parts of type '", type->get<std::string>(),
                                                  "' are not supported (text only)"));
    }
    auto text = part.find("text");
    if (text == part.end() || !text->is_string()) {
      return fields.Fail(part_param, absl::StrCat("'", part_param, ".text' must be a string"));
    }
    if (!out.empty()) out += '\n';  // llama.cpp: no newline before the first text, even after empty parts
    out += text->get<std::string>();
  }
  return true;
}

void ReadMessages(FieldReader& fields, GenerationRequest& generation) {
  const Json* messages = fields.Get("messages");
  if (fields.failed()) return;
  if (!messages) {
    fields.Fail("messages", "'messages' is required");
    return;
  }
  if (!messages->is_array()) {
    fields.WrongType("messages", *messages, "a list of messages");
    return;
  }
  if (messages->empty()) {
    fields.Fail("messages", "'messages' must hold at least one message");
    return;
  }
  std::vector<ChatMessage> chat;
  chat.reserve(messages->size());
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json& message = (*messages)[i];
    const std::string param = absl::StrCat("messages[", i, "]");
    if (!message.is_object()) {
      fields.WrongType(param, message, "an object with 'role' and 'content'");
      return;
    }
    auto role = message.find("role");
    if (role == message.end() || !role->is_string()) {
      fields.Fail(param + ".role", absl::StrCat("'", param, ".role' must be a string"));
      return;
    }
    ChatMessage out;
    out.role = role->get<std::string>();
    // OpenAI's newer name for the system role; chat templates know only "system".
    if (out.role == "developer") out.role = "system";
    if (out.role != "system" && out.role != "user" && out.role != "assistant") {
      fields.Fail(param + ".role", absl::StrCat("'", param, ".role' must be system, developer, user or assistant, got '",
                                                role->get<std::string>(), "'"));
      return;
    }
    auto content = message.find("content");
    if (content == message.end()) {
      fields.Fail(param + ".content", absl::StrCat("'", param, ".content' is required"));
      return;
    }
    if (!ReadContent(fields, param + ".content", *content, out.role == "assistant", out.content)) return;
    chat.push_back(std::move(out));
  }
  generation.messages = std::move(chat);
}

// Fields whose silent omission would change the answer.
void RefuseUnsupported(FieldReader& fields, ApiEndpoint endpoint) {
  auto non_empty_array = [&](const char* name) {
    const Json* value = fields.Get(name);
    return value && !(value->is_array() && value->empty());
  };
  for (const char* name : {"tools", "functions"}) {
    if (non_empty_array(name)) {
      fields.Fail(name, absl::StrCat("'", name, "' (tool calling) is not supported"));
      return;
    }
  }
  // Tool choice other than none/auto asks for a tool call (OpenAI: only with tools).
  if (const Json* choice = fields.Get("tool_choice"); choice && !choice->is_null() &&
                                                       !(*choice == "none" || *choice == "auto")) {
    fields.Fail("tool_choice", "'tool_choice' other than \"none\" or \"auto\" needs 'tools' (tool calling), "
                               "which is not supported");
    return;
  }
  // Audio output and web search would change the answer; text alone is what this server gives.
  if (const Json* modalities = fields.Get("modalities"); modalities && !modalities->is_null()) {
    const bool text_only = modalities->is_array() && !modalities->empty() &&
                           std::all_of(modalities->begin(), modalities->end(), [](const Json& m) { return m == "text"; });
    if (!text_only) {
      fields.Fail("modalities", "only the \"text\" output modality is supported");
      return;
    }
  }
  for (const char* name : {"audio", "web_search_options"}) {
    if (const Json* value = fields.Get(name); value && !value->is_null()) {
      fields.Fail(name, absl::StrCat("'", name, "' is not supported"));
      return;
    }
  }
  if (const Json* format = fields.Get("response_format")) {
    const bool text = format->is_object() && format->contains("type") && (*format)["type"] == "text";
    if (!text) {
      fields.Fail("response_format", "only the 'text' response_format is supported");
      return;
    }
  }
  if (endpoint == ApiEndpoint::kCompletions) {
    bool echo = false;
    if (fields.Bool("echo", &echo) && echo) {
      fields.Fail("echo", "'echo' is not supported");
      return;
    }
    std::string suffix;
    if (fields.String("suffix", &suffix) && !suffix.empty()) {
      fields.Fail("suffix", "'suffix' (insertion) is not supported");
      return;
    }
    int64_t best_of = 1;
    if (fields.Integer("best_of", &best_of, 1, kMaxChoices) && best_of > 1) {
      fields.Fail("best_of", "'best_of' above 1 is not supported (use n)");
      return;
    }
  }
}

}  // namespace

ApiRequestResult ParseApiRequest(ApiEndpoint endpoint, std::string_view body, const ApiRequestDefaults& defaults) {
  ApiRequestResult result;
  if (NestingDepth(body) > kMaxJsonDepth) {
    result.error = ApiError::BadRequest(absl::StrCat("the request body nests arrays and objects deeper than ",
                                                     kMaxJsonDepth, " levels"));
    return result;
  }
  Json json;
  try {
    json = Json::parse(body);
  } catch (const Json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, ..." without the bracketed id.
    std::string detail = e.what();
    if (auto close = detail.find("] "); detail.rfind("[json.exception", 0) == 0 && close != std::string::npos) {
      detail.erase(0, close + 2);
    }
    result.error = ApiError::BadRequest("the request body is not valid JSON: " + detail);
    return result;
  }
  if (!json.is_object()) {
    result.error = ApiError::BadRequest(absl::StrCat("the request body must be a JSON object, not ", TypeName(json)));
    return result;
  }

  FieldReader fields(json);
  ApiRequest request;
  GenerationRequest& generation = request.generation;
  fields.String("model", &request.model);
  if (endpoint == ApiEndpoint::kCompletions) {
    ReadPrompt(fields, generation);
  } else {
    ReadMessages(fields, generation);
  }
  RefuseUnsupported(fields, endpoint);

  generation.max_tokens =
      endpoint == ApiEndpoint::kCompletions ? defaults.completion_max_tokens : defaults.chat_max_tokens;
  constexpr int64_t kMaxTokensLimit = std::numeric_limits<int32_t>::max();
  fields.Integer("max_tokens", &generation.max_tokens, 1, kMaxTokensLimit);
  fields.Integer("max_completion_tokens", &generation.max_tokens, 1, kMaxTokensLimit);  // OpenAI's newer name
  generation.max_tokens_must_fit = fields.Get("max_tokens") != nullptr || fields.Get("max_completion_tokens") != nullptr;

  ReadSampling(fields, generation.sampling);
  ReadStop(fields, generation.stop);
  fields.Bool("ignore_eos", &generation.ignore_eos);
  int64_t n = 1;
  if (fields.Integer("n", &n, 1, kMaxChoices)) generation.n = static_cast<int>(n);

  fields.Bool("stream", &request.stream);
  if (const Json* options = fields.Get("stream_options"); options && !fields.failed()) {
    if (!request.stream) {
      fields.Fail("stream_options", "'stream_options' is only allowed when 'stream' is true");
    } else if (!options->is_object()) {
      fields.WrongType("stream_options", *options, "an object");
    } else if (auto usage = options->find("include_usage"); usage != options->end() && !usage->is_null()) {
      if (!usage->is_boolean()) {
        fields.WrongType("stream_options.include_usage", *usage, "a boolean");
      } else {
        request.include_usage = usage->get<bool>();
      }
    }
  }

  // Logprobs: completions take `logprobs: k` (k alternatives per token); chat takes
  // `logprobs: true` and `top_logprobs: k`.
  int64_t top = 0;
  if (endpoint == ApiEndpoint::kCompletions) {
    if (fields.Get("logprobs") && fields.Integer("logprobs", &top, 0, kMaxCompletionLogprobs)) request.logprobs = true;
  } else {
    fields.Bool("logprobs", &request.logprobs);
    if (fields.Integer("top_logprobs", &top, 0, kMaxCompletionLogprobs) && fields.Get("top_logprobs") &&
        !request.logprobs) {
      fields.Fail("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    }
  }
  generation.top_logprobs = static_cast<int>(top);

  if (fields.failed()) {
    result.error = fields.TakeError();
    return result;
  }
  result.request = std::move(request);
  return result;
}

}  // namespace kiln::serving
