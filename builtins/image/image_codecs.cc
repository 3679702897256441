// What the image decoders share (image_codecs.h).
#include "builtins/image/image_codecs.h"

#include "absl/strings/str_cat.h"

namespace kiln::builtins {

absl::Status SizeImage(const char* format, int64_t width, int64_t height, int channels, DecodedImage& image) {
  if (width <= 0 || height <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(format, ": the header claims an empty or negative size ", width, " x ", height));
  }
  if (width > kMaxImagePixels / height) {
    return absl::InvalidArgumentError(absl::StrCat(format, ": the header claims ", width, " x ", height,
                                                   " pixels, more than the decoder's limit of ", kMaxImagePixels));
  }
  image.width = width;
  image.height = height;
  image.channels = channels;
  image.pixels.assign(static_cast<size_t>(width * height * channels), 0);
  return absl::OkStatus();
}

}  // namespace kiln::builtins
