#include "formats/llama_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace kiln::formats {

namespace {

absl::StatusOr<int64_t> IntegerOr(const GgufFile& file, const std::string& key, int64_t fallback) {
  if (file.Find(key) == nullptr) return fallback;
  return file.GetInteger(key);
}

absl::StatusOr<double> FloatOr(const GgufFile& file, const std::string& key, double fallback) {
  if (file.Find(key) == nullptr) return fallback;
  return file.GetFloat(key);
}

absl::Status Invalid(const GgufFile& file, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(file.name(), ": ", what));
}

}  // namespace

absl::StatusOr<LlamaConfig> LlamaConfig::FromGguf(const GgufFile& file) {
  LlamaConfig c;
  KILN_ASSIGN_OR_RETURN(std::string_view arch, file.GetString("general.architecture"));
  c.architecture = std::string(arch);
  if (c.architecture == "llama") {
    c.rope_mode = "normal";
  } else if (c.architecture == "qwen2") {
    c.rope_mode = "neox";
  } else {
    return Invalid(file, absl::StrCat("architecture '", c.architecture,
                                      "' is not supported (supported: llama, qwen2)"));
  }
  const std::string p = c.architecture + ".";
  KILN_ASSIGN_OR_RETURN(c.num_layers, file.GetInteger(p + "block_count"));
  KILN_ASSIGN_OR_RETURN(c.hidden_size, file.GetInteger(p + "embedding_length"));
  KILN_ASSIGN_OR_RETURN(c.ffn_size, file.GetInteger(p + "feed_forward_length"));
  KILN_ASSIGN_OR_RETURN(c.num_heads, file.GetInteger(p + "attention.head_count"));
  KILN_ASSIGN_OR_RETURN(c.num_kv_heads, IntegerOr(file, p + "attention.head_count_kv", c.num_heads));
  KILN_ASSIGN_OR_RETURN(c.context_length, file.GetInteger(p + "context_length"));
  KILN_ASSIGN_OR_RETURN(c.rms_norm_epsilon, file.GetFloat(p + "attention.layer_norm_rms_epsilon"));
  KILN_ASSIGN_OR_RETURN(c.rope_theta, FloatOr(file, p + "rope.freq_base", 10000.0));
  for (auto [name, value] : {std::pair{"block_count", c.num_layers}, {"embedding_length", c.hidden_size},
                             {"feed_forward_length", c.ffn_size}, {"attention.head_count", c.num_heads},
                             {"attention.head_count_kv", c.num_kv_heads}, {"context_length", c.context_length}}) {
    if (value <= 0 || value > (int64_t{1} << 24)) {
      return Invalid(file, absl::StrCat("key '", p, name, "' is ", value, ", expected 1 to 16777216"));
    }
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return Invalid(file, absl::StrCat(c.num_heads, " attention heads are not a multiple of ", c.num_kv_heads,
                                      " key/value heads"));
  }
  KILN_ASSIGN_OR_RETURN(c.head_dim, IntegerOr(file, p + "attention.key_length", c.hidden_size / c.num_heads));
  KILN_ASSIGN_OR_RETURN(c.rope_dims, IntegerOr(file, p + "rope.dimension_count", c.head_dim));
  if (c.head_dim <= 0 || c.head_dim % 2 != 0 || c.rope_dims <= 0 || c.rope_dims > c.head_dim || c.rope_dims % 2 != 0) {
    return Invalid(file, absl::StrCat("head dim ", c.head_dim, " and rotary dims ", c.rope_dims,
                                      ": both must be even, rotary dims at most the head dim"));
  }
  // An infinite epsilon zeroes every normalized row and an infinite base stops the rotation:
  // a model that runs and says nonsense.
  if (!(c.rms_norm_epsilon > 0) || !(c.rope_theta > 0) || std::isinf(c.rms_norm_epsilon) || std::isinf(c.rope_theta)) {
    return Invalid(file, absl::StrCat("the RMS-norm epsilon (", c.rms_norm_epsilon, ") and the RoPE base (", c.rope_theta,
                                      ") must be positive and finite"));
  }
  // A block_count below the file's layers would run a truncated model without a word.
  if (file.FindTensor(absl::StrCat("blk.", c.num_layers, ".attn_norm.weight")) != nullptr) {
    return Invalid(file, absl::StrCat("key '", p, "block_count' is ", c.num_layers, ", but the file has tensors of layer ",
                                      c.num_layers, " (blk.", c.num_layers, ".*)"));
  }
  KILN_ASSIGN_OR_RETURN(const GgufTensor* embed, file.GetTensor("token_embd.weight"));
  if (embed->shape.size() != 2 || embed->shape[1] != c.hidden_size) {
    return Invalid(file, absl::StrCat("token_embd.weight must be [vocab, ", c.hidden_size, "]"));
  }
  c.vocab_size = embed->shape[0];
  c.tied_embeddings = file.FindTensor("output.weight") == nullptr;
  c.qkv_bias = file.FindTensor("blk.0.attn_q.bias") != nullptr;
  return c;
}

std::string LlamaConfig::Summary() const {
  return absl::StrCat(architecture, ": ", num_layers, " layers, hidden ", hidden_size, ", ", num_heads, " heads (",
                      num_kv_heads, " kv) x ", head_dim, ", ffn ", ffn_size, ", vocab ", vocab_size,
                      tied_embeddings ? " (tied)" : "", ", context ", context_length);
}

}  // namespace kiln::formats
