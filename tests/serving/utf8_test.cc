#include "serving/utf8.h"

#include "gtest/gtest.h"

namespace kiln::serving {
namespace {

// Boundaries from Unicode's Table 3-7 (well-formed UTF-8 byte sequences).
TEST(Utf8, CharLengths) {
  EXPECT_EQ(Utf8CharLength("a"), 1u);
  EXPECT_EQ(Utf8CharLength("\xC3\xA9"), 2u);
  EXPECT_EQ(Utf8CharLength("\xE6\x97\xA5"), 3u);
  EXPECT_EQ(Utf8CharLength("\xF0\x9F\x98\x80"), 4u);
  EXPECT_EQ(Utf8CharLength("\xC0\x80"), 0u);      // overlong
  EXPECT_EQ(Utf8CharLength("\xE0\x80\x80"), 0u);  // overlong
  EXPECT_EQ(Utf8CharLength("\xED\xA0\x80"), 0u);  // surrogate U+D800
  EXPECT_EQ(Utf8CharLength("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(Utf8CharLength("\x80"), 0u);
  EXPECT_EQ(Utf8CharLength("\xF0\x9F\x98"), 0u);  // cut short
  EXPECT_TRUE(IsIncompleteUtf8Char("\xF0\x9F\x98"));
  EXPECT_TRUE(IsIncompleteUtf8Char("\xE6"));
  EXPECT_FALSE(IsIncompleteUtf8Char("\xE6\x41"));
  EXPECT_FALSE(IsIncompleteUtf8Char("\x9F"));
  EXPECT_FALSE(IsIncompleteUtf8Char("a"));
}

TEST(Utf8, PrefixesAndReplacement) {
  EXPECT_EQ(ValidUtf8Prefix("abc\xC3\xA9\xFF" "def"), 5u);
  EXPECT_EQ(ValidUtf8Prefix(""), 0u);
  EXPECT_EQ(ReplaceInvalidUtf8("a\xFF" "b\xC3"), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  EXPECT_EQ(ReplaceInvalidUtf8("\xE6\x97\xA5"), "\xE6\x97\xA5");
  // Maximal subparts, as Python's bytes.decode(errors="replace") gives them.
  EXPECT_EQ(ReplaceInvalidUtf8("\xE4\xB8"), "\xEF\xBF\xBD");
  EXPECT_EQ(ReplaceInvalidUtf8("x\xF0\x9F\x98y"), "x\xEF\xBF\xBDy");
  EXPECT_EQ(ReplaceInvalidUtf8("\xE4\xB8\xE4\xB8\xBD"), "\xEF\xBF\xBD\xE4\xB8\xBD");
  EXPECT_EQ(ReplaceInvalidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");       // overlong: no valid start
  EXPECT_EQ(ReplaceInvalidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(ReplaceInvalidUtf8("\xF4\x90\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // past U+10FFFF
}

}  // namespace
}  // namespace kiln::serving
