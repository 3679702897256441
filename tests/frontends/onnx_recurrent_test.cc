// RNN / GRU / LSTM unrolled at import time (converters/recurrent_converters.cc) on what ONNX's
// node tests leave out: sequence_lens shorter than the sequence (the reference ignores it),
// GRU's linear_before_reset, activations with alpha / beta, clip. Expected values come from
// the operator's formulas evaluated here in plain loops. The ONNX cases themselves
// (test_gru_*, test_lstm_*, test_simple_rnn_*) are in onnx_node_numerics_test.cc and
// tests/frontends/onnx_node_new.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

using ::testing::HasSubstr;
constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kInt32 = ::onnx::TensorProto::INT32;

void SetStringAttr(::onnx::NodeProto* node, const std::string& name, const std::string& value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(value);
}
void SetStringsAttr(::onnx::NodeProto* node, const std::string& name, const std::vector<std::string>& values) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRINGS);
  for (const auto& v : values) a->add_strings(v);
}
void SetFloatsAttr(::onnx::NodeProto* node, const std::string& name, const std::vector<float>& values) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOATS);
  for (float v : values) a->add_floats(v);
}
void SetFloatAttr(::onnx::NodeProto* node, const std::string& name, float value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

// Deterministic values in [-1, 1).
std::vector<float> Pattern(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(((i * 37 + seed * 11) % 23) / 11.5 - 1.0);
  return v;
}

std::vector<float> FloatsOf(const vm::Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.data(), out.size() * sizeof(float));
  return out;
}

absl::StatusOr<std::vector<vm::Tensor>> ImportAndRun(const ModelBuilder& model,
                                                     const std::map<std::string, relax::ConstantData>& inputs) {
  KILN_ASSIGN_OR_RETURN(ImportResult imported, ImportOnnxBytes(model.Bytes(), "", ImportOptions{}));
  return CompileAndRun(imported, inputs);
}

// Sizes of the small problems below: T steps, B batch, I input, H hidden.
constexpr int64_t T = 4, B = 3, I = 2, H = 3;

// One direction of a recurrence in plain loops: `cell(x_t, h, dir)` gives the new h of one
// batch entry; entries stop at their length, their Y rows then 0. Y is (T, D, B, H).
using Cell = std::function<std::vector<double>(const float* x, const std::vector<double>& h, int dir)>;
void ReferenceRun(const std::vector<float>& x, const std::vector<int>& lens, int directions, const Cell& cell,
                  std::vector<double>* y, std::vector<double>* y_h) {
  y->assign(T * directions * B * H, 0.0);
  y_h->assign(directions * B * H, 0.0);
  for (int d = 0; d < directions; ++d) {
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(H, 0.0);
      for (int64_t k = 0; k < lens[b]; ++k) {
        const int64_t t = d == 0 ? k : lens[b] - 1 - k;  // reverse: within the sequence
        h = cell(&x[(t * B + b) * I], h, d);
        for (int64_t j = 0; j < H; ++j) (*y)[((t * directions + d) * B + b) * H + j] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) (*y_h)[(d * B + b) * H + j] = h[j];
    }
  }
}

// sum_k a[k] * m[row, k] for a row-major matrix m with `cols` columns.
double Dot(const float* m, int64_t row, int64_t cols, const double* a) {
  double s = 0;
  for (int64_t k = 0; k < cols; ++k) s += m[row * cols + k] * a[k];
  return s;
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << what << " element " << i;
}

