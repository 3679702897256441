#include "tests/llm/naive_llama.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"

namespace kiln::test {

namespace {

float Half(const uint8_t* p) {
  const uint16_t h = static_cast<uint16_t>(p[0] | (p[1] << 8));
  const int exponent = (h >> 10) & 31, mantissa = h & 1023;
  double v = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(mantissa + 1024, exponent - 25);
  if (exponent == 31) v = mantissa ? NAN : INFINITY;
  return static_cast<float>((h & 0x8000) ? -v : v);
}

int BlockWeights(int type) {
  return type == 10 || type == 11 || type == 12 || type == 13 || type == 14 || type == 23 ? 256 : 32;
}

int64_t BlockBytes(int type) {
  switch (type) {
    case 2: return 18;
    case 3: return 20;
    case 6: return 22;
    case 7: return 24;
    case 8: return 34;
    case 10: return 84;
    case 11: return 110;
    case 20: return 18;
    case 23: return 136;
    case 12: return 144;
    case 13: return 176;
    case 14: return 210;
  }
  return 0;
}

bool IsQuantized(int type) { return BlockBytes(type) != 0; }

// One block of a quantized type as integers q and per-weight factors: weight j = a[j] * q[j]
// + o[j] (o: the block's minimum, or a K-quant group's -dmin * min). From the GGML block
// definitions: q4_0/q5_0/q8_0 d then quants, q4_1/q5_1 d, m then quants (q5: a uint32 of
// fifth bits first); q4_K/q5_K d, dmin, 12 bytes of 6-bit scales and mins, (q5_K: 32 bytes of
// fifth bits), 128 bytes of nibbles; q6_K 128 bytes of low nibbles, 64 of 2-bit high parts,
// 16 int8 scales, d.
void DecodeBlock(int type, const uint8_t* block, int* q, double* a, double* o) {
  // iq4_nl (32 weights: d, 16 bytes of nibbles) and iq4_xs (256: d, uint16 of high scale
  // bits, 4 bytes of low scale nibbles, then 16 bytes of nibbles per 32): each nibble is
  // an index into ggml's kvalues_iq4nl.
  static constexpr int kIq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  if (type == 20 || type == 23) {
    const double d = Half(block);
    const int groups = type == 20 ? 1 : 8;
    for (int g = 0; g < groups; ++g) {
      const uint8_t* nibbles = block + (type == 20 ? 2 : 8 + 16 * g);
      int scale = 1;
      if (type == 23) {
        const int high = (block[2] | block[3] << 8) >> (2 * g) & 3;
        scale = ((block[4 + g / 2] >> (4 * (g % 2)) & 15) | high << 4) - 32;
      }
      for (int j = 0; j < 32; ++j) {
        q[32 * g + j] = kIq4[j < 16 ? nibbles[j] & 15 : nibbles[j - 16] >> 4];
        a[32 * g + j] = d * scale;
        o[32 * g + j] = 0;
      }
    }
    return;
  }
  // q3_K: hmask[32], 2-bit lows[64], 12 bytes of 6-bit scales, d; q = low - 4 unless the
  // weight's high bit (bit 4 * (j / 128) + (j % 128) / 32 of byte j % 32) is set.
  if (type == 11) {
    const double d = Half(block + 108);
    for (int j = 0; j < 256; ++j) {
      const int i = j / 16;
      const int scale = ((block[96 + i % 8] >> (4 * (i / 8)) & 15) | (block[104 + i % 4] >> (2 * (i / 4)) & 3) << 4) - 32;
      const int shift = (j % 128) / 32;
      const int low = block[32 + 32 * (j / 128) + j % 32] >> (2 * shift) & 3;
      q[j] = block[j % 32] >> (4 * (j / 128) + shift) & 1 ? low : low - 4;
      a[j] = d * scale;
      o[j] = 0;
    }
    return;
  }
  // q2_K: 16 bytes of 4-bit scales (low nibble) and mins (high), one per 16 weights, 64 bytes
  // of 2-bit quants (weight j: bits 2 * ((j % 128) / 32) of byte 16 + 32 * (j / 128) + j % 32),
  // d, dmin.
  if (type == 10) {
    const double d = Half(block + 80), dmin = Half(block + 82);
    for (int j = 0; j < 256; ++j) {
      q[j] = block[16 + 32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32)) & 3;
      a[j] = d * (block[j / 16] & 15);
      o[j] = -dmin * (block[j / 16] >> 4);
    }
    return;
  }
  if (type == 2 || type == 3 || type == 6 || type == 7 || type == 8) {
    const bool has_min = type == 3 || type == 7;
    const double d = Half(block), m = has_min ? Half(block + 2) : 0.0;
    const uint8_t* rest = block + (has_min ? 4 : 2);
    uint32_t fifth = 0;
    if (type == 6 || type == 7) {
      std::memcpy(&fifth, rest, 4);
      rest += 4;
    }
    for (int j = 0; j < 32; ++j) {
      a[j] = d;
      o[j] = m;
      if (type == 8) {
        q[j] = static_cast<int8_t>(rest[j]);
        continue;
      }
      const int nibble = j < 16 ? rest[j] & 15 : rest[j - 16] >> 4;
      const int value = nibble + static_cast<int>(((fifth >> j) & 1) << 4);
      q[j] = type == 2 ? value - 8 : type == 6 ? value - 16 : value;
    }
    return;
  }
  if (type == 14) {
    const double d = Half(block + 208);
    for (int j = 0; j < 256; ++j) {
      const int half = j / 128, part = (j % 128) / 32, l = j % 32;
      const uint8_t low = block[64 * half + 32 * (part % 2) + l];
      const uint8_t high = block[128 + 32 * half + l];
      q[j] = (((part < 2 ? low : low >> 4) & 15) | (((high >> (2 * part)) & 3) << 4)) - 32;
      a[j] = d * static_cast<int8_t>(block[192 + j / 16]);
      o[j] = 0;
    }
    return;
  }
  const double d = Half(block), dmin = Half(block + 2);
  const uint8_t* sm = block + 4;
  for (int j = 0; j < 256; ++j) {
    const int g = j / 32, l = j % 32;
    const int scale = g < 4 ? sm[g] & 63 : (sm[g + 4] & 15) | ((sm[g - 4] >> 6) << 4);
    const int min = g < 4 ? sm[g + 4] & 63 : (sm[g + 4] >> 4) | ((sm[g] >> 6) << 4);
    const uint8_t byte = block[(type == 13 ? 48 : 16) + 32 * (g / 2) + l];
    q[j] = (g % 2 == 0 ? byte & 15 : byte >> 4) + (type == 13 ? ((block[16 + l] >> g) & 1) << 4 : 0);
    a[j] = d * scale;
    o[j] = -dmin * min;
  }
}

// A tensor of ggml type `type` as floats (only the types the tests use).
absl::StatusOr<std::vector<float>> Decode(const formats::GgufTensor& t) {
  const auto* p = reinterpret_cast<const uint8_t*>(t.data);
  std::vector<float> out(static_cast<size_t>(t.num_elements));
  const int64_t n = t.num_elements;
  const int type = static_cast<int>(t.type);
  if (type == 0) {
    std::memcpy(out.data(), p, static_cast<size_t>(n) * 4);
    return out;
  }
  if (type == 1) {
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = Half(p + 2 * i);
    return out;
  }
  if (!IsQuantized(type)) {
    return absl::UnimplementedError(absl::StrCat("naive reference: tensor type ", type));
  }
  const int weights = BlockWeights(type);
  int q[256];
  double a[256], o[256];
  for (int64_t b = 0; b < n / weights; ++b) {
    DecodeBlock(type, p + b * BlockBytes(type), q, a, o);
    for (int j = 0; j < weights; ++j) out[static_cast<size_t>(b * weights + j)] = static_cast<float>(a[j] * q[j] + o[j]);
  }
  return out;
}

// `f` rounded to the nearest float16 (ties to even), for the normal range: the scales here
// are never small enough to be subnormal halves.
float ThroughHalf(float f) {
  if (f == 0) return f;
  int e = 0;
  const double m = std::frexp(static_cast<double>(std::fabs(f)), &e);  // |f| = m * 2^e, m in [0.5, 1)
  const double mantissa = std::nearbyint(m * 2048.0);                   // 11 significant bits
  const double value = std::ldexp(mantissa, e - 11);
  return static_cast<float>(f < 0 ? -value : value);
}

float RoundHalfEven(float v) {
  float rounded = std::floor(v);
  const float frac = v - rounded;
  if (frac > 0.5f || (frac == 0.5f && std::fmod(rounded, 2.0f) != 0)) rounded += 1;
  return rounded;
}

// Activations quantized to GGML's Q8 blocks: per 32 values, int8 q = x / d rounded half to
// even, d = max|x| / 127 stored as float16, s = float16(d * sum(q)).
struct QuantizedActivations {
  std::vector<int> q;
  std::vector<double> d, s;
};

QuantizedActivations Quantize(const std::vector<double>& x) {
  QuantizedActivations out;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float v[32], amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[j] = static_cast<float>(x[32 * b + j])));
    const float d = amax / 127.0f;
    const float inverse = amax == 0 ? 0.0f : 127.0f / amax;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      out.q.push_back(static_cast<int>(RoundHalfEven(v[j] * inverse)));
      sum += out.q.back();
    }
    out.d.push_back(ThroughHalf(d));
    out.s.push_back(ThroughHalf(d * static_cast<float>(sum)));
  }
  return out;
}

