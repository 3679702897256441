// Netpbm (image_codecs.h), parsed here: P1 / P4 bitmaps (1 is black), P2 / P5 graymaps and
// P3 / P6 pixmaps, ASCII or binary, with any maxval up to 65535 (two big-endian bytes per
// sample above 255). Samples are scaled to 8 bits as round(v * 255 / maxval), as PIL does;
// a sample above maxval is clamped to it. '#' comments may appear between header fields.
#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/image/image_codecs.h"
#include "support/status_macros.h"

namespace kiln::builtins {
namespace {

absl::Status Bad(const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("PNM: ", what)); }

// Reads the file front to back: header numbers, ASCII samples, binary samples.
class Reader {
 public:
  explicit Reader(absl::Span<const uint8_t> bytes) : bytes_(bytes) {}

  void SkipSpaceAndComments() {
    while (pos_ < bytes_.size()) {
      if (bytes_[pos_] == '#') {
        while (pos_ < bytes_.size() && bytes_[pos_] != '\n' && bytes_[pos_] != '\r') ++pos_;
      } else if (std::isspace(bytes_[pos_])) {
        ++pos_;
      } else {
        return;
      }
    }
  }

  // A decimal number after optional whitespace and comments; at most `digits` digits
  // (1 for P1's samples, which may touch).
  absl::StatusOr<int64_t> Number(const char* what, int digits = 10) {
    SkipSpaceAndComments();
    if (pos_ >= bytes_.size()) return Bad(absl::StrCat("the data ends before the ", what, " (truncated file)"));
    if (!std::isdigit(bytes_[pos_])) return Bad(absl::StrCat("expected the ", what, ", found byte ", int{bytes_[pos_]}));
    int64_t v = 0;
    for (int n = 0; n < digits && pos_ < bytes_.size() && std::isdigit(bytes_[pos_]); ++n) {
      v = v * 10 + (bytes_[pos_++] - '0');
    }
    if (pos_ < bytes_.size() && std::isdigit(bytes_[pos_]) && digits > 1) return Bad(absl::StrCat("the ", what, " is too large"));
    return v;
  }

  // The single whitespace byte that ends a binary format's header.
  absl::Status EndOfHeader() {
    if (pos_ >= bytes_.size() || !std::isspace(bytes_[pos_])) return Bad("expected whitespace after the header");
    ++pos_;
    return absl::OkStatus();
  }

  std::optional<absl::Span<const uint8_t>> Take(size_t n) {
    if (n > bytes_.size() - pos_) return std::nullopt;
    absl::Span<const uint8_t> s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  absl::Span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<DecodedImage> DecodePnm(absl::Span<const uint8_t> bytes) {
  if (bytes.size() < 2 || bytes[0] != 'P' || bytes[1] < '1' || bytes[1] > '6') {
    return Bad("not a P1-P6 Netpbm file (PAM, P7, is not supported)");
  }
  const int kind = bytes[1] - '0';
  const bool ascii = kind <= 3, bitmap = kind == 1 || kind == 4, color = kind == 3 || kind == 6;
  Reader r(bytes.subspan(2));
  KILN_ASSIGN_OR_RETURN(int64_t width, r.Number("width"));
  KILN_ASSIGN_OR_RETURN(int64_t height, r.Number("height"));
  int64_t maxval = 1;
  if (!bitmap) {
    KILN_ASSIGN_OR_RETURN(maxval, r.Number("maxval"));
    if (maxval < 1 || maxval > 65535) return Bad(absl::StrCat("maxval ", maxval, " is outside 1..65535"));
  }
  const int channels = color ? 3 : 1;
  DecodedImage image;
  KILN_RETURN_IF_ERROR(SizeImage("PNM", width, height, channels, image));
  const int64_t samples = width * height * channels;
  // Every sample's 8-bit value, looked up rather than divided per sample.
  std::vector<uint8_t> table(static_cast<size_t>(maxval) + 1);
  for (int64_t v = 0; v <= maxval; ++v) table[static_cast<size_t>(v)] = static_cast<uint8_t>((v * 255 + maxval / 2) / maxval);
  auto to8 = [&](int64_t v) { return table[static_cast<size_t>(std::min(v, maxval))]; };
  uint8_t* out = image.pixels.data();
  if (ascii) {
    for (int64_t i = 0; i < samples; ++i) {
      KILN_ASSIGN_OR_RETURN(int64_t v, r.Number("next sample", bitmap ? 1 : 10));
      out[i] = bitmap ? (v != 0 ? 0 : 255) : to8(v);
    }
    return image;
  }
  KILN_RETURN_IF_ERROR(r.EndOfHeader());
  const char* truncated = "the data ends before the image does (truncated file)";
  if (bitmap) {
    const int64_t row_bytes = (width + 7) / 8;
    for (int64_t y = 0; y < height; ++y) {
      std::optional<absl::Span<const uint8_t>> row = r.Take(static_cast<size_t>(row_bytes));
      if (!row) return Bad(truncated);
      for (int64_t x = 0; x < width; ++x) *out++ = ((*row)[x / 8] >> (7 - x % 8)) & 1 ? 0 : 255;
    }
    return image;
  }
  const int sample_bytes = maxval > 255 ? 2 : 1;
  std::optional<absl::Span<const uint8_t>> data = r.Take(static_cast<size_t>(samples * sample_bytes));
  if (!data) return Bad(truncated);
  if (maxval == 255) {
    std::copy(data->begin(), data->end(), out);
  } else if (sample_bytes == 1) {
    for (int64_t i = 0; i < samples; ++i) out[i] = to8((*data)[i]);
  } else {
    for (int64_t i = 0; i < samples; ++i) out[i] = to8(((*data)[2 * i] << 8) | (*data)[2 * i + 1]);
  }
  return image;
}

}  // namespace kiln::builtins
