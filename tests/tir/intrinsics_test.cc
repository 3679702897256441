// The signatures of lowered TIR's intrinsics (tir/intrinsics.h): address_of names a buffer
// element, so its argument must be a buffer access, whatever the element's type.
#include "tir/intrinsics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tir/buffer.h"

namespace kiln::tir {
namespace {

using ::testing::HasSubstr;

TEST(IntrinsicsTest, AddressOfTakesABufferElementAndGivesAHandle) {
  Buffer m("M", DataType::Float(16), {PrimExpr(int64_t{8})});
  std::vector<PrimExpr> element = {m.Load({PrimExpr(int64_t{0})})};
  EXPECT_TRUE(CheckIntrinsicCall("address_of", element).ok());
  const IntrinsicInfo* info = FindIntrinsic("address_of");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(IntrinsicResultType(*info, element), DataType::Handle());

  absl::Status not_element = CheckIntrinsicCall("address_of", {PrimExpr(int64_t{0})});
  EXPECT_THAT(not_element.message(), HasSubstr("argument 1 of 'address_of' must be a buffer element B[i], found 0"));
  EXPECT_FALSE(CheckIntrinsicCall("address_of", {}).ok());
}

}  // namespace
}  // namespace kiln::tir
