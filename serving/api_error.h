// An error reply of the OpenAI-compatible API: the HTTP status and the JSON body clients of
// the OpenAI API parse,
//
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "top_p", "code": null}}
//
// so that the official clients raise their usual exceptions (BadRequestError,
// AuthenticationError, NotFoundError, RateLimitError) with Kiln's message.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace kiln::serving {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault; empty: null
  std::string code;   // a machine-readable reason; empty: null

  // {"error": {...}}; any invalid UTF-8 in the message is replaced, never an exception.
  std::string ToJson() const;

  static ApiError BadRequest(std::string message, std::string param = "", std::string code = "");
};

// The reply for a status from the engine (Engine::Submit): InvalidArgument and OutOfRange
// are the caller's fault (400), ResourceExhausted a full queue (429), Unavailable a server
// that is draining (503), NotFound 404; anything else is the server's fault (500).
ApiError ApiErrorFromStatus(const absl::Status& status);

}  // namespace kiln::serving
