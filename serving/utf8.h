// UTF-8 validation as the tokenizer needs it: where valid text stops, and how long the
// character starting at a byte is. "Valid" is RFC 3629: no overlong forms, no surrogates
// (U+D800..U+DFFF), nothing above U+10FFFF.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln::serving {

// The byte length of the valid character at the start of `text`, or 0 when `text` does not
// start with one (an invalid byte, or a character cut short by the end of `text`).
size_t Utf8CharLength(std::string_view text);

// Whether `text` is a proper prefix of a valid character (its first bytes, more to come).
bool IsIncompleteUtf8Char(std::string_view text);

// The length of the longest prefix of `text` that is valid UTF-8.
size_t ValidUtf8Prefix(std::string_view text);

// `text` with each maximal invalid subpart (a character cut short, or a byte that starts no
// character) replaced by one U+FFFD.
std::string ReplaceInvalidUtf8(std::string_view text);

}  // namespace kiln::serving
