// A command-line mistake, reported the same way by every subcommand.
#pragma once

#include <string_view>

namespace kiln::tools {

// Prints "kiln COMMAND: MESSAGE" and where the options are described to stderr, and returns
// the exit status of a usage error (2). The message is not followed by the whole --help text:
// forty lines of options would bury the one line that says what was wrong.
int UsageError(std::string_view command, std::string_view message);

}  // namespace kiln::tools
