// Truncated and mutated GGUF files must be refused with an error naming the file, never a
// crash, a read past the buffer or a huge allocation. Files are parsed from heap buffers of
// exactly their size, so AddressSanitizer (scripts/sanitizer_tests.sh) catches any read past
// the end; a file that is accepted has every value and every tensor's first and last byte
// read back.
//
// KILN_FUZZ_ITERATIONS sets the number of mutants per test (default 2000), KILN_FUZZ_SEED
// the seed; KILN_FUZZ_SECONDS, when set, runs each mutation test for that long instead and
// tries every truncation point of the bundled file's first 4 KiB and tensor table while the
// time lasts (without it, every 211th point).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>

#include "formats/gguf_file.h"
#include "gtest/gtest.h"
#include "tests/formats/gguf_writer.h"
#include "tests/model_path.h"

namespace kiln::formats {
namespace {

using namespace ::kiln::formats::testing;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  return std::strtoll(value, nullptr, 10);
}

uint64_t TouchValue(const GgufValue& value) {
  switch (value.type()) {
    case GgufValueType::kString: {
      std::string_view text = value.AsString();
      return text.empty() ? 0 : static_cast<uint8_t>(text.front()) + static_cast<uint8_t>(text.back());
    }
    case GgufValueType::kArray: {
      uint64_t sum = 0;
      for (uint64_t i = 0; i < value.size(); ++i) sum += TouchValue(value.Element(i));
      return sum;
    }
    case GgufValueType::kBool: return value.AsBool();
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64: return value.AsDouble() > 0;
    default: return static_cast<uint64_t>(value.AsInt64().value_or(1)) & 1;
  }
}

// Reads everything an accepted file exposes.
uint64_t Touch(const GgufFile& file) {
  uint64_t sum = 0;
  for (const GgufMetadata& m : file.metadata()) sum += m.key.size() + TouchValue(m.value);
  for (const GgufTensor& t : file.tensors()) {
    if (t.nbytes > 0) sum += static_cast<uint8_t>(t.data[0]) + static_cast<uint8_t>(t.data[t.nbytes - 1]);
  }
  return sum;
}

// Parses `bytes` from a heap buffer of exactly that size.
absl::Status ParseExact(std::string_view bytes, uint64_t* touched) {
  auto buffer = std::shared_ptr<char[]>(new char[bytes.size() == 0 ? 1 : bytes.size()]);
  std::memcpy(buffer.get(), bytes.data(), bytes.size());
  absl::StatusOr<std::shared_ptr<const GgufFile>> file =
      GgufFile::Parse(std::string_view(buffer.get(), bytes.size()), "fuzz.gguf", buffer);
  if (!file.ok()) return file.status();
  *touched += Touch(**file);
  return absl::OkStatus();
}

std::string EveryKindOfFile() {
  GgufWriter writer(3, 64);
  writer.Add("general.alignment", U32(64))
      .Add("u8", U8(1)).Add("i8", I8(-1)).Add("u16", U16(2)).Add("i16", I16(-2))
      .Add("u32", U32(3)).Add("i32", I32(-3)).Add("f32", F32(0.5f)).Add("bool", Bool(true))
      .Add("str", Str("text")).Add("u64", U64(4)).Add("i64", I64(-4)).Add("f64", F64(0.25))
      .Add("tokens", StrArray({"<|im_start|>", "a", "\xC4\xA0t"}))
      .Add("types", Array(5, {I32(3), I32(1), I32(1)}))
      .Add("nested", Array(9, {Array(4, {U32(7), U32(8)}), StrArray({"x"})}))
      .AddTensor("a", 0, {4, 2}, std::string(32, '\1'))
      .AddTensor("b", 3, {64}, std::string(40, '\2'))
      .AddTensor("c", 8, {32, 2}, std::string(68, '\3'));
  return writer.Build();
}

TEST(GgufFuzz, EveryTruncationOfAHandBuiltFileIsRefused) {
  std::string bytes = EveryKindOfFile();
  uint64_t touched = 0;
  ASSERT_TRUE(ParseExact(bytes, &touched).ok());
  for (size_t length = 0; length < bytes.size(); ++length) {
    absl::Status status = ParseExact(std::string_view(bytes).substr(0, length), &touched);
    ASSERT_FALSE(status.ok()) << "truncation to " << length << " bytes was accepted";
    ASSERT_EQ(status.message().rfind("fuzz.gguf: ", 0), 0u) << status;
  }
}

// Overwrites a few bytes, biased toward the values that break parsers: lengths and counts
// set to 0, 1, huge or just past the end, type ids out of range, flipped bits.
class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  // Mutates bytes[begin, end) in place, recording the original bytes so Restore can undo it.
  void Mutate(std::string* bytes, size_t begin, size_t end) {
    int rounds = 1 + static_cast<int>(Below(4));
    for (int r = 0; r < rounds; ++r) {
      size_t at = begin + Below(end - begin);
      switch (Below(5)) {
        case 0: Set(bytes, at, std::string(1, static_cast<char>(Below(256)))); break;
        case 1: Set(bytes, at, std::string(1, static_cast<char>((*bytes)[at] ^ (1 << Below(8))))); break;
        case 2: Set(bytes, at, std::string(1, '\xff')); break;
        case 3: {
          static constexpr uint64_t kValues[] = {0, 1, 2, 7, 9, 13, 31, 32, 33, 255, 65536, 1ull << 31, 1ull << 32,
                                                 1ull << 62, 1ull << 63, ~0ull, ~0ull - 7};
          uint64_t v = kValues[Below(std::size(kValues))];
          Set(bytes, at, LittleEndian(v).substr(0, std::min<size_t>(8, bytes->size() - at)));
          break;
        }
        default: {
          uint32_t v = static_cast<uint32_t>(Below(40));
          Set(bytes, at, LittleEndian(v).substr(0, std::min<size_t>(4, bytes->size() - at)));
          break;
        }
      }
    }
  }

