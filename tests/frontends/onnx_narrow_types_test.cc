// ONNX's narrow element types (float8, float4, int4, int2) decoded into their storage types:
// codes checked against the values the formats' specifications give (the ONNX Cast
// operator's table, the OCP 8-bit floating point specification: E4M3FN's largest value is
// 0x7E = 448, E5M2's 0x7B = 57344, ...), and packed tensors read through TensorFromProto.
// Rounding to these types (Cast, QuantizeLinear) is checked against ONNX's reference
// outputs by the cases in onnx_node_new (ctest onnx_node_new_cases).
#include <cmath>
#include <cstring>

#include "frontends/onnx/narrow_types.h"
#include "frontends/onnx/tensor_proto.h"
#include "gtest/gtest.h"

namespace kiln::frontends::onnx {
namespace {

double Decode(int32_t type, uint32_t code) { return DecodeNarrow(*FindNarrowType(type), code); }

TEST(OnnxNarrowTypes, Float8E4M3FN) {
  EXPECT_EQ(Decode(kOnnxFloat8E4M3FN, 0x7e), 448);
  EXPECT_TRUE(std::isnan(Decode(kOnnxFloat8E4M3FN, 0x7f)));
  EXPECT_TRUE(std::isnan(Decode(kOnnxFloat8E4M3FN, 0xff)));
  EXPECT_EQ(Decode(kOnnxFloat8E4M3FN, 0x78), 256);  // exponent all ones is a normal binade
  EXPECT_EQ(Decode(kOnnxFloat8E4M3FN, 0x38), 1);
  EXPECT_EQ(Decode(kOnnxFloat8E4M3FN, 0x08), std::ldexp(1.0, -6));   // smallest normal
  EXPECT_EQ(Decode(kOnnxFloat8E4M3FN, 0x01), std::ldexp(1.0, -9));   // smallest subnormal
  EXPECT_EQ(Decode(kOnnxFloat8E4M3FN, 0xbc), -1.5);
  EXPECT_TRUE(std::signbit(Decode(kOnnxFloat8E4M3FN, 0x80)));
}

TEST(OnnxNarrowTypes, Float8Fnuz) {
  EXPECT_TRUE(std::isnan(Decode(kOnnxFloat8E4M3FNUZ, 0x80)));
  EXPECT_EQ(Decode(kOnnxFloat8E4M3FNUZ, 0x7f), 240);
  EXPECT_EQ(Decode(kOnnxFloat8E4M3FNUZ, 0x01), std::ldexp(1.0, -10));
  EXPECT_EQ(Decode(kOnnxFloat8E4M3FNUZ, 0x40), 1);
  EXPECT_TRUE(std::isnan(Decode(kOnnxFloat8E5M2FNUZ, 0x80)));
  EXPECT_EQ(Decode(kOnnxFloat8E5M2FNUZ, 0x7f), 57344);
  EXPECT_EQ(Decode(kOnnxFloat8E5M2FNUZ, 0x01), std::ldexp(1.0, -17));
}

TEST(OnnxNarrowTypes, Float8E5M2IsIeeeLike) {
  EXPECT_EQ(Decode(kOnnxFloat8E5M2, 0x7b), 57344);
  EXPECT_EQ(Decode(kOnnxFloat8E5M2, 0x7c), INFINITY);
  EXPECT_EQ(Decode(kOnnxFloat8E5M2, 0xfc), -INFINITY);
  EXPECT_TRUE(std::isnan(Decode(kOnnxFloat8E5M2, 0x7d)));
  EXPECT_EQ(Decode(kOnnxFloat8E5M2, 0x3c), 1);
  EXPECT_EQ(Decode(kOnnxFloat8E5M2, 0x01), std::ldexp(1.0, -16));
}

TEST(OnnxNarrowTypes, Float4E2M1AndE8M0) {
  const double positives[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (uint32_t code = 0; code < 8; ++code) {
    EXPECT_EQ(Decode(kOnnxFloat4E2M1, code), positives[code]) << code;
    EXPECT_EQ(Decode(kOnnxFloat4E2M1, code | 8), -positives[code]) << code;
  }
  EXPECT_EQ(Decode(kOnnxFloat8E8M0, 127), 1);
  EXPECT_EQ(Decode(kOnnxFloat8E8M0, 0), std::ldexp(1.0, -127));
  EXPECT_EQ(Decode(kOnnxFloat8E8M0, 254), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(Decode(kOnnxFloat8E8M0, 255)));
}

TEST(OnnxNarrowTypes, SubByteIntegersAreTwosComplement) {
  EXPECT_EQ(Decode(kOnnxInt4, 0x7), 7);
  EXPECT_EQ(Decode(kOnnxInt4, 0x8), -8);
  EXPECT_EQ(Decode(kOnnxInt4, 0xf), -1);
  EXPECT_EQ(Decode(kOnnxUInt4, 0xf), 15);
  EXPECT_EQ(Decode(kOnnxInt2, 0x2), -2);
  EXPECT_EQ(Decode(kOnnxInt2, 0x1), 1);
  EXPECT_EQ(Decode(kOnnxUInt2, 0x3), 3);
}

// int4 [1, -2, 7, -8, 3]: two per byte, the first in the low nibble, the last byte padded.
TEST(OnnxNarrowTypes, PackedTensorsUnpackIntoStorage) {
  ::onnx::TensorProto proto;
  proto.set_name("q");
  proto.set_data_type(kOnnxInt4);
  proto.add_dims(5);
  const uint8_t packed[3] = {0xe1, 0x87, 0x03};
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(packed), 3));
  absl::StatusOr<relax::ConstantData> data = TensorFromProto(proto, "");
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->dtype, tir::DataType::Int(8));
  ASSERT_EQ(data->shape, std::vector<int64_t>{5});
  const int8_t want[5] = {1, -2, 7, -8, 3};
  ASSERT_EQ(data->bytes->size(), 5u);
  EXPECT_EQ(std::memcmp(data->bytes->data(), want, 5), 0);

  // The same bytes in int32_data (one packed byte per entry).
  proto.clear_raw_data();
  for (uint8_t b : packed) proto.add_int32_data(b);
  data = TensorFromProto(proto, "");
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(std::memcmp(data->bytes->data(), want, 5), 0);

  // A byte too few is an error naming the tensor and the type, not a read past the end.
  proto.clear_int32_data();
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(packed), 2));
  data = TensorFromProto(proto, "");
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(data.status().message().find("tensor 'q': INT4 data holds 2 bytes, its dims need 3"), std::string::npos)
      << data.status();
}

TEST(OnnxNarrowTypes, Float8TensorsDecodeToFloat32) {
  ::onnx::TensorProto proto;
  proto.set_data_type(kOnnxFloat8E5M2);
  proto.add_dims(3);
  const uint8_t codes[3] = {0x3c, 0xfc, 0x7b};
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(codes), 3));
  absl::StatusOr<relax::ConstantData> data = TensorFromProto(proto, "");
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->dtype, tir::DataType::Float32());
  float values[3];
  std::memcpy(values, data->bytes->data(), sizeof(values));
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], -INFINITY);
  EXPECT_EQ(values[2], 57344.0f);
  EXPECT_EQ(OnnxDataTypeName(kOnnxFloat8E5M2), "FLOAT8E5M2");
}

}  // namespace
}  // namespace kiln::frontends::onnx
