// support/dtype_short_names.h: the one table of short data type spellings that the runtime
// (vm::ParseDType) and the IR text parsers (tir::DataType::LongName) both read.
#include "support/dtype_short_names.h"

#include <gtest/gtest.h>

namespace kiln::support {
namespace {

TEST(DTypeShortNamesTest, ShortPrefixesAreSpeltOut) {
  EXPECT_EQ(ExpandShortDTypeName("f32"), "float32");
  EXPECT_EQ(ExpandShortDTypeName("fp16"), "float16");
  EXPECT_EQ(ExpandShortDTypeName("bf16"), "bfloat16");
  EXPECT_EQ(ExpandShortDTypeName("i64"), "int64");
  EXPECT_EQ(ExpandShortDTypeName("u8"), "uint8");
  EXPECT_EQ(ExpandShortDTypeName("f32x4"), "float32x4");
  // Not a data type, but spelt out all the same: the callers parse the result.
  EXPECT_EQ(ExpandShortDTypeName("f7"), "float7");
}

TEST(DTypeShortNamesTest, OnlyAPrefixFollowedByADigitIsShort) {
  for (const char* other : {"", "i", "f", "fp", "bf", "index", "float32", "int8", "uint8", "bool", "double", "x1"}) {
    EXPECT_EQ(ExpandShortDTypeName(other), "") << other;
  }
}

}  // namespace
}  // namespace kiln::support
