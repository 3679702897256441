#include "serving/utf8.h"

#include <algorithm>
#include <cstdint>

namespace kiln::serving {
namespace {

// The allowed range of the second byte for each lead byte (Unicode Table 3-7); later bytes
// are always 0x80..0xBF.
bool Lead(uint8_t b, size_t* length, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (b < 0x80) {
    *length = 1;
  } else if (b >= 0xC2 && b <= 0xDF) {
    *length = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    *length = 3;
    if (b == 0xE0) *lo = 0xA0;
    if (b == 0xED) *hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    *length = 4;
    if (b == 0xF0) *lo = 0x90;
    if (b == 0xF4) *hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

// How many bytes of `text` (at most one character's) are a valid start of a character.
size_t ValidStart(std::string_view text, size_t* length) {
  uint8_t lo, hi;
  if (text.empty() || !Lead(static_cast<uint8_t>(text[0]), length, &lo, &hi)) return 0;
  size_t i = 1;
  for (; i < *length && i < text.size(); ++i) {
    const auto b = static_cast<uint8_t>(text[i]);
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) break;
  }
  return i;
}

}  // namespace

size_t Utf8CharLength(std::string_view text) {
  size_t length = 0;
  size_t valid = ValidStart(text, &length);
  return valid == length && length > 0 ? length : 0;
}

bool IsIncompleteUtf8Char(std::string_view text) {
  size_t length = 0;
  return !text.empty() && ValidStart(text, &length) == text.size() && text.size() < length;
}

size_t ValidUtf8Prefix(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t n = Utf8CharLength(text.substr(pos, 4));
    if (n == 0) break;
    pos += n;
  }
  return pos;
}

std::string ReplaceInvalidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = Utf8CharLength(text.substr(pos, 4));
    if (n == 0) {
      // One U+FFFD per maximal subpart (Unicode 3.9, U+FFFD substitution): a character cut
      // short ("\xE4\xB8") is one, as Python, browsers and llama.cpp's server (nlohmann::json's
      // replace) write it; a byte that starts no character is one by itself.
      size_t length = 0;
      out += "\xEF\xBF\xBD";
      pos += std::max<size_t>(1, ValidStart(text.substr(pos, 4), &length));
    } else {
      out.append(text, pos, n);
      pos += n;
    }
  }
  return out;
}

}  // namespace kiln::serving
