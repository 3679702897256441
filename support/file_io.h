// Whole-file reads and writes with errors a user can act on.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::support {

// Reads the file at `path` into memory. The error names the path and the OS reason.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `contents` to `path`, replacing it. A regular file (or a symbolic link to one, which
// becomes a regular file) is replaced atomically: the contents go to a sibling file renamed
// over `path`, so a reader never sees a half-written file and a process that has the old
// file mapped (support/mapped_file.h) keeps reading the old bytes. Other paths (devices,
// pipes) are written in place.
absl::Status WriteFile(const std::string& path, std::string_view contents);

}  // namespace kiln::support
