// kiln.image.decode: ONNX's ImageDecoder (opset 20) on the host. The importer
// (frontends/onnx/converters/image_decoder_converters.cc) calls it with R.call_pure_builtin:
//
//   encoded       uint8 [N]: the bytes of one image file.
//   pixel_format  0 RGB, 1 BGR, 2 Grayscale.
//   -> uint8 [height, width, 3] (RGB, BGR) or [height, width, 1] (Grayscale).
//
// The format is recognised by its first bytes (the decoders: image/image_codecs.h): JPEG,
// PNG, TIFF, WebP, JPEG 2000 (JP2 or a bare codestream), BMP and PNM. A gray image is
// repeated into three channels for RGB / BGR; a colour image becomes gray with PIL's "L"
// conversion, which ONNX's reference uses: (19595 R + 38470 G + 7471 B + 2^15) >> 16, the
// ITU-R 601 weights in 16-bit fixed point, rounded.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "builtins/builtin_args.h"
#include "builtins/default_builtins.h"
#include "builtins/image/image_codecs.h"
#include "support/status_macros.h"

namespace kiln::builtins {
namespace {

using vm::BuiltinContext;
using vm::Tensor;
using vm::Value;

constexpr const char* kName = "kiln.image.decode";
enum PixelFormat : int64_t { kRgb = 0, kBgr = 1, kGrayscale = 2 };

bool StartsWith(absl::Span<const uint8_t> b, std::initializer_list<uint8_t> prefix) {
  return b.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), b.begin());
}

absl::StatusOr<DecodedImage> DecodeAnyFormat(absl::Span<const uint8_t> b) {
  if (StartsWith(b, {0xff, 0xd8, 0xff})) return DecodeJpeg(b);
  if (StartsWith(b, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'})) return DecodePng(b);
  if (StartsWith(b, {'I', 'I', '*', 0}) || StartsWith(b, {'M', 'M', 0, '*'}) || StartsWith(b, {'I', 'I', '+', 0}) ||
      StartsWith(b, {'M', 'M', 0, '+'})) {
    return DecodeTiff(b);
  }
  if (StartsWith(b, {'R', 'I', 'F', 'F'}) && b.size() >= 12 && std::memcmp(b.data() + 8, "WEBP", 4) == 0) return DecodeWebp(b);
  if (StartsWith(b, {0, 0, 0, 12, 'j', 'P', ' ', ' '}) || StartsWith(b, {0xff, 0x4f, 0xff, 0x51})) return DecodeJpeg2000(b);
  if (StartsWith(b, {'B', 'M'})) return DecodeBmp(b);
  if (b.size() >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' && std::isspace(b[2])) return DecodePnm(b);
  std::string head;
  for (size_t i = 0; i < std::min<size_t>(b.size(), 8); ++i) absl::StrAppendFormat(&head, " %02x", b[i]);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown image format (first bytes", b.empty() ? " none: the input is empty" : head,
      "); JPEG, PNG, TIFF, WebP, JPEG 2000, BMP and PNM are supported"));
}

// (encoded, pixel_format) -> [height, width, channels]
absl::Status Decode(BuiltinContext& ctx, const Value* const* args, int, Value* out) {
  const Tensor& encoded = args[0]->as_tensor();
  if (!vm::operator==(encoded.dtype(), DLDataType{kDLUInt, 8, 1}) || encoded.shape().size() != 1 ||
      !encoded.is_contiguous()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kName, ": the encoded image must be a compact 1-d uint8 tensor, got ", encoded.Describe()));
  }
  const int64_t format = args[1]->as_int();
  if (format != kRgb && format != kBgr && format != kGrayscale) {
    return absl::InvalidArgumentError(absl::StrCat(kName, ": unknown pixel format code ", format));
  }
  // Decoding runs on the host: bytes a GPU holds are copied here first, and the image goes
  // back to the VM's device at the end.
  Tensor host = encoded;
  if (encoded.device().device_type != kDLCPU) {
    KILN_ASSIGN_OR_RETURN(host, encoded.CopyTo(vm::CpuDevice()));
  }
  const absl::Span<const uint8_t> bytes(host.data_as<uint8_t>(), static_cast<size_t>(host.shape()[0]));
  absl::StatusOr<DecodedImage> decoded = DecodeAnyFormat(bytes);
  if (!decoded.ok()) {
    return absl::Status(decoded.status().code(), absl::StrCat(kName, ": ", decoded.status().message()));
  }
  const DecodedImage& image = *decoded;
  const int channels = format == kGrayscale ? 1 : 3;
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Empty({image.height, image.width, channels}, DLDataType{kDLUInt, 8, 1}));
  uint8_t* dst = y.data_as<uint8_t>();
  const uint8_t* src = image.pixels.data();
  const int64_t pixels = image.height * image.width;
  if (image.channels == channels && format != kBgr) {
    std::memcpy(dst, src, static_cast<size_t>(pixels * channels));
  } else if (image.channels == 1) {  // gray to RGB / BGR
    for (int64_t i = 0; i < pixels; ++i) dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[i];
  } else if (format == kGrayscale) {
    for (int64_t i = 0; i < pixels; ++i) {
      const uint8_t* p = src + 3 * i;
      dst[i] = static_cast<uint8_t>((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 0x8000u) >> 16);
    }
  } else {  // RGB to BGR
    for (int64_t i = 0; i < pixels; ++i) {
      dst[3 * i] = src[3 * i + 2], dst[3 * i + 1] = src[3 * i + 1], dst[3 * i + 2] = src[3 * i];
    }
  }
  if (ctx.device->dl_device().device_type != kDLCPU) {
    KILN_ASSIGN_OR_RETURN(y, y.CopyTo(ctx.device));
  }
  *out = Value(std::move(y));
  return absl::OkStatus();
}

}  // namespace

void RegisterImageDecoderBuiltins(vm::BuiltinRegistry& r) { r.RegisterBuiltin(kName, "(tensor, int) -> tensor", Decode); }

}  // namespace kiln::builtins
