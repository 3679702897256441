#include "serving/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "absl/strings/str_cat.h"
#include "serving/utf8.h"
#include "support/status_macros.h"

namespace kiln::serving {
namespace {

// The regexes of the original tokenizer.json files (Hugging Face tokenizers' ByteLevel for
// GPT-2; Llama 3's and Qwen2's Split patterns).
constexpr const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kEachDigit = R"(\p{N})";

struct Scheme {
  const char* names[8];
  std::vector<const char*> stages;
  bool ignore_merges;
};

const std::vector<Scheme>& Schemes() {
  static const auto* schemes = new std::vector<Scheme>{
      {{"gpt2", "gpt-2"}, {kGpt2}, false},
      {{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"}, {kEachDigit, kGpt2}, false},
      {{"llama-bpe", "llama3"}, {kLlama3}, true},
      {{"qwen2", "deepseek-r1-qwen"}, {kQwen2}, false},
  };
  return *schemes;
}

}  // namespace

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

absl::StatusOr<PreTokenizer> PreTokenizer::ForName(std::string_view name) {
  std::string known;
  for (const Scheme& scheme : Schemes()) {
    for (const char* scheme_name : scheme.names) {
      if (scheme_name == nullptr) break;
      absl::StrAppend(&known, known.empty() ? "" : ", ", scheme_name);
      if (name != scheme_name) continue;
      PreTokenizer pre;
      pre.name_ = std::string(name);
      pre.ignore_merges_ = scheme.ignore_merges;
      for (const char* pattern : scheme.stages) {
        int error = 0;
        PCRE2_SIZE offset = 0;
        auto regex = std::make_shared<Regex>();
        regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                                    PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
        if (regex->code == nullptr) {
          PCRE2_UCHAR message[256];
          pcre2_get_error_message(error, message, sizeof(message));
          return absl::InternalError(absl::StrCat("pre-tokenizer '", std::string(name), "': PCRE2 cannot compile its regex at ",
                                                  offset, ": ", reinterpret_cast<const char*>(message)));
        }
        // JIT is an optimization only: without it (e.g. a system that forbids executable
        // memory) the interpreter matches the same way.
        (void)pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE);
        pre.stages_.push_back(std::move(regex));
      }
      return pre;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown pre-tokenizer '", std::string(name), "' (tokenizer.ggml.pre); Kiln knows ", known));
}

namespace {

// Splits one valid UTF-8 piece with one regex, appending matches and gaps.
absl::Status SplitValid(const pcre2_code* code, pcre2_match_data* match, std::string_view text,
                        std::vector<std::string_view>* out) {
  size_t pos = 0, gap_start = 0;
  while (pos < text.size()) {
    int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos, PCRE2_NO_UTF_CHECK, match,
                         nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      return absl::ResourceExhaustedError(
          absl::StrCat("pre-tokenizer: PCRE2 failed: ", reinterpret_cast<const char*>(message)));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    size_t start = ovector[0], end = ovector[1];
    if (end == start) {  // an empty match: step over one character
      size_t n = Utf8CharLength(text.substr(end, 4));
      pos = end + (n == 0 ? 1 : n);
      continue;
    }
    if (start > gap_start) out->push_back(text.substr(gap_start, start - gap_start));
    out->push_back(text.substr(start, end - start));
    pos = gap_start = end;
  }
  if (gap_start < text.size()) out->push_back(text.substr(gap_start));
  return absl::OkStatus();
}

}  // namespace

absl::Status PreTokenizer::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  // Valid runs and single invalid bytes.
  std::vector<std::string_view> current;
  std::vector<bool> valid;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = ValidUtf8Prefix(text.substr(pos));
    if (n > 0) {
      current.push_back(text.substr(pos, n));
      valid.push_back(true);
      pos += n;
    } else {
      current.push_back(text.substr(pos, 1));
      valid.push_back(false);
      ++pos;
    }
  }
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(nullptr, &pcre2_match_data_free);
  std::vector<std::string_view> next;
  std::vector<bool> next_valid;
  for (const auto& stage : stages_) {
    match.reset(pcre2_match_data_create_from_pattern(stage->code, nullptr));
    if (match == nullptr) return absl::ResourceExhaustedError("pre-tokenizer: out of memory");
    next.clear();
    next_valid.clear();
    for (size_t i = 0; i < current.size(); ++i) {
      if (!valid[i]) {
        next.push_back(current[i]);
        next_valid.push_back(false);
        continue;
      }
      KILN_RETURN_IF_ERROR(SplitValid(stage->code, match.get(), current[i], &next));
      next_valid.resize(next.size(), true);
    }
    current.swap(next);
    valid.swap(next_valid);
  }
  pieces->insert(pieces->end(), current.begin(), current.end());
  return absl::OkStatus();
}

}  // namespace kiln::serving
