// Whole-file reads and writes with errors a user can act on.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::support {

// Reads the file at `path` into memory. The error names the path and the OS reason.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `contents` to `path`, replacing it.
absl::Status WriteFile(const std::string& path, std::string_view contents);

}  // namespace kiln::support
