// Struct-info inference (relax/op/*.cc) against the reference kernels: each call below takes
// a tensor with a symbolic dim n and is evaluated for several n. The evaluator checks every
// binding's value against its inferred struct info (with n bound), so a symbolic shape
// formula that disagrees with the operator's semantics fails here, naming the binding.
#include <gtest/gtest.h>

#include "tests/reference/prim_eval.h"
#include "tests/reference/test_util.h"

namespace kiln::reference {
namespace {

struct Case {
  const char* params;  // x, whose symbolic dims all take the value n
  const char* call;
};

const Case kCases[] = {
    {"x: Tensor((n,), float32)", "R.strided_slice(x, begin=[1], end=[-1])"},
    {"x: Tensor((n,), float32)", "R.strided_slice(x, begin=[-3], end=[2147483647], strides=[2])"},
    {"x: Tensor((n,), float32)", "R.strided_slice(x, begin=[-1], end=[-2147483648], strides=[-2])"},
    {"x: Tensor((n,), float32)", "R.strided_slice(x, begin=[4], end=[0], strides=[-3])"},
    {"x: Tensor((n,), float32)", "R.strided_slice(x, begin=[2], end=[5], strides=[1])"},
    {"x: Tensor((2, n), float32)", "R.strided_slice(x, begin=[3], end=[0], axes=[1], strides=[-1])"},
    {"x: Tensor((n, 6), float32)", "R.split(x, indices_or_sections=3, axis=1)"},
    {"x: Tensor((n, 4), float32)", "R.reshape(x, R.shape([-1, 2]))"},
    {"x: Tensor((n, 4), float32)", "R.reshape(x, R.shape([2, n, 2]))"},
    {"x: Tensor((n, 4), float32)", "R.permute_dims(x)"},
    {"x: Tensor((n, 4), float32)", "R.concat((x, x), axis=0)"},
    {"x: Tensor((n, 4), float32)", "R.sum(x, axis=[0], keepdims=true)"},
    {"x: Tensor((n, 4), float32)", "R.argmax(x, axis=1)"},
    {"x: Tensor((n, 4), float32)", "R.matmul(x, R.permute_dims(x))"},
    {"x: Tensor((n, 4), float32)", "R.take(x, R.arange(R.prim(n)), axis=0)"},
    {"x: Tensor((n, 4), float32)", "R.broadcast_to(x, R.shape([3, n, 4]))"},
    {"x: Tensor((n,), float32)", "R.arange(R.prim(1), R.prim(n + 1), R.prim(2))"},
    {"x: Tensor((n,), float32)", "R.arange(R.prim(n + 2), R.prim(0), R.prim(-3))"},
    {"x: Tensor((1, 2, h, w), float32)", "R.conv2d(x, R.ones(R.shape([3, 2, 3, 2])), strides=[2, 1], padding=[1, 0, 2, 2], dilation=[1, 2])"},
    {"x: Tensor((1, 2, h, w), float32)", "R.max_pool2d(x, pool_size=[3, 2], strides=[2, 3], padding=[1, 1])"},
    {"x: Tensor((n, 4), float32)", "R.layer_norm(x, R.ones(R.shape([4])), R.zeros(R.shape([4])))"},
    {"x: Tensor((n, 4), float32)", "R.pad(x, pads=[1, -1, 2, 3])"},
    {"x: Tensor((n, 4), float32)", "R.pad(x, pads=[0, 2, 0, 5], mode=\"reflect\")"},
    {"x: Tensor((n, 4), float32)", "R.tile(x, repeats=[2, 1, 3])"},
    {"x: Tensor((1, n, 1), float32)", "R.squeeze(x, axis=[0])"},
    {"x: Tensor((n, 4), float32)", "R.expand_dims(x, axis=[1, -1])"},
    {"x: Tensor((n, 4), float32)", "R.topk(x, k=1, axis=0)"},
    {"x: Tensor((n, 4), float32)", "R.one_hot(R.argmax(x, axis=1), depth=3, axis=0)"},
    {"x: Tensor((n, 4), float32)", "R.gather_nd(x, R.zeros(R.shape([n, 2, 1]), dtype=int64), batch_dims=1)"},
    {"x: Tensor((n, 4), float32)", "R.einsum((x, x), subscripts=\"ij,kj->ik\")"},
    {"x: Tensor((n, 4), float32)", "R.einsum((x,), subscripts=\"ij->j\")"},
};

TEST(InferenceAgreementTest, SymbolicShapesMatchTheKernels) {
  for (const Case& c : kCases) {
    std::string text = absl::StrCat("module {\n  func @main(", c.params, ") -> Object {\n    r = ", c.call,
                                    "\n    return r\n  }\n}\n");
    auto module = testing::ParseAndNormalize(text);
    ASSERT_TRUE(module.ok()) << c.call << ": " << module.status();
    const relax::FunctionNode* fn = module->Find("main")->relax_function();
    const auto* x_sinfo = fn->params[0]->struct_info().as<relax::TensorStructInfoNode>();
    for (int64_t n : {1, 2, 3, 5, 8}) {
      // x's dims are constants, symbolic variables (each set to n), or n + k.
      SymbolEnv env;
      for (const tir::PrimExpr& d : *x_sinfo->shape) {
        const auto* b = d.as<tir::BinaryNode>();
        if (const auto* v = (b != nullptr ? b->a : d).as<tir::VarNode>()) {
          env[v] = PrimScalar{DataType::Int64(), n, 0};
        }
      }
      std::vector<int64_t> shape;
      for (const tir::PrimExpr& d : *x_sinfo->shape) shape.push_back(EvalPrimExpr(d, env)->AsInt());
      auto result = Evaluate(*module, "main", {testing::Iota(shape)});
      EXPECT_TRUE(result.ok()) << c.call << " with n = " << n << ": " << result.status();
    }
  }
}

}  // namespace
}  // namespace kiln::reference