  void Restore(std::string* bytes) {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) bytes->replace(it->first, it->second.size(), it->second);
    saved_.clear();
  }

  size_t Below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

 private:
  void Set(std::string* bytes, size_t at, const std::string& value) {
    saved_.emplace_back(at, bytes->substr(at, value.size()));
    bytes->replace(at, value.size(), value);
  }

  std::mt19937_64 rng_;
  std::vector<std::pair<size_t, std::string>> saved_;
};

class Budget {
 public:
  Budget() : iterations_(EnvInt("KILN_FUZZ_ITERATIONS", 2000)), seconds_(EnvInt("KILN_FUZZ_SECONDS", 0)),
             start_(std::chrono::steady_clock::now()) {}
  bool timed() const { return seconds_ > 0; }
  bool KeepGoing(int64_t i) const {
    if (seconds_ <= 0) return i < iterations_;
    return std::chrono::steady_clock::now() - start_ < std::chrono::seconds(seconds_);
  }

 private:
  int64_t iterations_, seconds_;
  std::chrono::steady_clock::time_point start_;
};

TEST(GgufFuzz, MutantsOfAHandBuiltFileFailCleanly) {
  std::string bytes = EveryKindOfFile();
  Mutator mutator(static_cast<uint64_t>(EnvInt("KILN_FUZZ_SEED", 20261123)));
  Budget budget;
  uint64_t touched = 0;
  int64_t accepted = 0, i = 0;
  for (; budget.KeepGoing(i); ++i) {
    mutator.Mutate(&bytes, 0, bytes.size());
    absl::Status status = ParseExact(bytes, &touched);
    if (status.ok()) {
      ++accepted;
    } else {
      ASSERT_EQ(status.message().rfind("fuzz.gguf: ", 0), 0u) << status;
    }
    mutator.Restore(&bytes);
  }
  std::printf("gguf fuzz: %lld mutants of a hand-built file, %lld accepted\n", static_cast<long long>(i),
              static_cast<long long>(accepted));
}

