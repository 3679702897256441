// STFT (converters/signal_converters.cc), QLinearConv (converters/window_converters.cc) and
// MelWeightMatrix (converters/mel_weight_matrix_converters.cc): numerics against naive
// references written here (a direct DFT sum per frame, a direct convolution with ONNX's
// requantization), one model with a symbolic batch run at two batch sizes, and what the
// converters refuse. tests/frontends/onnx_reference_cases holds more shapes, checked against
// ONNX's reference evaluator.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kInt8 = ::onnx::TensorProto::INT8;
constexpr int32_t kInt32 = ::onnx::TensorProto::INT32;
constexpr int32_t kInt64 = ::onnx::TensorProto::INT64;

void SetIntsAttr(::onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  ::onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void FloatInitializer(ModelBuilder& m, const std::string& name, const std::vector<float>& values,
                      const std::vector<int64_t>& dims) {
  ::onnx::TensorProto* t = m.proto().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(kFloat);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

void IntInitializer(ModelBuilder& m, const std::string& name, int32_t type, const std::vector<int32_t>& values,
                    const std::vector<int64_t>& dims) {
  ::onnx::TensorProto* t = m.proto().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  for (int32_t v : values) t->add_int32_data(v);
}

void ExpectRefused(const ModelBuilder& m, absl::StatusCode code, const std::vector<std::string>& phrases) {
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", ImportOptions{});
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), code) << imported.status();
  for (const std::string& phrase : phrases) {
    EXPECT_NE(imported.status().message().find(phrase), std::string::npos) << imported.status();
  }
}

// STFT of signal (b, 37, 1) with frame_step 5 and a Hann window of 8 (frame_length from the
// window): 6 frames of 5 onesided bins.
ModelBuilder StftModel() {
  ModelBuilder m(17);
  m.Input("signal", kFloat, {"b", "37", "1"}).Input("window", kFloat, {"8"}).Output("Y");
  m.Initializer("frame_step", {5}, {});
  m.Node("STFT", {"signal", "frame_step", "window"}, {"Y"}, "stft");
  return m;
}

TEST(OnnxStft, SymbolicBatchMatchesADirectDftPerFrame) {
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(StftModel().Bytes(), "", ImportOptions{});
  ASSERT_TRUE(imported.ok()) << imported.status();
  const int length = 37, step = 5, frame = 8, frames = 6, bins = 5;
  std::vector<float> window(frame);
  for (int n = 0; n < frame; ++n) window[n] = static_cast<float>(0.5 - 0.5 * std::cos(2 * M_PI * n / frame));
  for (int batch : {1, 3}) {
    std::vector<float> x(static_cast<size_t>(batch * length));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.7 * i) + 0.1 * (i % 5));
    absl::StatusOr<std::vector<vm::Tensor>> out =
        CompileAndRun(*imported, {{"signal", HostData(tir::DataType::Float32(), {batch, length, 1}, x)},
                                  {"window", HostData(tir::DataType::Float32(), {frame}, window)}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{batch, frames, bins, 2}));
    const float* y = static_cast<const float*>((*out)[0].data());
    for (int b = 0; b < batch; ++b) {
      for (int f = 0; f < frames; ++f) {
        for (int k = 0; k < bins; ++k) {
          double re = 0, im = 0;
          for (int n = 0; n < frame; ++n) {
            const double v = static_cast<double>(x[b * length + f * step + n] * window[n]);
            re += v * std::cos(2 * M_PI * k * n / frame);
            im -= v * std::sin(2 * M_PI * k * n / frame);
          }
          const float* got = y + ((b * frames + f) * bins + k) * 2;
          EXPECT_NEAR(got[0], re, 1e-5) << "batch " << batch << " [" << b << ", " << f << ", " << k << "]";
          EXPECT_NEAR(got[1], im, 1e-5) << "batch " << batch << " [" << b << ", " << f << ", " << k << "]";
        }
      }
    }
  }
}

TEST(OnnxStft, FrameLongerThanTheSignalIsAnError) {
  ModelBuilder m(17);
  m.Input("signal", kFloat, {"1", "6", "1"}).Output("Y");
  m.Initializer("frame_step", {2}, {});
  m.Initializer("frame_length", {8}, {});
  m.Node("STFT", {"signal", "frame_step", "", "frame_length"}, {"Y"}, "stft");
  ExpectRefused(m, absl::StatusCode::kInvalidArgument, {"node 'stft' (op STFT", "longer than the signal"});
}

