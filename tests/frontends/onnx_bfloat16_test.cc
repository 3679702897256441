// bfloat16 in the ONNX importer: held widened in float32 (narrow_types.h), every operator's
// bfloat16 result rounded to nearest even (converters/bfloat16_outputs.h). Rounding is
// checked bit for bit against a reference written here from the definition (the nearer of
// the two neighbouring bfloat16 values, ties to the even one, overflow past the midpoint
// above the largest value to infinity), never against the importer's own rounding.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "frontends/onnx/converters/narrowing.h"
#include "frontends/onnx/narrow_types.h"
#include "frontends/onnx/tensor_file.h"
#include "frontends/onnx/tensor_proto.h"
#include "frontends/onnx/value.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kBFloat16 = ::onnx::TensorProto::BFLOAT16;

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// The bfloat16 value nearest to finite or infinite `f`, from the definition: the two
// bfloat16 neighbours toward and away from zero, compared by distance in double.
float ReferenceRound(float f) {
  if (std::isnan(f) || std::isinf(f)) return f;
  const uint32_t toward_zero = Bits(f) & 0xffff0000u;
  const double low = FromBits(toward_zero);
  // The next bfloat16 away from zero; past the largest finite value it is 2^128, the
  // rounding boundary IEEE uses for overflow to infinity.
  const bool at_max = (toward_zero & 0x7fffffffu) == 0x7f7f0000u;
  const double high = at_max ? std::copysign(std::ldexp(1.0, 128), f) : FromBits(toward_zero + 0x10000u);
  const double down = std::fabs(static_cast<double>(f) - low), up = std::fabs(high - static_cast<double>(f));
  const bool low_is_even = (toward_zero & 0x10000u) == 0;
  const bool take_low = down < up || (down == up && low_is_even);
  if (take_low) return static_cast<float>(low);
  return at_max ? std::copysign(std::numeric_limits<float>::infinity(), f) : static_cast<float>(high);
}

std::vector<float> BoundaryValues() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {
      1.0f,
      1.0f + std::ldexp(1.0f, -8),                         // a tie: down to the even 1
      1.0f + 3 * std::ldexp(1.0f, -8),                     // a tie: up to the even neighbour
      1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20), // just above a tie: up
      -(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)),
      std::numeric_limits<float>::max(),                   // past the midpoint: infinity
      FromBits(0x7f7f7fffu),                               // below the midpoint: the largest bfloat16
      FromBits(0x7f7f8000u),                               // the midpoint, odd below: infinity
      -0.0f,
      1e-40f,                                              // float32 subnormals
      FromBits(0x00018000u),
      FromBits(0x00008000u),                               // a tie between 0 and the smallest subnormal
      inf,
      -inf,
      1.0f + std::ldexp(1.0f, -7) - std::ldexp(1.0f, -23), // carries into the exponent? no: rounds to 1 + 2^-7
      2.0f - std::ldexp(1.0f, -23),                        // carries into the next binade: 2
  };
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200; ++i) {
    const float f = FromBits(bits(rng));
    if (!std::isnan(f)) v.push_back(f);
  }
  return v;
}

relax::ConstantData Float32Data(const std::vector<float>& values) {
  return HostData(tir::DataType::Float32(), {static_cast<int64_t>(values.size())}, values);
}

// Imports `model`, compiles and runs it; output 0 as float32 values.
std::vector<float> RunModel(const ModelBuilder& model, const std::map<std::string, relax::ConstantData>& inputs) {
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(model.Bytes(), "", ImportOptions());
  EXPECT_TRUE(imported.ok()) << imported.status();
  if (!imported.ok()) return {};
  absl::StatusOr<std::vector<vm::Tensor>> out = CompileAndRun(*imported, inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  const vm::Tensor& t = out->at(0);
  EXPECT_EQ(t.dtype().code, kDLFloat);
  EXPECT_EQ(t.dtype().bits, 32);
  std::vector<float> values(static_cast<size_t>(t.shape()[0]));
  std::memcpy(values.data(), t.data(), values.size() * 4);
  return values;
}

void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& from) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(Bits(got[i]), Bits(want[i])) << "element " << i << ": " << from[i] << " gave " << got[i] << ", want "
                                           << want[i];
  }
}

TEST(OnnxBFloat16, CodesDecodeAsFloat32UpperHalves) {
  const NarrowType& t = *FindNarrowType(kOnnxBFloat16);
  EXPECT_EQ(t.storage, tir::DataType::Float32());
  EXPECT_EQ(DecodeNarrow(t, 0x3f80), 1.0);
  EXPECT_EQ(DecodeNarrow(t, 0xc040), -3.0);
  EXPECT_EQ(DecodeNarrow(t, 0x7f7f), std::ldexp(255.0, 120));  // the largest finite value
  EXPECT_EQ(DecodeNarrow(t, 0x7f7f), t.max);
  EXPECT_EQ(DecodeNarrow(t, 0x0001), std::ldexp(1.0, -133));   // the smallest subnormal
  EXPECT_EQ(DecodeNarrow(t, 0xff80), -INFINITY);
  EXPECT_TRUE(std::isnan(DecodeNarrow(t, 0x7fc0)));
  EXPECT_TRUE(std::signbit(DecodeNarrow(t, 0x8000)));
}

