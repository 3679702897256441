// Windows BMP (image_codecs.h), parsed here: the OS/2 core header (12 bytes) and the Windows
// headers (40 bytes and the longer V2-V5), uncompressed 1 / 4 / 8-bit palette images and
// 16 / 24 / 32-bit pixels, BI_BITFIELDS masks included, bottom-up or top-down rows. A channel
// of n mask bits is scaled to 8 as v * 255 / (2^n - 1), truncated, as PIL does (16-bit
// BI_RGB is 5-5-5); alpha is dropped. RLE and embedded JPEG / PNG data are refused.
#include <algorithm>
#include <bit>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/image/image_codecs.h"
#include "support/status_macros.h"

namespace kiln::builtins {
namespace {

absl::Status Bad(const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("BMP: ", what)); }

uint32_t U16(absl::Span<const uint8_t> b, size_t at) { return b[at] | (b[at + 1] << 8); }
uint32_t U32(absl::Span<const uint8_t> b, size_t at) {
  return b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (uint32_t{b[at + 3]} << 24);
}

constexpr uint32_t kRgb = 0, kBitfields = 3, kAlphaBitfields = 6;

// One colour channel of a BI_BITFIELDS pixel.
struct Channel {
  uint32_t mask = 0;
  int shift = 0;
  uint32_t max = 1;
  uint8_t Of(uint32_t pixel) const { return mask == 0 ? 0 : static_cast<uint8_t>(((pixel & mask) >> shift) * 255 / max); }
};

absl::StatusOr<Channel> MaskChannel(uint32_t mask) {
  Channel c;
  if (mask == 0) return c;
  c.mask = mask;
  c.shift = std::countr_zero(mask);
  const int bits = std::popcount(mask);
  if (bits < 32 && (mask >> c.shift) != (uint32_t{1} << bits) - 1) return Bad("a colour mask's bits are not contiguous");
  c.max = bits >= 32 ? 0xffffffffu : (uint32_t{1} << bits) - 1;
  return c;
}

}  // namespace

absl::StatusOr<DecodedImage> DecodeBmp(absl::Span<const uint8_t> b) {
  const char* truncated = "the data ends before the image does (truncated file)";
  if (b.size() < 18 || b[0] != 'B' || b[1] != 'M') return Bad("not a BMP file, or its header is cut short");
  const uint32_t data_offset = U32(b, 10), header_size = U32(b, 14);
  if (header_size != 12 && header_size < 40) return Bad(absl::StrCat("unknown header size ", header_size));
  if (14 + uint64_t{header_size} > b.size()) return Bad(truncated);
  int64_t width, height;
  uint32_t bpp, compression = kRgb, colors = 0;
  const bool core = header_size == 12;
  if (core) {
    width = U16(b, 18);
    height = U16(b, 20);
    bpp = U16(b, 24);
  } else {
    width = static_cast<int32_t>(U32(b, 18));
    height = static_cast<int32_t>(U32(b, 22));
    bpp = U16(b, 28);
    compression = U32(b, 30);
    colors = U32(b, 46);
  }
  const bool top_down = height < 0;
  if (top_down) height = -height;
  if (compression != kRgb && compression != kBitfields && compression != kAlphaBitfields) {
    return absl::UnimplementedError(absl::StrCat("BMP: compression ", compression, " (RLE, JPEG or PNG) is not supported"));
  }
  if (compression != kRgb && bpp != 16 && bpp != 32) return Bad(absl::StrCat("bit fields with ", bpp, " bits per pixel"));
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32) {
    return Bad(absl::StrCat("unsupported bits per pixel: ", bpp));
  }
  // The colour masks: in the V2+ headers, after a 40-byte header, or BI_RGB's defaults.
  Channel red, green, blue;
  if (compression != kRgb) {
    const size_t at = 14 + 40;
    if (at + 12 > b.size()) return Bad(truncated);
    KILN_ASSIGN_OR_RETURN(red, MaskChannel(U32(b, at)));
    KILN_ASSIGN_OR_RETURN(green, MaskChannel(U32(b, at + 4)));
    KILN_ASSIGN_OR_RETURN(blue, MaskChannel(U32(b, at + 8)));
  } else if (bpp == 16) {
    KILN_ASSIGN_OR_RETURN(red, MaskChannel(0x7c00));
    KILN_ASSIGN_OR_RETURN(green, MaskChannel(0x03e0));
    KILN_ASSIGN_OR_RETURN(blue, MaskChannel(0x001f));
  }
  // The palette, after the header (and a 40-byte header's masks).
  std::vector<uint8_t> palette;  // RGB triples
  if (bpp <= 8) {
    const uint64_t count = colors == 0 ? uint64_t{1} << bpp : colors;
    if (count > 256) return Bad(absl::StrCat("a palette of ", count, " colours"));
    const size_t entry = core ? 3 : 4, at = 14 + header_size;
    if (at + count * entry > b.size()) return Bad(truncated);
    for (uint64_t i = 0; i < count; ++i) {
      const uint8_t* p = b.data() + at + i * entry;
      palette.insert(palette.end(), {p[2], p[1], p[0]});
    }
  }
  DecodedImage image;
  KILN_RETURN_IF_ERROR(SizeImage("BMP", width, height, 3, image));
  const uint64_t stride = (static_cast<uint64_t>(width) * bpp + 31) / 32 * 4;
  if (data_offset > b.size() || stride * static_cast<uint64_t>(height) > b.size() - data_offset) return Bad(truncated);
  const int64_t colors_in_palette = static_cast<int64_t>(palette.size() / 3);
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = b.data() + data_offset + stride * static_cast<uint64_t>(top_down ? y : height - 1 - y);
    uint8_t* out = image.pixels.data() + y * width * 3;
    for (int64_t x = 0; x < width; ++x, out += 3) {
      if (bpp <= 8) {
        const int per_byte = 8 / static_cast<int>(bpp);
        const int64_t index = (row[x / per_byte] >> ((per_byte - 1 - x % per_byte) * bpp)) & ((1 << bpp) - 1);
        if (index >= colors_in_palette) {
          return Bad(absl::StrCat("pixel (", x, ", ", y, ") has colour ", index, " of a palette of ", colors_in_palette));
        }
        std::copy_n(palette.data() + index * 3, 3, out);
      } else if (bpp == 24) {
        const uint8_t* p = row + x * 3;
        out[0] = p[2], out[1] = p[1], out[2] = p[0];
      } else if (bpp == 32 && compression == kRgb) {
        const uint8_t* p = row + x * 4;  // B G R X
        out[0] = p[2], out[1] = p[1], out[2] = p[0];
      } else {
        const uint32_t pixel = bpp == 16 ? U16(absl::MakeConstSpan(row + x * 2, 2), 0)
                                         : U32(absl::MakeConstSpan(row + x * 4, 4), 0);
        out[0] = red.Of(pixel), out[1] = green.Of(pixel), out[2] = blue.Of(pixel);
      }
    }
  }
  return image;
}

}  // namespace kiln::builtins
