// The image decoders behind ONNX's ImageDecoder (builtins/image_decoder_builtins.cc), one file
// per format. Each takes the encoded bytes and returns the pixels as 8-bit gray or RGB rows;
// alpha is dropped (as PIL's convert("RGB") does, which ONNX's reference uses), palettes are
// expanded, and samples wider than 8 bits keep their high bits. JPEG, PNG, TIFF, WebP and
// JPEG 2000 decode with Debian's libraries (libjpeg-turbo, libpng, libtiff, libwebp,
// OpenJPEG), found by CMake; a build without one returns Unimplemented for that format,
// naming the package. BMP and PNM are parsed here.
//
// Bad input (truncated data, a corrupt header, an unsupported variant) is an
// InvalidArgument or Unimplemented status, never a crash: the libraries' error exits are
// caught (setjmp / their handlers), and a header claiming more than kMaxImagePixels pixels is
// refused before anything is allocated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kiln::builtins {

struct DecodedImage {
  int64_t height = 0;
  int64_t width = 0;
  int channels = 0;             // 1 (gray) or 3 (RGB)
  std::vector<uint8_t> pixels;  // height * width * channels, rows top to bottom
};

// 2^28 pixels (16384 x 16384): larger claims are refused as corrupt or hostile headers.
constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

// Checks a header's claimed size (positive, within kMaxImagePixels) and sizes `image`.
absl::Status SizeImage(const char* format, int64_t width, int64_t height, int channels, DecodedImage& image);

absl::StatusOr<DecodedImage> DecodeJpeg(absl::Span<const uint8_t> bytes);      // jpeg_codec.cc
absl::StatusOr<DecodedImage> DecodePng(absl::Span<const uint8_t> bytes);       // png_codec.cc
absl::StatusOr<DecodedImage> DecodeTiff(absl::Span<const uint8_t> bytes);      // tiff_codec.cc
absl::StatusOr<DecodedImage> DecodeWebp(absl::Span<const uint8_t> bytes);      // webp_codec.cc
absl::StatusOr<DecodedImage> DecodeJpeg2000(absl::Span<const uint8_t> bytes);  // jpeg2000_codec.cc
absl::StatusOr<DecodedImage> DecodeBmp(absl::Span<const uint8_t> bytes);       // bmp_codec.cc
absl::StatusOr<DecodedImage> DecodePnm(absl::Span<const uint8_t> bytes);       // pnm_codec.cc

}  // namespace kiln::builtins
