// Element reads and writes by dtype (what `kiln run` checksums and fills with), against
// hand-worked bit patterns.
#include "vm/dtype.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace kiln::vm {
namespace {

TEST(DType, ReadsSignedAndUnsignedIntegersAsTheirTypeSays) {
  const uint8_t bytes[] = {0xff, 0x80, 0x7f, 0x00};
  EXPECT_EQ(LoadElementAsDouble(bytes, {kDLInt, 8, 1}, 0), -1.0);
  EXPECT_EQ(LoadElementAsDouble(bytes, {kDLInt, 8, 1}, 1), -128.0);
  EXPECT_EQ(LoadElementAsDouble(bytes, {kDLUInt, 8, 1}, 0), 255.0);
  EXPECT_EQ(LoadElementAsDouble(bytes, {kDTypeBool, 8, 1}, 2), 1.0);
  EXPECT_EQ(LoadElementAsDouble(bytes, {kDTypeBool, 8, 1}, 3), 0.0);
  const int16_t i16[] = {-300};
  EXPECT_EQ(LoadElementAsDouble(i16, {kDLInt, 16, 1}, 0), -300.0);
  const uint16_t u16[] = {65535};
  EXPECT_EQ(LoadElementAsDouble(u16, {kDLUInt, 16, 1}, 0), 65535.0);
  const uint32_t u32[] = {4000000000u};
  EXPECT_EQ(LoadElementAsDouble(u32, {kDLUInt, 32, 1}, 0), 4e9);
  const uint64_t u64[] = {uint64_t{1} << 63};
  EXPECT_EQ(LoadElementAsDouble(u64, {kDLUInt, 64, 1}, 0), 9223372036854775808.0);
}

TEST(DType, DecodesHalfAndBFloat16) {
  // 0x3c00 = 1, 0xc100 = -2.5, 0x0001 = 2^-24 (smallest subnormal), 0x7bff = 65504,
  // 0x7c00 = inf, 0x7e00 = NaN.
  const uint16_t half[] = {0x3c00, 0xc100, 0x0001, 0x7bff, 0x7c00, 0x7e00};
  DLDataType f16{kDLFloat, 16, 1};
  EXPECT_EQ(LoadElementAsDouble(half, f16, 0), 1.0);
  EXPECT_EQ(LoadElementAsDouble(half, f16, 1), -2.5);
  EXPECT_EQ(LoadElementAsDouble(half, f16, 2), std::ldexp(1.0, -24));
  EXPECT_EQ(LoadElementAsDouble(half, f16, 3), 65504.0);
  EXPECT_TRUE(std::isinf(LoadElementAsDouble(half, f16, 4)));
  EXPECT_TRUE(std::isnan(LoadElementAsDouble(half, f16, 5)));
  // bfloat16 is the top half of a float32: 0x3fc0 = 1.5, 0xc2f7 = -123.5.
  const uint16_t bf[] = {0x3fc0, 0xc2f7};
  EXPECT_EQ(LoadElementAsDouble(bf, {kDLBfloat, 16, 1}, 0), 1.5);
  EXPECT_EQ(LoadElementAsDouble(bf, {kDLBfloat, 16, 1}, 1), -123.5);
  EXPECT_TRUE(std::isnan(LoadElementAsDouble(bf, {kDLFloat, 32, 4}, 0)));  // vector lanes: no scalar reading
}

TEST(DType, StoresRoundToNearestEven) {
  uint16_t h = 0;
  DLDataType f16{kDLFloat, 16, 1};
  ASSERT_TRUE(StoreElementFromDouble(&h, f16, 0, -2.5));
  EXPECT_EQ(h, 0xc100);
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties to even (1).
  ASSERT_TRUE(StoreElementFromDouble(&h, f16, 0, 1.0 + std::ldexp(1.0, -11)));
  EXPECT_EQ(h, 0x3c00);
  ASSERT_TRUE(StoreElementFromDouble(&h, f16, 0, 1.0 + 3 * std::ldexp(1.0, -11)));
  EXPECT_EQ(h, 0x3c02);
  ASSERT_TRUE(StoreElementFromDouble(&h, f16, 0, 70000.0));
  EXPECT_EQ(h, 0x7c00);
  ASSERT_TRUE(StoreElementFromDouble(&h, f16, 0, 3 * std::ldexp(1.0, -25)));  // 1.5 subnormal steps: ties to 2
  EXPECT_EQ(h, 0x0002);
  ASSERT_TRUE(StoreElementFromDouble(&h, {kDLBfloat, 16, 1}, 0, -123.5));
  EXPECT_EQ(h, 0xc2f7);
  int8_t i8 = 0;
  ASSERT_TRUE(StoreElementFromDouble(&i8, {kDLInt, 8, 1}, 0, -7));
  EXPECT_EQ(i8, -7);
  EXPECT_FALSE(StoreElementFromDouble(&i8, {kDLInt, 4, 1}, 0, 1));
}

// Long names and the short ones of support/dtype_short_names.h; C's words are not read
// (NumPy's "float" is float64, C's float32).
TEST(DType, ParsesLongAndShortNames) {
  auto same = [](const char* text, DLDataType want) {
    absl::StatusOr<DLDataType> t = ParseDType(text);
    return t.ok() && t->code == want.code && t->bits == want.bits && t->lanes == want.lanes;
  };
  EXPECT_TRUE(same("float32", {kDLFloat, 32, 1}));
  EXPECT_TRUE(same("f32", {kDLFloat, 32, 1}));
  EXPECT_TRUE(same("fp16", {kDLFloat, 16, 1}));
  EXPECT_TRUE(same("bf16", {kDLBfloat, 16, 1}));
  EXPECT_TRUE(same("bfloat16", {kDLBfloat, 16, 1}));
  EXPECT_TRUE(same("i64", {kDLInt, 64, 1}));
  EXPECT_TRUE(same("u8", {kDLUInt, 8, 1}));
  EXPECT_TRUE(same("uint16", {kDLUInt, 16, 1}));
  EXPECT_TRUE(same("bool", {kDTypeBool, 8, 1}));
  for (const char* bad : {"float", "double", "half", "f8", "i4", "bf32", "int", "fp", "x", ""}) {
    absl::StatusOr<DLDataType> t = ParseDType(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().message(),
              std::string("unknown data type '") + bad + "' (expected e.g. float32, f32, int64, i64, uint8, bool)");
  }
}

}  // namespace
}  // namespace kiln::vm
