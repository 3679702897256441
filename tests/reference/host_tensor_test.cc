// HostTensor storage: narrowing on write, 16-bit float encodings, integer wrapping.
#include "tests/reference/host_tensor.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kiln::reference {
namespace {

TEST(HostTensorTest, HalfEncoding) {
  EXPECT_EQ(EncodeHalf(1.0), 0x3c00);
  EXPECT_EQ(EncodeHalf(-2.0), 0xc000);
  EXPECT_EQ(EncodeHalf(65504.0), 0x7bff);       // largest finite
  EXPECT_EQ(EncodeHalf(65520.0), 0x7c00);       // rounds up to inf
  EXPECT_EQ(EncodeHalf(std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(EncodeHalf(std::ldexp(1.0, -26)), 0x0000);  // below half of it: zero
  EXPECT_EQ(EncodeHalf(1.0 + std::ldexp(1.0, -11)), 0x3c00);  // tie: to even
  EXPECT_EQ(EncodeHalf(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);  // tie: to even (up)
  EXPECT_EQ(DecodeHalf(0x3555), 0.333251953125);
  EXPECT_TRUE(std::isnan(DecodeHalf(EncodeHalf(NAN))));
  EXPECT_EQ(DecodeHalf(0x0001), std::ldexp(1.0, -24));
}

TEST(HostTensorTest, BFloat16Encoding) {
  EXPECT_EQ(EncodeBFloat16(1.0), 0x3f80);
  EXPECT_EQ(EncodeBFloat16(-2.0), 0xc000);
  EXPECT_EQ(DecodeBFloat16(0x4049), 3.140625);
  EXPECT_EQ(EncodeBFloat16(3.14159), 0x4049);
}

TEST(HostTensorTest, NarrowingWrites) {
  HostTensor i8(DataType::Int(8), {3});
  i8.SetInt(0, 200);      // wraps
  i8.SetDouble(1, -3.7);  // truncates toward zero
  i8.SetDouble(2, NAN);   // NaN -> 0
  EXPECT_EQ(i8.ToInts(), (std::vector<int64_t>{-56, -3, 0}));
  HostTensor u8(DataType::UInt(8), {1});
  u8.SetInt(0, -1);
  EXPECT_EQ(u8.GetInt(0), 255);
  HostTensor f32(DataType::Float32(), {1});
  f32.SetDouble(0, 0.1);
  EXPECT_EQ(f32.GetDouble(0), static_cast<double>(0.1f));
  HostTensor b(DataType::Bool(), {2});
  b.SetDouble(0, 0.5);
  b.SetInt(1, 0);
  EXPECT_EQ(b.ToInts(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(b.TypeString(), "Tensor((2,), bool)");
}

TEST(HostTensorTest, Shapes) {
  HostTensor scalar(DataType::Float(64), {});
  EXPECT_EQ(scalar.numel(), 1);
  HostTensor empty(DataType::Float32(), {0, 3});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.TypeString(), "Tensor((0, 3), float32)");
  EXPECT_FALSE(IsSupportedDType(DataType::Float32().with_lanes(4)));
  EXPECT_FALSE(IsSupportedDType(DataType::Handle()));
}

}  // namespace
}  // namespace kiln::reference
