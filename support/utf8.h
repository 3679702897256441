#ifndef KILN_SUPPORT_UTF8_H_
#define KILN_SUPPORT_UTF8_H_

#include <cstdint>
#include <string>

namespace kiln {

// Appends code point `cp` (at most 0x10FFFF; callers pass valid code points) as UTF-8:
// one to four bytes. Used where text arrives as code points: the tokenizer's byte-to-symbol
// table, NumPy's '<U' (UTF-32) string arrays.
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace kiln

#endif  // KILN_SUPPORT_UTF8_H_
