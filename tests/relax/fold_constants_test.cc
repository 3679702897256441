// FoldConstants: IR text in, IR text out (compared structurally with the expected module),
// and the folded numbers against values worked out by hand or produced by NumPy (float64,
// `python3 -c "import numpy as np; ..."`, quoted next to each case).
#include "relax/transform/fold_constants.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/block_builder.h"
#include "relax/structural_equal.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/well_formed.h"
#include "tests/reference/reference_evaluator.h"
#include "tests/relax/pass_test_util.h"

namespace kiln::relax {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing::Normalized;

IRModule Folded(const std::string& text, const FoldConstantsOptions& options = {}) {
  absl::StatusOr<IRModule> out = FoldConstants(Normalized(text), options);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return IRModule();
  absl::Status wf = CheckWellFormed(*out);
  EXPECT_TRUE(wf.ok()) << wf << "\n" << PrintModule(*out);
  return *out;
}

void ExpectFoldsTo(const std::string& in, const std::string& expected) {
  IRModule out = Folded(in);
  IRModule want = Normalized(expected);
  EXPECT_TRUE(StructuralEqual(out, want)) << StructuralDiff(out, want) << "\ngot:\n" << PrintModule(out);
}

// The binding of `name` in @main (searching nested blocks in order).
Expr BoundValue(const IRModule& module, const std::string& name) {
  const IRModule::Entry* entry = module.Find("main");
  if (entry == nullptr || !entry->is_relax()) return Expr();
  const auto* seq = entry->relax_function()->body.as<SeqExprNode>();
  for (const BindingBlock& block : seq->blocks) {
    for (const Binding& b : block.bindings) {
      if (b.var.name_hint() == name) return b.value;
    }
  }
  return Expr();
}

std::vector<double> FloatValues(const Expr& value) {
  const auto* c = value.defined() ? value.as<ConstantNode>() : nullptr;
  EXPECT_NE(c, nullptr) << "not folded to a constant";
  if (c == nullptr) return {};
  std::vector<double> out;
  const DataType t = c->data.dtype;
  for (int64_t i = 0; i < c->data.numel(); ++i) {
    const uint8_t* p = c->data.bytes->data() + i * t.bytes();
    if (t == DataType::Float32()) {
      float f;
      std::memcpy(&f, p, 4);
      out.push_back(f);
    } else if (t == DataType::Float(64)) {
      double d;
      std::memcpy(&d, p, 8);
      out.push_back(d);
    } else if (t == DataType::Int32()) {
      int32_t v;
      std::memcpy(&v, p, 4);
      out.push_back(v);
    } else if (t == DataType::Int64()) {
      int64_t v;
      std::memcpy(&v, p, 8);
      out.push_back(static_cast<double>(v));
    } else if (t.is_bool()) {
      out.push_back(*p);
    } else {
      ADD_FAILURE() << "unexpected dtype " << t.ToString();
    }
  }
  return out;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double rel = 2e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0, std::fabs(want[i]))) << "element " << i;
  }
}

void ExpectSameValue(const reference::RefValue& got, const reference::RefValue& want, const std::string& what) {
  ASSERT_EQ(got.kind(), want.kind()) << what;
  if (!want.is_tensor()) {
    ASSERT_EQ(got.fields().size(), want.fields().size()) << what;
    for (size_t k = 0; k < want.fields().size(); ++k) {
      ExpectSameValue(got.fields()[k], want.fields()[k], absl::StrCat(what, "[", k, "]"));
    }
    return;
  }
  const reference::HostTensor& g = got.tensor();
  const reference::HostTensor& w = want.tensor();
  ASSERT_EQ(g.TypeString(), w.TypeString()) << what;
  const double tolerance = w.dtype().bits() == 16 ? 1e-3 : 2e-6;
  for (int64_t e = 0; e < w.numel(); ++e) {
    if (w.dtype().is_floating()) {
      EXPECT_NEAR(g.GetDouble(e), w.GetDouble(e), tolerance * std::max(1.0, std::fabs(w.GetDouble(e))))
          << what << " element " << e;
    } else {
      EXPECT_EQ(g.GetInt(e), w.GetInt(e)) << what << " element " << e;
    }
  }
}