TEST(OnnxRecurrent, BidirectionalRnnStopsEachSequenceAtItsLength) {
  ModelBuilder m(22);
  m.Input("X", kFloat, {"4", "3", "2"})
      .Input("W", kFloat, {"2", "3", "2"})
      .Input("R", kFloat, {"2", "3", "3"})
      .Input("B", kFloat, {"2", "6"})
      .Input("lens", kInt32, {"3"})
      .Output("Y")
      .Output("Y_h");
  ::onnx::NodeProto* node = m.Node("RNN", {"X", "W", "R", "B", "lens"}, {"Y", "Y_h"}, "rnn");
  SetIntAttr(node, "hidden_size", H);
  SetStringAttr(node, "direction", "bidirectional");
  const std::vector<float> x = Pattern(T * B * I, 1), w = Pattern(2 * H * I, 2), r = Pattern(2 * H * H, 3),
                           bias = Pattern(2 * 2 * H, 4);
  const std::vector<int> lens = {4, 1, 2};
  const Cell cell = [&](const float* xt, const std::vector<double>& h, int d) {
    std::vector<double> xd(xt, xt + I), out(H);
    for (int64_t j = 0; j < H; ++j) {
      const double pre = Dot(&w[d * H * I], j, I, xd.data()) + Dot(&r[d * H * H], j, H, h.data()) +
                         bias[d * 2 * H + j] + bias[d * 2 * H + H + j];
      out[j] = std::tanh(pre);
    }
    return out;
  };
  std::vector<double> want_y, want_h;
  ReferenceRun(x, lens, 2, cell, &want_y, &want_h);
  absl::StatusOr<std::vector<vm::Tensor>> out =
      ImportAndRun(m, {{"X", HostData(tir::DataType::Float32(), {T, B, I}, x)},
                       {"W", HostData(tir::DataType::Float32(), {2, H, I}, w)},
                       {"R", HostData(tir::DataType::Float32(), {2, H, H}, r)},
                       {"B", HostData(tir::DataType::Float32(), {2, 2 * H}, bias)},
                       {"lens", HostData(tir::DataType::Int32(), {B}, lens)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{T, 2, B, H}));
  ExpectNear(FloatsOf((*out)[0]), want_y, "Y");
  ExpectNear(FloatsOf((*out)[1]), want_h, "Y_h");
}

// GRU with linear_before_reset, HardSigmoid(alpha 0.3, beta 0.4) as f, ScaledTanh(alpha 0.9,
// beta 1.1) as g (alphas and betas taken in order by the functions that use them), clip 0.8.
TEST(OnnxRecurrent, GruLinearBeforeResetWithActivationParametersAndClip) {
  ModelBuilder m(22);
  m.Input("X", kFloat, {"4", "3", "2"})
      .Input("W", kFloat, {"1", "9", "2"})
      .Input("R", kFloat, {"1", "9", "3"})
      .Input("B", kFloat, {"1", "18"})
      .Output("Y_h");
  ::onnx::NodeProto* node = m.Node("GRU", {"X", "W", "R", "B"}, {"", "Y_h"}, "gru");
  SetIntAttr(node, "hidden_size", H);
  SetIntAttr(node, "linear_before_reset", 1);
  SetStringsAttr(node, "activations", {"HardSigmoid", "ScaledTanh"});
  SetFloatsAttr(node, "activation_alpha", {0.3f, 0.9f});
  SetFloatsAttr(node, "activation_beta", {0.4f, 1.1f});
  SetFloatAttr(node, "clip", 0.8f);
  const std::vector<float> x = Pattern(T * B * I, 5), w = Pattern(3 * H * I, 6), r = Pattern(3 * H * H, 7),
                           bias = Pattern(6 * H, 8);
  auto clip = [](double v) { return std::min(0.8, std::max(-0.8, v)); };
  auto f = [&](double v) { return std::min(1.0, std::max(0.0, 0.3f * clip(v) + 0.4f)); };
  auto g = [&](double v) { return 0.9f * std::tanh(1.1f * clip(v)); };
  const Cell cell = [&](const float* xt, const std::vector<double>& h, int) {
    std::vector<double> xd(xt, xt + I), out(H);
    for (int64_t j = 0; j < H; ++j) {
      auto gate_input = [&](int64_t gate) { return Dot(w.data(), gate * H + j, I, xd.data()) + bias[gate * H + j]; };
      auto gate_recurrent = [&](int64_t gate) {
        return Dot(r.data(), gate * H + j, H, h.data()) + bias[3 * H + gate * H + j];
      };
      const double z = f(gate_input(0) + gate_recurrent(0));
      const double reset = f(gate_input(1) + gate_recurrent(1));
      const double candidate = g(gate_input(2) + reset * gate_recurrent(2));
      out[j] = (1 - z) * candidate + z * h[j];
    }
    return out;
  };
  std::vector<double> want_y, want_h;
  ReferenceRun(x, {T, T, T}, 1, cell, &want_y, &want_h);
  absl::StatusOr<std::vector<vm::Tensor>> out =
      ImportAndRun(m, {{"X", HostData(tir::DataType::Float32(), {T, B, I}, x)},
                       {"W", HostData(tir::DataType::Float32(), {1, 3 * H, I}, w)},
                       {"R", HostData(tir::DataType::Float32(), {1, 3 * H, H}, r)},
                       {"B", HostData(tir::DataType::Float32(), {1, 6 * H}, bias)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  ExpectNear(FloatsOf((*out)[0]), want_h, "Y_h");
}

TEST(OnnxRecurrent, UnknownActivationAndWrongWeightsAreErrorsNamingTheNode) {
  ModelBuilder m(22);
  m.Input("X", kFloat, {"4", "3", "2"}).Input("W", kFloat, {"1", "3", "2"}).Input("R", kFloat, {"1", "3", "3"});
  m.Output("Y");
  ::onnx::NodeProto* node = m.Node("RNN", {"X", "W", "R"}, {"Y"}, "my_rnn");
  SetIntAttr(node, "hidden_size", H);
  SetStringsAttr(node, "activations", {"Cube"});
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", ImportOptions{});
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(imported.status().message(), HasSubstr("my_rnn"));
  EXPECT_THAT(imported.status().message(), HasSubstr("activation function 'Cube'"));

  ModelBuilder bad(22);
  bad.Input("X", kFloat, {"4", "3", "2"}).Input("W", kFloat, {"1", "4", "2"}).Input("R", kFloat, {"1", "3", "3"});
  bad.Output("Y");
  SetIntAttr(bad.Node("RNN", {"X", "W", "R"}, {"Y"}, "bad_rnn"), "hidden_size", H);
  ImportOptions unchecked;
  unchecked.check = false;  // ONNX's checker does not look at shapes; Kiln's converter does
  imported = ImportOnnxBytes(bad.Bytes(), "", unchecked);
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(imported.status().message(), HasSubstr("bad_rnn"));
  EXPECT_THAT(imported.status().message(), HasSubstr("W must have shape (1, 3, 2)"));
}

}  // namespace
}  // namespace kiln::frontends::onnx
