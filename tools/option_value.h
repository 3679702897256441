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

// The value a --target text (already accepted by tir::Target::Parse) gives attribute `name`
// ("mcpu" for "cpu -mcpu=znver3"), or empty when it gives none: a command option that sets
// the same thing (--mcpu, tune's --threads) must then agree with it rather than silently
// replace it.
std::string TargetAttribute(std::string_view target_text, std::string_view name);

}  // namespace kiln::tools
