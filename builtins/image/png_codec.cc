// PNG through libpng (image_codecs.h): palettes expanded to RGB (transparency ignored), gray
// below 8 bits widened, 16-bit samples cut to their high byte, alpha dropped; gray stays one
// channel. Interlaced images are deinterlaced by the library.
#include "absl/strings/str_cat.h"
#include "builtins/image/image_codecs.h"

#ifdef KILN_HAVE_PNG
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#endif

namespace kiln::builtins {

#ifndef KILN_HAVE_PNG

absl::StatusOr<DecodedImage> DecodePng(absl::Span<const uint8_t>) {
  return absl::UnimplementedError("PNG: this Kiln was built without libpng (install libpng-dev and rebuild)");
}

#else

namespace {

struct Reader {
  absl::Span<const uint8_t> bytes;
  size_t offset;
  char message[256];
};

void Read(png_structp png, png_bytep out, png_size_t length) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (length > r->bytes.size() - r->offset) png_error(png, "the data ends before the image does (truncated file)");
  std::memcpy(out, r->bytes.data() + r->offset, length);
  r->offset += length;
}

void Error(png_structp png, png_const_charp message) {
  auto* r = static_cast<Reader*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof(r->message), "%s", message);
  png_longjmp(png, 1);
}

void Warning(png_structp, png_const_charp) {}

// The decode, free of objects with destructors so that longjmp skips none; an empty string
// on success, else the error.
std::string Decode(Reader& reader, DecodedImage& image, absl::Status& size_status) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, Error, Warning);
  if (png == nullptr) return "cannot create a libpng reader";
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return "cannot create a libpng reader";
  }
  // Owned, freed on both paths below; volatile because it changes between setjmp and longjmp.
  std::vector<png_bytep>* volatile rows = nullptr;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    delete rows;
    return reader.message;
  }
  png_set_read_fn(png, &reader, Read);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
  const int color = png_get_color_type(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8) png_set_expand_gray_1_2_4_to_8(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int channels = png_get_channels(png, info);
  if (channels != 1 && channels != 3) {
    png_destroy_read_struct(&png, &info, nullptr);
    return "unexpected channel count after conversion";
  }
  size_status = SizeImage("PNG", width, height, channels, image);
  if (!size_status.ok()) {
    png_destroy_read_struct(&png, &info, nullptr);
    return "size";
  }
  rows = new std::vector<png_bytep>(height);
  for (png_uint_32 y = 0; y < height; ++y) (*rows)[y] = image.pixels.data() + static_cast<size_t>(y) * width * channels;
  png_read_image(png, rows->data());
  png_destroy_read_struct(&png, &info, nullptr);
  delete rows;
  return "";
}

}  // namespace

absl::StatusOr<DecodedImage> DecodePng(absl::Span<const uint8_t> bytes) {
  Reader reader{bytes, 0, {}};
  DecodedImage image;
  absl::Status size_status;
  const std::string error = Decode(reader, image, size_status);
  if (!size_status.ok()) return size_status;
  if (!error.empty()) return absl::InvalidArgumentError(absl::StrCat("PNG: ", error));
  return image;
}

#endif

}  // namespace kiln::builtins
