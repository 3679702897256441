// PrefixCache on a real paged KV cache (no model): which prefix a prompt reuses, that the
// pages are shared rather than copied, and that eviction gives pages back.
#include "serving/prefix_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace kiln::serving {
namespace {

std::shared_ptr<builtins::PagedKvCache> MakeCache(int64_t pages) {
  builtins::PagedKvCache::Config config;
  config.num_layers = 1;
  config.num_kv_heads = 1;
  config.head_dim = 4;
  config.page_size = 4;
  config.num_pages = pages;
  return *builtins::PagedKvCache::Create(config);
}

// A sequence holding `tokens` (their K/V contents do not matter here).
void Fill(builtins::PagedKvCache& cache, int64_t id, int64_t tokens) {
  ASSERT_TRUE(cache.AddSequence(id).ok());
  ASSERT_TRUE(cache.BeginForward({id}, {tokens}).ok());
  ASSERT_TRUE(cache.EndForward().ok());
}

std::vector<int32_t> Range(int32_t from, int32_t to) {
  std::vector<int32_t> out;
  for (int32_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

TEST(PrefixCache, ReusesWholePagesOfTheLongestCommonPrefix) {
  auto cache = MakeCache(16);
  PrefixCache prefixes(cache.get(), 8);
  const std::vector<int32_t> prompt = Range(0, 10);  // two whole pages of 4, and 2 tokens
  Fill(*cache, 1, 10);
  ASSERT_TRUE(prefixes.Insert(prompt, 1).ok());
  EXPECT_EQ(prefixes.size(), 1);
  EXPECT_EQ(cache->UsedPages(), 3);  // the entry shares sequence 1's first two pages

  // Same first 9 tokens: two whole pages (8 tokens) are reused.
  std::vector<int32_t> other = Range(0, 9);
  other.push_back(99);
  EXPECT_EQ(prefixes.Lookup(other), 8);
  absl::StatusOr<int64_t> reused = prefixes.Reuse(other, 2);
  ASSERT_TRUE(reused.ok()) << reused.status();
  EXPECT_EQ(*reused, 8);
  EXPECT_EQ(*cache->SequenceLength(2), 8);
  EXPECT_EQ(cache->UsedPages(), 3);  // nothing copied

  // A prompt that is exactly the cached pages keeps one token to compute: one page less.
  EXPECT_EQ(prefixes.Lookup(Range(0, 8)), 4);
  // Sharing less than a page reuses nothing and creates no sequence.
  std::vector<int32_t> short_match = {0, 1, 2, 50, 51, 52};
  reused = prefixes.Reuse(short_match, 3);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(*reused, 0);
  EXPECT_FALSE(cache->HasSequence(3));
}

TEST(PrefixCache, LongerPrefixesReplaceTheirOwnPrefixesAndEvictionFreesPages) {
  auto cache = MakeCache(16);
  PrefixCache prefixes(cache.get(), 8);
  Fill(*cache, 1, 8);
  ASSERT_TRUE(prefixes.Insert(Range(0, 8), 1).ok());
  Fill(*cache, 2, 13);
  // Sequence 2 holds 0..12 in its own pages (the test filled it afresh).
  ASSERT_TRUE(prefixes.Insert(Range(0, 13), 2).ok());
  EXPECT_EQ(prefixes.size(), 1);  // the 8-token entry is contained in the new 12-token one
  ASSERT_TRUE(prefixes.Insert(Range(0, 8), 1).ok());  // already cached: no new entry
  EXPECT_EQ(prefixes.size(), 1);
  EXPECT_EQ(prefixes.Lookup(Range(0, 20)), 12);

  ASSERT_TRUE(cache->RemoveSequence(1).ok());
  ASSERT_TRUE(cache->RemoveSequence(2).ok());
  EXPECT_EQ(cache->UsedPages(), 3);  // the entry's three pages
  EXPECT_TRUE(prefixes.EvictOne());
  EXPECT_FALSE(prefixes.EvictOne());
  EXPECT_EQ(cache->UsedPages(), 0);
}

TEST(PrefixCache, KeepsAtMostMaxEntriesLeastRecentlyUsedOut) {
  auto cache = MakeCache(32);
  PrefixCache prefixes(cache.get(), 2);
  for (int i = 0; i < 3; ++i) {
    Fill(*cache, i, 4);
    ASSERT_TRUE(prefixes.Insert(Range(10 * i, 10 * i + 4), i).ok());
    if (i == 1) {
      // Using entry 0 makes entry 1 the least recently used.
      std::vector<int32_t> prompt = Range(0, 5);
      ASSERT_EQ(*prefixes.Reuse(prompt, 100), 4);
    }
  }
  EXPECT_EQ(prefixes.size(), 2);
  EXPECT_EQ(prefixes.Lookup(Range(0, 5)), 4);
  EXPECT_EQ(prefixes.Lookup(Range(10, 15)), 0);  // evicted
  EXPECT_EQ(prefixes.Lookup(Range(20, 25)), 4);

  PrefixCache disabled(cache.get(), 0);
  ASSERT_TRUE(disabled.Insert(Range(0, 4), 0).ok());
  EXPECT_EQ(disabled.size(), 0);
}

}  // namespace
}  // namespace kiln::serving
