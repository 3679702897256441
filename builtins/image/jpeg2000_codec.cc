// JPEG 2000 through OpenJPEG (image_codecs.h): a JP2 file or a bare J2K codestream, in strict
// mode (a truncated codestream is an error, not a partial image). One or two components
// (gray, gray + alpha) give gray, three or more RGB (alpha dropped); samples are moved to 8
// bits (signed ones offset to unsigned first), as PIL does. Subsampled components and YCC
// colour spaces are refused.
#include "absl/strings/str_cat.h"
#include "builtins/image/image_codecs.h"
#include "support/status_macros.h"

#ifdef KILN_HAVE_OPENJP2
#include <openjpeg.h>

#include <algorithm>
#include <cstring>
#include <string>
#endif

namespace kiln::builtins {

#ifndef KILN_HAVE_OPENJP2

absl::StatusOr<DecodedImage> DecodeJpeg2000(absl::Span<const uint8_t>) {
  return absl::UnimplementedError(
      "JPEG 2000: this Kiln was built without OpenJPEG (install libopenjp2-7-dev and rebuild)");
}

#else

namespace {

struct MemoryStream {
  absl::Span<const uint8_t> bytes;
  size_t offset = 0;
  std::string error;  // the first error OpenJPEG reported
};

OPJ_SIZE_T Read(void* out, OPJ_SIZE_T n, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  if (s->offset >= s->bytes.size()) return static_cast<OPJ_SIZE_T>(-1);  // the end
  n = std::min<OPJ_SIZE_T>(n, s->bytes.size() - s->offset);
  std::memcpy(out, s->bytes.data() + s->offset, n);
  s->offset += n;
  return n;
}

OPJ_OFF_T Skip(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  if (n < 0 || static_cast<uint64_t>(n) > s->bytes.size() - s->offset) return -1;
  s->offset += static_cast<size_t>(n);
  return n;
}

OPJ_BOOL Seek(OPJ_OFF_T to, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  if (to < 0 || static_cast<uint64_t>(to) > s->bytes.size()) return OPJ_FALSE;
  s->offset = static_cast<size_t>(to);
  return OPJ_TRUE;
}

void OnError(const char* message, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  if (s->error.empty()) {
    s->error = message;
    while (!s->error.empty() && s->error.back() == '\n') s->error.pop_back();
  }
}

void Ignore(const char*, void*) {}

// The JP2 signature box; anything else is taken as a bare codestream.
bool IsJp2File(absl::Span<const uint8_t> b) {
  static constexpr uint8_t kSignature[12] = {0, 0, 0, 12, 'j', 'P', ' ', ' ', 0x0d, 0x0a, 0x87, 0x0a};
  return b.size() >= 12 && std::memcmp(b.data(), kSignature, 12) == 0;
}

// Owns what OpenJPEG allocates, freed in any order of failure.
struct Decoder {
  opj_stream_t* stream = nullptr;
  opj_codec_t* codec = nullptr;
  opj_image_t* image = nullptr;
  ~Decoder() {
    if (image != nullptr) opj_image_destroy(image);
    if (codec != nullptr) opj_destroy_codec(codec);
    if (stream != nullptr) opj_stream_destroy(stream);
  }
};

}  // namespace

absl::StatusOr<DecodedImage> DecodeJpeg2000(absl::Span<const uint8_t> bytes) {
  MemoryStream source{bytes, 0, {}};
  auto failed = [&](const char* what) {
    return absl::InvalidArgumentError(absl::StrCat("JPEG 2000: ", what, source.error.empty() ? "" : ": ", source.error));
  };
  Decoder d;
  d.stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
  d.codec = opj_create_decompress(IsJp2File(bytes) ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  if (d.stream == nullptr || d.codec == nullptr) return failed("cannot create a decoder");
  opj_stream_set_user_data(d.stream, &source, nullptr);
  opj_stream_set_user_data_length(d.stream, bytes.size());
  opj_stream_set_read_function(d.stream, Read);
  opj_stream_set_skip_function(d.stream, Skip);
  opj_stream_set_seek_function(d.stream, Seek);
  opj_set_error_handler(d.codec, OnError, &source);
  opj_set_warning_handler(d.codec, Ignore, nullptr);
  opj_set_info_handler(d.codec, Ignore, nullptr);
  opj_dparameters_t parameters;
  opj_set_default_decoder_parameters(&parameters);
  if (!opj_setup_decoder(d.codec, &parameters) || !opj_decoder_set_strict_mode(d.codec, OPJ_TRUE)) {
    return failed("cannot set up the decoder");
  }
  if (!opj_read_header(d.stream, d.codec, &d.image) || d.image == nullptr) return failed("cannot read the header");
  const opj_image_t& header = *d.image;
  if (header.numcomps == 0) return failed("the image has no components");
  if (header.color_space == OPJ_CLRSPC_SYCC || header.color_space == OPJ_CLRSPC_EYCC ||
      header.color_space == OPJ_CLRSPC_CMYK) {
    return absl::UnimplementedError("JPEG 2000: YCC and CMYK colour spaces are not supported");
  }
  const int64_t width = int64_t{header.x1} - header.x0, height = int64_t{header.y1} - header.y0;
  const int channels = header.numcomps >= 3 ? 3 : 1;
  DecodedImage image;
  KILN_RETURN_IF_ERROR(SizeImage("JPEG 2000", width, height, channels, image));
  if (!opj_decode(d.codec, d.stream, d.image) || !opj_end_decompress(d.codec, d.stream)) {
    return failed("cannot decode the image");
  }
  for (int c = 0; c < channels; ++c) {
    const opj_image_comp_t& comp = d.image->comps[c];
    if (comp.w != width || comp.h != height || comp.data == nullptr) {
      return absl::UnimplementedError("JPEG 2000: subsampled components are not supported");
    }
    if (comp.prec < 1 || comp.prec > 31) return failed("a component's precision is out of range");
    const int64_t offset = comp.sgnd ? int64_t{1} << (comp.prec - 1) : 0;
    const int64_t max = (int64_t{1} << comp.prec) - 1;
    for (int64_t i = 0; i < width * height; ++i) {
      const int64_t v = std::clamp<int64_t>(comp.data[i] + offset, 0, max);
      const int64_t v8 = comp.prec >= 8 ? v >> (comp.prec - 8) : v << (8 - comp.prec);
      image.pixels[static_cast<size_t>(i * channels + c)] = static_cast<uint8_t>(v8);
    }
  }
  return image;
}

#endif

}  // namespace kiln::builtins