TEST(OnnxStft, WindowAndFrameLengthThatDisagreeAreAnError) {
  ModelBuilder m(17);
  m.Input("signal", kFloat, {"1", "32", "1"}).Input("window", kFloat, {"8"}).Output("Y");
  m.Initializer("frame_step", {2}, {});
  m.Initializer("frame_length", {10}, {});
  m.Node("STFT", {"signal", "frame_step", "window", "frame_length"}, {"Y"}, "stft");
  ExpectRefused(m, absl::StatusCode::kInvalidArgument, {"frame_length 10 differs from the window's length 8"});
}

TEST(OnnxStft, ZeroFrameStepIsAnError) {
  ModelBuilder m(17);
  m.Input("signal", kFloat, {"1", "32", "1"}).Output("Y");
  m.Initializer("frame_step", {0}, {});
  m.Node("STFT", {"signal", "frame_step"}, {"Y"}, "stft");
  ExpectRefused(m, absl::StatusCode::kInvalidArgument, {"frame_step must be one positive value"});
}

TEST(OnnxStft, SymbolicSignalLengthIsUnsupported) {
  ModelBuilder m(17);
  m.Input("signal", kFloat, {"1", "n", "1"}).Output("Y");
  m.Initializer("frame_step", {4}, {});
  m.Initializer("frame_length", {8}, {});
  m.Node("STFT", {"signal", "frame_step", "", "frame_length"}, {"Y"}, "stft");
  ExpectRefused(m, absl::StatusCode::kUnimplemented, {"static length"});
}

TEST(OnnxStft, RunTimeFrameStepNeedsABinding) {
  ModelBuilder m(17);
  m.Input("signal", kFloat, {"1", "32", "1"}).Input("frame_step", kInt64, {}).Output("Y");
  m.Node("STFT", {"signal", "frame_step"}, {"Y"}, "stft");
  ExpectRefused(m, absl::StatusCode::kUnimplemented, {"frame_step", "known at import time", "--bind"});
}

// QLinearConv of int8 x (1, 2, 5, 5) and int8 w (3, 2, 3, 3), pads 1, strides 2, with
// per-channel w_scale / w_zero_point and a bias, against a direct convolution: the
// requantized value rounded half to even, saturated to int8.
TEST(OnnxQLinearConv, PerChannelInt8MatchesADirectConvolution) {
  const int c_in = 2, size = 5, c_out = 3, k = 3, out_size = 3;
  std::vector<int32_t> x(c_in * size * size), w(c_out * c_in * k * k);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int32_t>((i * 37) % 256) - 128;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int32_t>((i * 53) % 256) - 128;
  const float x_scale = 0.03f, y_scale = 0.9f;
  const std::vector<float> w_scale = {0.011f, 0.02f, 0.0057f};
  const std::vector<int32_t> w_zp = {0, 3, -7}, bias = {1500, -20000, 40};
  const int32_t x_zp = -4, y_zp = 5;
  ModelBuilder m(10);
  m.Input("x", kInt8, {"1", "2", "5", "5"}).Output("y", kInt8);
  IntInitializer(m, "w", kInt8, w, {c_out, c_in, k, k});
  FloatInitializer(m, "x_scale", {x_scale}, {});
  FloatInitializer(m, "w_scale", w_scale, {c_out});
  FloatInitializer(m, "y_scale", {y_scale}, {});
  IntInitializer(m, "x_zero_point", kInt8, {x_zp}, {});
  IntInitializer(m, "w_zero_point", kInt8, w_zp, {c_out});
  IntInitializer(m, "y_zero_point", kInt8, {y_zp}, {});
  IntInitializer(m, "B", kInt32, bias, {c_out});
  ::onnx::NodeProto* node = m.Node(
      "QLinearConv", {"x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point", "B"},
      {"y"}, "qconv");
  SetIntsAttr(node, "pads", {1, 1, 1, 1});
  SetIntsAttr(node, "strides", {2, 2});
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", ImportOptions{});
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<int8_t> x8(x.begin(), x.end());
  absl::StatusOr<std::vector<vm::Tensor>> out =
      CompileAndRun(*imported, {{"x", HostData(tir::DataType::Int(8), {1, c_in, size, size}, x8)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, c_out, out_size, out_size}));
  const int8_t* y = static_cast<const int8_t*>((*out)[0].data());
  for (int o = 0; o < c_out; ++o) {
    const float factor = x_scale * w_scale[o] / y_scale;  // in float32, as ONNX's reference
    for (int r = 0; r < out_size; ++r) {
      for (int col = 0; col < out_size; ++col) {
        int64_t acc = bias[o];
        for (int i = 0; i < c_in; ++i) {
          for (int kr = 0; kr < k; ++kr) {
            for (int kc = 0; kc < k; ++kc) {
              const int xr = r * 2 - 1 + kr, xc = col * 2 - 1 + kc;
              if (xr < 0 || xr >= size || xc < 0 || xc >= size) continue;  // padding: 0 after the shift
              acc += static_cast<int64_t>(x[(i * size + xr) * size + xc] - x_zp) *
                     (w[((o * c_in + i) * k + kr) * k + kc] - w_zp[o]);
            }
          }
        }
        const double q = std::nearbyint(static_cast<double>(acc) * factor + y_zp);
        const int expected = static_cast<int>(std::min(127.0, std::max(-128.0, q)));
        EXPECT_EQ(y[(o * out_size + r) * out_size + col], expected) << "[" << o << ", " << r << ", " << col << "]";
      }
    }
  }
}

