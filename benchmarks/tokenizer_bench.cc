// Tokenizer speed on the bundled model (SmolLM2-135M-Instruct): encoding and decoding a few
// KB of mixed text (English prose, code, accents, CJK, emoji, whitespace runs), in
// microseconds per KB of text and MB/s, best of several runs.
//
//   build/benchmarks/tokenizer_bench [--kb=4] [--runs=200] [MODEL.gguf]
//
// The peer, Hugging Face tokenizers on the same vocabulary, is measured outside this
// program (tests/serving/make_token_cases.py builds it); docs/llm.md records both.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "formats/gguf_file.h"
#include "serving/tokenizer.h"
#include "tests/model_path.h"

namespace {

const char* kParagraphs[] = {
    "The quick brown fox jumps over the lazy dog. It's a sentence that uses every letter, and we've all "
    "typed it a thousand times while testing keyboards, fonts and, now, tokenizers.\n\n",
    "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n",
    "Caf\xC3\xA9 cr\xC3\xA8me br\xC3\xBBl\xC3\xA9" "e, na\xC3\xAFve r\xC3\xA9sum\xC3\xA9, \xC3\xBC" "ber "
    "Stra\xC3\x9F" "e. \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88 "
    "\xF0\x9F\x98\x80\xF0\x9F\x9A\x80 numbers 3.14159 and 2024-11-23.\n",
    "    indented   text\twith\ttabs   and    runs of     spaces\n\n\n",
};

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  int kb = 4, runs = 200;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--kb=", 5) == 0) {
      kb = std::atoi(argv[i] + 5);
    } else if (std::strncmp(argv[i], "--runs=", 7) == 0) {
      runs = std::atoi(argv[i] + 7);
    } else {
      path = argv[i];
    }
  }
  if (path.empty()) path = kiln::test::BundledModelPath();
  if (path.empty()) {
    std::fprintf(stderr, "tokenizer_bench: the bundled model is not fetched (scripts/fetch_model.sh)\n");
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  auto file = kiln::formats::GgufFile::Open(path);
  if (!file.ok()) {
    std::fprintf(stderr, "%s\n", std::string(file.status().message()).c_str());
    return 1;
  }
  auto opened = std::chrono::steady_clock::now();
  auto tokenizer = kiln::serving::Tokenizer::FromGguf(**file);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", std::string(tokenizer.status().message()).c_str());
    return 1;
  }
  auto built = std::chrono::steady_clock::now();
  std::string text;
  for (size_t i = 0; text.size() < static_cast<size_t>(kb) * 1024; ++i) text += kParagraphs[i % std::size(kParagraphs)];
  const double kbytes = text.size() / 1024.0;

  double best_encode = 1e9, best_decode = 1e9;
  std::vector<int32_t> ids;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    ids = *(*tokenizer)->Encode(text);
    auto t1 = std::chrono::steady_clock::now();
    std::string back = *(*tokenizer)->Decode(ids);
    auto t2 = std::chrono::steady_clock::now();
    if (back != text) {
      std::fprintf(stderr, "tokenizer_bench: decode(encode(text)) differs from the text\n");
      return 1;
    }
    best_encode = std::min(best_encode, Seconds(t1 - t0));
    best_decode = std::min(best_decode, Seconds(t2 - t1));
  }
  std::printf("model: %s\n", path.c_str());
  std::printf("open (map + parse GGUF): %.1f ms; build tokenizer: %.1f ms\n", 1e3 * Seconds(opened - start),
              1e3 * Seconds(built - opened));
  std::printf("text: %.1f KB -> %zu tokens (%.2f bytes/token)\n", kbytes, ids.size(),
              static_cast<double>(text.size()) / static_cast<double>(ids.size()));
  std::printf("encode: %.1f us/KB (%.1f MB/s), best of %d\n", 1e6 * best_encode / kbytes,
              text.size() / best_encode / 1e6, runs);
  std::printf("decode: %.1f us/KB (%.1f MB/s), best of %d\n", 1e6 * best_decode / kbytes,
              text.size() / best_decode / 1e6, runs);
  return 0;
}
