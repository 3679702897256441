// Mutation fuzzing of the text parser: every .kir module under tests/relax/modules, mutated
// at random (truncation, deletion, duplication, swaps, inserted punctuation and tokens),
// must parse or fail with a located error, never crash or hang. A mutant that parses must
// print to text that parses back and prints the same (the printer handles all the parser
// accepts), and must normalize and check, or fail with an error: what `kiln check` does to
// a user's file never aborts.
//
// KILN_FUZZ_ITERATIONS sets the number of mutants (default 3000), KILN_FUZZ_SEED the seed;
// KILN_FUZZ_SECONDS, when set, runs for that long instead (the sanitizer script runs it for
// a minute under ASan).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/well_formed.h"
#include "tests/source_dir.h"

namespace kiln::relax {
namespace {

std::vector<std::string> Corpus() {
  std::vector<std::string> texts;
  const std::string root = kiln::test::SourceDir();
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(root) / "tests/relax/modules")) {
    if (entry.path().extension() == ".kir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    texts.push_back(ss.str());
  }
  return texts;
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  return std::strtoll(value, nullptr, 10);
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  std::string Mutate(const std::string& original, const std::string& donor) {
    std::string text = original;
    int rounds = 1 + static_cast<int>(Below(4));
    for (int r = 0; r < rounds && !text.empty(); ++r) {
      size_t a = Below(text.size());
      size_t len = 1 + Below(std::min<size_t>(64, text.size() - a));
      switch (Below(8)) {
        case 0:  // truncate
          text.resize(a);
          break;
        case 1:  // delete a range
          text.erase(a, len);
          break;
        case 2:  // duplicate a range
          text.insert(a, text.substr(a, len));
          break;
        case 3: {  // swap two bytes
          size_t b = Below(text.size());
          std::swap(text[a], text[b]);
          break;
        }
        case 4: {  // insert punctuation
          static constexpr const char* kPunct[] = {"(", ")", "[", "]", "{", "}", ",", ":", "=", "->",
                                                   "...", "%", "@", "-", "!", "<=", "\"", "#", "."};
          text.insert(a, kPunct[Below(std::size(kPunct))]);
          break;
        }
        case 5: {  // insert a slice of another module
          if (donor.empty()) break;
          size_t d = Below(donor.size());
          text.insert(a, donor.substr(d, 1 + Below(std::min<size_t>(80, donor.size() - d))));
          break;
        }
        case 6:  // a random byte
          text[a] = static_cast<char>(Below(256));
          break;
        case 7: {  // replace a word with a keyword or literal
          static constexpr const char* kWords[] = {"module", "func", "prim_func", "dataflow", "block", "return",
                                                   "yield", "if", "else", "match_cast", "for", "where", "let",
                                                   "in", "init", "alloc", "attr", "impure", "Tensor", "Tuple",
                                                   "R.const", "R.shape", "0", "-1", "1e308", "9999999999999999999",
                                                   "float16", "x", "%lv0", "@main", "n", "true"};
          size_t end = a;
          while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
          text.replace(a, end - a, kWords[Below(std::size(kWords))]);
          break;
        }
      }
    }
    return text;
  }

 private:
  size_t Below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  std::mt19937_64 rng_;
};

TEST(TextFuzzTest, MutantsParseOrFailCleanly) {
  std::vector<std::string> corpus = Corpus();
  ASSERT_FALSE(corpus.empty()) << "KILN_SOURCE_DIR must point at the source tree";
  int64_t iterations = EnvInt("KILN_FUZZ_ITERATIONS", 3000);
  const int64_t seconds_budget = EnvInt("KILN_FUZZ_SECONDS", 0);
  const auto fuzz_start = std::chrono::steady_clock::now();
  auto keep_going = [&](int64_t i) {
    if (seconds_budget <= 0) return i < iterations;
    return std::chrono::steady_clock::now() - fuzz_start < std::chrono::seconds(seconds_budget);
  };
  Mutator mutator(static_cast<uint64_t>(EnvInt("KILN_FUZZ_SEED", 20261122)));
  int64_t parsed_ok = 0;
  int64_t i = 0;
  for (; keep_going(i); ++i) {
    const std::string& original = corpus[static_cast<size_t>(i) % corpus.size()];
    const std::string& donor = corpus[static_cast<size_t>(i * 7 + 3) % corpus.size()];
    std::string mutant = mutator.Mutate(original, donor);
    auto start = std::chrono::steady_clock::now();
    auto parsed = ParseModule(mutant, "mutant.kir");
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_LT(seconds, 5.0) << "parsing took too long:\n" << mutant;
    if (!parsed.ok()) {
      ASSERT_NE(parsed.status().message().find("mutant.kir:"), absl::string_view::npos) << parsed.status();
      continue;
    }
    ++parsed_ok;
    std::string printed = PrintModule(parsed->module);
    auto reparsed = ParseModule(printed, "printed.kir");
    ASSERT_TRUE(reparsed.ok()) << reparsed.status() << "\nmutant:\n" << mutant << "\nprinted:\n" << printed;
    ASSERT_EQ(PrintModule(reparsed->module), printed) << "mutant:\n" << mutant;
    absl::StatusOr<IRModule> normalized = NormalizeModule(parsed->module, &parsed->locations);
    if (normalized.ok()) (void)CheckWellFormed(*normalized);
  }
  iterations = i;
  // Some mutants (comments, whitespace, harmless duplicates) still parse; that path is exercised.
  if (iterations >= 1000) {
    EXPECT_GT(parsed_ok, 0);
  }
}

}  // namespace
}  // namespace kiln::relax
