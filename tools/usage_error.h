// A command-line mistake, reported the same way by every subcommand.
#pragma once

#include <string>
#include <string_view>

namespace kiln::tools {

// Prints "kiln COMMAND: MESSAGE" and where the options are described to stderr, and returns
// the exit status of a usage error (2). The message is not followed by the whole --help text:
// forty lines of options would bury the one line that says what was wrong.
int UsageError(std::string_view command, std::string_view message);

// "unknown option 'ARG'", with the option the user probably meant when one of those that
// `usage` (the command's --help text) lists is a close spelling: --temprature ->
// --temperature. A value after '=' is ignored in the comparison. An option `usage` lists
// (its parser did not take it) is "option '--prompt' needs a value", or "takes no value"
// when written with '='.
std::string UnknownOptionMessage(std::string_view arg, std::string_view usage);

}  // namespace kiln::tools