TEST(FoldConstantsTest, TransposedConstantWeightFeedsANonConstantMatmul) {
  ExpectFoldsTo(R"(module {
  func @main(x: Tensor((n, 3), float32)) -> Tensor((n, 2), float32) {
    dataflow {
      %w = R.const(float32, [2, 3], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
      %wt = R.permute_dims(%w, axes=[1, 0])
      y = R.matmul(x, %wt)
    }
    return y
  }
})",
                R"(module {
  func @main(x: Tensor((n, 3), float32)) -> Tensor((n, 2), float32) {
    dataflow {
      %w = R.const(float32, [2, 3], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
      %wt = R.const(float32, [3, 2], [1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
      y = R.matmul(x, %wt)
    }
    return y
  }
})");
}

TEST(FoldConstantsTest, AddOfTwoInlineConstants) {
  ExpectFoldsTo(R"(module {
  func @main() -> Tensor((3,), float32) {
    s = R.add(R.const(float32, [3], [1.0, 2.0, 3.0]), R.const(float32, [3], [0.5, 0.25, -1.0]))
    return s
  }
})",
                R"(module {
  func @main() -> Tensor((3,), float32) {
    s = R.const(float32, [3], [1.5, 2.25, 2.0])
    return s
  }
})");
}

TEST(FoldConstantsTest, ChainOfConstantsFeedingANonConstantOp) {
  // c = [[1 2] [3 4]] * 2 = [[2 4] [6 8]]; d = c + [10 20] = [[12 24] [16 28]];
  // r = reshape(d, [4]); then x + r stays.
  ExpectFoldsTo(R"(module {
  func @main(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    dataflow {
      %a = R.const(float32, [2, 2], [1.0, 2.0, 3.0, 4.0])
      %c = R.multiply(%a, R.const(float32, [], [2.0]))
      %d = R.add(%c, R.const(float32, [2], [10.0, 20.0]))
      %r = R.reshape(%d, R.shape([4]))
      y = R.add(x, %r)
    }
    return y
  }
})",
                R"(module {
  func @main(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    dataflow {
      %a = R.const(float32, [2, 2], [1.0, 2.0, 3.0, 4.0])
      %c = R.const(float32, [2, 2], [2.0, 4.0, 6.0, 8.0])
      %d = R.const(float32, [2, 2], [12.0, 24.0, 16.0, 28.0])
      %r = R.const(float32, [4], [12.0, 24.0, 16.0, 28.0])
      y = R.add(x, %r)
    }
    return y
  }
})");
}

TEST(FoldConstantsTest, TuplesOfConstantsAndTheirItems) {
  // split([0 1 2 3 4 5], 2 sections) = ([0 1 2], [3 4 5]); concat((c0, c1)) keeps order.
  IRModule out = Folded(R"(module {
  func @main(x: Tensor((3,), float32)) -> Tensor((3,), float32) {
    a = R.const(float32, [6], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    parts = R.split(a, indices_or_sections=2, axis=0)
    second = parts[1]
    pair = (second, R.const(float32, [1], [9.0]))
    joined = R.concat(pair, axis=0)
    first = pair[0]
    y = R.add(x, first)
    return y
  }
})");
  const Expr parts = BoundValue(out, "parts");
  ASSERT_TRUE(parts.defined());
  ASSERT_EQ(parts.kind(), ExprKind::kTuple) << PrintModule(out);
  ExpectNear(FloatValues(parts.as<TupleNode>()->fields[0]), {0, 1, 2});
  ExpectNear(FloatValues(BoundValue(out, "second")), {3, 4, 5});
  ExpectNear(FloatValues(BoundValue(out, "joined")), {3, 4, 5, 9});
  ExpectNear(FloatValues(BoundValue(out, "first")), {3, 4, 5});
  EXPECT_EQ(BoundValue(out, "y").kind(), ExprKind::kCall);
}

