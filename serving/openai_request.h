// The request side of the OpenAI API: the JSON body of POST /v1/completions or
// /v1/chat/completions, checked field by field and turned into an engine GenerationRequest.
//
// Pure functions of the body: no model, no engine. What needs the model (token ids in
// logit_bias against the vocabulary, the prompt's length against the context) the engine
// checks when the request is submitted.
//
// Rules (what OpenAI's and vLLM's users expect; `null` is the same as an absent field):
//  - malformed JSON, invalid UTF-8, nesting deeper than kMaxJsonDepth, a field of the wrong
//    type, a value out of its range: 400 with the field in `param`;
//  - unknown fields are ignored (clients send vendor extensions), but fields Kiln does not
//    implement and whose silent omission would change the answer (tools, functions, a JSON
//    response_format, echo, suffix, best_of > 1, several prompts) are refused;
//  - sampling defaults are llama-server's (temperature 0.8, top_k 40, top_p 0.95, min_p
//    0.05), not OpenAI's, because small local models need the truncation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "serving/api_error.h"
#include "serving/engine.h"

namespace kiln::serving {

enum class ApiEndpoint { kCompletions, kChatCompletions };

inline constexpr int kMaxJsonDepth = 64;
inline constexpr int kMaxChoices = 16;        // n
inline constexpr int kMaxStopStrings = 16;
inline constexpr size_t kMaxStopStringBytes = 1024;
inline constexpr int kMaxCompletionLogprobs = 20;  // completions' `logprobs`, chat's `top_logprobs`

struct ApiRequest {
  GenerationRequest generation;
  std::string model;           // as requested; empty when the request named none
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage
  bool logprobs = false;       // return each token's logprob (and generation.top_logprobs alternatives)
};

struct ApiRequestDefaults {
  int64_t completion_max_tokens = 16;  // OpenAI's default for /v1/completions
  int64_t chat_max_tokens = 1 << 30;   // chat: until the context is full (the engine caps it)
};

// The request, or the 400 error that names the offending field.
struct ApiRequestResult {
  std::optional<ApiRequest> request;
  ApiError error;  // meaningful when !request
};

ApiRequestResult ParseApiRequest(ApiEndpoint endpoint, std::string_view body,
                                 const ApiRequestDefaults& defaults = {});

}  // namespace kiln::serving
