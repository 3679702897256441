// The packed host form of string tensors (support/packed_strings.h), against bytes laid out
// by hand: lengths as little-endian uint64, then the bytes.
#include "support/packed_strings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln::support {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PackedStrings, LayoutAndRoundTrip) {
  const std::vector<uint8_t> packed = PackStrings({"ab", "", "c"});
  const std::vector<uint8_t> expected = {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                         1, 0, 0, 0, 0, 0, 0, 0, 'a', 'b', 'c'};
  EXPECT_EQ(packed, expected);
  absl::StatusOr<std::vector<std::string>> back = UnpackStrings(packed.data(), packed.size(), 3);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(*back, ElementsAre("ab", "", "c"));
  EXPECT_TRUE(UnpackStrings(nullptr, 0, 0)->empty());
}

TEST(PackedStrings, BadDataSaysWhy) {
  const std::vector<uint8_t> packed = PackStrings({"ab", "c"});
  EXPECT_THAT(std::string(UnpackStrings(packed.data(), packed.size() - 1, 2).status().message()), HasSubstr("runs past"));
  EXPECT_THAT(std::string(UnpackStrings(packed.data(), packed.size(), 1).status().message()), HasSubstr("left after"));
  EXPECT_THAT(std::string(UnpackStrings(packed.data(), 8, 3).status().message()), HasSubstr("cannot hold 3 lengths"));
  std::vector<uint8_t> huge(8, 0xff);  // a length of 2^64 - 1
  EXPECT_THAT(std::string(UnpackStrings(huge.data(), huge.size(), 1).status().message()), HasSubstr("runs past"));
}

}  // namespace
}  // namespace kiln::support
