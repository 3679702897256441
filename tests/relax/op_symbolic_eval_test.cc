// Symbolic shape formulas checked against concrete references: each op's inferred dim is
// evaluated at many values of the symbolic variable and compared with a count obtained by
// enumerating the elements the op produces (loops, not the closed forms under test).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>

#include "tests/relax/op_test_util.h"

namespace kiln::relax::testing {
namespace {

using Ints = std::vector<int64_t>;
using Env = std::map<const tir::VarNode*, int64_t>;

int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// A plain evaluator for the integer expressions shape dims use.
int64_t Eval(const PrimExpr& e, const Env& env) {
  if (auto c = e.as_int()) return *c;
  if (const auto* v = e.as<tir::VarNode>()) {
    auto it = env.find(v);
    EXPECT_NE(it, env.end()) << "unbound variable " << v->name;
    return it == env.end() ? 0 : it->second;
  }
  const auto* bin = e.as<tir::BinaryNode>();
  EXPECT_NE(bin, nullptr) << "cannot evaluate " << tir::ToString(e);
  if (bin == nullptr) return 0;
  const int64_t a = Eval(bin->a, env);
  const int64_t b = Eval(bin->b, env);
  switch (e.kind()) {
    case tir::ExprKind::kAdd:
      return a + b;
    case tir::ExprKind::kSub:
      return a - b;
    case tir::ExprKind::kMul:
      return a * b;
    case tir::ExprKind::kFloorDiv:
      return FloorDivInt(a, b);
    case tir::ExprKind::kFloorMod:
      return a - FloorDivInt(a, b) * b;
    case tir::ExprKind::kMin:
      return std::min(a, b);
    case tir::ExprKind::kMax:
      return std::max(a, b);
    default:
      ADD_FAILURE() << "cannot evaluate " << tir::ToString(e);
      return 0;
  }
}

// The inferred struct info of a call (must succeed).
StructInfo InferSInfo(const std::string& op, std::vector<Expr> args, Attrs attrs = {}) {
  Expr call = Call(Op(op), std::move(args), std::move(attrs));
  tir::Analyzer analyzer;
  absl::StatusOr<StructInfo> sinfo = InferCallStructInfo(*call.as<CallNode>(), analyzer);
  EXPECT_TRUE(sinfo.ok()) << sinfo.status();
  return sinfo.ok() ? *sinfo : StructInfo();
}

PrimExpr Dim(const StructInfo& sinfo, size_t axis) {
  const auto* t = sinfo.as<TensorStructInfoNode>();
  EXPECT_TRUE(t != nullptr && t->shape) << ToString(sinfo);
  return (t != nullptr && t->shape) ? (*t->shape)[axis] : PrimExpr(int64_t{-999});
}

// numpy's slice: normalize begin/end as Python's slice.indices does, then walk the indices.
int64_t SliceCount(int64_t n, int64_t begin, int64_t end, int64_t step) {
  auto adjust = [&](int64_t v) {
    if (v < 0) {
      v += n;
      if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= n) {
      v = step < 0 ? n - 1 : n;
    }
    return v;
  };
  int64_t count = 0;
  for (int64_t i = adjust(begin); step > 0 ? i < adjust(end) : i > adjust(end); i += step) ++count;
  return count;
}

TEST(SymbolicEvalTest, StridedSliceMatchesEnumeration) {
  tir::Var n = tir::Var::Shape("n");
  const int64_t kEnd = INT64_MAX;
  const std::vector<Ints> cases = {
      {0, 3, 1},  {1, kEnd, 1},          {2, 9, 3},  {-3, kEnd, 1}, {-1, -5, -1},
      {5, 1, -2}, {kEnd, INT64_MIN, -1}, {0, -2, 2}, {4, 2, 1},     {-7, 6, 2}};
  for (const Ints& c : cases) {
    StructInfo sinfo =
        InferSInfo("strided_slice", {T({n})},
                   {{"begin", Ints{c[0]}}, {"end", Ints{c[1]}}, {"strides", Ints{c[2]}}});
    PrimExpr dim = Dim(sinfo, 0);
    for (int64_t v = 0; v <= 12; ++v) {
      EXPECT_EQ(Eval(dim, {{n.get(), v}}), SliceCount(v, c[0], c[1], c[2]))
          << "slice [" << c[0] << ":" << c[1] << ":" << c[2] << "] of n = " << v << ": "
          << tir::ToString(dim);
    }
  }
}

// Window positions over the padded input, counted one by one.
int64_t WindowCount(int64_t in, int64_t pad, int64_t k, int64_t dil, int64_t stride) {
  int64_t count = 0;
  for (int64_t p = 0; p + dil * (k - 1) < in + pad; p += stride) ++count;
  return count;
}

TEST(SymbolicEvalTest, Conv2dAndPoolMatchWindowCounts) {
  tir::Var h = tir::Var::Shape("h");
  struct Case {
    int64_t k, stride, dil, pad_top, pad_bottom;
  };
  for (const Case& c : std::vector<Case>{
           {3, 1, 1, 1, 1}, {3, 2, 1, 0, 0}, {5, 3, 2, 2, 1}, {1, 2, 1, 0, 0}, {7, 2, 1, 3, 3}}) {
    StructInfo conv = InferSInfo("conv2d", {T({1, 2, h, 16}), T({4, 2, c.k, 1})},
                                 {{"strides", Ints{c.stride, 1}},
                                  {"dilation", Ints{c.dil, 1}},
                                  {"padding", Ints{c.pad_top, 0, c.pad_bottom, 0}}});
    StructInfo pool = InferSInfo("max_pool2d", {T({1, 2, h, 16})},
                                 {{"pool_size", Ints{c.k, 1}},
                                  {"strides", Ints{c.stride, 1}},
                                  {"dilation", Ints{c.dil, 1}},
                                  {"padding", Ints{c.pad_top, 0, c.pad_bottom, 0}}});
    const int64_t span = c.dil * (c.k - 1) + 1;
    for (int64_t v = std::max<int64_t>(0, span - c.pad_top - c.pad_bottom); v <= 40; ++v) {
      const int64_t expected = WindowCount(v, c.pad_top + c.pad_bottom, c.k, c.dil, c.stride);
      EXPECT_EQ(Eval(Dim(conv, 2), {{h.get(), v}}), expected) << tir::ToString(Dim(conv, 2));
      EXPECT_EQ(Eval(Dim(pool, 2), {{h.get(), v}}), expected) << tir::ToString(Dim(pool, 2));
    }
  }
}

TEST(SymbolicEvalTest, ArangeMatchesEnumeration) {
  tir::Var a = tir::Var::Shape("a");
  tir::Var b = tir::Var::Shape("b");
  for (int64_t step : {1, 2, 3, 5}) {
    StructInfo up = InferSInfo("arange", {PrimValue(a), PrimValue(b), PrimValue(step)});
    StructInfo down = InferSInfo("arange", {PrimValue(b), PrimValue(a), PrimValue(-step)});
    for (int64_t va = 0; va <= 10; ++va) {
      for (int64_t vb = va; vb <= 20; ++vb) {  // symbolic bounds assume a non-empty range
        int64_t count = 0;
        for (int64_t x = va; x < vb; x += step) ++count;
        EXPECT_EQ(Eval(Dim(up, 0), {{a.get(), va}, {b.get(), vb}}), count);
        EXPECT_EQ(Eval(Dim(down, 0), {{a.get(), va}, {b.get(), vb}}), count);
      }
    }
  }
}

TEST(SymbolicEvalTest, ReshapeAndSplitPreserveElementCounts) {
  tir::Var n = tir::Var::Shape("n");
  StructInfo r = InferSInfo("reshape", {T({n, 6, 4}), ShapeExpr({3, -1, 2})});
  StructInfo parts = InferSInfo("split", {T({n + 3, 2})}, {{"indices_or_sections", Ints{1, 3}}});
  for (int64_t v = 0; v <= 10; ++v) {
    Env env{{n.get(), v}};
    EXPECT_EQ(3 * Eval(Dim(r, 1), env) * 2, v * 6 * 4);
    const auto* tuple = parts.as<TupleStructInfoNode>();
    ASSERT_NE(tuple, nullptr);
    int64_t total = 0;
    for (const StructInfo& f : tuple->fields) total += Eval(Dim(f, 0), env);
    EXPECT_EQ(total, v + 3);
  }
}

}  // namespace
}  // namespace kiln::relax::testing
