#include "builtins/paged_kv_cache.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"

namespace kiln::builtins {

namespace {

constexpr int64_t kMaxBytes = int64_t{64} << 30;

}  // namespace

PagedKvCache::PagedKvCache(const Config& config) : config_(config) {}

int64_t PagedKvCache::bytes_per_page() const {
  return 2 * config_.num_layers * config_.num_kv_heads * config_.page_size * config_.head_dim * element_bytes();
}

int64_t PagedKvCache::PagesForBudget(const Config& config, int64_t bytes) {
  PagedKvCache probe(config);
  const int64_t per_page = probe.bytes_per_page();
  return per_page <= 0 ? 1 : std::max<int64_t>(1, bytes / per_page);
}

absl::StatusOr<std::shared_ptr<PagedKvCache>> PagedKvCache::Create(const Config& config) {
  for (auto [name, value] : {std::pair{"num_layers", config.num_layers}, {"num_kv_heads", config.num_kv_heads},
                             {"head_dim", config.head_dim}, {"page_size", config.page_size},
                             {"num_pages", config.num_pages}}) {
    if (value <= 0 || value > (int64_t{1} << 24)) {
      return absl::InvalidArgumentError(absl::StrCat("paged KV cache: ", name, " is ", value, ", expected 1 to 2^24"));
    }
  }
  const bool f16 = config.dtype.code == kDLFloat && config.dtype.bits == 16 && config.dtype.lanes == 1;
  const bool f32 = config.dtype.code == kDLFloat && config.dtype.bits == 32 && config.dtype.lanes == 1;
  if (!f16 && !f32) return absl::InvalidArgumentError("paged KV cache: dtype must be float16 or float32");
  std::shared_ptr<PagedKvCache> cache(new PagedKvCache(config));
  const double total = static_cast<double>(cache->bytes_per_page()) * static_cast<double>(config.num_pages);
  if (total > static_cast<double>(kMaxBytes)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("paged KV cache: ", config.num_pages, " pages of ", cache->bytes_per_page(),
                     " bytes exceed the 64 GiB limit"));
  }
  cache->pool_bytes_ = config.num_pages * config.num_kv_heads * config.page_size * config.head_dim * cache->element_bytes();
  // Not zeroed: only slots written by attention are ever read.
  cache->storage_.reset(new (std::nothrow) uint8_t[static_cast<size_t>(total)]);
  if (cache->storage_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("paged KV cache: cannot allocate ", total, " bytes"));
  }
  cache->refcount_.assign(static_cast<size_t>(config.num_pages), 0);
  // Handed out lowest first (popped from the back).
  for (int64_t p = config.num_pages - 1; p >= 0; --p) cache->free_pages_.push_back(static_cast<int32_t>(p));
  return cache;
}

absl::StatusOr<PagedKvCache::Sequence*> PagedKvCache::Find(int64_t id) {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) return absl::NotFoundError(absl::StrCat("paged KV cache: no sequence ", id));
  return &it->second;
}

absl::Status PagedKvCache::AddSequence(int64_t id) {
  if (in_forward_) return absl::FailedPreconditionError("paged KV cache: cannot add a sequence during a step");
  if (!sequences_.emplace(id, Sequence()).second) {
    return absl::AlreadyExistsError(absl::StrCat("paged KV cache: sequence ", id, " already exists"));
  }
  return absl::OkStatus();
}

void PagedKvCache::Release(int32_t page) {
  if (--refcount_[static_cast<size_t>(page)] == 0) free_pages_.push_back(page);
}

absl::Status PagedKvCache::RemoveSequence(int64_t id) {
  if (in_forward_) return absl::FailedPreconditionError("paged KV cache: cannot remove a sequence during a step");
  auto it = sequences_.find(id);
  if (it == sequences_.end()) return absl::NotFoundError(absl::StrCat("paged KV cache: no sequence ", id));
  for (int32_t page : it->second.pages) Release(page);
  sequences_.erase(it);
  return absl::OkStatus();
}

absl::Status PagedKvCache::ForkSequence(int64_t parent, int64_t child) {
  if (in_forward_) return absl::FailedPreconditionError("paged KV cache: cannot fork during a step");
  auto it = sequences_.find(parent);
  if (it == sequences_.end()) return absl::NotFoundError(absl::StrCat("paged KV cache: no sequence ", parent));
  if (sequences_.count(child) != 0) {
    return absl::AlreadyExistsError(absl::StrCat("paged KV cache: sequence ", child, " already exists"));
  }
  Sequence copy = it->second;
  for (int32_t page : copy.pages) ++refcount_[static_cast<size_t>(page)];
  sequences_.emplace(child, std::move(copy));
  return absl::OkStatus();
}

void PagedKvCache::TrimPages(Sequence& sequence) {
  while (static_cast<int64_t>(sequence.pages.size()) > PagesFor(sequence.length)) {
    Release(sequence.pages.back());
    sequence.pages.pop_back();
  }
}

