// Quantization kernels: dequantize and quantized_matmul (block layouts in
// relax/op/quantize.cc), written from the layouts: per block, the float16 scale (and the
// minimum) decoded by HostTensor, then each weight; quantized_matmul is the float64 dot
// product of x with the dequantized rows.
#include <string>
#include <variant>
#include <vector>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

struct Format {
  std::string name;
  int64_t block_bytes;
  int64_t block_weights = 32;
};

absl::StatusOr<Format> FormatOf(const KernelCall& call) {
  auto it = call.call.attrs.find("format");
  const std::string* name = it == call.call.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  if (name != nullptr && *name == "q4_0") return Format{"q4_0", 18};
  if (name != nullptr && *name == "q4_1") return Format{"q4_1", 20};
  if (name != nullptr && *name == "q8_0") return Format{"q8_0", 34};
  if (name != nullptr && *name == "q5_0") return Format{"q5_0", 22};
  if (name != nullptr && *name == "q5_1") return Format{"q5_1", 24};
  if (name != nullptr && *name == "q4_K") return Format{"q4_K", 144, 256};
  if (name != nullptr && *name == "q5_K") return Format{"q5_K", 176, 256};
  if (name != nullptr && *name == "q6_K") return Format{"q6_K", 210, 256};
  if (name != nullptr && *name == "q2_K") return Format{"q2_K", 84, 256};
  if (name != nullptr && *name == "q3_K") return Format{"q3_K", 110, 256};
  if (name != nullptr && *name == "iq4_nl") return Format{"iq4_nl", 18};
  if (name != nullptr && *name == "iq4_xs") return Format{"iq4_xs", 136, 256};
  return call.Error("attribute format must be one of q4_0, q4_1, q8_0, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs");
}

double Half(const std::vector<uint8_t>& bytes, int64_t at) {
  return HostTensor::FromBytes(DataType::Float(16), {}, {bytes[static_cast<size_t>(at)], bytes[static_cast<size_t>(at + 1)]})
      .GetDouble(0);
}

// The 256 weights of a K-quant super-block at byte `at`: q4_K/q5_K (d * scale) * q - dmin *
// min per group of 32 (6-bit scales and mins packed in 12 bytes, q5_K's fifth bits in 32
// bytes, then the nibbles: byte 32c + l holds weights 64c + l and 64c + 32 + l); q6_K
// (d * scale) * (q - 32) with int8 scales per 16 (low nibbles, 2-bit high parts, scales, d).
// q3_K: (d * (scale - 32)) * q per 16 weights, the sixteen 6-bit scales as four little-endian
// words w0..w3 built from the 12 bytes' words a0, a1, a2: w0 = low nibbles of a0 with bits
// 0-1 of each byte of a2 on top, w1 = low nibbles of a1 with bits 2-3, w2 = high nibbles of
// a0 with bits 4-5, w3 = high nibbles of a1 with bits 6-7; q = the 2-bit low (bits 2j of byte
// 32 + 32n + l for weight 128n + 32j + l), minus 4 unless bit 4n + j of byte l is set.
void DecodeQ3KSuperBlock(const std::vector<uint8_t>& bytes, int64_t at, float* out) {
  auto byte = [&](int64_t i) -> uint32_t { return bytes[static_cast<size_t>(at + i)]; };
  auto word = [&](int64_t i) { return byte(i) | byte(i + 1) << 8 | byte(i + 2) << 16 | byte(i + 3) << 24; };
  const uint32_t a0 = word(96), a1 = word(100), a2 = word(104);
  const uint32_t words[4] = {(a0 & 0x0f0f0f0f) | (a2 & 0x03030303) << 4, (a1 & 0x0f0f0f0f) | ((a2 >> 2) & 0x03030303) << 4,
                             ((a0 >> 4) & 0x0f0f0f0f) | ((a2 >> 4) & 0x03030303) << 4,
                             ((a1 >> 4) & 0x0f0f0f0f) | ((a2 >> 6) & 0x03030303) << 4};
  const float d = static_cast<float>(Half(bytes, at + 108));
  for (int e = 0; e < 256; ++e) {
    const int i = e / 16;
    const int scale = static_cast<int>((words[i / 4] >> (8 * (i % 4))) & 0xff) - 32;
    const int n = e / 128, j = (e % 128) / 32, l = e % 32;
    const int low = static_cast<int>(byte(32 + 32 * n + l) >> (2 * j)) & 3;
    const bool high = (byte(l) >> (4 * n + j)) & 1;
    out[e] = (d * static_cast<float>(scale)) * static_cast<float>(high ? low : low - 4);
  }
}

