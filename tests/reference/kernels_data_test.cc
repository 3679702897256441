// The data-movement kernels' behaviour that NumPy cases (numpy_cases.inc) do not pin down:
// errors for out-of-range indices and bad arguments, the order of repeated scatter
// positions, sort ties, and inference errors of the same operators.
#include <gtest/gtest.h>

#include "tests/reference/test_util.h"

namespace kiln::reference {
namespace {

using testing::EvalCall;
using testing::ExpectError;
using testing::ExpectF32;
using testing::ExpectTensor;
using testing::F32;
using testing::I64;
using testing::Iota;

TEST(DataKernelTest, GatherIndicesOutOfRangeAreErrors) {
  ExpectError(EvalCall("R.gather_elements(a, b, axis=1)", {Iota({2, 3}), I64({2, 1}, {0, 3})}),
              absl::StatusCode::kInvalidArgument, {"gather_elements: index 3 is out of range [-3, 3) on axis 1"});
  ExpectF32(EvalCall("R.gather_elements(a, b, axis=1)", {Iota({2, 3}), I64({2, 1}, {-3, -1})}), {2, 1}, {0, 5});
  ExpectError(EvalCall("R.gather_nd(a, b)", {Iota({2, 3}), I64({1, 2}, {-3, 0})}), absl::StatusCode::kInvalidArgument,
              {"gather_nd: index -3 is out of range [-2, 2) on axis 0"});
  ExpectError(EvalCall("R.scatter_nd(a, b, c)", {Iota({4}), I64({1, 1}, {4}), F32({1}, {9})}),
              absl::StatusCode::kInvalidArgument, {"scatter_nd: index 4 is out of range"});
}

TEST(DataKernelTest, ScatterRepeatedPositionsApplyInOrder) {
  ExpectF32(EvalCall("R.scatter_elements(a, b, c)", {Iota({3}), I64({3}, {1, 1, -2}), F32({3}, {7, 8, 9})}), {3},
            {0, 9, 2});
  ExpectF32(EvalCall("R.scatter_elements(a, b, c, reduction=\"add\")", {Iota({3}), I64({3}, {1, 1, 0}),
                                                                        F32({3}, {7, 8, 9})}),
            {3}, {9, 16, 2});
}

TEST(DataKernelTest, SortTiesKeepIndexOrder) {
  ExpectTensor(EvalCall("R.argsort(a, descending=true)", {F32({5}, {1, 2, 1, 2, NAN})}), DataType::Int64(), {5},
               {4, 1, 3, 0, 2});
  auto topk = EvalCall("R.topk(a, k=2, largest=false)", {F32({4}, {3, 1, 1, 0})});
  ASSERT_TRUE(topk.ok()) << topk.status();
  ASSERT_EQ(topk->fields().size(), 2u);
  ExpectF32(topk->fields()[0], {2}, {0, 1});
  ExpectTensor(topk->fields()[1], DataType::Int64(), {2}, {3, 1});
}

TEST(DataKernelTest, OneHotOutOfRangeIsAllOff) {
  ExpectF32(EvalCall("R.one_hot(a, depth=3)", {I64({3}, {-1, 3, -4})}), {3, 3}, {0, 0, 1, 0, 0, 0, 0, 0, 0});
}

TEST(DataKernelTest, DynamicStridedSliceZeroStrideIsAnError) {
  ExpectError(EvalCall("R.dynamic_strided_slice(a, b, c, d)", {Iota({4}), I64({1}, {0}), I64({1}, {4}), I64({1}, {0})}),
              absl::StatusCode::kInvalidArgument, {"the stride of axis 0 (strides[0]) is 0"});
}

TEST(DataInferenceTest, ClearErrors) {
  auto infer = [](const std::string& params, const std::string& call) {
    return testing::ParseAndNormalize(absl::StrCat("module {\n  func @main(", params, ") -> Object {\n    r = ", call,
                                                   "\n    return r\n  }\n}\n"))
        .status();
  };
  auto expect = [&](const std::string& params, const std::string& call, const std::string& fragment) {
    absl::Status st = infer(params, call);
    EXPECT_FALSE(st.ok()) << call;
    EXPECT_NE(st.message().find(fragment), std::string::npos) << st;
  };
  expect("x: Tensor((n, 4), float32), i: Tensor((n, 2), float32)", "R.gather_elements(x, i, axis=1)",
         "gather_elements: indices must have an integer dtype, got float32");
  expect("x: Tensor((3, 4), float32), i: Tensor((5, 2), int64)", "R.gather_elements(x, i, axis=1)",
         "gather_elements: indices dim 0 exceeds data dim 0 (5 > 3)");
  expect("x: Tensor((3, 4), float32), i: Tensor((5, 3), int64)", "R.gather_nd(x, i)",
         "gather_nd: the last dim of indices (3) must be in [1, 2]");
  expect("x: Tensor((3, 4), float32), i: Tensor((5, 1), int64), u: Tensor((5, 3), float32)", "R.scatter_nd(x, i, u)",
         "scatter_nd: updates dim 1 differs from indices.shape[:-1] + data.shape[k:] (3 vs 4)");
  expect("x: Tensor((3, 4), float32), i: Tensor((3, 4), int64), u: Tensor((3, 4), float32)",
         "R.scatter_elements(x, i, u, reduction=\"sub\")", "reduction must be");
  expect("x: Tensor((3, 4), float32)", "R.pad(x, pads=[1, 2])", "pads has 2 entries for a tensor of ndim 2");
  expect("x: Tensor((3, 4), float32)", "R.pad(x, pads=[-2, 0, -2, 0])", "pads crop dim 0 (3) to a negative size (-1)");
  expect("x: Tensor((0, 4), float32)", "R.pad(x, pads=[1, 0, 0, 0], mode=\"edge\")", "cannot pad dim 0, which is empty");
  expect("x: Tensor((3, 4), float32)", "R.squeeze(x, axis=[0])", "cannot squeeze dim 0 of size 3");
  expect("x: Tensor((3, 4), float32)", "R.topk(x, k=5)", "k (5) is larger than dim 1 (4)");
  expect("x: Tensor((3, 4), float32)", "R.einsum((x, x), subscripts=\"ij,ij->k\")", "output letter 'k' is in no input");
  expect("x: Tensor((3, 4), float32)", "R.einsum((x, x), subscripts=\"ij,ji\")", "dims labelled 'j' differ: 4 vs 3 (operand 1 dim 0)");
  expect("x: Tensor((3, 4), float32)", "R.einsum((x,), subscripts=\"ijk\")", "has 2 dims but its term \"ijk\" names 3");
  expect("x: Tensor((3, 4), float32), b: Tensor((n,), int64)", "R.dynamic_strided_slice(x, b, b, b)",
         "the length of begin (n) must be a constant");
  expect("x: Tensor((3, 4), float32)", "R.trilu(R.sum(x, axis=[0]))", "data must have at least 2 dimensions");
}

}  // namespace
}  // namespace kiln::reference
