#include "support/nearest_name.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kiln::support {
namespace {

const std::vector<std::string> kOps = {"add", "matmul", "permute_dims", "relu", "softmax", "layer_norm", "reshape"};

TEST(NearestName, FindsTyposWithinTheirLengthsLimit) {
  EXPECT_EQ(NearestName("relux", kOps), "relu");              // an insertion
  EXPECT_EQ(NearestName("sofmtax", kOps), "softmax");         // two neighbours swapped count once
  EXPECT_EQ(NearestName("MatMul", kOps), "matmul");           // case is ignored
  EXPECT_EQ(NearestName("layernorm", kOps), "layer_norm");    // a deletion
  EXPECT_EQ(NearestName("reshap", kOps), "reshape");
  EXPECT_EQ(NearestName("ad", kOps), "add");                  // short names: one edit
}

TEST(NearestName, OffersNothingForOtherWordsOrAnExactName) {
  EXPECT_EQ(NearestName("conv2d", kOps), std::nullopt);
  EXPECT_EQ(NearestName("mul", kOps), std::nullopt);          // 3 letters allow one edit; "add" is three away
  EXPECT_EQ(NearestName("relu", kOps), std::nullopt);         // not unknown at all
  EXPECT_EQ(NearestName("", kOps), std::nullopt);
  EXPECT_EQ(NearestName("x", {}), std::nullopt);
  EXPECT_EQ(DidYouMean("relux", kOps), " (did you mean 'relu'?)");
  EXPECT_EQ(DidYouMean("zzzzzz", kOps), "");
}

}  // namespace
}  // namespace kiln::support