// Activations quantized to GGML's Q8_K (the K-quants' activations): per 256 values, max =
// the first value of largest magnitude, iscale = -127 / max, q = min(127, round-half-even(
// iscale * x)), d = 1 / iscale, all in float32.
QuantizedActivations QuantizeK(const std::vector<double>& x) {
  QuantizedActivations out;
  for (size_t b = 0; b < x.size() / 256; ++b) {
    float v[256], max = 0, amax = 0;
    for (int j = 0; j < 256; ++j) {
      v[j] = static_cast<float>(x[256 * b + j]);
      if (std::fabs(v[j]) > amax) {
        amax = std::fabs(v[j]);
        max = v[j];
      }
    }
    const float iscale = amax == 0 ? 0.0f : -127.0f / max;
    for (int j = 0; j < 256; ++j) out.q.push_back(std::min(127, static_cast<int>(RoundHalfEven(iscale * v[j]))));
    out.d.push_back(amax == 0 ? 0.0 : 1.0f / iscale);
  }
  return out;
}

}  // namespace

absl::StatusOr<NaiveLlama> NaiveLlama::Load(const formats::GgufFile& file, bool quantize_activations) {
  NaiveLlama m;
  m.quantize_activations_ = quantize_activations;
  auto str = file.GetString("general.architecture");
  if (!str.ok()) return str.status();
  const std::string arch(*str);
  m.neox_ = arch == "qwen2";
  auto integer = [&](const std::string& key, int64_t fallback) -> int64_t {
    auto v = file.GetInteger(arch + "." + key);
    return v.ok() ? *v : fallback;
  };
  auto real = [&](const std::string& key, double fallback) -> double {
    auto v = file.GetFloat(arch + "." + key);
    return v.ok() ? *v : fallback;
  };
  m.layers_ = integer("block_count", 0);
  m.hidden_ = integer("embedding_length", 0);
  m.ffn_ = integer("feed_forward_length", 0);
  m.heads_ = integer("attention.head_count", 0);
  m.kv_heads_ = integer("attention.head_count_kv", m.heads_);
  m.head_dim_ = m.heads_ ? m.hidden_ / m.heads_ : 0;
  m.rope_dims_ = integer("rope.dimension_count", m.head_dim_);
  m.eps_ = real("attention.layer_norm_rms_epsilon", 1e-5);
  m.theta_ = real("rope.freq_base", 10000.0);
  auto vector = [&](const std::string& name) -> absl::StatusOr<std::vector<float>> {
    auto t = file.GetTensor(name);
    if (!t.ok()) return t.status();
    return Decode(**t);
  };
  auto matrix = [&](const std::string& name) -> absl::StatusOr<Matrix> {
    auto t = file.GetTensor(name);
    if (!t.ok()) return t.status();
    auto data = Decode(**t);
    if (!data.ok()) return data.status();
    Matrix out;
    out.rows = (*t)->shape[0];
    out.cols = (*t)->shape[1];
    out.data = *std::move(data);
    out.type = static_cast<int>((*t)->type);
    if (IsQuantized(out.type)) {
      const auto* bytes = reinterpret_cast<const uint8_t*>((*t)->data);
      out.raw.assign(bytes, bytes + (*t)->nbytes);
    }
    return out;
  };
#define NAIVE_ASSIGN(lhs, expr)        \
  {                                    \
    auto value = (expr);               \
    if (!value.ok()) return value.status(); \
    lhs = *std::move(value);           \
  }
  NAIVE_ASSIGN(m.embed_, matrix("token_embd.weight"));
  m.vocab_ = m.embed_.rows;
  NAIVE_ASSIGN(m.output_norm_, vector("output_norm.weight"));
  if (file.FindTensor("output.weight") != nullptr) {
    NAIVE_ASSIGN(m.output_, matrix("output.weight"));
  } else {
    m.output_ = m.embed_;
  }
  for (int64_t l = 0; l < m.layers_; ++l) {
    const std::string p = absl::StrCat("blk.", l, ".");
    Layer layer;
    NAIVE_ASSIGN(layer.attn_norm, vector(p + "attn_norm.weight"));
    NAIVE_ASSIGN(layer.ffn_norm, vector(p + "ffn_norm.weight"));
    NAIVE_ASSIGN(layer.q, matrix(p + "attn_q.weight"));
    NAIVE_ASSIGN(layer.k, matrix(p + "attn_k.weight"));
    NAIVE_ASSIGN(layer.v, matrix(p + "attn_v.weight"));
    NAIVE_ASSIGN(layer.o, matrix(p + "attn_output.weight"));
    NAIVE_ASSIGN(layer.gate, matrix(p + "ffn_gate.weight"));
    NAIVE_ASSIGN(layer.up, matrix(p + "ffn_up.weight"));
    NAIVE_ASSIGN(layer.down, matrix(p + "ffn_down.weight"));
    if (file.FindTensor(p + "attn_q.bias") != nullptr) {
      NAIVE_ASSIGN(layer.q_bias, vector(p + "attn_q.bias"));
      NAIVE_ASSIGN(layer.k_bias, vector(p + "attn_k.bias"));
      NAIVE_ASSIGN(layer.v_bias, vector(p + "attn_v.bias"));
    }
    m.blocks_.push_back(std::move(layer));
  }
#undef NAIVE_ASSIGN
  return m;
}