void DecodeSuperBlock(const Format& f, const std::vector<uint8_t>& bytes, int64_t at, float* out) {
  auto byte = [&](int64_t i) -> int { return bytes[static_cast<size_t>(at + i)]; };
  if (f.name == "q3_K") return DecodeQ3KSuperBlock(bytes, at, out);
  if (f.name == "q2_K") {  // as dequantize_row_q2_K: per 16, dl = d * scale, ml = dmin * min
    const float d = static_cast<float>(Half(bytes, at + 80)), dmin = static_cast<float>(Half(bytes, at + 82));
    int is = 0;
    for (int half = 0; half < 2; ++half) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int run = 0; run < 2; ++run, ++is) {
          const float dl = d * static_cast<float>(byte(is) & 15), ml = dmin * static_cast<float>(byte(is) >> 4);
          for (int l = 0; l < 16; ++l) {
            const int q = (byte(16 + 32 * half + 16 * run + l) >> shift) & 3;
            out[128 * half + 16 * (shift + run) + l] = dl * static_cast<float>(q) - ml;
          }
        }
      }
    }
    return;
  }
  if (f.name == "iq4_xs") {  // per 32: dl = d * (scale - 32), weight = dl * table[q]
    static constexpr int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    const float d = static_cast<float>(Half(bytes, at));
    const int scales_h = byte(2) | byte(3) << 8;
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((byte(4 + ib / 2) >> (4 * (ib % 2))) & 0xf) | (((scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        out[32 * ib + j] = dl * static_cast<float>(kTable[byte(8 + 16 * ib + j) & 0xf]);
        out[32 * ib + j + 16] = dl * static_cast<float>(kTable[byte(8 + 16 * ib + j) >> 4]);
      }
    }
    return;
  }
  if (f.name == "q6_K") {
    const float d = static_cast<float>(Half(bytes, at + 208));
    for (int e = 0; e < 256; ++e) {
      const int c = e / 128, part = (e % 128) / 32, l = e % 32;
      const int low = byte(64 * c + 32 * (part % 2) + l) >> (4 * (part / 2)) & 15;
      const int high = (byte(128 + 32 * c + l) >> (2 * part)) & 3;
      const float scale = static_cast<float>(static_cast<int8_t>(byte(192 + e / 16)));
      out[e] = (d * scale) * static_cast<float>((low | high << 4) - 32);
    }
    return;
  }
  const float d = static_cast<float>(Half(bytes, at));
  const float dmin = static_cast<float>(Half(bytes, at + 2));
  for (int e = 0; e < 256; ++e) {
    const int g = e / 32, l = e % 32;
    const int scale = g < 4 ? byte(4 + g) & 63 : (byte(8 + g) & 15) | (byte(g) >> 6) << 4;
    const int min = g < 4 ? byte(8 + g) & 63 : byte(8 + g) >> 4 | (byte(4 + g) >> 6) << 4;
    int q = byte((f.name == "q5_K" ? 48 : 16) + 32 * (g / 2) + l) >> (4 * (g % 2)) & 15;
    if (f.name == "q5_K") q |= ((byte(16 + l) >> g) & 1) << 4;
    out[e] = (d * static_cast<float>(scale)) * static_cast<float>(q) - dmin * static_cast<float>(min);
  }
}

