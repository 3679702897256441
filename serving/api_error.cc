#include "serving/api_error.h"

#include <utility>

#include "nlohmann/json.hpp"

namespace kiln::serving {

std::string ApiError::ToJson() const {
  nlohmann::json error = {
      {"message", message},
      {"type", type},
      {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
      {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)},
  };
  nlohmann::json body = {{"error", std::move(error)}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError ApiError::BadRequest(std::string message, std::string param, std::string code) {
  ApiError error;
  error.http_status = 400;
  error.message = std::move(message);
  error.param = std::move(param);
  error.code = std::move(code);
  return error;
}

ApiError ApiErrorFromStatus(const absl::Status& status) {
  ApiError error;
  error.message = std::string(status.message());
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      error.http_status = 400;
      break;
    case absl::StatusCode::kOutOfRange:  // the engine's word for a prompt or max_tokens beyond the context
      error.http_status = 400;
      error.code = "context_length_exceeded";  // OpenAI's code for it
      break;
    case absl::StatusCode::kNotFound:
      error.http_status = 404;
      break;
    case absl::StatusCode::kResourceExhausted:
      error.http_status = 429;
      error.type = "rate_limit_error";
      error.code = "queue_full";
      break;
    case absl::StatusCode::kUnavailable:
      error.http_status = 503;
      error.type = "server_error";
      error.code = "unavailable";
      break;
    default:
      error.http_status = 500;
      error.type = "server_error";
      break;
  }
  if (error.message.empty()) error.message = status.ToString();
  return error;
}

}  // namespace kiln::serving