// y = M x over M's rows, in float64; two threads for the big output projection.
std::vector<double> NaiveLlama::MatVec(const Matrix& m, const std::vector<double>& x) const {
  std::vector<double> y(static_cast<size_t>(m.rows));
  const bool quantized = quantize_activations_ && !m.raw.empty();
  const int weights = quantized ? BlockWeights(m.type) : 32;
  const bool kquant = weights == 256;
  const QuantizedActivations xq = !quantized ? QuantizedActivations{} : kquant ? QuantizeK(x) : Quantize(x);
  auto rows = [&](int64_t begin, int64_t end) {
    int q[256];
    double a[256], o[256];
    for (int64_t r = begin; r < end && quantized; ++r) {
      const int64_t blocks = m.cols / weights;
      const uint8_t* row = m.raw.data() + static_cast<size_t>(r) * m.raw.size() / static_cast<size_t>(m.rows);
      double s = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        DecodeBlock(m.type, row + b * BlockBytes(m.type), q, a, o);
        const double xd = xq.d[static_cast<size_t>(b)];
        for (int j = 0; j < weights; ++j) {
          const double xj = xq.q[static_cast<size_t>(b * weights + j)];
          s += a[j] * q[j] * xj * xd;
          // K-quant mins meet the quantized activations; a legacy block's minimum meets
          // ggml's float16 s = d * sum(q) (once per block).
          if (kquant) s += o[j] * xj * xd;
        }
        if (!kquant) s += o[0] * xq.s[static_cast<size_t>(b)];
      }
      y[static_cast<size_t>(r)] = s;
    }
    for (int64_t r = begin; r < end && !quantized; ++r) {
      const float* w = m.data.data() + r * m.cols;
      double s = 0;
      for (int64_t c = 0; c < m.cols; ++c) s += static_cast<double>(w[c]) * x[static_cast<size_t>(c)];
      y[static_cast<size_t>(r)] = s;
    }
  };
  if (m.rows * m.cols < (1 << 22)) {
    rows(0, m.rows);
  } else {
    std::thread half([&] { rows(0, m.rows / 2); });
    rows(m.rows / 2, m.rows);
    half.join();
  }
  return y;
}

