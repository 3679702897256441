// LlamaConfig from GGUF metadata: the bundled model's hyperparameters (values printed by the
// `gguf` Python package from the same file), defaults for optional keys, and clear errors.
#include "formats/llama_config.h"

#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/formats/gguf_writer.h"
#include "tests/model_path.h"

namespace kiln::formats {
namespace {

using ::testing::HasSubstr;
using namespace kiln::formats::testing;

TEST(LlamaConfig, BundledModel) {
  KILN_REQUIRE_BUNDLED_MODEL(path);
  absl::StatusOr<std::shared_ptr<const GgufFile>> file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<LlamaConfig> c = LlamaConfig::FromGguf(**file);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->architecture, "llama");
  EXPECT_EQ(c->num_layers, 30);
  EXPECT_EQ(c->hidden_size, 576);
  EXPECT_EQ(c->ffn_size, 1536);
  EXPECT_EQ(c->num_heads, 9);
  EXPECT_EQ(c->num_kv_heads, 3);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->vocab_size, 49152);
  EXPECT_EQ(c->context_length, 8192);
  EXPECT_EQ(c->rope_dims, 64);
  EXPECT_DOUBLE_EQ(c->rope_theta, 100000.0);
  EXPECT_NEAR(c->rms_norm_epsilon, 1e-5, 1e-12);
  EXPECT_EQ(c->rope_mode, "normal");
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_FALSE(c->qkv_bias);
}

GgufWriter Minimal(const std::string& arch, uint32_t heads, uint32_t kv_heads) {
  GgufWriter w;
  w.Add("general.architecture", Str(arch))
      .Add(arch + ".block_count", U32(2))
      .Add(arch + ".embedding_length", U32(64))
      .Add(arch + ".feed_forward_length", U32(128))
      .Add(arch + ".attention.head_count", U32(heads))
      .Add(arch + ".attention.head_count_kv", U32(kv_heads))
      .Add(arch + ".context_length", U32(256))
      .Add(arch + ".attention.layer_norm_rms_epsilon", F32(1e-6f));
  w.AddTensor("token_embd.weight", 0, {64, 10}, std::string(64 * 10 * 4, '\0'));
  return w;
}

TEST(LlamaConfig, DefaultsAndQwen2) {
  std::string bytes = Minimal("qwen2", 4, 2).Build();
  absl::StatusOr<std::shared_ptr<const GgufFile>> file = GgufFile::Parse(bytes, "m.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<LlamaConfig> c = LlamaConfig::FromGguf(**file);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->rope_dims, 16);
  EXPECT_DOUBLE_EQ(c->rope_theta, 10000.0);
  EXPECT_EQ(c->rope_mode, "neox");
  EXPECT_EQ(c->vocab_size, 10);
  EXPECT_TRUE(c->tied_embeddings);
}

TEST(LlamaConfig, ErrorsNameTheKey) {
  auto error = [](const std::string& bytes) {
    absl::StatusOr<std::shared_ptr<const GgufFile>> file = GgufFile::Parse(bytes, "m.gguf");
    if (!file.ok()) return std::string(file.status().message());
    absl::StatusOr<LlamaConfig> c = LlamaConfig::FromGguf(**file);
    return c.ok() ? std::string("accepted") : std::string(c.status().message());
  };
  EXPECT_THAT(error(Minimal("gpt2", 4, 2).Build()), HasSubstr("architecture 'gpt2' is not supported"));
  EXPECT_THAT(error(Minimal("llama", 4, 3).Build()), HasSubstr("4 attention heads are not a multiple of 3"));
  EXPECT_THAT(error(Minimal("llama", 0, 0).Build()), HasSubstr("'llama.attention.head_count' is 0"));
  GgufWriter no_embedding;
  no_embedding.Add("general.architecture", Str("llama"));
  EXPECT_THAT(error(no_embedding.Build()), HasSubstr("llama.block_count"));
}

// Values found by mutating the bundled model's metadata (hunt17) that compiled and ran a
// wrong model without a word: an infinite epsilon or RoPE base, a block_count below the
// file's layers.
TEST(LlamaConfig, ValuesThatWouldRunAWrongModelAreErrors) {
  auto error = [](GgufWriter w) {
    std::string bytes = w.Build();
    absl::StatusOr<std::shared_ptr<const GgufFile>> file = GgufFile::Parse(bytes, "m.gguf");
    if (!file.ok()) return std::string(file.status().message());
    absl::StatusOr<LlamaConfig> c = LlamaConfig::FromGguf(**file);
    return c.ok() ? std::string("accepted") : std::string(c.status().message());
  };
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_THAT(error(Minimal("llama", 4, 2).Add("llama.rope.freq_base", F32(inf))),
              HasSubstr("the RMS-norm epsilon (1e-06) and the RoPE base (inf) must be positive and finite"));
  GgufWriter finite_base = Minimal("llama", 4, 2);
  finite_base.Add("llama.rope.freq_base", F32(10000.0f));
  EXPECT_EQ(error(finite_base), "accepted");
  GgufWriter extra_layer = Minimal("llama", 4, 2);
  extra_layer.AddTensor("blk.2.attn_norm.weight", 0, {64}, std::string(64 * 4, '\0'));
  EXPECT_THAT(error(extra_layer), HasSubstr("key 'llama.block_count' is 2, but the file has tensors of layer 2 (blk.2.*)"));
  GgufWriter last_layer = Minimal("llama", 4, 2);
  last_layer.AddTensor("blk.1.attn_norm.weight", 0, {64}, std::string(64 * 4, '\0'));
  EXPECT_EQ(error(last_layer), "accepted");
}

}  // namespace
}  // namespace kiln::formats
