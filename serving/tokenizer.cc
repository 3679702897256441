#include "serving/tokenizer.h"

#include <algorithm>
#include <queue>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "support/status_macros.h"
#include "support/utf8.h"

namespace kiln::serving {
namespace {

using formats::GgufFile;
using formats::GgufValue;
using formats::GgufValueType;

// SentencePiece's space, U+2581 ("▁").
constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

// GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the other 68
// bytes for the code points from U+0100 on, in byte order (so a space is "Ġ", U+0120).
struct ByteAlphabet {
  std::string symbol[256];                     // each byte's symbol, UTF-8
  absl::flat_hash_map<uint32_t, uint8_t> byte;  // code point -> byte
  ByteAlphabet() {
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const uint32_t cp = printable ? b : next++;
      AppendUtf8(cp, &symbol[b]);
      byte[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteAlphabet& Alphabet() {
  static const auto* alphabet = new ByteAlphabet();
  return *alphabet;
}

// Decodes a (valid) UTF-8 string's code points; returns false on a malformed sequence.
bool CodePoints(std::string_view text, std::vector<uint32_t>* out) {
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<uint8_t>(text[i]);
    int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    if (i + n > text.size() || (b >= 0x80 && b < 0xC0)) return false;
    uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3F);
    out->push_back(cp);
    i += n;
  }
  return true;
}

// The bytes a normal token stands for: each symbol mapped back through the alphabet; a
// symbol outside it (not in a byte-level vocabulary) stands for itself.
std::string SymbolsToBytes(std::string_view text) {
  std::vector<uint32_t> cps;
  if (!CodePoints(text, &cps)) return std::string(text);
  std::string bytes;
  for (uint32_t cp : cps) {
    auto it = Alphabet().byte.find(cp);
    if (it != Alphabet().byte.end()) {
      bytes.push_back(static_cast<char>(it->second));
    } else {
      AppendUtf8(cp, &bytes);
    }
  }
  return bytes;
}

// The bytes a normal SentencePiece token stands for: "▁" is a space.
std::string SpmPieceToBytes(std::string_view text) {
  return absl::StrReplaceAll(absl::string_view(text.data(), text.size()),
                             {{absl::string_view(kSpmSpace.data(), kSpmSpace.size()), " "}});
}

// "<0x0A>" -> '\n' for byte tokens.
std::optional<char> ByteTokenValue(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    value = value * 16 + digit;
  }
  return static_cast<char>(value);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Tokenizer>> Tokenizer::FromGguf(const GgufFile& file) {
  const std::string& name = file.name();
  KILN_ASSIGN_OR_RETURN(std::string_view model, file.GetString("tokenizer.ggml.model"));
  if (model != "gpt2" && model != "llama") {
    return absl::UnimplementedError(absl::StrCat(name, ": tokenizer model '", std::string(model),
                                                 "' is not supported; Kiln reads byte-level BPE ('gpt2') and "
                                                 "SentencePiece ('llama')"));
  }
  std::shared_ptr<Tokenizer> tok(new Tokenizer());
  tok->sentencepiece_ = model == "llama";
  const bool spm = tok->sentencepiece_;
  KILN_ASSIGN_OR_RETURN(GgufValue tokens, file.GetArray("tokenizer.ggml.tokens", GgufValueType::kString));
  if (tokens.size() == 0 || tokens.size() > static_cast<uint64_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": tokenizer.ggml.tokens has ", tokens.size(), " tokens"));
  }
  const size_t n = tokens.size();
  tok->texts_.assign(tokens.Strings().begin(), tokens.Strings().end());
  tok->types_.assign(n, TokenType::kNormal);
  if (file.Find("tokenizer.ggml.token_type") != nullptr) {
    KILN_ASSIGN_OR_RETURN(GgufValue types, file.GetArray("tokenizer.ggml.token_type", GgufValueType::kInt32));
    if (types.size() != n) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": tokenizer.ggml.token_type has ", types.size(),
                                                     " entries for ", n, " tokens"));
    }
    for (size_t i = 0; i < n; ++i) {
      int64_t type = *types.Element(i).AsInt64();
      tok->types_[i] = type >= 0 && type <= 6 ? static_cast<TokenType>(type) : TokenType::kNormal;
    }
  }
  tok->ids_.reserve(n);
  tok->bytes_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    tok->ids_.emplace(tok->texts_[i], id);  // the first of duplicate texts wins
    const std::string& text = tok->texts_[i];
    switch (tok->types_[i]) {
      case TokenType::kNormal: tok->bytes_[i] = spm ? SpmPieceToBytes(text) : SymbolsToBytes(text); break;
      case TokenType::kUndefined:
      case TokenType::kUnused:
        // llama.cpp renders these as nothing in SentencePiece vocabularies.
        if (!spm) tok->bytes_[i] = SymbolsToBytes(text);
        break;
      case TokenType::kByte: {
        std::optional<char> byte = ByteTokenValue(text);
        tok->bytes_[i] = byte.has_value() ? std::string(1, *byte) : text;
        break;
      }
      default: tok->bytes_[i] = text; break;  // control, user-defined, unknown: their text
    }
    const TokenType type = tok->types_[i];
    const bool unknown = spm && type == TokenType::kUnknown;
    if ((type == TokenType::kControl || type == TokenType::kUserDefined || unknown) && !text.empty()) {
      tok->specials_.push_back({text, id, type == TokenType::kControl || unknown});
    }
  }
  std::stable_sort(tok->specials_.begin(), tok->specials_.end(),
                   [](const Special& a, const Special& b) { return a.text.size() > b.text.size(); });
  for (int b = 0; b < 256; ++b) {
    // SentencePiece's byte fallback is "<0x0A>", or failing that a token of the byte itself.
    std::optional<int32_t> id =
        spm ? tok->Find(absl::StrFormat("<0x%02X>", b)) : tok->Find(Alphabet().symbol[b]);
    if (spm && !id) id = tok->Find(std::string(1, static_cast<char>(b)));
    tok->byte_tokens_[b] = id.value_or(-1);
  }
  if (spm) {
    // llama.cpp's defaults for a SentencePiece vocabulary, each where the id exists.
    tok->unknown_id_ = 0;
    tok->bos_id_ = n > 1 ? 1 : -1;
    tok->eos_id_ = n > 2 ? 2 : -1;
    tok->add_bos_ = true;
  } else {
    KILN_RETURN_IF_ERROR(ReadBytePairMerges(file, tok.get()));
  }

  auto optional_id = [&](const char* key, int32_t* out) -> absl::Status {
    if (file.Find(key) == nullptr) return absl::OkStatus();
    KILN_ASSIGN_OR_RETURN(int64_t id, file.GetInteger(key));
    if (id < 0 || id >= static_cast<int64_t>(n)) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", key, " is ", id, ", outside the vocabulary of ", n));
    }
    *out = static_cast<int32_t>(id);
    return absl::OkStatus();
  };
  KILN_RETURN_IF_ERROR(optional_id("tokenizer.ggml.bos_token_id", &tok->bos_id_));
  KILN_RETURN_IF_ERROR(optional_id("tokenizer.ggml.eos_token_id", &tok->eos_id_));
  KILN_RETURN_IF_ERROR(optional_id("tokenizer.ggml.eot_token_id", &tok->eot_id_));
  KILN_RETURN_IF_ERROR(optional_id("tokenizer.ggml.padding_token_id", &tok->pad_id_));
  KILN_RETURN_IF_ERROR(optional_id("tokenizer.ggml.unknown_token_id", &tok->unknown_id_));
  auto optional_flag = [&](const char* key, bool* out) -> absl::Status {
    if (file.Find(key) == nullptr) return absl::OkStatus();
    KILN_ASSIGN_OR_RETURN(*out, file.GetBool(key));
    return absl::OkStatus();
  };
  KILN_RETURN_IF_ERROR(optional_flag("tokenizer.ggml.add_bos_token", &tok->add_bos_));
  KILN_RETURN_IF_ERROR(optional_flag("tokenizer.ggml.add_eos_token", &tok->add_eos_));
  // As llama.cpp refuses them (a byte-level BPE file without the ids keeps Kiln's earlier
  // behaviour: nothing is added).
  if (spm && tok->add_bos_ && tok->bos_id_ < 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": tokenizer.ggml.add_bos_token is true, but there is no bos token"));
  }
  if (spm && tok->add_eos_ && tok->eos_id_ < 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": tokenizer.ggml.add_eos_token is true, but there is no eos token"));
  }

  tok->end_of_generation_.assign(n, false);
  for (int32_t id : {tok->eos_id_, tok->eot_id_}) {
    if (id >= 0) tok->end_of_generation_[static_cast<size_t>(id)] = true;
  }
  for (const char* text : {"<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<end_of_turn>", "<|end|>", "<|eom_id|>", "</s>"}) {
    std::optional<int32_t> id = tok->Find(text);
    if (id && tok->types_[static_cast<size_t>(*id)] == TokenType::kControl) {
      tok->end_of_generation_[static_cast<size_t>(*id)] = true;
    }
  }

  if (spm) {
    tok->add_space_prefix_ = true;
    KILN_RETURN_IF_ERROR(optional_flag("tokenizer.ggml.add_space_prefix", &tok->add_space_prefix_));
    KILN_RETURN_IF_ERROR(ReadSentencePiece(file, tok.get()));
    return std::shared_ptr<const Tokenizer>(std::move(tok));
  }
  std::string pre = "gpt2";
  if (file.Find("tokenizer.ggml.pre") != nullptr) {
    KILN_ASSIGN_OR_RETURN(std::string_view named, file.GetString("tokenizer.ggml.pre"));
    pre = std::string(named);
  }
  absl::StatusOr<PreTokenizer> pre_tokenizer = PreTokenizer::ForName(pre);
  if (!pre_tokenizer.ok()) {
    return absl::Status(pre_tokenizer.status().code(), absl::StrCat(name, ": ", pre_tokenizer.status().message()));
  }
  tok->pre_ = *std::move(pre_tokenizer);
  return std::shared_ptr<const Tokenizer>(std::move(tok));
}

