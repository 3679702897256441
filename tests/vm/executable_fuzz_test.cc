// Corrupt executables must be refused with an error, never a crash, hang or read past the
// buffer. Run under AddressSanitizer by scripts/sanitizer_tests.sh with more iterations
// (KILN_FUZZ_ITERATIONS).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>

#include "builtins/default_builtins.h"
#include "gtest/gtest.h"
#include "support/hash.h"
#include "tests/vm/test_programs.h"
#include "vm/virtual_machine.h"

namespace kiln::vm {
namespace {

int Iterations(int fallback) {
  const char* env = std::getenv("KILN_FUZZ_ITERATIONS");
  return env ? std::atoi(env) : fallback;
}


// Recomputes every section hash so mutations reach the section decoders instead of being
// caught by the checksum. Sections with out-of-range bounds are left alone.
void Reseal(std::string* bytes) {
  if (bytes->size() < 16) return;
  uint32_t count;
  std::memcpy(&count, bytes->data() + 12, 4);
  for (uint32_t i = 0; i < count && 16 + 32 * (i + 1) <= bytes->size(); ++i) {
    char* entry = bytes->data() + 16 + 32 * i;
    uint64_t offset, size;
    std::memcpy(&offset, entry + 8, 8);
    std::memcpy(&size, entry + 16, 8);
    uint32_t id;
    std::memcpy(&id, entry, 4);
    if (id == 5) continue;  // never hand a mutated ELF image to the dynamic loader
    if (offset > bytes->size() || size > bytes->size() - offset) continue;
    uint64_t hash = support::Checksum64(bytes->data() + offset, size);
    std::memcpy(entry + 24, &hash, 8);
  }
}

// Loads and, if that succeeds, runs every function on small inputs: a mutation that
// survives loading must still fail cleanly or compute something.
void LoadAndMaybeRun(const std::string& bytes) {
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(bytes, builtins::DefaultRegistry());
  if (!exe.ok()) {
    EXPECT_FALSE(exe.status().message().empty());
    return;
  }
  VirtualMachine vm(*exe);
  // Verified bytecode may loop forever (a mutated jump offset): bound each call.
  vm.SetStepLimit(100000);
  Tensor x = *Tensor::Empty({2, 4}, DTypeFloat32());
  std::memset(x.data(), 0, static_cast<size_t>(x.nbytes()));
  for (const Function& fn : (*exe)->functions()) {
    std::vector<Value> args;
    for (const ParamSignature& p : fn.params) {
      args.push_back(p.kind == Value::Kind::kInt ? Value(int64_t{5}) : Value(x));
    }
    (void)vm.Invoke(fn.name, args);
  }
}

TEST(ExecutableFuzz, EveryTruncationIsRefused) {
  std::string bytes = testing::BuildSampleExecutable();
  ASSERT_TRUE(Executable::Load(bytes, builtins::DefaultRegistry()).ok());
  for (size_t length = 0; length < bytes.size(); ++length) {
    absl::StatusOr<std::shared_ptr<const Executable>> exe =
        Executable::Load(bytes.substr(0, length), builtins::DefaultRegistry());
    ASSERT_FALSE(exe.ok()) << "truncation to " << length << " bytes was accepted";
  }
}

TEST(ExecutableFuzz, RandomByteMutationsAreRefusedCleanly) {
  std::string original = testing::BuildSampleExecutable();
  std::mt19937_64 rng(1234);
  int iterations = Iterations(3000);
  int refused = 0;
  for (int i = 0; i < iterations; ++i) {
    std::string bytes = original;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(bytes, builtins::DefaultRegistry());
    refused += !exe.ok();
  }
  // Nearly every mutation hits a checksummed section or the header; all must be refused or
  // be harmless (e.g. a flipped padding byte in the section table).
  EXPECT_GT(refused, iterations * 9 / 10);
}

TEST(ExecutableFuzz, MutationsPastTheChecksumReachTheDecoderAndFailCleanly) {
  std::string original = testing::BuildSampleExecutable();
  std::mt19937_64 rng(99);
  int iterations = Iterations(3000);
  for (int i = 0; i < iterations; ++i) {
    std::string bytes = original;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      size_t at = 16 + rng() % (bytes.size() - 16);
      switch (rng() % 3) {
        case 0: bytes[at] = static_cast<char>(rng()); break;
        case 1: bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8))); break;
        default: bytes[at] = static_cast<char>(0xff); break;
      }
    }
    Reseal(&bytes);
    LoadAndMaybeRun(bytes);
  }
}

}  // namespace
}  // namespace kiln::vm
