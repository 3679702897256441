// The paged KV cache's page accounting (fork with copy-on-write, pop, out of pages) and its
// attention builtin against a naive attention over plain per-sequence K/V lists (float64).
#include "builtins/paged_kv_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "builtins/default_builtins.h"
#include "vm/dtype.h"

namespace kiln::builtins {
namespace {

using ::testing::HasSubstr;

PagedKvCache::Config SmallConfig(int64_t pages, bool f16 = false) {
  PagedKvCache::Config c;
  c.num_layers = 2;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.page_size = 4;
  c.num_pages = pages;
  c.dtype = f16 ? DLDataType{kDLFloat, 16, 1} : vm::DTypeFloat32();
  return c;
}

TEST(PagedKvCache, PagesFollowLengthsForksAndPops) {
  auto cache = *PagedKvCache::Create(SmallConfig(8));
  ASSERT_TRUE(cache->AddSequence(1).ok());
  ASSERT_TRUE(cache->BeginForward({1}, {6}).ok());  // 6 tokens: 2 pages
  ASSERT_TRUE(cache->EndForward().ok());
  EXPECT_EQ(*cache->SequenceLength(1), 6);
  EXPECT_EQ(cache->UsedPages(), 2);
  // A fork shares both pages; appending to the child copies the shared, partly filled page.
  ASSERT_TRUE(cache->ForkSequence(1, 2).ok());
  EXPECT_EQ(cache->UsedPages(), 2);
  ASSERT_TRUE(cache->BeginForward({2}, {1}).ok());
  ASSERT_TRUE(cache->EndForward().ok());
  EXPECT_EQ(cache->UsedPages(), 3);
  // Popping across a page boundary frees the emptied page (only the child's copy).
  ASSERT_TRUE(cache->PopTokens(2, 4).ok());
  EXPECT_EQ(*cache->SequenceLength(2), 3);
  EXPECT_EQ(cache->UsedPages(), 2);
  ASSERT_TRUE(cache->RemoveSequence(1).ok());
  EXPECT_EQ(cache->UsedPages(), 1);  // the child still holds the first page
  ASSERT_TRUE(cache->RemoveSequence(2).ok());
  EXPECT_EQ(cache->UsedPages(), 0);
  EXPECT_THAT(std::string(cache->PopTokens(7, 1).message()), HasSubstr("no sequence 7"));
  ASSERT_TRUE(cache->AddSequence(3).ok());
  EXPECT_THAT(std::string(cache->PopTokens(3, 1).message()), HasSubstr("cannot pop 1 tokens"));
  EXPECT_THAT(std::string(cache->AddSequence(3).message()), HasSubstr("already exists"));
}

TEST(PagedKvCache, RunningOutOfPagesLeavesTheCacheUnchanged) {
  auto cache = *PagedKvCache::Create(SmallConfig(3));
  ASSERT_TRUE(cache->AddSequence(1).ok());
  ASSERT_TRUE(cache->AddSequence(2).ok());
  ASSERT_TRUE(cache->BeginForward({1}, {8}).ok());
  ASSERT_TRUE(cache->EndForward().ok());
  absl::Status full = cache->BeginForward({1, 2}, {1, 4});
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(full.message()), HasSubstr("needs 2 free pages, 1 of 3 are free"));
  EXPECT_FALSE(cache->in_forward());
  EXPECT_EQ(cache->UsedPages(), 2);
  EXPECT_EQ(*cache->SequenceLength(1), 8);
  // An aborted step keeps the lengths and returns its pages.
  ASSERT_TRUE(cache->BeginForward({2}, {4}).ok());
  cache->AbortForward();
  EXPECT_EQ(*cache->SequenceLength(2), 0);
  EXPECT_EQ(cache->UsedPages(), 2);
  EXPECT_THAT(std::string(cache->BeginForward({1, 1}, {1, 1}).message()), HasSubstr("appears twice"));
  EXPECT_THAT(std::string(cache->BeginForward({9}, {1}).message()), HasSubstr("no sequence 9"));
  EXPECT_THAT(std::string(cache->EndForward().message()), HasSubstr("without BeginForward"));
  PagedKvCache::Config bad = SmallConfig(0);
  EXPECT_THAT(std::string(PagedKvCache::Create(bad).status().message()), HasSubstr("num_pages is 0"));
}

// Deterministic values in [-1, 1].
float Value(int64_t i, int salt) { return static_cast<float>(std::sin(0.37 * static_cast<double>(i) + salt)); }

vm::Tensor Make(int64_t n, int64_t heads, int64_t d, int salt, int64_t offset) {
  vm::Tensor t = *vm::Tensor::Empty({n, heads, d}, vm::DTypeFloat32());
  for (int64_t i = 0; i < n * heads * d; ++i) t.data_as<float>()[i] = Value(offset + i, salt);
  return t;
}

// Runs attention for a step through the registered builtin, as compiled code does.
absl::StatusOr<vm::Tensor> Attend(std::shared_ptr<PagedKvCache> cache, int64_t layer, const vm::Tensor& q,
                                  const vm::Tensor& k, const vm::Tensor& v) {
  const vm::BuiltinRegistry::Builtin* builtin = DefaultRegistry().FindBuiltin("kiln.kv_cache.attention");
  if (builtin == nullptr) return absl::NotFoundError("no attention builtin");
  vm::Value args[] = {vm::Value::FromObject(cache), vm::Value(layer), vm::Value(q), vm::Value(k), vm::Value(v),
                      vm::Value(0.35)};
  const vm::Value* ptrs[] = {&args[0], &args[1], &args[2], &args[3], &args[4], &args[5]};
  vm::BuiltinContext ctx{nullptr, nullptr, nullptr};
  vm::Value result;
  absl::Status status = builtin->fn(ctx, ptrs, 6, &result);
  if (!status.ok()) return status;
  return result.as_tensor();
}

TEST(PagedAttention, MatchesNaiveAttentionForRaggedBatchesForksAndHalfStorage) {
  for (bool f16 : {false, true}) {
    SCOPED_TRACE(f16 ? "float16" : "float32");
    auto cache = *PagedKvCache::Create(SmallConfig(32, f16));
    const int64_t q_heads = 6, kv_heads = 2, d = 8;  // groups of 3
    // Naive per-sequence K/V for layer 1.
    std::map<int64_t, std::vector<std::vector<float>>> keys, values;
    int salt = 0;
    auto step = [&](std::vector<int64_t> ids, std::vector<int64_t> counts) {
      ASSERT_TRUE(cache->BeginForward(ids, counts).ok());
      int64_t n = 0;
      for (int64_t c : counts) n += c;
      ++salt;
      vm::Tensor q = Make(n, q_heads, d, salt, 0), k = Make(n, kv_heads, d, salt, 1000), v = Make(n, kv_heads, d, salt, 2000);
      absl::StatusOr<vm::Tensor> out = Attend(cache, 1, q, k, v);
      ASSERT_TRUE(out.ok()) << out.status();
      int64_t t = 0;
      for (size_t s = 0; s < ids.size(); ++s) {
        for (int64_t c = 0; c < counts[s]; ++c, ++t) {
          std::vector<float> kt(k.data_as<float>() + t * kv_heads * d, k.data_as<float>() + (t + 1) * kv_heads * d);
          std::vector<float> vt(v.data_as<float>() + t * kv_heads * d, v.data_as<float>() + (t + 1) * kv_heads * d);
          keys[ids[s]].push_back(kt);
          values[ids[s]].push_back(vt);
          const auto& ks = keys[ids[s]];
          for (int64_t h = 0; h < q_heads; ++h) {
            const int64_t g = h / 3;
            std::vector<double> score;
            for (const auto& key : ks) {
              double dot = 0;
              for (int64_t i = 0; i < d; ++i) dot += double(q.data_as<float>()[(t * q_heads + h) * d + i]) * key[g * d + i];
              score.push_back(0.35 * dot);
            }
            double max = score[0], sum = 0;
            for (double x : score) max = std::max(max, x);
            for (double& x : score) sum += x = std::exp(x - max);
            for (int64_t i = 0; i < d; ++i) {
              double want = 0;
              for (size_t p = 0; p < score.size(); ++p) want += score[p] / sum * values[ids[s]][p][g * d + i];
              const double got = out->data_as<float>()[(t * q_heads + h) * d + i];
              ASSERT_NEAR(got, want, f16 ? 2e-3 : 1e-5) << "sequence " << ids[s] << " token " << c << " head " << h;
            }
          }
        }
      }
      ASSERT_TRUE(cache->EndForward().ok());
    };
    ASSERT_TRUE(cache->AddSequence(10).ok());
    ASSERT_TRUE(cache->AddSequence(20).ok());
    step({10}, {17});          // a prefill over 5 pages
    step({20}, {1});
    step({10, 20}, {1, 3});    // ragged
    ASSERT_TRUE(cache->ForkSequence(10, 30).ok());
    keys[30] = keys[10];
    values[30] = values[10];
    step({30, 10}, {2, 1});    // the fork diverges from its parent
    step({10, 20, 30}, {1, 1, 1});
  }
}

TEST(PagedAttention, WrongShapesAndCallsOutsideAStepAreErrors) {
  auto cache = *PagedKvCache::Create(SmallConfig(4));
  vm::Tensor q = Make(1, 2, 8, 0, 0), k = Make(1, 2, 8, 0, 0);
  EXPECT_THAT(std::string(Attend(cache, 0, q, k, k).status().message()), HasSubstr("called outside a step"));
  ASSERT_TRUE(cache->AddSequence(0).ok());
  ASSERT_TRUE(cache->BeginForward({0}, {1}).ok());
  EXPECT_THAT(std::string(Attend(cache, 2, q, k, k).status().message()), HasSubstr("layer 2 is outside [0, 2)"));
  vm::Tensor wrong = Make(2, 2, 8, 0, 0);
  EXPECT_THAT(std::string(Attend(cache, 0, q, wrong, k).status().message()), HasSubstr("k must have shape [1, 2, 8]"));
  EXPECT_TRUE(Attend(cache, 0, q, k, k).ok());
}

}  // namespace
}  // namespace kiln::builtins