absl::Status Tokenizer::ReadSentencePiece(const GgufFile& file, Tokenizer* tok) {
  // Each token's score (llama.cpp reads float32 or int32; all 0 without the key).
  std::vector<float> scores(tok->texts_.size(), 0.0f);
  if (const GgufValue* value = file.Find("tokenizer.ggml.scores"); value != nullptr) {
    const bool numbers = value->type() == GgufValueType::kArray &&
                         (value->element_type() == GgufValueType::kFloat32 || value->element_type() == GgufValueType::kInt32);
    if (!numbers || value->size() < scores.size()) {
      return absl::InvalidArgumentError(absl::StrCat(file.name(), ": tokenizer.ggml.scores is not an array of ",
                                                     scores.size(), " float32 or int32 numbers"));
    }
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = static_cast<float>(value->Element(i).AsDouble());
  }
  tok->spm_ = SpmEncoder(&tok->ids_, std::move(scores), tok->byte_tokens_, tok->unknown_id_);
  return absl::OkStatus();
}

absl::Status Tokenizer::ReadBytePairMerges(const GgufFile& file, Tokenizer* tok) {
  const std::string& name = file.name();
  KILN_ASSIGN_OR_RETURN(GgufValue merges, file.GetArray("tokenizer.ggml.merges", GgufValueType::kString));
  tok->merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    std::string_view merge = merges.Strings()[rank];
    size_t space = merge.size() > 1 ? merge.find(' ', 1) : std::string_view::npos;
    if (space == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": tokenizer.ggml.merges entry ", rank, " ('",
                                                     std::string(merge.substr(0, 64)), "') is not two tokens"));
    }
    std::optional<int32_t> left = tok->Find(merge.substr(0, space));
    std::optional<int32_t> right = tok->Find(merge.substr(space + 1));
    std::optional<int32_t> merged =
        tok->Find(absl::StrCat(std::string(merge.substr(0, space)), std::string(merge.substr(space + 1))));
    // A merge whose parts or result are not in the vocabulary can never apply.
    if (!left || !right || !merged) continue;
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(*left)) << 32) | static_cast<uint32_t>(*right);
    tok->merges_.emplace(key, std::make_pair(static_cast<int32_t>(rank), *merged));
  }
  return absl::OkStatus();
}

