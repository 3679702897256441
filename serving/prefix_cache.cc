#include "serving/prefix_cache.h"

#include <algorithm>

#include "support/status_macros.h"

namespace kiln::serving {

int64_t PrefixCache::CommonPrefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

void PrefixCache::Remove(std::list<Entry>::iterator it) {
  // The entry's sequence exists (only this class creates and removes it), so this cannot fail.
  (void)cache_->RemoveSequence(it->sequence);
  entries_.erase(it);
}

std::pair<std::list<PrefixCache::Entry>::const_iterator, int64_t> PrefixCache::BestMatch(
    std::span<const int32_t> tokens) const {
  const int64_t page_size = cache_->config().page_size;
  // Leave at least one token to compute: its logits start the generation.
  const int64_t limit = (static_cast<int64_t>(tokens.size()) - 1) / page_size * page_size;
  auto best = entries_.end();
  int64_t best_tokens = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const int64_t usable = std::min(CommonPrefix(it->tokens, tokens) / page_size * page_size, limit);
    if (usable > best_tokens) {
      best = it;
      best_tokens = usable;
    }
  }
  return {best, best_tokens};
}

int64_t PrefixCache::Lookup(std::span<const int32_t> tokens) const { return BestMatch(tokens).second; }

absl::StatusOr<int64_t> PrefixCache::Reuse(std::span<const int32_t> tokens, int64_t sequence) {
  auto [best, best_tokens] = BestMatch(tokens);
  if (best == entries_.end()) return 0;
  KILN_RETURN_IF_ERROR(cache_->ForkSequence(best->sequence, sequence));
  KILN_ASSIGN_OR_RETURN(int64_t length, cache_->SequenceLength(sequence));
  if (absl::Status popped = cache_->PopTokens(sequence, length - best_tokens); !popped.ok()) {
    (void)cache_->RemoveSequence(sequence);
    return popped;
  }
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  return best_tokens;
}

absl::Status PrefixCache::Insert(std::span<const int32_t> tokens, int64_t sequence) {
  if (max_entries_ <= 0) return absl::OkStatus();
  const int64_t page_size = cache_->config().page_size;
  const int64_t whole = static_cast<int64_t>(tokens.size()) / page_size * page_size;
  if (whole == 0) return absl::OkStatus();
  const std::span<const int32_t> prefix = tokens.first(static_cast<size_t>(whole));
  for (auto it = entries_.begin(); it != entries_.end();) {
    const int64_t common = CommonPrefix(it->tokens, prefix);
    if (common == whole) {  // already cached (as this prefix or a longer one)
      entries_.splice(entries_.begin(), entries_, it);
      return absl::OkStatus();
    }
    auto next = std::next(it);
    if (common == static_cast<int64_t>(it->tokens.size())) Remove(it);  // the new entry extends it
    it = next;
  }
  const int64_t id = next_id_--;
  KILN_RETURN_IF_ERROR(cache_->ForkSequence(sequence, id));
  KILN_ASSIGN_OR_RETURN(int64_t length, cache_->SequenceLength(id));
  if (absl::Status popped = cache_->PopTokens(id, length - whole); !popped.ok()) {
    (void)cache_->RemoveSequence(id);
    return popped;
  }
  entries_.push_front(Entry{id, std::vector<int32_t>(prefix.begin(), prefix.end())});
  while (static_cast<int64_t>(entries_.size()) > max_entries_) EvictOne();
  return absl::OkStatus();
}

bool PrefixCache::EvictOne() {
  if (entries_.empty()) return false;
  Remove(std::prev(entries_.end()));
  return true;
}

void PrefixCache::Clear() {
  while (EvictOne()) {
  }
}

}  // namespace kiln::serving