TEST(FoldConstantsTest, NumericsAgainstNumPy) {
  IRModule out = Folded(R"(module {
  func @main() -> Object {
    a = R.const(float32, [3, 4], [0.5, -1.25, 2.0, 0.75, 1.5, 0.25, -0.5, 3.0, -2.0, 1.0, 0.125, -0.75])
    b = R.const(float32, [4, 2], [1.0, -0.5, 0.25, 2.0, -1.5, 0.75, 0.5, -1.0])
    mm = R.matmul(a, b)
    x = R.const(float32, [2, 3], [1.0, 2.0, 3.0, -1.0, 0.0, 4.5])
    sm = R.softmax(x, axis=-1)
    g = R.gelu(R.const(float32, [4], [-1.5, 0.0, 0.5, 2.0]))
    ln = R.layer_norm(x, R.const(float32, [3], [1.0, 1.0, 1.0]), R.const(float32, [3], [0.0, 0.0, 0.0]), axes=[-1], epsilon=1e-05)
    i = R.const(int32, [4], [7, -7, 9, 0])
    q = R.divide(i, R.const(int32, [], [2]))
    cmp = R.less(i, R.const(int32, [], [1]))
    d = R.sum(R.astype(x, dtype=float64), axis=[1], keepdims=false)
    r = (mm, sm, g, ln, q, cmp, d)
    return r
  }
})");
  // a @ b
  ExpectNear(FloatValues(BoundValue(out, "mm")), {-2.4375, -2.0, 3.8125, -3.625, -2.3125, 3.84375});
  // np.exp(x - max) / sum, per row
  ExpectNear(FloatValues(BoundValue(out, "sm")), {0.09003057317038046, 0.24472847105479764, 0.6652409557748218,
                                                  0.004025599364553141, 0.010942713601321083, 0.9850316870341258});
  // 0.5 * v * (1 + erf(v / sqrt(2)))
  ExpectNear(FloatValues(BoundValue(out, "g")), {-0.10021080190328713, 0.0, 0.34573123063700656, 1.9544997361036416});
  // (x - mean) / sqrt(var + 1e-5), per row
  ExpectNear(FloatValues(BoundValue(out, "ln")), {-1.2247356859083902, 0.0, 1.2247356859083902, -0.9057521271455514,
                                                  -0.4877126838476045, 1.3934648109931556},
             1e-5);
  // Integer division truncates (7 / 2 = 3, -7 / 2 = -3).
  EXPECT_THAT(FloatValues(BoundValue(out, "q")), ElementsAre(3, -3, 4, 0));
  EXPECT_THAT(FloatValues(BoundValue(out, "cmp")), ElementsAre(0, 1, 0, 1));
  EXPECT_THAT(FloatValues(BoundValue(out, "d")), ElementsAre(6.0, 3.5));
}

TEST(FoldConstantsTest, FoldsInsideIfBranches) {
  IRModule out = Folded(R"(module {
  func @main(c: Prim(bool), x: Tensor((2,), float32)) -> Tensor((2,), float32) {
    r = if c {
      k = R.negative(R.const(float32, [2], [1.0, -2.0]))
      y = R.add(x, k)
      yield y
    } else {
      yield x
    }
    return r
  }
})");
  EXPECT_THAT(PrintModule(out), HasSubstr("R.const(float32, [2], [-1.0, 2.0])"));
  EXPECT_THAT(PrintModule(out), HasSubstr("R.add(x, k)"));
}

TEST(FoldConstantsTest, NothingToFoldReturnsTheSameModule) {
  IRModule in = Normalized(R"(module {
  func @main(x: Tensor((n, 4), float32), w: Tensor((4, 4), float32)) -> Tensor((n, 4), float32) {
    dataflow {
      %k = R.const(float32, [], [0.5])
      %y = R.matmul(x, w)
      z = R.multiply(%y, %k)
    }
    return z
  }

  prim_func @kernel(A: Buffer((4,), float32)) {
    A[0] = 1.0
  }
})");
  absl::StatusOr<IRModule> out = FoldConstants(in);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->entries().size(), in.entries().size());
  for (size_t i = 0; i < in.entries().size(); ++i) {
    const auto& a = in.entries()[i].func;
    const auto& b = out->entries()[i].func;
    if (in.entries()[i].is_relax()) {
      EXPECT_TRUE(std::get<Expr>(a).same_as(std::get<Expr>(b)));
    } else {
      EXPECT_TRUE(std::get<tir::PrimFunc>(a).same_as(std::get<tir::PrimFunc>(b)));
    }
  }
}

