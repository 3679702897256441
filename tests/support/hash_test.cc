// support::Checksum64 must catch the corruptions an executable file can suffer: any single
// changed word, and several changed bytes at once, wherever they fall in their 64-bit words.
#include "support/hash.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace kiln::support {
namespace {

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(Checksum64, EveryLengthAndEverySingleByteChangeIsSeen) {
  const std::string data = RandomBytes(200, 1);
  for (size_t n = 0; n <= data.size(); ++n) {
    const uint64_t sum = Checksum64(data.data(), n);
    if (n > 0) {
      EXPECT_NE(sum, Checksum64(data.data(), n - 1)) << n;
    }
    for (size_t i = 0; i < n; ++i) {
      std::string changed = data.substr(0, n);
      changed[i] = static_cast<char>(changed[i] ^ 0x80);
      EXPECT_NE(Checksum64(changed.data(), n), sum) << "length " << n << ", byte " << i;
    }
  }
}

// Several bytes changed at the same position of different words of one lane: the top byte
// of a word is where a multiply-only step lets differences cancel (that checksum collided
// about once per 256 such corruptions; the executable fuzz test found one).
TEST(Checksum64, SeveralChangedHighBytesOfOneLaneDoNotCancel) {
  const std::string data = RandomBytes(4096, 2);
  const uint64_t sum = Checksum64(data.data(), data.size());
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string changed = data;
    const size_t position = 7 + 8 * (rng() % 4);  // the top byte of one lane's words
    const int changes = 2 + static_cast<int>(rng() % 3);
    for (int c = 0; c < changes; ++c) {
      const size_t at = 32 * (rng() % (data.size() / 32)) + position;
      changed[at] = static_cast<char>(changed[at] ^ static_cast<char>(1 + rng() % 255));
    }
    if (changed == data) continue;
    ASSERT_NE(Checksum64(changed.data(), changed.size()), sum) << "trial " << trial;
  }
}

}  // namespace
}  // namespace kiln::support
