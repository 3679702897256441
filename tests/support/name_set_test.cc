#include "support/name_set.h"

#include <gtest/gtest.h>

namespace kiln::support {
namespace {

TEST(NameSetTest, FreshNamesSkipTakenOnesInOrder) {
  NameSet names;
  names.insert("i");
  names.insert("i_2");
  EXPECT_EQ(names.Fresh("j"), "j");
  EXPECT_EQ(names.Fresh("i"), "i_1");
  EXPECT_EQ(names.Fresh("i"), "i_3");  // i_2 was taken before
  names.insert("i_5");
  EXPECT_EQ(names.Fresh("i"), "i_4");
  EXPECT_EQ(names.Fresh("i"), "i_6");
  EXPECT_TRUE(names.count("i_6"));
  EXPECT_FALSE(names.count("i_7"));
  // `i_1` as a base of its own.
  EXPECT_EQ(names.Fresh("i_1"), "i_1_1");
}

TEST(NameSetTest, ManyNamesOfOneBase) {
  NameSet names;
  for (int i = 0; i < 100000; ++i) names.Fresh("block");
  EXPECT_TRUE(names.count("block_99999"));
  EXPECT_EQ(names.Fresh("block"), "block_100000");
}

}  // namespace
}  // namespace kiln::support