// The weights of the block at byte `at`, each computed in float32 as the operator states:
// q (or q - 8, q - 16) and the scales are exact in float32; q4_0/q5_0/q8_0 round the product
// once, q4_1/q5_1 round the product and then the sum with the minimum.
void DecodeBlock(const Format& f, const std::vector<uint8_t>& bytes, int64_t at, float* out) {
  if (f.block_weights == 256) return DecodeSuperBlock(f, bytes, at, out);
  const float d = static_cast<float>(Half(bytes, at));
  if (f.name == "q5_0" || f.name == "q5_1") {
    const bool q5_1 = f.name == "q5_1";
    const int64_t fifth = at + (q5_1 ? 4 : 2);
    const float m = q5_1 ? static_cast<float>(Half(bytes, at + 2)) : 0.0f;
    for (int j = 0; j < 32; ++j) {
      const uint8_t packed = bytes[static_cast<size_t>(fifth + 4 + j % 16)];
      const int high = (bytes[static_cast<size_t>(fifth + j / 8)] >> (j % 8)) & 1;
      const int q = (j < 16 ? packed & 0x0f : packed >> 4) + 16 * high;
      if (q5_1) {
        const float product = static_cast<float>(q) * d;
        out[j] = product + m;
      } else {
        out[j] = static_cast<float>(q - 16) * d;
      }
    }
    return;
  }
  if (f.name == "q8_0") {
    for (int j = 0; j < 32; ++j) out[j] = static_cast<float>(static_cast<int8_t>(bytes[static_cast<size_t>(at + 2 + j)])) * d;
    return;
  }
  if (f.name == "iq4_nl") {  // d * table[q], ggml's kvalues_iq4nl
    static constexpr int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    for (int j = 0; j < 32; ++j) {
      const uint8_t packed = bytes[static_cast<size_t>(at + 2 + j % 16)];
      out[j] = d * static_cast<float>(kTable[j < 16 ? packed & 0x0f : packed >> 4]);
    }
    return;
  }
  const int64_t quants = f.name == "q4_1" ? at + 4 : at + 2;
  const float m = f.name == "q4_1" ? static_cast<float>(Half(bytes, at + 2)) : 0.0f;
  for (int j = 0; j < 32; ++j) {
    const uint8_t packed = bytes[static_cast<size_t>(quants + j % 16)];
    const int q = j < 16 ? packed & 0x0f : packed >> 4;
    if (f.name == "q4_1") {
      const float product = static_cast<float>(q) * d;
      out[j] = product + m;
    } else {
      out[j] = static_cast<float>(q - 8) * d;
    }
  }
}

absl::StatusOr<RefValue> Dequantize(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* data, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(Format format, FormatOf(call));
  KILN_ASSIGN_OR_RETURN(auto dtype, call.DTypeAttr("dtype"));
  const DataType out_dtype = dtype.value_or(DataType::Float32());
  if (data->dtype() != DataType::UInt(8) || data->ndim() == 0 || data->shape().back() % format.block_bytes != 0) {
    return call.Error("data must be uint8 with whole blocks along its last dim");
  }
  std::vector<int64_t> shape = data->shape();
  const int64_t row_bytes = shape.back();
  const int64_t blocks_per_row = row_bytes / format.block_bytes;
  const int64_t bw = format.block_weights;
  shape.back() = blocks_per_row * bw;
  HostTensor out(out_dtype, shape);
  const int64_t rows = row_bytes == 0 ? 0 : data->numel() / row_bytes;
  float w[256];
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t b = 0; b < blocks_per_row; ++b) {
      DecodeBlock(format, data->bytes(), row * row_bytes + b * format.block_bytes, w);
      for (int j = 0; j < bw; ++j) out.SetDouble(row * blocks_per_row * bw + b * bw + j, w[j]);
    }
  }
  return RefValue(std::move(out));
}

absl::StatusOr<RefValue> QuantizedMatmul(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "x"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* w, call.Tensor(1, "w"));
  KILN_ASSIGN_OR_RETURN(Format format, FormatOf(call));
  if (x->dtype() != DataType::Float32() || x->ndim() == 0) return call.Error("x must be float32 with at least one dim");
  if (w->dtype() != DataType::UInt(8) || w->ndim() != 2) return call.Error("w must be 2-D uint8");
  const int64_t k = x->shape().back();
  const int64_t n = w->shape()[0];
  const int64_t row_bytes = w->shape()[1];
  const int64_t bw = format.block_weights;
  if (k % bw != 0 || row_bytes != k / bw * format.block_bytes) return call.Error("x's last dim does not match w's rows");
  // Dequantize every row of w, then float64 dot products.
  std::vector<float> weights(static_cast<size_t>(n * k));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t b = 0; b < k / bw; ++b) {
      DecodeBlock(format, w->bytes(), j * row_bytes + b * format.block_bytes, weights.data() + j * k + b * bw);
    }
  }
  std::vector<int64_t> shape = x->shape();
  shape.back() = n;
  HostTensor out(DataType::Float32(), shape);
  const int64_t rows = k == 0 ? 0 : x->numel() / k;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t c = 0; c < k; ++c) s += x->GetDouble(i * k + c) * static_cast<double>(weights[static_cast<size_t>(j * k + c)]);
      out.SetDouble(i * n + j, s);
    }
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddQuantizeKernels(KernelTable& table) {
  table["dequantize"] = Dequantize;
  table["quantized_matmul"] = QuantizedMatmul;
}

}  // namespace kiln::reference
