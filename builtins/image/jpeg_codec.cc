// JPEG through libjpeg-turbo (image_codecs.h), with the library's defaults, as PIL decodes:
// the accurate integer IDCT (JDCT_ISLOW) and fancy chroma upsampling, YCbCr converted to RGB
// by the library, grayscale kept as one channel. CMYK / YCCK files are refused.
#include "absl/strings/str_cat.h"
#include "builtins/image/image_codecs.h"

#ifdef KILN_HAVE_JPEG
#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>
#include <jerror.h>
#endif

namespace kiln::builtins {

#ifndef KILN_HAVE_JPEG

absl::StatusOr<DecodedImage> DecodeJpeg(absl::Span<const uint8_t>) {
  return absl::UnimplementedError("JPEG: this Kiln was built without libjpeg (install libjpeg-dev and rebuild)");
}

#else

namespace {

// libjpeg's default error_exit ends the process; this one jumps back with the message.
struct ErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool ended_early;  // the data ran out (libjpeg then pads the image and goes on)
};

void ErrorExit(j_common_ptr info) {
  auto* e = reinterpret_cast<ErrorManager*>(info->err);
  e->base.format_message(info, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings are not printed; the one that says the data ended is remembered.
void EmitMessage(j_common_ptr info, int level) {
  auto* e = reinterpret_cast<ErrorManager*>(info->err);
  if (level < 0) {
    e->base.num_warnings++;
    if (e->base.msg_code == JWRN_JPEG_EOF) e->ended_early = true;
  }
}

// The decode itself, free of objects with destructors so that longjmp skips none.
// Returns an empty string on success, else the error.
std::string Decode(absl::Span<const uint8_t> bytes, DecodedImage& image, absl::Status& size_status) {
  jpeg_decompress_struct info;
  ErrorManager err;
  info.err = jpeg_std_error(&err.base);
  err.base.error_exit = ErrorExit;
  err.base.emit_message = EmitMessage;
  err.ended_early = false;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&info);
    return err.message;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&info);
    return "CMYK and YCCK JPEGs are not supported";
  }
  const bool gray = info.num_components == 1;
  info.out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  size_status = SizeImage("JPEG", info.image_width, info.image_height, gray ? 1 : 3, image);
  if (!size_status.ok()) {
    jpeg_destroy_decompress(&info);
    return "size";
  }
  jpeg_start_decompress(&info);
  const size_t stride = static_cast<size_t>(image.width) * image.channels;
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = image.pixels.data() + info.output_scanline * stride;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  // A file cut short still decodes (libjpeg pads it with gray); PIL refuses it, and so do we.
  return err.ended_early ? "the data ends before the image does (truncated file)" : "";
}

}  // namespace

absl::StatusOr<DecodedImage> DecodeJpeg(absl::Span<const uint8_t> bytes) {
  DecodedImage image;
  absl::Status size_status;
  const std::string error = Decode(bytes, image, size_status);
  if (!size_status.ok()) return size_status;
  if (!error.empty()) return absl::InvalidArgumentError(absl::StrCat("JPEG: ", error));
  return image;
}

#endif

}  // namespace kiln::builtins
