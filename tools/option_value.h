// The value of a command-line option, spelled either way a user writes it.
#pragma once

#include <string>
#include <string_view>

namespace kiln::tools {

// True when argv[*i] is option `flag` with its value: `--flag VALUE` (then *i moves on to
// the value) or `--flag=VALUE`; *value is set. False for any other word, and for `flag` as
// the last word (no value): the caller's unknown-option branch then reports it, and
// UnknownOptionMessage says "option '--flag' needs a value". Every subcommand takes both
// spellings, so `kiln run --fn=main` works as `kiln compile --target=cpu` does.
bool OptionValue(int argc, char** argv, int* i, std::string_view flag, std::string* value);

}  // namespace kiln::tools
