#include "serving/spm_encoder.h"

#include <algorithm>
#include <queue>

namespace kiln::serving {

SpmEncoder::SpmEncoder(const absl::flat_hash_map<std::string, int32_t>* ids, std::vector<float> scores,
                       const int32_t (&byte_tokens)[256], int32_t unknown_id)
    : ids_(ids), scores_(std::move(scores)), unknown_id_(unknown_id) {
  std::copy(std::begin(byte_tokens), std::end(byte_tokens), byte_tokens_);
}

int32_t SpmEncoder::Find(std::string_view text) const {
  auto it = ids_->find(absl::string_view(text.data(), text.size()));
  return it == ids_->end() ? -1 : it->second;
}

void SpmEncoder::Encode(std::string_view text, std::vector<int32_t>* out) const {
  // Symbols: byte ranges [start, start + size) chained by prev/next; a merged-away symbol has
  // size 0.
  struct Symbol {
    size_t start;
    size_t size;
    int32_t prev;
    int32_t next;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    // The character's length from its lead byte alone, as llama.cpp reads it: a continuation
    // byte counts as one.
    static constexpr uint8_t kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    const size_t size = std::min<size_t>(kLength[static_cast<uint8_t>(text[offset]) >> 4], text.size() - offset);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({offset, size, index - 1, offset + size == text.size() ? -1 : index + 1});
    offset += size;
  }

  struct Pair {
    float score;
    int32_t left;
    int32_t right;
    size_t size;  // bytes of both when the pair was made, to detect stale pairs
  };
  // Highest score first; among equal scores the leftmost.
  auto lower = [](const Pair& a, const Pair& b) { return a.score < b.score || (a.score == b.score && a.left > b.left); };
  std::priority_queue<Pair, std::vector<Pair>, decltype(lower)> queue(lower);
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const size_t size = l.size + symbols[static_cast<size_t>(right)].size;
    const int32_t id = Find(text.substr(l.start, size));
    if (id >= 0) queue.push({scores_[static_cast<size_t>(id)], left, right, size});
  };
  for (size_t i = 1; i < symbols.size(); ++i) consider(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!queue.empty()) {
    const Pair pair = queue.top();
    queue.pop();
    Symbol& left = symbols[static_cast<size_t>(pair.left)];
    Symbol& right = symbols[static_cast<size_t>(pair.right)];
    // Symbols only grow until merged away, so unchanged sizes mean an unchanged pair.
    if (left.size == 0 || right.size == 0 || left.size + right.size != pair.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = pair.left;
    consider(left.prev, pair.left);
    consider(pair.left, left.next);
  }

  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& symbol = symbols[static_cast<size_t>(i)];
    const std::string_view piece = text.substr(symbol.start, symbol.size);
    if (const int32_t id = Find(piece); id >= 0) {
      out->push_back(id);
      continue;
    }
    const bool all_bytes = std::all_of(piece.begin(), piece.end(),
                                       [&](char c) { return byte_tokens_[static_cast<uint8_t>(c)] >= 0; });
    if (all_bytes) {
      for (char c : piece) out->push_back(byte_tokens_[static_cast<uint8_t>(c)]);
    } else if (unknown_id_ >= 0) {
      out->push_back(unknown_id_);
    }
  }
}

}  // namespace kiln::serving
