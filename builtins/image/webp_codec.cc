// WebP through libwebp (image_codecs.h): a still image, lossy or lossless, decoded to RGB with
// the library's default (fancy) chroma upsampling, as PIL decodes it; alpha is dropped.
// Animated files are refused.
#include "absl/strings/str_cat.h"
#include "builtins/image/image_codecs.h"
#include "support/status_macros.h"

#ifdef KILN_HAVE_WEBP
#include <webp/decode.h>
#endif

namespace kiln::builtins {

#ifndef KILN_HAVE_WEBP

absl::StatusOr<DecodedImage> DecodeWebp(absl::Span<const uint8_t>) {
  return absl::UnimplementedError("WebP: this Kiln was built without libwebp (install libwebp-dev and rebuild)");
}

#else

namespace {

const char* StatusText(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "corrupt bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "the data ends before the image does (truncated file)";
    default: return "unknown error";
  }
}

}  // namespace

absl::StatusOr<DecodedImage> DecodeWebp(absl::Span<const uint8_t> bytes) {
  WebPBitstreamFeatures features;
  if (VP8StatusCode s = WebPGetFeatures(bytes.data(), bytes.size(), &features); s != VP8_STATUS_OK) {
    return absl::InvalidArgumentError(absl::StrCat("WebP: cannot read the header: ", StatusText(s)));
  }
  if (features.has_animation) return absl::UnimplementedError("WebP: animated images are not supported");
  DecodedImage image;
  KILN_RETURN_IF_ERROR(SizeImage("WebP", features.width, features.height, 3, image));
  const int stride = features.width * 3;
  if (WebPDecodeRGBInto(bytes.data(), bytes.size(), image.pixels.data(), image.pixels.size(), stride) == nullptr) {
    // The simple API says only that it failed; the full one says why.
    WebPDecoderConfig config;
    WebPInitDecoderConfig(&config);
    const VP8StatusCode s = WebPDecode(bytes.data(), bytes.size(), &config);
    WebPFreeDecBuffer(&config.output);
    return absl::InvalidArgumentError(absl::StrCat("WebP: cannot decode the image: ", StatusText(s)));
  }
  return image;
}

#endif

}  // namespace kiln::builtins
