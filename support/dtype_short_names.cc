#include "support/dtype_short_names.h"

namespace kiln::support {

std::string ExpandShortDTypeName(std::string_view text) {
  struct Short {
    std::string_view prefix, long_prefix;
  };
  // Longest prefixes first, so "fp16" is not read as "f" and "p16", nor "bf16" as "b...".
  constexpr Short kShort[] = {{"bf", "bfloat"}, {"fp", "float"}, {"f", "float"}, {"u", "uint"}, {"i", "int"}};
  for (const Short& s : kShort) {
    if (text.substr(0, s.prefix.size()) != s.prefix) continue;
    // A digit must follow: "i" alone, "fp" alone or "index" are no short names.
    if (text.size() <= s.prefix.size() || text[s.prefix.size()] < '0' || text[s.prefix.size()] > '9') return "";
    return std::string(s.long_prefix) + std::string(text.substr(s.prefix.size()));
  }
  return "";
}

}  // namespace kiln::support
