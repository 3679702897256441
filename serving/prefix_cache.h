// PrefixCache: prompts that share a prefix (a system prompt, a few-shot preamble, the
// conversation so far) reuse the KV pages of that prefix instead of recomputing it.
//
// An entry is a sequence of the paged KV cache (negative ids, so they never collide with
// the engine's request sequences) holding whole pages of a prompt that was prefilled
// earlier, with the prompt's tokens. A new prompt forks the entry with the longest common
// prefix and pops the tokens past the shared whole pages (PagedKvCache::ForkSequence +
// PopTokens): the pages are shared, reference-counted, never copied (a page is only ever
// shared while full, so copy-on-write never triggers for it). At least one token of the
// prompt is always left to compute, since the engine needs the logits after the last one.
//
// Entries hold pages that would otherwise be free, so the cache is small (an LRU of at most
// `max_entries`) and the engine evicts from it, least recently used first, whenever it needs
// pages. Loop-thread only, like the KV cache it works on.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "builtins/paged_kv_cache.h"

namespace kiln::serving {

class PrefixCache {
 public:
  PrefixCache(builtins::PagedKvCache* cache, int64_t max_entries) : cache_(cache), max_entries_(max_entries) {}
  ~PrefixCache() { Clear(); }
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // Creates `sequence` (a new id) holding the longest cached whole-page prefix of `tokens`
  // (at most tokens.size() - 1 tokens) and returns how many tokens it holds; 0 (and no
  // sequence created) when nothing matches.
  absl::StatusOr<int64_t> Reuse(std::span<const int32_t> tokens, int64_t sequence);
  // How many tokens Reuse would give `tokens` now (nothing changes).
  int64_t Lookup(std::span<const int32_t> tokens) const;

  // Remembers the whole pages of `sequence`, whose first tokens are `tokens` (it may hold
  // more). A prefix already cached is only marked as recently used; entries that the new
  // one extends are dropped (their pages live on in the new entry).
  absl::Status Insert(std::span<const int32_t> tokens, int64_t sequence);

  // Drops the least recently used entry (its pages are freed unless a sequence shares
  // them); false when there is none.
  bool EvictOne();
  void Clear();
  int64_t size() const { return static_cast<int64_t>(entries_.size()); }

 private:
  struct Entry {
    int64_t sequence;
    std::vector<int32_t> tokens;  // whole pages only
  };
  static int64_t CommonPrefix(std::span<const int32_t> a, std::span<const int32_t> b);
  // The entry Reuse would fork for `tokens` and how many tokens it gives (end(), 0: none).
  std::pair<std::list<Entry>::const_iterator, int64_t> BestMatch(std::span<const int32_t> tokens) const;
  void Remove(std::list<Entry>::iterator it);

  builtins::PagedKvCache* cache_;
  int64_t max_entries_;
  std::list<Entry> entries_;  // most recently used first
  int64_t next_id_ = -1;
};

}  // namespace kiln::serving