// The bundled file, parsed from one heap copy of the whole file (mutations are undone after
// each parse) and, for truncations, from exact-size copies of its first bytes.
class BundledFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = ::kiln::test::BundledModelPath();
    if (path.empty()) GTEST_SKIP() << "the bundled model is not fetched (scripts/fetch_model.sh)";
    absl::StatusOr<std::shared_ptr<const GgufFile>> file = GgufFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    table_end_ = (*file)->data_offset();
    // The tensor table ends where the data starts, less under one alignment of padding.
    uint64_t table_bytes = (*file)->alignment();
    for (const GgufTensor& t : (*file)->tensors()) table_bytes += 8 + t.name.size() + 4 + 8 * t.shape.size() + 4 + 8;
    table_start_ = table_end_ - table_bytes;
    std::string_view all((*file)->tensors()[0].data - (*file)->data_offset(), (*file)->file_size());
    bytes_.assign(all.data(), all.size());
  }

  std::string bytes_;
  uint64_t table_start_ = 0;
  uint64_t table_end_ = 0;
};

TEST_F(BundledFuzz, TruncationsOfTheHeaderAndTensorTableAreRefused) {
  // Every truncation point in the first 4 KiB and in the tensor table while the time budget
  // lasts; without one, every 211th.
  Budget budget;
  const size_t stride = budget.timed() ? 1 : 211;
  uint64_t touched = 0;
  int tried = 0;
  auto check = [&](uint64_t length) {
    if (budget.timed() && !budget.KeepGoing(0)) return;
    absl::Status status = ParseExact(std::string_view(bytes_).substr(0, length), &touched);
    ASSERT_FALSE(status.ok()) << "truncation to " << length << " bytes was accepted";
    ASSERT_EQ(status.message().rfind("fuzz.gguf: ", 0), 0u) << status;
    ++tried;
  };
  for (uint64_t length = 0; length < 4096; length += stride) check(length);
  for (uint64_t length = table_start_; length <= table_end_; length += stride) check(length);
  check(bytes_.size() - 1);
  std::printf("gguf fuzz: %d truncations of the bundled file refused\n", tried);
}

TEST_F(BundledFuzz, MutantsOfTheHeaderAndTensorTableFailCleanly) {
  auto buffer = std::shared_ptr<char[]>(new char[bytes_.size()]);
  std::memcpy(buffer.get(), bytes_.data(), bytes_.size());
  Mutator mutator(static_cast<uint64_t>(EnvInt("KILN_FUZZ_SEED", 20261123)) + 1);
  Budget budget;
  // The bundled file takes milliseconds to parse: a twentieth of the hand-built file's count.
  const int64_t iterations = budget.timed() ? INT64_MAX : std::max<int64_t>(1, EnvInt("KILN_FUZZ_ITERATIONS", 2000) / 20);
  uint64_t touched = 0;
  int64_t accepted = 0, i = 0;
  std::string window;
  for (; i < iterations && budget.KeepGoing(i); ++i) {
    // Mutate the first 4 KiB (header, first keys) or the tensor table, then copy the window
    // into the full buffer.
    const bool head = mutator.Below(2) == 0;
    const size_t begin = head ? 0 : table_start_;
    const size_t end = head ? 4096 : table_end_;
    mutator.Mutate(&bytes_, begin, end);
    std::memcpy(buffer.get() + begin, bytes_.data() + begin, end - begin);
    absl::StatusOr<std::shared_ptr<const GgufFile>> file =
        GgufFile::Parse(std::string_view(buffer.get(), bytes_.size()), "fuzz.gguf", buffer);
    if (file.ok()) {
      ++accepted;
      touched += Touch(**file);
    } else {
      ASSERT_EQ(file.status().message().rfind("fuzz.gguf: ", 0), 0u) << file.status();
    }
    mutator.Restore(&bytes_);
    std::memcpy(buffer.get() + begin, bytes_.data() + begin, end - begin);
  }
  std::printf("gguf fuzz: %lld mutants of the bundled file, %lld accepted\n", static_cast<long long>(i),
              static_cast<long long>(accepted));
}

}  // namespace
}  // namespace kiln::formats