void NaiveLlama::RmsNorm(std::vector<double>& x, const std::vector<float>& weight) const {
  double sum = 0;
  for (double v : x) sum += v * v;
  const double scale = 1.0 / std::sqrt(sum / static_cast<double>(x.size()) + eps_);
  for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] * scale * weight[i];
}

// Rotates each head's first rope_dims_ dims: pairs (2i, 2i + 1), or (i, i + d/2) for neox.
void NaiveLlama::Rope(std::vector<double>& v, int64_t heads, int64_t position) const {
  for (int64_t h = 0; h < heads; ++h) {
    double* x = v.data() + h * head_dim_;
    for (int64_t i = 0; i < rope_dims_ / 2; ++i) {
      const double angle = static_cast<double>(position) * std::pow(theta_, -2.0 * static_cast<double>(i) / static_cast<double>(rope_dims_));
      const int64_t a = neox_ ? i : 2 * i;
      const int64_t b = neox_ ? i + rope_dims_ / 2 : 2 * i + 1;
      const double xa = x[a], xb = x[b];
      x[a] = xa * std::cos(angle) - xb * std::sin(angle);
      x[b] = xa * std::sin(angle) + xb * std::cos(angle);
    }
  }
}

void NaiveLlama::Reset() {
  for (Layer& layer : blocks_) {
    layer.keys.clear();
    layer.values.clear();
  }
}