absl::Status PagedKvCache::PopTokens(int64_t id, int64_t n) {
  if (in_forward_) return absl::FailedPreconditionError("paged KV cache: cannot pop tokens during a step");
  absl::StatusOr<Sequence*> sequence = Find(id);
  if (!sequence.ok()) return sequence.status();
  if (n < 0 || n > (*sequence)->length) {
    return absl::OutOfRangeError(
        absl::StrCat("paged KV cache: cannot pop ", n, " tokens from sequence ", id, " of ", (*sequence)->length));
  }
  (*sequence)->length -= n;
  TrimPages(**sequence);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> PagedKvCache::SequenceLength(int64_t id) const {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) return absl::NotFoundError(absl::StrCat("paged KV cache: no sequence ", id));
  return it->second.length;
}

std::vector<int64_t> PagedKvCache::SequenceIds() const {
  std::vector<int64_t> ids;
  for (const auto& [id, sequence] : sequences_) ids.push_back(id);
  return ids;
}

void PagedKvCache::CopyPage(int32_t from, int32_t to) {
  const int64_t page_bytes = config_.num_kv_heads * config_.page_size * config_.head_dim * element_bytes();
  for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int kv = 0; kv < 2; ++kv) {
      uint8_t* pool = Pool(layer, kv);
      std::memcpy(pool + to * page_bytes, pool + from * page_bytes, static_cast<size_t>(page_bytes));
    }
  }
}

absl::Status PagedKvCache::BeginForward(const std::vector<int64_t>& ids, const std::vector<int64_t>& counts) {
  if (in_forward_) return absl::FailedPreconditionError("paged KV cache: BeginForward twice without EndForward");
  if (ids.size() != counts.size() || ids.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("paged KV cache: BeginForward takes one count per sequence (",
                                                   ids.size(), " ids, ", counts.size(), " counts)"));
  }
  // Check everything before changing anything: a failed step leaves the cache as it was.
  std::set<int64_t> seen;
  int64_t needed = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = sequences_.find(ids[i]);
    if (it == sequences_.end()) return absl::NotFoundError(absl::StrCat("paged KV cache: no sequence ", ids[i]));
    if (!seen.insert(ids[i]).second) {
      return absl::InvalidArgumentError(absl::StrCat("paged KV cache: sequence ", ids[i], " appears twice in one step"));
    }
    if (counts[i] <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("paged KV cache: sequence ", ids[i], " gets ", counts[i],
                                                     " tokens; at least 1 expected"));
    }
    const Sequence& s = it->second;
    needed += PagesFor(s.length + counts[i]) - static_cast<int64_t>(s.pages.size());
    // A shared page that gets written must be copied first.
    if (s.length % config_.page_size != 0 && refcount_[static_cast<size_t>(s.pages.back())] > 1) ++needed;
  }
  if (needed > FreePages()) {
    return absl::ResourceExhaustedError(absl::StrCat("paged KV cache: the step needs ", needed, " free pages, ",
                                                     FreePages(), " of ", config_.num_pages, " are free"));
  }
  step_tokens_.clear();
  step_sequences_.clear();
  for (size_t i = 0; i < ids.size(); ++i) {
    Sequence& s = sequences_[ids[i]];
    if (s.length % config_.page_size != 0 && refcount_[static_cast<size_t>(s.pages.back())] > 1) {
      const int32_t fresh = free_pages_.back();
      free_pages_.pop_back();
      refcount_[static_cast<size_t>(fresh)] = 1;
      CopyPage(s.pages.back(), fresh);
      Release(s.pages.back());
      s.pages.back() = fresh;
    }
    while (static_cast<int64_t>(s.pages.size()) < PagesFor(s.length + counts[i])) {
      const int32_t fresh = free_pages_.back();
      free_pages_.pop_back();
      refcount_[static_cast<size_t>(fresh)] = 1;
      s.pages.push_back(fresh);
    }
    step_sequences_.push_back({ids[i], s.length, counts[i], &s.pages});
    for (int64_t t = 0; t < counts[i]; ++t) step_tokens_.push_back({static_cast<int32_t>(i), s.length + t});
  }
  in_forward_ = true;
  return absl::OkStatus();
}

absl::Status PagedKvCache::EndForward() {
  if (!in_forward_) return absl::FailedPreconditionError("paged KV cache: EndForward without BeginForward");
  for (const StepSequence& step : step_sequences_) sequences_[step.id].length = step.start + step.count;
  in_forward_ = false;
  step_tokens_.clear();
  step_sequences_.clear();
  return absl::OkStatus();
}

void PagedKvCache::AbortForward() {
  if (!in_forward_) return;
  for (const StepSequence& step : step_sequences_) TrimPages(sequences_[step.id]);
  in_forward_ = false;
  step_tokens_.clear();
  step_sequences_.clear();
}

}  // namespace kiln::builtins
