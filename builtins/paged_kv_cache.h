// PagedKvCache: the keys and values of a language model's attention layers for many
// sequences at once, in fixed-size pages (vLLM's PagedAttention layout idea; written here
// from the description). It is a VM object (type "paged_kv_cache"): a compiled model takes
// it as a parameter and its attention builtins (builtins/paged_attention.h) read and write
// it.
//
// Memory: one pool per layer, K and V, of `num_pages` pages; page p holds `page_size`
// tokens for every KV head, laid out [page][kv_head][slot][head_dim] so that one head's keys
// for consecutive positions are contiguous (attention streams them). Elements are float16
// (the default: half the bytes to read per decode step) or float32.
//
// Sequences are named by int64 ids. Each has a page table (its pages in order) and a
// length. Pages are reference-counted: ForkSequence shares the parent's pages with the child
// (copy-on-write: a shared page that is about to be written is copied first), so n > 1
// completions of one prompt and prefix caching cost no copies.
//
// A model step is bracketed by BeginForward(ids, counts) — which says how many new tokens
// each sequence gets in this call, reserves their pages (all or nothing) and fixes every
// token's position — and EndForward() (commit the new lengths) or AbortForward() (forget
// them). The tokens of a step are the sequences' new tokens in the order of `ids`.
//
// Every error a caller can cause is a status; nothing aborts. Not thread-safe: one step at a
// time (the serving engine's loop owns it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "dlpack/dlpack.h"
#include "vm/value.h"

namespace kiln::builtins {

class PagedKvCache final : public vm::TypedObject<PagedKvCache> {
 public:
  static constexpr char kTypeName[] = "paged_kv_cache";

  struct Config {
    int64_t num_layers = 0;
    int64_t num_kv_heads = 0;
    int64_t head_dim = 0;
    int64_t page_size = 16;  // tokens per page
    int64_t num_pages = 0;
    DLDataType dtype = {kDLFloat, 16, 1};  // float16 or float32
  };

  // The token layout of the current step, for the attention builtins.
  struct StepToken {
    int32_t sequence;  // index into step_sequences()
    int64_t position;  // its position in its sequence
  };
  struct StepSequence {
    int64_t id;
    int64_t start;  // the sequence's length before the step
    int64_t count;  // new tokens
    const std::vector<int32_t>* pages;
  };

  // Allocates the pools; an error for non-positive sizes or more than 64 GiB.
  static absl::StatusOr<std::shared_ptr<PagedKvCache>> Create(const Config& config);
  // Sizes num_pages from a budget in bytes (at least one page).
  static int64_t PagesForBudget(const Config& config, int64_t bytes);

  const Config& config() const { return config_; }
  int64_t bytes_per_page() const;  // all layers, K and V
  int64_t FreePages() const { return static_cast<int64_t>(free_pages_.size()); }
  int64_t UsedPages() const { return config_.num_pages - FreePages(); }

  absl::Status AddSequence(int64_t id);
  absl::Status RemoveSequence(int64_t id);  // frees the pages no other sequence shares
  // `child` (new) starts as a copy of `parent` sharing its pages.
  absl::Status ForkSequence(int64_t parent, int64_t child);
  // Drops the last n tokens (0 <= n <= length); pages left empty are freed.
  absl::Status PopTokens(int64_t id, int64_t n);
  absl::StatusOr<int64_t> SequenceLength(int64_t id) const;
  bool HasSequence(int64_t id) const { return sequences_.count(id) != 0; }
  std::vector<int64_t> SequenceIds() const;

  absl::Status BeginForward(const std::vector<int64_t>& ids, const std::vector<int64_t>& counts);
  absl::Status EndForward();
  void AbortForward();
  bool in_forward() const { return in_forward_; }
  const std::vector<StepToken>& step_tokens() const { return step_tokens_; }
  const std::vector<StepSequence>& step_sequences() const { return step_sequences_; }

  // Where (layer, page, kv head, slot)'s head_dim elements live.
  uint8_t* KeyAt(int64_t layer, int32_t page, int64_t head, int64_t slot) {
    return Pool(layer, 0) + Offset(page, head, slot);
  }
  uint8_t* ValueAt(int64_t layer, int32_t page, int64_t head, int64_t slot) {
    return Pool(layer, 1) + Offset(page, head, slot);
  }
  int64_t element_bytes() const { return config_.dtype.bits / 8; }

 private:
  struct Sequence {
    std::vector<int32_t> pages;
    int64_t length = 0;
  };

  explicit PagedKvCache(const Config& config);
  uint8_t* Pool(int64_t layer, int kv) { return storage_.get() + (layer * 2 + kv) * pool_bytes_; }
  int64_t Offset(int32_t page, int64_t head, int64_t slot) const {
    return ((static_cast<int64_t>(page) * config_.num_kv_heads + head) * config_.page_size + slot) * config_.head_dim *
           element_bytes();
  }
  absl::StatusOr<Sequence*> Find(int64_t id);
  int64_t PagesFor(int64_t tokens) const { return (tokens + config_.page_size - 1) / config_.page_size; }
  void Release(int32_t page);
  void CopyPage(int32_t from, int32_t to);
  void TrimPages(Sequence& sequence);

  Config config_;
  int64_t pool_bytes_ = 0;  // one layer's K (or V)
  std::unique_ptr<uint8_t[]> storage_;
  std::vector<int32_t> free_pages_;
  std::vector<int32_t> refcount_;
  std::map<int64_t, Sequence> sequences_;
  bool in_forward_ = false;
  std::vector<StepToken> step_tokens_;
  std::vector<StepSequence> step_sequences_;
};

}  // namespace kiln::builtins
