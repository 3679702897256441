// The evaluator against NumPy on random inputs: numpy_cases.inc holds calls, inputs and
// NumPy's outputs, generated once by make_numpy_cases.py (the test never runs Python).
// NumPy computes from the same float32 inputs in float64; the evaluator rounds its result to
// float32, hence the relative tolerance. The last cases hold NaN and infinities: NumPy's
// propagation rules are the evaluator's (np.maximum, np.max, np.argmax, softmax, pooling).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/reference/test_util.h"

namespace kiln::reference {
namespace {

struct NumpyArg {
  const char* dtype;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

struct NumpyCase {
  const char* call;
  std::vector<NumpyArg> args;
  std::vector<int64_t> out_shape;
  std::vector<double> out;
};

const std::vector<NumpyCase>& Cases() {
  static const auto* cases = new std::vector<NumpyCase>{
#include "tests/reference/numpy_cases.inc"
  };
  return *cases;
}

TEST(NumpyCasesTest, EvaluatorMatchesNumpy) {
  ASSERT_GE(Cases().size(), 170u);
  for (const NumpyCase& c : Cases()) {
    SCOPED_TRACE(c.call);
    std::vector<RefValue> args;
    for (const NumpyArg& a : c.args) {
      auto dtype = DataType::Parse(a.dtype);
      ASSERT_TRUE(dtype.ok());
      args.emplace_back(HostTensor::FromDoubles(*dtype, a.shape, a.values));
    }
    auto result = testing::EvalCall(c.call, std::move(args));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->is_tensor());
    const HostTensor& t = result->tensor();
    ASSERT_EQ(t.shape(), c.out_shape);
    int mismatches = 0;
    for (int64_t i = 0; i < t.numel() && mismatches < 5; ++i) {
      double want = c.out[static_cast<size_t>(i)];
      double got = t.GetDouble(i);
      // NaN where NumPy has NaN, the same infinity where it has one, close elsewhere.
      const bool same = std::isnan(want) ? std::isnan(got)
                        : std::isinf(want) ? got == want
                                           : std::fabs(got - want) <= 1e-5 * std::max(1.0, std::fabs(want));
      if (!same) {
        ADD_FAILURE() << "element " << i << ": got " << got << ", NumPy " << want;
        ++mismatches;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::reference