TEST(FoldConstantsTest, SizeCapAndStepBudgetLeaveTheCallInPlace) {
  const std::string text = R"(module {
  func @main() -> Tensor((1025, 1024), float32) {
    big = R.broadcast_to(R.const(float32, [], [1.0]), R.shape([1025, 1024]))
    return big
  }
})";
  // 1025 * 1024 elements is above the default cap of 1 << 20.
  EXPECT_EQ(BoundValue(Folded(text), "big").kind(), ExprKind::kCall);

  const std::string small = R"(module {
  func @main() -> Tensor((2, 3), float32) {
    s = R.broadcast_to(R.const(float32, [], [1.5]), R.shape([2, 3]))
    return s
  }
})";
  ExpectNear(FloatValues(BoundValue(Folded(small), "s")), {1.5, 1.5, 1.5, 1.5, 1.5, 1.5});
  FoldConstantsOptions capped;
  capped.max_elements = 5;
  EXPECT_EQ(BoundValue(Folded(small, capped), "s").kind(), ExprKind::kCall);
  FoldConstantsOptions slow;
  slow.max_steps = 3;
  EXPECT_EQ(BoundValue(Folded(small, slow), "s").kind(), ExprKind::kCall);
}

TEST(FoldConstantsTest, SymbolicResultsImpureCallsAndUnlowerableCallsAreNotFolded) {
  IRModule out = Folded(R"(module {
  impure func @main(x: Tensor((n,), float32)) -> Tensor((n,), float32) {
    s = R.shape_of(x)
    z = R.zeros(s, dtype=float32)
    p = R.print(R.const(float32, [1], [1.0]), format="{}")
    bf = R.add(R.const(bfloat16, [1], [0x3f80]), R.const(bfloat16, [1], [0x3f80]))
    return z
  }
})");
  EXPECT_EQ(BoundValue(out, "z").kind(), ExprKind::kCall);
  EXPECT_EQ(BoundValue(out, "p").kind(), ExprKind::kCall);
  // No CPU lowering for bfloat16: not folded, and not an error here (legalize reports it).
  EXPECT_EQ(BoundValue(out, "bf").kind(), ExprKind::kCall);
}

TEST(FoldConstantsTest, UndefinedFoldedValueIsLeftToRunTime) {
  // The division may sit on a path that never runs: not folding it is not an error.
  absl::StatusOr<IRModule> out = FoldConstants(Normalized(R"(module {
  func @main() -> Tensor((2,), int32) {
    q = R.divide(R.const(int32, [2], [10, 4]), R.const(int32, [2], [2, 0]))
    return q
  }
})"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(BoundValue(*out, "q").kind(), ExprKind::kCall);
}

TEST(FoldConstantsTest, LargeCreationOpsAreLeftToRunTime) {
  absl::StatusOr<IRModule> out = FoldConstants(Normalized(R"(module {
  func @main() -> Tensor((1024, 1024), float32) {
    small = R.zeros(R.shape([64, 64]), dtype=float32)
    big = R.zeros(R.shape([1024, 1024]), dtype=float32)
    return big
  }
})"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(BoundValue(*out, "small").kind(), ExprKind::kConstant);
  EXPECT_EQ(BoundValue(*out, "big").kind(), ExprKind::kCall);
}

