// The image decoders (builtins/image/image_codecs.h) on bad input: every encoded file of
// tests/frontends/onnx_image_decoder (whose PIL-decoded outputs ctest onnx_image_decoder_cases
// compares), cut short at every length through its header and beyond, and with bytes overwritten
// at random (KILN_FUZZ_ITERATIONS mutants per file, default 40). Each decode returns an image
// or an error naming its format; none crashes, leaks or reads out of bounds
// (scripts/sanitizer_tests.sh runs this under AddressSanitizer, as kiln_image_codec_tests).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "builtins/image/image_codecs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/source_dir.h"

namespace kiln::builtins {
namespace {

using Bytes = std::vector<uint8_t>;

// A case's encoded image: field 9 (raw_data) of the TensorProto in input_0.pb, found by
// walking the protobuf fields (this suite does not link protobuf).
Bytes RawData(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  const std::string s = text.str();
  size_t i = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    for (int shift = 0; i < s.size() && shift < 64; shift += 7) {
      const uint8_t b = static_cast<uint8_t>(s[i++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  while (i < s.size()) {
    const uint64_t key = varint();
    const uint64_t field = key >> 3, wire = key & 7;
    if (wire == 0) {
      varint();
    } else if (wire == 2) {
      const uint64_t n = varint();
      if (field == 9) return Bytes(s.begin() + static_cast<std::ptrdiff_t>(i), s.begin() + static_cast<std::ptrdiff_t>(i + n));
      i += n;
    } else {
      break;  // TensorProto's other fields are varints and length-delimited
    }
  }
  return {};
}

struct Sample {
  std::string name;
  Bytes bytes;
  const char* format;  // the error prefix its decoder uses
  absl::StatusOr<DecodedImage> (*decode)(absl::Span<const uint8_t>);
};

std::vector<Sample> Samples() {
  struct Kind {
    const char* prefix;
    const char* format;
    absl::StatusOr<DecodedImage> (*decode)(absl::Span<const uint8_t>);
  };
  const std::vector<Kind> kinds = {{"jpeg", "JPEG: ", DecodeJpeg}, {"png", "PNG: ", DecodePng},
                                   {"tiff", "TIFF: ", DecodeTiff}, {"webp", "WebP: ", DecodeWebp},
                                   {"jp2", "JPEG 2000: ", DecodeJpeg2000}, {"j2k", "JPEG 2000: ", DecodeJpeg2000},
                                   {"bmp", "BMP: ", DecodeBmp}, {"ppm", "PNM: ", DecodePnm},
                                   {"pgm", "PNM: ", DecodePnm}, {"pbm", "PNM: ", DecodePnm}};
  std::vector<Sample> samples;
  const std::filesystem::path root = test::SourceDir() + "/tests/frontends/onnx_image_decoder";
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    const std::string name = entry.path().filename().string().substr(std::string("test_image_decoder_").size());
    for (const Kind& k : kinds) {
      if (name.rfind(k.prefix, 0) == 0) {
        samples.push_back({name, RawData((entry.path() / "test_data_set_0" / "input_0.pb").string()), k.format, k.decode});
      }
    }
  }
  return samples;
}

void ExpectImageOrError(const Sample& s, const Bytes& bytes, const std::string& what) {
  absl::StatusOr<DecodedImage> image = s.decode(bytes);
  if (image.ok()) {
    EXPECT_TRUE(image->channels == 1 || image->channels == 3) << what;
    EXPECT_EQ(image->pixels.size(), static_cast<size_t>(image->height * image->width * image->channels)) << what;
  } else {
    EXPECT_THAT(std::string(image.status().message()), ::testing::StartsWith(s.format)) << what;
  }
}

TEST(ImageCodecs, EveryCaseDecodes) {
  const std::vector<Sample> samples = Samples();
  EXPECT_GE(samples.size(), 30u);
  for (const Sample& s : samples) {
    absl::StatusOr<DecodedImage> image = s.decode(s.bytes);
    EXPECT_TRUE(image.ok()) << s.name << ": " << image.status();
  }
}

TEST(ImageCodecs, TruncatedFilesAreErrors) {
  // The last 12 bytes may go unread (PNG's IEND chunk, which PIL does not need either; a
  // TIFF's padding): a cut there may decode. An ASCII PNM cut inside its last number reads a
  // shorter number, as PIL does: those are left out.
  constexpr size_t kUnreadTail = 12;
  for (const Sample& s : Samples()) {
    if (s.name.find("ascii") != std::string::npos) continue;
    // Every length through the first 200 bytes (the headers), then every 7th.
    for (size_t n = 0; n < s.bytes.size(); n += n < 200 ? 1 : 7) {
      const Bytes cut(s.bytes.begin(), s.bytes.begin() + static_cast<std::ptrdiff_t>(n));
      if (n + kUnreadTail >= s.bytes.size()) {
        ExpectImageOrError(s, cut, s.name + " cut to " + std::to_string(n));
        continue;
      }
      absl::StatusOr<DecodedImage> image = s.decode(cut);
      EXPECT_FALSE(image.ok()) << s.name << " cut to " << n << " of " << s.bytes.size() << " bytes decoded";
      if (!image.ok()) {
        EXPECT_THAT(std::string(image.status().message()), ::testing::StartsWith(s.format)) << s.name << " " << n;
      }
    }
  }
}

TEST(ImageCodecs, RandomlyCorruptedFilesDecodeOrFailCleanly) {
  const char* env = std::getenv("KILN_FUZZ_ITERATIONS");
  const int mutants = env != nullptr ? std::atoi(env) : 40;
  std::mt19937 random(2026);
  for (const Sample& s : Samples()) {
    for (int m = 0; m < mutants; ++m) {
      Bytes bytes = s.bytes;
      const int edits = 1 + static_cast<int>(random() % 12);
      for (int e = 0; e < edits; ++e) bytes[random() % bytes.size()] = static_cast<uint8_t>(random());
      ExpectImageOrError(s, bytes, s.name + " mutant " + std::to_string(m));
    }
  }
}

}  // namespace
}  // namespace kiln::builtins
