// String tensors (vm/string_tensor.h): elements point into an arena the tensor's owner keeps,
// so views outlive the tensor they came from; the element count must match the shape.
#include "vm/string_tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln::vm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(StringTensor, HoldsItsStringsAndViewsKeepThemAlive) {
  absl::StatusOr<Tensor> view;
  {
    std::vector<std::string> strings = {"a", "", "héllo", std::string("n\0ul", 4), "x", "yz"};
    absl::StatusOr<Tensor> t = MakeStringTensor({2, 3}, strings);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(IsStringTensor(*t));
    EXPECT_EQ(t->Describe(), "string[2, 3]");
    EXPECT_EQ(StringAt(*t, 3), std::string_view("n\0ul", 4));
    view = t->Reshape({3, 2});
    ASSERT_TRUE(view.ok());
  }  // the strings and the first tensor are gone; the view's owner keeps the arena
  EXPECT_THAT(StringsOf(*view), ElementsAre("a", "", "héllo", std::string("n\0ul", 4), "x", "yz"));
  absl::StatusOr<Tensor> empty = MakeStringTensor({0, 4}, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->numel(), 0);
}

TEST(StringTensor, CountMustMatchTheShape) {
  EXPECT_THAT(std::string(MakeStringTensor({2}, {"a"}).status().message()), HasSubstr("needs 2 strings, got 1"));
  EXPECT_FALSE(IsStringTensor(*Tensor::Empty({1}, DTypeFloat32())));
  EXPECT_EQ(DTypeToString(DTypeString()), "string");
  EXPECT_TRUE(*ParseDType("string") == DTypeString());
}

}  // namespace
}  // namespace kiln::vm