// Every operator with a legalization, on constants: each binding must fold, and the folded
// values must agree with the reference evaluator (tests/reference, which shares no code
// with legalization or the interpreter) run on the unfolded module.
TEST(FoldConstantsTest, EveryOperatorFoldsAndAgreesWithTheReferenceEvaluator) {
  IRModule in = Normalized(R"(module {
  func @main() -> Object {
    a = R.const(float32, [2, 3], [0.5, -1.25, 2.0, 0.75, -3.0, 1.5])
    b = R.const(float32, [3], [1.5, 0.25, -0.5])
    p = R.const(float32, [2, 3], [0.5, 1.25, 2.0, 0.75, 3.0, 1.5])
    i = R.const(int32, [2, 3], [7, -7, 9, 0, 3, -2])
    j = R.const(int32, [3], [2, -3, 5])
    c = R.const(bool, [2, 3], [true, false, true, false, false, true])
    idx = R.const(int64, [2], [2, 0])
    img = R.const(float32, [1, 2, 4, 4], [-1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1.0, 0.0, -1.0, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1.0, 0.0, -1.0, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1.0, 0.0, -1.0, 0.75])
    ker = R.const(float32, [3, 2, 3, 3], [-0.5, 0.125, -0.375, 0.25, -0.25, 0.375, -0.125, 0.5, 0.0, -0.5, 0.125, -0.375, 0.25, -0.25, 0.375, -0.125, 0.5, 0.0, -0.5, 0.125, -0.375, 0.25, -0.25, 0.375, -0.125, 0.5, 0.0, -0.5, 0.125, -0.375, 0.25, -0.25, 0.375, -0.125, 0.5, 0.0, -0.5, 0.125, -0.375, 0.25, -0.25, 0.375, -0.125, 0.5, 0.0, -0.5, 0.125, -0.375, 0.25, -0.25, 0.375, -0.125, 0.5, 0.0])
    add = R.add(a, b)
    subtract = R.subtract(a, b)
    multiply = R.multiply(a, b)
    divide = R.divide(a, b)
    maximum = R.maximum(a, b)
    minimum = R.minimum(a, b)
    power = R.power(p, b)
    iadd = R.add(i, j)
    idiv = R.divide(i, j)
    imin = R.minimum(i, j)
    ipow = R.power(i, R.const(int32, [], [2]))
    equal = R.equal(a, b)
    not_equal = R.not_equal(i, j)
    less = R.less(a, b)
    less_equal = R.less_equal(i, j)
    greater = R.greater(a, b)
    greater_equal = R.greater_equal(a, b)
    negative = R.negative(a)
    ineg = R.negative(i)
    relu = R.relu(a)
    irelu = R.relu(i)
    exp = R.exp(a)
    log = R.log(p)
    sqrt = R.sqrt(p)
    rsqrt = R.rsqrt(p)
    tanh = R.tanh(a)
    sigmoid = R.sigmoid(a)
    gelu = R.gelu(a)
    silu = R.silu(a)
    where = R.where(c, a, p)
    at = R.permute_dims(a, axes=[1, 0])
    matmul = R.matmul(a, at)
    vecmat = R.matmul(b, at)
    reshape = R.reshape(a, R.shape([3, 2]))
    broadcast = R.broadcast_to(b, R.shape([2, 3]))
    concat = R.concat((a, p), axis=1)
    split = R.split(a, indices_or_sections=[1], axis=1)
    slice = R.strided_slice(a, axes=[1], begin=[2], end=[0], strides=[-1])
    take = R.take(a, idx, axis=1)
    sum = R.sum(a, axis=[1])
    mean = R.mean(a, axis=[0], keepdims=true)
    max = R.max(a)
    min = R.min(i, axis=[1])
    argmax = R.argmax(a, axis=1)
    argmin = R.argmin(a)
    softmax = R.softmax(a, axis=0)
    layer_norm = R.layer_norm(a, b, b, axes=[-1], epsilon=1e-05)
    rms_norm = R.rms_norm(a, b, axes=[-1], epsilon=1e-05)
    to_int = R.astype(a, dtype=int32)
    to_half = R.astype(a, dtype=float16)
    to_double = R.astype(i, dtype=float64)
    full = R.full(R.shape([2, 2]), R.prim(1.5), dtype=float32)
    zeros = R.zeros(R.shape([2, 3]), dtype=int32)
    ones = R.ones(R.shape([3]), dtype=float64)
    arange = R.arange(R.prim(1), R.prim(10), R.prim(3))
    conv = R.conv2d(img, ker, padding=[1])
    pool = R.max_pool2d(img, pool_size=[2])
    r = (add, subtract, multiply, divide, maximum, minimum, power, iadd, idiv, imin, ipow, equal, not_equal, less, less_equal, greater, greater_equal, negative, ineg, relu, irelu, exp, log, sqrt, rsqrt, tanh, sigmoid, gelu, silu, where, matmul, vecmat, reshape, broadcast, concat, split, slice, take, sum, mean, max, min, argmax, argmin, softmax, layer_norm, rms_norm, to_int, to_half, to_double, full, zeros, ones, arange, conv, pool)
    return r
  }
})");
  absl::StatusOr<reference::RefValue> want = reference::Evaluate(in, "main", {});
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<IRModule> out = FoldConstants(in);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(CheckWellFormed(*out).ok());
  // Every operator call is gone.
  const auto* seq = out->Find("main")->relax_function()->body.as<SeqExprNode>();
  for (const BindingBlock& block : seq->blocks) {
    for (const Binding& binding : block.bindings) {
      EXPECT_NE(binding.value.kind(), ExprKind::kCall) << binding.var.name_hint() << " was not folded";
    }
  }
  absl::StatusOr<reference::RefValue> got = reference::Evaluate(*out, "main", {});
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameValue(*got, *want, "r");
}

}  // namespace
}  // namespace kiln::relax