TEST(OnnxQLinearConv, WScaleOfTheWrongCountIsAnError) {
  ModelBuilder m(10);
  m.Input("x", ::onnx::TensorProto::UINT8, {"1", "2", "5", "5"}).Output("y", ::onnx::TensorProto::UINT8);
  IntInitializer(m, "w", ::onnx::TensorProto::UINT8, std::vector<int32_t>(3 * 2 * 9, 1), {3, 2, 3, 3});
  FloatInitializer(m, "s", {0.1f}, {});
  FloatInitializer(m, "w_scale", {0.1f, 0.2f}, {2});
  IntInitializer(m, "zp", ::onnx::TensorProto::UINT8, {128}, {});
  m.Node("QLinearConv", {"x", "s", "zp", "w", "w_scale", "zp", "s", "zp"}, {"y"}, "qconv");
  ExpectRefused(m, absl::StatusCode::kInvalidArgument,
                {"node 'qconv' (op QLinearConv", "'w_scale' must be a scalar or 1-D with one value per output "
                                                   "channel"});
}

TEST(OnnxQLinearConv, WeightOfRankOneIsAnError) {
  ModelBuilder m(10);
  m.Input("x", ::onnx::TensorProto::UINT8, {"1", "2", "5", "5"}).Input("w", ::onnx::TensorProto::UINT8, {"3"});
  m.Output("y", ::onnx::TensorProto::UINT8);
  FloatInitializer(m, "s", {0.1f}, {});
  IntInitializer(m, "zp", ::onnx::TensorProto::UINT8, {128}, {});
  m.Node("QLinearConv", {"x", "s", "zp", "w", "s", "zp", "s", "zp"}, {"y"}, "qconv");
  ExpectRefused(m, absl::StatusCode::kInvalidArgument, {"node 'qconv' (op QLinearConv", "w must have rank >= 3"});
}

// MelWeightMatrix with an upper edge above the Nyquist frequency reaches past the spectrum's
// last bin: ONNX's reference raises there too.
TEST(OnnxMelWeightMatrix, EdgeAboveNyquistIsAnError) {
  ModelBuilder m(17);
  m.Output("Y");
  IntInitializer(m, "mel", kInt32, {4}, {});
  IntInitializer(m, "dft", kInt32, {16}, {});
  IntInitializer(m, "rate", kInt32, {8000}, {});
  FloatInitializer(m, "low", {0.0f}, {});
  FloatInitializer(m, "high", {7900.0f}, {});
  m.Node("MelWeightMatrix", {"mel", "dft", "rate", "low", "high"}, {"Y"}, "mel");
  ExpectRefused(m, absl::StatusCode::kInvalidArgument, {"node 'mel' (op MelWeightMatrix", "outside the spectrum"});
}

TEST(OnnxMelWeightMatrix, RunTimeBinCountNeedsABinding) {
  ModelBuilder m(17);
  m.Input("mel", kInt32, {}).Output("Y");
  IntInitializer(m, "dft", kInt32, {16}, {});
  IntInitializer(m, "rate", kInt32, {8000}, {});
  FloatInitializer(m, "low", {0.0f}, {});
  FloatInitializer(m, "high", {4000.0f}, {});
  m.Node("MelWeightMatrix", {"mel", "dft", "rate", "low", "high"}, {"Y"}, "mel");
  ExpectRefused(m, absl::StatusCode::kUnimplemented, {"'mel' must be known at import time"});
}

}  // namespace
}  // namespace kiln::frontends::onnx
