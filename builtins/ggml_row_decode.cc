#include "builtins/ggml_row_decode.h"

#include <cstring>

#include "builtins/q8_block_dot.h"
#include "support/float16.h"

namespace kiln::builtins {
namespace {

float Half(const uint8_t* p) { return support::HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

void DecodeQ5(bool q5_1, const uint8_t* block, float* out) {
  const float d = Half(block);
  const float m = q5_1 ? Half(block + 2) : 0.0f;
  const uint8_t* fifth = block + (q5_1 ? 4 : 2);
  uint32_t bits;
  std::memcpy(&bits, fifth, sizeof(bits));
  const uint8_t* nibbles = fifth + 4;
  for (int j = 0; j < 32; ++j) {
    const uint8_t byte = nibbles[j & 15];
    const int q = (j < 16 ? byte & 15 : byte >> 4) | static_cast<int>(((bits >> j) & 1) << 4);
    out[j] = q5_1 ? static_cast<float>(q) * d + m : static_cast<float>(q - 16) * d;
  }
}

void DecodeQ45K(bool q5, const uint8_t* block, float* out) {
  const float d = Half(block);
  const float dmin = Half(block + 2);
  const uint8_t* packed = block + 4;
  const uint8_t* high = block + 16;
  const uint8_t* nibbles = block + (q5 ? 48 : 16);
  for (int g = 0; g < 8; ++g) {
    // The group's 6-bit scale and min (see kquant_block_dot.h for the packing).
    const int scale = g < 4 ? packed[g] & 63 : (packed[g + 4] & 15) | ((packed[g - 4] >> 6) << 4);
    const int min = g < 4 ? packed[g + 4] & 63 : (packed[g + 4] >> 4) | ((packed[g] >> 6) << 4);
    const float ds = d * static_cast<float>(scale);
    const float dm = dmin * static_cast<float>(min);
    const int chunk = g / 2;
    const int shift = (g % 2) * 4;
    for (int l = 0; l < 32; ++l) {
      int q = (nibbles[32 * chunk + l] >> shift) & 15;
      if (q5) q |= ((high[l] >> g) & 1) << 4;
      out[32 * g + l] = ds * static_cast<float>(q) - dm;
    }
  }
}

void DecodeQ6K(const uint8_t* block, float* out) {
  const float d = Half(block + 208);
  const auto* scales = reinterpret_cast<const int8_t*>(block + 192);
  for (int c = 0; c < 2; ++c) {
    const uint8_t* low = block + 64 * c;
    const uint8_t* high = block + 128 + 32 * c;
    for (int l = 0; l < 32; ++l) {
      const int q[4] = {(low[l] & 15) | ((high[l] & 3) << 4), (low[32 + l] & 15) | (((high[l] >> 2) & 3) << 4),
                        (low[l] >> 4) | (((high[l] >> 4) & 3) << 4), (low[32 + l] >> 4) | (((high[l] >> 6) & 3) << 4)};
      for (int part = 0; part < 4; ++part) {
        const int e = 128 * c + 32 * part + l;
        out[e] = d * static_cast<float>(scales[e / 16]) * static_cast<float>(q[part] - 32);
      }
    }
  }
}

void DecodeQ3K(const uint8_t* block, float* out) {
  const float d = Half(block + 108);
  const uint8_t* packed = block + 96;
  for (int e = 0; e < 256; ++e) {
    const int i = e / 16;  // the scale's index (layout in kquant_block_dot.h)
    const int scale = (((packed[i % 8] >> (4 * (i / 8))) & 15) | (((packed[8 + i % 4] >> (2 * (i / 4))) & 3) << 4)) - 32;
    const int n = e / 128, j = (e % 128) / 32, l = e % 32;
    const int low = (block[32 + 32 * n + l] >> (2 * j)) & 3;
    const int q = (block[l] >> (4 * n + j)) & 1 ? low : low - 4;
    out[e] = (d * static_cast<float>(scale)) * static_cast<float>(q);
  }
}

void DecodeQ2K(const uint8_t* block, float* out) {
  const float d = Half(block + 80), dmin = Half(block + 82);
  for (int e = 0; e < 256; ++e) {
    const int i = e / 16;  // the scale's and min's byte (layout in kquant_block_dot.h)
    const float dl = d * static_cast<float>(block[i] & 15), ml = dmin * static_cast<float>(block[i] >> 4);
    const int n = e / 128, j = (e % 128) / 32, l = e % 32;
    out[e] = dl * static_cast<float>((block[16 + 32 * n + l] >> (2 * j)) & 3) - ml;
  }
}

void DecodeIq4Xs(const uint8_t* block, float* out) {
  const float d = Half(block);
  const int high = block[2] | block[3] << 8;
  for (int g = 0; g < 8; ++g) {
    const int scale = (((block[4 + g / 2] >> (4 * (g % 2))) & 15) | (((high >> (2 * g)) & 3) << 4)) - 32;
    const float dl = d * static_cast<float>(scale);
    const uint8_t* qs = block + 8 + 16 * g;
    for (int l = 0; l < 16; ++l) {
      out[32 * g + l] = dl * static_cast<float>(kIq4NlValues[qs[l] & 15]);
      out[32 * g + 16 + l] = dl * static_cast<float>(kIq4NlValues[qs[l] >> 4]);
    }
  }
}

}  // namespace

int64_t DecodableBlockWeights(DecodableFormat format) {
  return format == DecodableFormat::kQ5_0 || format == DecodableFormat::kQ5_1 ? 32 : 256;
}

int64_t DecodableBlockBytes(DecodableFormat format) {
  switch (format) {
    case DecodableFormat::kQ5_0: return 22;
    case DecodableFormat::kQ5_1: return 24;
    case DecodableFormat::kQ4_K: return 144;
    case DecodableFormat::kQ5_K: return 176;
    case DecodableFormat::kQ6_K: return 210;
    case DecodableFormat::kQ3_K: return 110;
    case DecodableFormat::kIQ4_XS: return 136;
    case DecodableFormat::kQ2_K: return 84;
  }
  return 0;
}

void DecodeRow(DecodableFormat format, const uint8_t* row, int64_t k, float* out) {
  const int64_t weights = DecodableBlockWeights(format);
  const int64_t bytes = DecodableBlockBytes(format);
  for (int64_t b = 0; b < k / weights; ++b, row += bytes, out += weights) {
    switch (format) {
      case DecodableFormat::kQ5_0: DecodeQ5(false, row, out); break;
      case DecodableFormat::kQ5_1: DecodeQ5(true, row, out); break;
      case DecodableFormat::kQ4_K: DecodeQ45K(false, row, out); break;
      case DecodableFormat::kQ5_K: DecodeQ45K(true, row, out); break;
      case DecodableFormat::kQ6_K: DecodeQ6K(row, out); break;
      case DecodableFormat::kQ3_K: DecodeQ3K(row, out); break;
      case DecodableFormat::kIQ4_XS: DecodeIq4Xs(row, out); break;
      case DecodableFormat::kQ2_K: DecodeQ2K(row, out); break;
    }
  }
}

}  // namespace kiln::builtins
