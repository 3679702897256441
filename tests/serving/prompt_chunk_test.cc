// PromptChunk: chunks of a prompt never hold one token of a longer prompt alone where a
// larger call could avoid it, never leave one behind, and always make progress.
#include "serving/prompt_chunk.h"

#include <gtest/gtest.h>

#include <vector>

namespace kiln::serving {
namespace {

TEST(PromptChunk, TakesWhatFitsButNeverLeavesOneTokenBehind) {
  EXPECT_EQ(PromptChunk(10, 256, 256), 10);
  EXPECT_EQ(PromptChunk(1, 256, 256), 1);    // a one-token prompt is one token
  EXPECT_EQ(PromptChunk(300, 256, 256), 256);
  EXPECT_EQ(PromptChunk(257, 256, 256), 255);  // 255 + 2, not 256 + 1
  EXPECT_EQ(PromptChunk(5, 4, 256), 3);
}

TEST(PromptChunk, WaitsRatherThanSendingOneTokenAlone) {
  EXPECT_EQ(PromptChunk(10, 1, 256), 0);
  EXPECT_EQ(PromptChunk(3, 2, 256), 0);  // 2 would leave 1, 1 would go alone
  EXPECT_EQ(PromptChunk(2, 1, 256), 0);
  EXPECT_EQ(PromptChunk(10, 0, 256), 0);
}

TEST(PromptChunk, MakesProgressWhenNoCallIsLarger) {
  EXPECT_EQ(PromptChunk(10, 1, 1), 1);  // calls of one token
  EXPECT_EQ(PromptChunk(3, 2, 2), 2);   // 2 + 1 cannot be helped
}

// Chunking every prompt length with every call size: the chunks cover the prompt, and a lone
// token appears only where no split avoids it.
TEST(PromptChunk, SplitsEveryPromptWithoutLoneTokens) {
  for (int64_t most = 1; most <= 9; ++most) {
    for (int64_t length = 1; length <= 40; ++length) {
      std::vector<int64_t> chunks;
      for (int64_t done = 0; done < length;) {
        const int64_t take = PromptChunk(length - done, most, most);
        ASSERT_GT(take, 0) << "no progress: length " << length << " most " << most;
        chunks.push_back(take);
        done += take;
      }
      int64_t lone = 0;
      for (int64_t c : chunks) lone += c == 1;
      if (length == 1 || most == 1) continue;
      if (most == 2 && length % 2 == 1) {
        EXPECT_EQ(lone, 1) << "length " << length;
      } else {
        EXPECT_EQ(lone, 0) << "length " << length << " most " << most;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::serving