std::optional<int32_t> Tokenizer::Find(std::string_view text) const {
  auto it = ids_.find(absl::string_view(text.data(), text.size()));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  return IsValid(id) && end_of_generation_[static_cast<size_t>(id)];
}

void Tokenizer::EncodePiece(std::string_view piece, std::vector<int32_t>* out) const {
  if (pre_.ignore_merges()) {
    std::string symbols;
    for (char c : piece) symbols += Alphabet().symbol[static_cast<uint8_t>(c)];
    if (std::optional<int32_t> whole = Find(symbols)) {
      out->push_back(*whole);
      return;
    }
  }
  const size_t n = piece.size();
  // One symbol per byte. A byte without a symbol token is -1, which no merge involves and
  // which is dropped: llama.cpp drops it (it looks the byte up as text and finds nothing), so
  // SmolLM2's "\x04" gives no token, not the unknown token that Hugging Face writes.
  std::vector<int32_t> ids(n);
  std::vector<int32_t> prev(n), next(n);
  for (size_t i = 0; i < n; ++i) {
    ids[i] = byte_tokens_[static_cast<uint8_t>(piece[i])];
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  struct Candidate {
    int32_t rank;
    int32_t left;      // position of the left symbol
    int32_t left_id;   // ids when the candidate was made, to detect stale entries
    int32_t right_id;
    int32_t merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    int32_t right = next[static_cast<size_t>(left)];
    if (right < 0) return;
    int32_t a = ids[static_cast<size_t>(left)], b = ids[static_cast<size_t>(right)];
    if (a < 0 || b < 0) return;
    auto it = merges_.find((static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b));
    if (it != merges_.end()) queue.push({it->second.first, left, a, b, it->second.second});
  };
  for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int32_t>(i));
  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    const auto left = static_cast<size_t>(c.left);
    const int32_t right = next[left];
    // Stale: the left symbol was merged away (its id changed or it was absorbed) or its
    // right neighbour changed since this candidate was made.
    if (ids[left] != c.left_id || right < 0 || ids[static_cast<size_t>(right)] != c.right_id) continue;
    ids[left] = c.merged;
    ids[static_cast<size_t>(right)] = -2;  // absorbed
    next[left] = next[static_cast<size_t>(right)];
    if (next[left] >= 0) prev[static_cast<size_t>(next[left])] = c.left;
    consider(prev[left]);
    consider(c.left);
  }
  for (int32_t i = 0; i >= 0 && static_cast<size_t>(i) < n; i = next[static_cast<size_t>(i)]) {
    if (ids[static_cast<size_t>(i)] >= 0) out->push_back(ids[static_cast<size_t>(i)]);
  }
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::EncodeSentencePiece(std::string_view text, bool allow_special) const {
  // llama.cpp's split at special tokens: each special token in turn, longest first, at every
  // occurrence in the text fragments left (which can differ from a left-to-right scan where
  // special tokens overlap). A fragment is a token (id >= 0) or text.
  struct Fragment {
    int32_t id;
    std::string_view text;
  };
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({-1, text});
  std::vector<Fragment> next;
  for (const Special& s : specials_) {
    if (s.control && !allow_special) continue;
    if (text.find(s.text) == std::string_view::npos) continue;  // cheap for the many absent ones
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.id >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (size_t at; (at = rest.find(s.text)) != std::string_view::npos;) {
        if (at > 0) next.push_back({-1, rest.substr(0, at)});
        next.push_back({s.id, {}});
        rest.remove_prefix(at + s.text.size());
      }
      if (!rest.empty()) next.push_back({-1, rest});
    }
    fragments.swap(next);
  }

  std::vector<int32_t> out;
  out.reserve(text.size() / 2 + 4);
  std::string escaped;
  bool after_special = true;  // the start of the text counts as following a special token
  for (const Fragment& f : fragments) {
    if (f.id >= 0) {
      out.push_back(f.id);
      after_special = true;
      continue;
    }
    escaped.clear();
    if (add_space_prefix_ && after_special) escaped = kSpmSpace;
    for (char c : f.text) {
      if (c == ' ') {
        escaped += kSpmSpace;
      } else {
        escaped.push_back(c);
      }
    }
    spm_.Encode(escaped, &out);
    after_special = false;
  }
  return out;
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text, bool allow_special) const {
  if (sentencepiece_) return EncodeSentencePiece(text, allow_special);
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  std::vector<std::string_view> pieces;
  auto encode_plain = [&](std::string_view plain) -> absl::Status {
    if (plain.empty()) return absl::OkStatus();
    pieces.clear();
    KILN_RETURN_IF_ERROR(pre_.Split(plain, &pieces));
    for (std::string_view piece : pieces) EncodePiece(piece, &out);
    return absl::OkStatus();
  };
  // Special tokens first: scan for the first byte of any of them.
  bool first_byte[256] = {};
  bool any = false;
  for (const Special& s : specials_) {
    if (s.control && !allow_special) continue;
    first_byte[static_cast<uint8_t>(s.text[0])] = true;
    any = true;
  }
  size_t plain_start = 0;
  for (size_t i = 0; any && i < text.size(); ++i) {
    if (!first_byte[static_cast<uint8_t>(text[i])]) continue;
    for (const Special& s : specials_) {
      if (s.control && !allow_special) continue;
      if (text.compare(i, s.text.size(), s.text) != 0) continue;
      KILN_RETURN_IF_ERROR(encode_plain(text.substr(plain_start, i - plain_start)));
      out.push_back(s.id);
      i += s.text.size() - 1;
      plain_start = i + 1;
      break;
    }
  }
  KILN_RETURN_IF_ERROR(encode_plain(text.substr(plain_start)));
  return out;
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::EncodeChatPrompt(std::string_view text) const {
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, Encode(text, /*allow_special=*/true));
  if (add_bos_ && bos_id_ >= 0 && (ids.empty() || ids.front() != bos_id_)) ids.insert(ids.begin(), bos_id_);
  if (add_eos_ && eos_id_ >= 0 && (ids.empty() || ids.back() != eos_id_)) ids.push_back(eos_id_);
  return ids;
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::EncodePrompt(std::string_view text) const {
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, Encode(text, /*allow_special=*/true));
  if (add_bos_ && bos_id_ >= 0) ids.insert(ids.begin(), bos_id_);
  if (add_eos_ && eos_id_ >= 0) ids.push_back(eos_id_);
  return ids;
}

std::string_view Tokenizer::TokenBytes(int32_t id, bool skip_special) const {
  const auto i = static_cast<size_t>(id);
  if (skip_special && (types_[i] == TokenType::kControl || types_[i] == TokenType::kUnknown)) return {};
  return bytes_[i];
}

absl::StatusOr<std::string> Tokenizer::Decode(absl::Span<const int32_t> ids, bool skip_special) const {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (!IsValid(id)) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", id, " is outside the vocabulary (", vocab_size(), " tokens)"));
    }
    std::string_view bytes = TokenBytes(id, skip_special);
    // llama.cpp's detokenizer drops the space that encoding put before the first fragment
    // (one space of the first token, whatever the token).
    if (i == 0 && sentencepiece_ && add_space_prefix_ && !bytes.empty() && bytes[0] == ' ') {
      bytes.remove_prefix(1);
    }
    text += bytes;
  }
  return text;
}

}  // namespace kiln::serving