std::vector<float> NaiveLlama::Forward(int32_t token, int64_t position) {
  std::vector<double> h(static_cast<size_t>(hidden_));
  for (int64_t i = 0; i < hidden_; ++i) h[static_cast<size_t>(i)] = embed_.data[static_cast<size_t>(token * hidden_ + i)];
  const int64_t group = heads_ / kv_heads_;
  for (Layer& layer : blocks_) {
    std::vector<double> x = h;
    RmsNorm(x, layer.attn_norm);
    std::vector<double> q = MatVec(layer.q, x), k = MatVec(layer.k, x), v = MatVec(layer.v, x);
    for (size_t i = 0; i < layer.q_bias.size(); ++i) q[i] += layer.q_bias[i];
    for (size_t i = 0; i < layer.k_bias.size(); ++i) k[i] += layer.k_bias[i];
    for (size_t i = 0; i < layer.v_bias.size(); ++i) v[i] += layer.v_bias[i];
    Rope(q, heads_, position);
    Rope(k, kv_heads_, position);
    layer.keys.emplace_back(k.begin(), k.end());
    layer.values.emplace_back(v.begin(), v.end());
    std::vector<double> attn(static_cast<size_t>(heads_ * head_dim_), 0.0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
    for (int64_t hq = 0; hq < heads_; ++hq) {
      const int64_t g = hq / group;
      std::vector<double> scores;
      for (const std::vector<float>& key : layer.keys) {
        double s = 0;
        for (int64_t d = 0; d < head_dim_; ++d) s += q[static_cast<size_t>(hq * head_dim_ + d)] * key[static_cast<size_t>(g * head_dim_ + d)];
        scores.push_back(s * scale);
      }
      const double max = *std::max_element(scores.begin(), scores.end());
      double sum = 0;
      for (double& s : scores) sum += s = std::exp(s - max);
      for (size_t p = 0; p < scores.size(); ++p) {
        for (int64_t d = 0; d < head_dim_; ++d) {
          attn[static_cast<size_t>(hq * head_dim_ + d)] += scores[p] / sum * layer.values[p][static_cast<size_t>(g * head_dim_ + d)];
        }
      }
    }
    std::vector<double> o = MatVec(layer.o, attn);
    for (size_t i = 0; i < h.size(); ++i) h[i] += o[i];
    x = h;
    RmsNorm(x, layer.ffn_norm);
    std::vector<double> gate = MatVec(layer.gate, x), up = MatVec(layer.up, x);
    for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
    std::vector<double> down = MatVec(layer.down, gate);
    for (size_t i = 0; i < h.size(); ++i) h[i] += down[i];
  }
  RmsNorm(h, output_norm_);
  std::vector<double> logits = MatVec(output_, h);
  return std::vector<float>(logits.begin(), logits.end());
}

std::vector<float> NaiveLlama::LastLogits(const std::vector<int32_t>& tokens) {
  Reset();
  std::vector<float> logits;
  for (size_t i = 0; i < tokens.size(); ++i) logits = Forward(tokens[i], static_cast<int64_t>(i));
  return logits;
}

std::vector<int32_t> NaiveLlama::Greedy(const std::vector<int32_t>& prompt, int n) {
  std::vector<float> logits = LastLogits(prompt);
  std::vector<int32_t> out;
  int64_t position = static_cast<int64_t>(prompt.size());
  for (int i = 0; i < n; ++i) {
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(next);
    if (i + 1 < n) logits = Forward(next, position++);
  }
  return out;
}

}  // namespace kiln::test
