// Executable::Encode / Decode of scalar constants: a float constant with an integral value
// (msgpack-c packs such a double as an integer) must come back as the same float.
#include <gtest/gtest.h>

#include "vm/executable.h"

namespace kiln::vm {
namespace {

TEST(ExecutableCodec, FloatConstantsWithIntegralValuesStayFloats) {
  Executable::Contents contents;
  const double values[] = {100000.0, -3.0, 0.0, 0.125, 1e300};
  for (double v : values) contents.constants.push_back(Value(v));
  contents.constants.push_back(Value(int64_t{7}));
  absl::StatusOr<Executable::Contents> decoded = Executable::Decode(Executable::Encode(contents));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->constants.size(), contents.constants.size());
  for (size_t i = 0; i < std::size(values); ++i) {
    ASSERT_EQ(decoded->constants[i].kind(), Value::Kind::kDouble) << i;
    EXPECT_EQ(decoded->constants[i].as_double(), values[i]);
  }
  EXPECT_EQ(decoded->constants.back().kind(), Value::Kind::kInt);
  EXPECT_EQ(decoded->constants.back().as_int(), 7);
}

}  // namespace
}  // namespace kiln::vm
