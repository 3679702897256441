// Truncated and mutated .npy files (kiln run --input FILE.npy) must be refused with an error
// naming the file, never a crash, a read past the data or a size that wrapped. Mutations
// target the header: its length field, the version byte, and the dict's text (quotes,
// parentheses, commas, negative and 20-digit dims, other dtypes). An accepted file has its
// shape's byte count equal to the data after the header, checked here independently.
//
// KILN_FUZZ_ITERATIONS sets the number of mutants (default 3000); scripts/sanitizer_tests.sh
// runs it under AddressSanitizer + UndefinedBehaviorSanitizer.
#include <cstdlib>
#include <random>
#include <string>

#include "formats/npy.h"
#include "gtest/gtest.h"

namespace kiln::formats {
namespace {

int64_t Iterations() {
  const char* value = std::getenv("KILN_FUZZ_ITERATIONS");
  return value != nullptr && *value != '\0' ? std::strtoll(value, nullptr, 10) : 3000;
}

// A version `major` file with `dict` as its header (padded to 64 bytes) and `data` after it.
std::string NpyFile(int major, const std::string& dict, const std::string& data) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  return out + header + data;
}

// The element size a descr names, computed here from the dict text, not by the reader.
int64_t ItemBytes(const NpyArray& a) { return a.type.bytes; }

void CheckOne(const std::string& bytes, int64_t* accepted) {
  absl::StatusOr<NpyArray> a = ParseNpy(support::MappedFile::FromBytes(bytes, "fuzz.npy"));
  if (!a.ok()) {
    ASSERT_EQ(a.status().message().rfind("fuzz.npy: not a readable .npy file: ", 0), 0u) << a.status();
    return;
  }
  ++*accepted;
  unsigned __int128 numel = 1;
  for (int64_t d : a->shape) {
    ASSERT_GE(d, 0);
    numel *= static_cast<uint64_t>(d);
  }
  ASSERT_EQ(numel * static_cast<uint64_t>(ItemBytes(*a)), a->nbytes);
  const char* begin = a->file->data();
  ASSERT_GE(a->data, begin);
  ASSERT_EQ(static_cast<uint64_t>(a->data - begin) + a->nbytes, bytes.size());
  volatile char sink = 0;
  if (a->nbytes > 0) sink = static_cast<char>(a->data[0] ^ a->data[a->nbytes - 1]);
  (void)sink;
}

TEST(NpyFuzz, EveryTruncationFailsCleanly) {
  for (int major : {1, 2, 3}) {
    const std::string file =
        NpyFile(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", std::string(24, '\x01'));
    int64_t accepted = 0;
    for (size_t n = 0; n < file.size(); ++n) CheckOne(file.substr(0, n), &accepted);
    EXPECT_EQ(accepted, 0) << "version " << major;
    CheckOne(file, &accepted);
    EXPECT_EQ(accepted, 1) << "version " << major;
  }
}

TEST(NpyFuzz, MutatedHeadersFailCleanly) {
  const char* kPieces[] = {"(", ")", ",", "'", "\"", ":", " ", "{", "}", "-1", "0", "99999999999999999999",
                           "9223372036854775807", "4611686018427387904", "<f8", "|b1", "<u2", ">f4", "<c8", "True",
                           "'shape'", "'descr'", "'fortran_order'", "\\x00"};
  const std::vector<std::string> seeds = {
      NpyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", std::string(24, '\x01')),
      NpyFile(2, "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }", std::string(5, '\x02')),
      NpyFile(3, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", std::string(8, '\x03')),
      NpyFile(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (0, 7), }", ""),
  };
  std::mt19937_64 rng(20261127);
  auto below = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  int64_t accepted = 0;
  const int64_t iterations = Iterations();
  for (int64_t i = 0; i < iterations; ++i) {
    std::string bytes = seeds[static_cast<size_t>(i) % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      switch (rng() % 6) {
        case 0: bytes[below(bytes.size())] ^= static_cast<char>(1 + rng() % 255); break;  // any byte
        case 1: bytes[6] = static_cast<char>(rng() % 5); break;                          // version
        case 2: bytes[8 + below(4)] = static_cast<char>(rng()); break;                    // header length
        case 3: bytes.insert(10 + below(bytes.size() - 10), kPieces[below(std::size(kPieces))]); break;
        case 4: bytes.erase(10 + below(bytes.size() - 10), 1 + below(6)); break;
        default: bytes.resize(below(bytes.size() + 1)); break;                             // truncate
      }
      if (bytes.size() < 12) break;
    }
    CheckOne(bytes, &accepted);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(accepted, iterations / 50);  // some mutants (spaces, padding) stay valid
  EXPECT_LT(accepted, iterations / 2);
}

// A dict that claims more elements than any file holds: the byte count must not wrap to the
// size of the data that is there.
TEST(NpyFuzz, ShapesWhoseSizeWrapsAreRefused) {
  for (const char* shape : {"(4611686018427387904, 4)", "(2305843009213693952, 2, 2)", "(18446744073709551616,)",
                            "(4294967296, 4294967296)"}) {
    const std::string dict = std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + shape + ", }";
    int64_t accepted = 0;
    CheckOne(NpyFile(1, dict, ""), &accepted);
    CheckOne(NpyFile(1, dict, std::string(16, '\0')), &accepted);
    EXPECT_EQ(accepted, 0) << shape;
  }
}

}  // namespace
}  // namespace kiln::formats
