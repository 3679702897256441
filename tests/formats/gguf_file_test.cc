#include "formats/gguf_file.h"

#include <cmath>
#include <cstring>
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/file_io.h"
#include "tests/formats/gguf_writer.h"
#include "tests/model_path.h"

namespace kiln::formats {
namespace {

using ::testing::HasSubstr;
using namespace ::kiln::formats::testing;

absl::StatusOr<std::shared_ptr<const GgufFile>> ParseString(const std::string& bytes) {
  auto owner = std::make_shared<std::string>(bytes);
  return GgufFile::Parse(*owner, "test.gguf", owner);
}

std::string ErrorOf(const std::string& bytes) {
  auto file = ParseString(bytes);
  if (file.ok()) return "accepted";
  return std::string(file.status().message());
}

// Values read from the bundled file with the `gguf` Python package (an independent reader).
TEST(GgufFile, BundledModelMetadata) {
  KILN_REQUIRE_BUNDLED_MODEL(path);
  absl::StatusOr<std::shared_ptr<const GgufFile>> opened = GgufFile::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status();
  const GgufFile& file = **opened;
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.alignment(), 32u);
  EXPECT_EQ(file.file_size(), 98362432u);
  EXPECT_EQ(file.metadata().size(), 33u);
  EXPECT_EQ(*file.GetString("general.architecture"), "llama");
  EXPECT_EQ(*file.GetUint32("llama.block_count"), 30u);
  EXPECT_EQ(*file.GetUint32("llama.context_length"), 8192u);
  EXPECT_EQ(*file.GetUint32("llama.embedding_length"), 576u);
  EXPECT_EQ(*file.GetUint32("llama.feed_forward_length"), 1536u);
  EXPECT_EQ(*file.GetUint32("llama.attention.head_count"), 9u);
  EXPECT_EQ(*file.GetUint32("llama.attention.head_count_kv"), 3u);
  EXPECT_EQ(*file.GetUint32("llama.rope.dimension_count"), 64u);
  EXPECT_EQ(*file.GetUint32("llama.vocab_size"), 49152u);
  EXPECT_EQ(*file.GetFloat32("llama.rope.freq_base"), 100000.0f);
  EXPECT_FLOAT_EQ(*file.GetFloat32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_EQ(*file.GetString("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(*file.GetString("tokenizer.ggml.pre"), "smollm");
  EXPECT_EQ(*file.GetInteger("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(*file.GetInteger("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_FALSE(*file.GetBool("tokenizer.ggml.add_bos_token"));

  absl::StatusOr<GgufValue> tokens = file.GetArray("tokenizer.ggml.tokens", GgufValueType::kString);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 49152u);
  EXPECT_EQ(tokens->Strings()[0], "<|endoftext|>");
  EXPECT_EQ(tokens->Strings()[1], "<|im_start|>");
  absl::StatusOr<GgufValue> merges = file.GetArray("tokenizer.ggml.merges", GgufValueType::kString);
  ASSERT_TRUE(merges.ok());
  EXPECT_EQ(merges->size(), 48900u);
  EXPECT_EQ(merges->Strings()[0], "\xC4\xA0 t");  // "Ġ t"
  absl::StatusOr<GgufValue> types = file.GetArray("tokenizer.ggml.token_type", GgufValueType::kInt32);
  ASSERT_TRUE(types.ok());
  EXPECT_EQ(*types->Element(16).AsInt64(), 3);  // <empty_output>, a control token
  EXPECT_EQ(*types->Element(17).AsInt64(), 1);
  EXPECT_THAT(std::string(*file.GetString("tokenizer.chat_template")), HasSubstr("<|im_start|>"));

  // Typed getters name the key and both types.
  EXPECT_EQ(file.GetString("llama.block_count").status().message(),
            path + ": key 'llama.block_count' has type uint32, expected string");
  EXPECT_EQ(file.GetUint32("llama.no_such_key").status().message(), path + ": key 'llama.no_such_key' is missing");
  EXPECT_THAT(std::string(file.GetArray("tokenizer.ggml.tokens", GgufValueType::kInt32).status().message()),
              HasSubstr("has type array of string, expected array of int32"));
}

TEST(GgufFile, BundledModelTensors) {
  KILN_REQUIRE_BUNDLED_MODEL(path);
  absl::StatusOr<std::shared_ptr<const GgufFile>> opened = GgufFile::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status();
  const GgufFile& file = **opened;
  ASSERT_EQ(file.tensors().size(), 272u);
  EXPECT_EQ(file.data_offset(), 1785664u);
  const GgufTensor* embed = file.FindTensor("token_embd.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->type, GgmlType::kQ8_0);
  EXPECT_EQ(embed->shape, (std::vector<int64_t>{49152, 576}));
  EXPECT_EQ(embed->num_elements, 49152 * 576);
  EXPECT_EQ(embed->nbytes, 30081024u);
  EXPECT_EQ(embed->offset, 1785664u);
  const GgufTensor* q = *file.GetTensor("blk.0.attn_q.weight");
  EXPECT_EQ(q->type, GgmlType::kQ4_1);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{576, 576}));
  EXPECT_EQ(q->nbytes, 207360u);
  EXPECT_EQ(q->offset, 1785664u + 33806656u - 1785664u);
  const GgufTensor* down = *file.GetTensor("blk.0.ffn_down.weight");
  EXPECT_EQ(down->shape, (std::vector<int64_t>{576, 1536}));
  EXPECT_EQ(down->nbytes, 552960u);
  const GgufTensor* norm = *file.GetTensor("blk.29.ffn_norm.weight");
  EXPECT_EQ(norm->type, GgmlType::kF32);
  EXPECT_EQ(norm->shape, (std::vector<int64_t>{576}));
  EXPECT_EQ(file.GetTensor("output.weight").status().message(), path + ": tensor 'output.weight' is missing");

  int q4_1 = 0, f32 = 0, q8_0 = 0;
  for (const GgufTensor& t : file.tensors()) {
    q4_1 += t.type == GgmlType::kQ4_1;
    f32 += t.type == GgmlType::kF32;
    q8_0 += t.type == GgmlType::kQ8_0;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 32, 0u) << t.name;
  }
  EXPECT_EQ(q4_1, 210);
  EXPECT_EQ(f32, 61);
  EXPECT_EQ(q8_0, 1);
  // The RMS-norm weights are ordinary float32 numbers.
  float first;
  std::memcpy(&first, norm->data, 4);
  EXPECT_TRUE(std::isfinite(first));
  EXPECT_GT(std::fabs(first), 0.0f);
}

TEST(GgufFile, TensorDataPointsIntoTheMapping) {
  GgufWriter writer;
  std::string data(64, '\0');
  for (int i = 0; i < 64; ++i) data[i] = static_cast<char>(i);
  writer.Add("general.architecture", Str("test")).AddTensor("w", 0, {4, 4}, data);
  std::string path = ::testing::TempDir() + "/mapped_" + std::to_string(::getpid()) + ".gguf";
  ASSERT_TRUE(support::WriteFile(path, writer.Build()).ok());
  absl::StatusOr<std::shared_ptr<const GgufFile>> file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  std::filesystem::remove(path);  // the mapping outlives the name
  const GgufTensor& w = (*file)->tensors()[0];
  EXPECT_EQ(w.shape, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(w.nbytes, 64u);
  EXPECT_EQ(std::memcmp(w.data, data.data(), 64), 0);
  EXPECT_EQ(GgufFile::Open("/no/such/file.gguf").status().code(), absl::StatusCode::kNotFound);
}

class GgufVersions : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GgufVersions, EveryValueType) {
  GgufWriter writer(GetParam());
  writer.Add("u8", U8(200))
      .Add("i8", I8(-100))
      .Add("u16", U16(60000))
      .Add("i16", I16(-30000))
      .Add("u32", U32(4000000000u))
      .Add("i32", I32(-2000000000))
      .Add("f32", F32(1.5f))
      .Add("bool", Bool(true))
      .Add("str", Str("h\xC3\xA9llo"))
      .Add("u64", U64(18000000000000000000ull))
      .Add("i64", I64(-9000000000000000000ll))
      .Add("f64", F64(-2.25))
      .Add("empty", Str(""))
      .Add("ints", Array(5, {I32(1), I32(-2), I32(3)}))
      .Add("strings", StrArray({"a", "", "<|im_start|>"}))
      .Add("bools", Array(7, {Bool(false), Bool(true)}))
      .Add("none", Array(12, {}))
      .Add("nested", Array(9, {Array(4, {U32(7)}), StrArray({"x", "y"}), Array(9, {Array(6, {F32(0.5f)})})}));
  absl::StatusOr<std::shared_ptr<const GgufFile>> parsed = ParseString(writer.Build());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const GgufFile& file = **parsed;
  EXPECT_EQ(file.version(), GetParam());
  EXPECT_EQ(file.metadata().size(), 18u);
  EXPECT_EQ(*file.GetInteger("u8"), 200);
  EXPECT_EQ(*file.GetInteger("i8"), -100);
  EXPECT_EQ(*file.GetInteger("u16"), 60000);
  EXPECT_EQ(*file.GetInteger("i16"), -30000);
  EXPECT_EQ(*file.GetUint32("u32"), 4000000000u);
  EXPECT_EQ(*file.GetInt32("i32"), -2000000000);
  EXPECT_EQ(*file.GetFloat32("f32"), 1.5f);
  EXPECT_TRUE(*file.GetBool("bool"));
  EXPECT_EQ(*file.GetString("str"), "h\xC3\xA9llo");
  EXPECT_EQ(*file.GetUint64("u64"), 18000000000000000000ull);
  EXPECT_EQ(std::string(file.GetInteger("u64").status().message()),
            "test.gguf: key 'u64' is 18000000000000000000, more than 2^63 - 1");
  EXPECT_EQ(*file.GetInteger("i64"), -9000000000000000000ll);
  EXPECT_EQ(*file.GetFloat("f64"), -2.25);
  EXPECT_EQ(*file.GetFloat("f32"), 1.5);
  EXPECT_EQ(*file.GetString("empty"), "");

  GgufValue ints = *file.GetArray("ints", GgufValueType::kInt32);
  ASSERT_EQ(ints.size(), 3u);
  EXPECT_EQ(*ints.Element(1).AsInt64(), -2);
  EXPECT_EQ(ints.DebugString(), "[3 x int32: 1, -2, 3]");
  GgufValue strings = *file.GetArray("strings", GgufValueType::kString);
  EXPECT_EQ(strings.Strings(), (std::vector<std::string_view>{"a", "", "<|im_start|>"}));
  EXPECT_TRUE(file.GetArray("bools", GgufValueType::kBool)->Element(1).AsBool());
  EXPECT_EQ(file.GetArray("none", GgufValueType::kFloat64)->size(), 0u);
  GgufValue nested = *file.GetArray("nested", GgufValueType::kArray);
  ASSERT_EQ(nested.size(), 3u);
  EXPECT_EQ(nested.Element(0).element_type(), GgufValueType::kUint32);
  EXPECT_EQ(*nested.Element(0).Element(0).AsInt64(), 7);
  EXPECT_EQ(nested.Element(1).Strings()[1], "y");
  EXPECT_EQ(nested.Element(2).Element(0).Element(0).AsDouble(), 0.5);
  EXPECT_EQ(nested.DebugString(), "[3 x array: [1 x uint32: 7], [2 x string: \"x\", \"y\"], [1 x array: [1 x float32: 0.5]]]");
  EXPECT_EQ(file.Find("nothing"), nullptr);
  EXPECT_EQ(std::string(file.GetInteger("str").status().message()),
            "test.gguf: key 'str' has type string, expected an integer");
  EXPECT_EQ(std::string(file.GetFloat("u8").status().message()), "test.gguf: key 'u8' has type uint8, expected a float");
}

TEST_P(GgufVersions, TensorsOfEveryBasicTypeAndAlignment) {
  for (uint64_t alignment : {32u, 64u, 1u}) {
    GgufWriter writer(GetParam(), alignment);
    if (alignment != 32) writer.Add("general.alignment", U32(static_cast<uint32_t>(alignment)));
    writer.AddTensor("f32", 0, {3, 2}, std::string(24, '\1'))
        .AddTensor("f16", 1, {5}, std::string(10, '\2'))
        .AddTensor("bf16", 30, {2, 2, 2, 2}, std::string(32, '\3'))
        .AddTensor("q8_0", 8, {64, 3}, std::string(6 * 34, '\4'))
        .AddTensor("q4_0", 2, {32}, std::string(18, '\5'))
        .AddTensor("q4_1", 3, {96, 2}, std::string(6 * 20, '\6'))
        .AddTensor("q4_k", 12, {256}, std::string(144, '\7'))
        .AddTensor("q6_k", 14, {512}, std::string(420, '\x08'))
        .AddTensor("empty", 0, {0, 4}, "");
    std::string bytes = writer.Build();
    absl::StatusOr<std::shared_ptr<const GgufFile>> parsed = ParseString(bytes);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    const GgufFile& file = **parsed;
    EXPECT_EQ(file.alignment(), alignment);
    struct Expected {
      const char* name;
      GgmlType type;
      std::vector<int64_t> shape;
      uint64_t nbytes;
      char fill;
    };
    std::vector<Expected> expected = {
        {"f32", GgmlType::kF32, {2, 3}, 24, '\1'},        {"f16", GgmlType::kF16, {5}, 10, '\2'},
        {"bf16", GgmlType::kBF16, {2, 2, 2, 2}, 32, '\3'}, {"q8_0", GgmlType::kQ8_0, {3, 64}, 204, '\4'},
        {"q4_0", GgmlType::kQ4_0, {32}, 18, '\5'},       {"q4_1", GgmlType::kQ4_1, {2, 96}, 120, '\6'},
        {"q4_k", GgmlType::kQ4_K, {256}, 144, '\7'},     {"q6_k", GgmlType::kQ6_K, {512}, 420, '\x08'},
        {"empty", GgmlType::kF32, {4, 0}, 0, 0},
    };
    ASSERT_EQ(file.tensors().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const GgufTensor& t = file.tensors()[i];
      EXPECT_EQ(t.name, expected[i].name);
      EXPECT_EQ(t.type, expected[i].type);
      EXPECT_EQ(t.shape, expected[i].shape);
      EXPECT_EQ(t.nbytes, expected[i].nbytes);
      EXPECT_EQ(t.offset % alignment, 0u);
      EXPECT_EQ(t.offset - file.data_offset() + bytes.data() - bytes.data(), t.offset - file.data_offset());
      if (t.nbytes > 0) {
        EXPECT_EQ(t.data[0], expected[i].fill) << t.name;
        EXPECT_EQ(t.data[t.nbytes - 1], expected[i].fill) << t.name;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(V2AndV3, GgufVersions, ::testing::Values(2u, 3u));

TEST(GgmlType, BlockLayouts) {
  EXPECT_EQ(GgmlTypeLayout(GgmlType::kQ4_1).block_bytes, 20);
  EXPECT_EQ(GgmlTypeLayout(GgmlType::kQ4_0).block_bytes, 18);
  EXPECT_EQ(GgmlTypeLayout(GgmlType::kQ8_0).block_bytes, 34);
  EXPECT_EQ(GgmlTypeLayout(GgmlType::kQ6_K).block_size, 256);
  EXPECT_EQ(GgmlTypeLayout(GgmlType::kBF16).name, "bf16");
  EXPECT_FALSE(FindGgmlType(4).has_value());  // Q4_2, retired by ggml
  EXPECT_FALSE(FindGgmlType(1000).has_value());
}

std::string WithTensor(uint32_t type, std::vector<uint64_t> dims, uint64_t data_bytes) {
  GgufWriter writer;
  writer.AddTensor("blk.0.attn_q.weight", type, dims, std::string(data_bytes, '\0'));
  return writer.Build();
}

TEST(GgufFile, BadFilesAreRefusedNamingTheField) {
  EXPECT_EQ(ErrorOf(""), "test.gguf: header: magic at offset 0 needs 4 bytes but the file ends at 0 bytes (truncated?)");
  EXPECT_EQ(ErrorOf("GGML\3\0\0\0"), "test.gguf: not a GGUF file (magic 'GGML', expected 'GGUF')");
  EXPECT_EQ(ErrorOf(GgufWriter(1).Build()), "test.gguf: header: GGUF version 1 is not supported (versions 2 and 3 are)");
  EXPECT_EQ(ErrorOf(GgufWriter(0x03000000).Build()), "test.gguf: header: big-endian GGUF files are not supported");
  EXPECT_EQ(ErrorOf(GgufWriter(7).Build()), "test.gguf: header: unsupported GGUF version 7 (versions 2 and 3 are)");

  // Counts larger than the file could hold.
  std::string header = "GGUF" + LittleEndian<uint32_t>(3) + LittleEndian<uint64_t>(0) + LittleEndian<uint64_t>(1ull << 60);
  EXPECT_EQ(ErrorOf(header + std::string(100, '\0')),
            "test.gguf: header: metadata count 1152921504606846976 cannot fit in the 100 bytes after the header");
  header = "GGUF" + LittleEndian<uint32_t>(3) + LittleEndian<uint64_t>(~0ull) + LittleEndian<uint64_t>(0);
  EXPECT_THAT(ErrorOf(header), HasSubstr("header: tensor count 18446744073709551615 cannot fit"));

  // A string length past the end.
  std::string bad_key = "GGUF" + LittleEndian<uint32_t>(3) + LittleEndian<uint64_t>(0) + LittleEndian<uint64_t>(1) +
                        LittleEndian<uint64_t>(1ull << 40) + "abcde";
  EXPECT_EQ(ErrorOf(bad_key),
            "test.gguf: metadata 0: key of 1099511627776 bytes at offset 32 runs past the end of the file (37 bytes)");

  GgufWriter w1;
  w1.Add("llama.block_count", {99, LittleEndian<uint32_t>(1)});
  EXPECT_EQ(ErrorOf(w1.Build()), "test.gguf: metadata 0 ('llama.block_count'): unknown value type 99");
  GgufWriter w2;
  w2.Add("a", U8(1)).Add("b", U8(2)).Add("a", U8(3));
  EXPECT_EQ(ErrorOf(w2.Build()), "test.gguf: metadata 2 ('a'): the key appears twice (first as metadata 0)");
  GgufWriter w3;
  w3.Add("tokens", {9, LittleEndian<uint32_t>(8) + LittleEndian<uint64_t>(1ull << 62)});
  EXPECT_THAT(ErrorOf(w3.Build()), HasSubstr("metadata 0 ('tokens'): array of 4611686018427387904 string at offset"));
  GgufWriter w4;
  w4.Add("tokens", {9, LittleEndian<uint32_t>(8) + LittleEndian<uint64_t>(2) + GgufString("ok") +
                           LittleEndian<uint64_t>(1000)});
  EXPECT_THAT(ErrorOf(w4.Build()), HasSubstr("metadata 0 ('tokens'): string 1 of 1000 bytes at offset"));
  RawValue deep = U8(1);
  for (int i = 0; i < 9; ++i) deep = Array(deep.type, {deep});
  GgufWriter w5;
  w5.Add("deep", deep);
  EXPECT_EQ(ErrorOf(w5.Build()), "test.gguf: metadata 0 ('deep'): arrays nested more than 8 deep");
  GgufWriter w6;
  w6.Add("general.alignment", U32(48));
  EXPECT_EQ(ErrorOf(w6.Build()), "test.gguf: metadata 'general.alignment': is 48, not a power of two");
  GgufWriter w7;
  w7.Add("general.alignment", U64(64));
  EXPECT_EQ(ErrorOf(w7.Build()), "test.gguf: metadata 'general.alignment': has type uint64, expected uint32");

  // Tensor infos.
  EXPECT_EQ(ErrorOf(WithTensor(3, {576, 576}, 100)),
            "test.gguf: tensor 0 ('blk.0.attn_q.weight'): data [offset 96, 207360 bytes] runs past the end of the file "
            "(196 bytes)");
  EXPECT_EQ(ErrorOf(WithTensor(3, {100, 2}, 0)),
            "test.gguf: tensor 0 ('blk.0.attn_q.weight'): rows of 100 q4_1 elements are not a whole number of "
            "32-element blocks");
  EXPECT_EQ(ErrorOf(WithTensor(77, {4}, 16)), "test.gguf: tensor 0 ('blk.0.attn_q.weight'): unknown ggml type 77");
  // A type ggml has and Kiln does not (llama_model_quantize writes iq3_s and tq1_0 files) is named.
  EXPECT_EQ(ErrorOf(WithTensor(21, {256}, 110)),
            "test.gguf: tensor 0 ('blk.0.attn_q.weight'): has type iq3_s (ggml type 21), which Kiln does not support "
            "(docs/llm.md lists the weight types it runs)");
  EXPECT_THAT(ErrorOf(WithTensor(34, {256}, 54)), ::testing::HasSubstr("has type tq1_0 (ggml type 34)"));
  EXPECT_EQ(ErrorOf(WithTensor(0, {1, 1, 1, 1, 1}, 4)), "test.gguf: tensor 0 ('blk.0.attn_q.weight'): 5 dimensions (at most 4)");
  EXPECT_EQ(ErrorOf(WithTensor(0, {1ull << 32, 1ull << 32}, 4)),
            "test.gguf: tensor 0 ('blk.0.attn_q.weight'): the element count overflows 64 bits");
  EXPECT_EQ(ErrorOf(WithTensor(0, {1ull << 63, 1}, 4)),
            "test.gguf: tensor 0 ('blk.0.attn_q.weight'): dimension 0 is 9223372036854775808 (more than 2^63 - 1)");
  EXPECT_THAT(ErrorOf(WithTensor(28, {1ull << 61, 1}, 4)), HasSubstr("runs past the end of the file"));

  GgufWriter dup;
  dup.AddTensor("w", 0, {1}, "abcd").AddTensor("w", 0, {1}, "abcd");
  EXPECT_EQ(ErrorOf(dup.Build()), "test.gguf: tensor 1 ('w'): the name appears twice (first as tensor 0)");

  // Hand-edited offsets: misaligned, overlapping.
  std::string two = GgufWriter().AddTensor("a", 0, {8}, std::string(32, '\0')).AddTensor("b", 0, {8}, std::string(32, '\0')).Build();
  // The second tensor info's offset field is the last 8 bytes of the tensor table, before padding.
  size_t table_end = 24 + (8 + 1 + 4 + 8 + 4 + 8) * 2;
  std::string misaligned = two;
  std::memcpy(misaligned.data() + table_end - 8, LittleEndian<uint64_t>(4).data(), 8);
  EXPECT_EQ(ErrorOf(misaligned), "test.gguf: tensor 1 ('b'): data offset 4 is not a multiple of the alignment 32");
  std::string overlapping = two;
  std::memcpy(overlapping.data() + table_end - 8, LittleEndian<uint64_t>(0).data(), 8);
  EXPECT_EQ(ErrorOf(overlapping),
            "test.gguf: tensor 0 ('a'): data [offset 96, 32 bytes] overlaps tensor 1 ('b') at offset 96");

  // Names from the file are escaped in messages.
  GgufWriter odd;
  odd.Add(std::string("k\n\xff", 3), Str(""));
  odd.Add(std::string("k\n\xff", 3), Str(""));
  EXPECT_EQ(ErrorOf(odd.Build()), "test.gguf: metadata 1 ('k\\n\\xff'): the key appears twice (first as metadata 0)");
}

}  // namespace
}  // namespace kiln::formats