TEST(OnnxBFloat16, TensorsFromRawDataAndInt32Data) {
  for (bool raw : {true, false}) {
    ::onnx::TensorProto proto;
    proto.set_data_type(kBFloat16);
    proto.add_dims(3);
    const uint16_t codes[3] = {0x3f80, 0xbfc0, 0x4120};  // 1, -1.5, 10
    if (raw) {
      proto.set_raw_data(std::string(reinterpret_cast<const char*>(codes), 6));
    } else {
      for (uint16_t c : codes) proto.add_int32_data(c);
    }
    absl::StatusOr<relax::ConstantData> data = TensorFromProto(proto, "");
    ASSERT_TRUE(data.ok()) << data.status();
    EXPECT_EQ(data->dtype, tir::DataType::Float32());
    const double want[3] = {1, -1.5, 10};
    for (int i = 0; i < 3; ++i) EXPECT_EQ(ElementAsDouble(*data, i), want[i]) << (raw ? "raw" : "int32_data");
  }
  ::onnx::TensorProto short_data;
  short_data.set_name("b");
  short_data.set_data_type(kBFloat16);
  short_data.add_dims(2);
  short_data.set_raw_data(std::string(3, '\0'));
  absl::StatusOr<relax::ConstantData> bad = TensorFromProto(short_data, "");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
}

// ONNX 1.12's test data holds bfloat16 as uint16 bit patterns.
TEST(OnnxBFloat16, Uint16BitPatternsReadAsBFloat16) {
  const std::vector<uint16_t> codes = {0x3f80, 0xc0a0, 0x7f80};  // 1, -5, infinity
  relax::ConstantData widened = BFloat16BitsAsFloat32(HostData(tir::DataType::UInt(16), {3}, codes));
  EXPECT_EQ(widened.dtype, tir::DataType::Float32());
  EXPECT_EQ(ElementAsDouble(widened, 0), 1.0);
  EXPECT_EQ(ElementAsDouble(widened, 1), -5.0);
  EXPECT_EQ(ElementAsDouble(widened, 2), INFINITY);
  const relax::ConstantData floats = Float32Data({2.5f});
  EXPECT_EQ(BFloat16BitsAsFloat32(floats).bytes, floats.bytes);  // other data unchanged
}

TEST(OnnxBFloat16, HostRoundingIsToNearestEven) {
  const std::vector<float> from = BoundaryValues();
  std::vector<float> want;
  for (float f : from) want.push_back(ReferenceRound(f));
  relax::ConstantData rounded = RoundDataToBFloat16(Float32Data(from));
  std::vector<float> got(from.size());
  std::memcpy(got.data(), rounded.bytes->data(), got.size() * 4);
  ExpectSameBits(got, want, from);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  relax::ConstantData one_nan = RoundDataToBFloat16(Float32Data({nan}));
  EXPECT_TRUE(std::isnan(ElementAsDouble(one_nan, 0)));
}

TEST(OnnxBFloat16, CompiledCastRoundsToNearestEven) {
  std::vector<float> from = BoundaryValues();
  std::vector<float> want;
  for (float f : from) want.push_back(ReferenceRound(f));
  const int64_t n = static_cast<int64_t>(from.size());
  ModelBuilder g(21);
  g.Input("X", kFloat, {std::to_string(n)}).Output("Y", kBFloat16);
  SetIntAttr(g.Node("Cast", {"X"}, {"Y"}), "to", kBFloat16);
  ExpectSameBits(RunModel(g, {{"X", Float32Data(from)}}), want, from);

  // NaN (with payload bits only in the low half, which truncation would make infinity).
  ModelBuilder nan_graph(21);
  nan_graph.Input("X", kFloat, {"2"}).Output("Y", kBFloat16);
  SetIntAttr(nan_graph.Node("Cast", {"X"}, {"Y"}), "to", kBFloat16);
  std::vector<float> nans = RunModel(nan_graph, {{"X", Float32Data({FromBits(0x7f800001u), FromBits(0xffc00000u)})}});
  ASSERT_EQ(nans.size(), 2u);
  EXPECT_TRUE(std::isnan(nans[0]));
  EXPECT_TRUE(std::isnan(nans[1]));
}

// An Add of two bfloat16 inputs rounds its float32 sum; an Add of a Cast to float32 and a
// float32 input does not.
TEST(OnnxBFloat16, ArithmeticOnBFloat16RoundsItsResult) {
  const std::vector<float> x = {1.0f, 1.0f, 256.0f, -3.0f};
  const std::vector<float> y = {std::ldexp(1.0f, -8), std::ldexp(3.0f, -8), 1.0f, 0.0078125f};
  std::vector<float> sum(x.size()), want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    sum[i] = x[i] + y[i];  // exact in float32 for these values
    want[i] = ReferenceRound(sum[i]);
  }
  ModelBuilder bf16(21);
  bf16.Input("A", kBFloat16, {"4"}).Input("B", kBFloat16, {"4"}).Output("Y", kBFloat16);
  bf16.Node("Add", {"A", "B"}, {"Y"});
  ExpectSameBits(RunModel(bf16, {{"A", Float32Data(x)}, {"B", Float32Data(y)}}), want, sum);

  ModelBuilder widened(21);
  widened.Input("A", kBFloat16, {"4"}).Input("B", kFloat, {"4"}).Output("Y", kFloat);
  SetIntAttr(widened.Node("Cast", {"A"}, {"A32"}), "to", kFloat);
  widened.Node("Add", {"A32", "B"}, {"Y"});
  ExpectSameBits(RunModel(widened, {{"A", Float32Data(x)}, {"B", Float32Data(y)}}), sum, sum);
}

}  // namespace
}  // namespace kiln::frontends::onnx
