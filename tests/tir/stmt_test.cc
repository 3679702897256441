#include "tir/stmt.h"

#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

// C[i, j] = sum_k A[i, k] * B[k, j] over symbolic n, as a block inside three loops.
PrimFunc MatmulFunc() {
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {n, 64});
  Buffer b("B", DataType::Float32(), {64, 32});
  Buffer c("C", DataType::Float32(), {n, 32});
  Var i("i"), j("j"), k("k");
  Var vi("vi"), vj("vj"), vk("vk");
  std::vector<IterVar> iters = {{vi, n, IterType::kSpatial, i},
                                {vj, 32, IterType::kSpatial, j},
                                {vk, 64, IterType::kReduction, k}};
  Stmt init = BufferStore(c, FloatImm(DataType::Float32(), 0), {vi, vj});
  Stmt body = BufferStore(c, c.Load({vi, vj}) + a.Load({vi, vk}) * b.Load({vk, vj}), {vi, vj});
  Stmt block = Block("C", iters, body, init);
  Stmt loops = For(i, 0, n, ForKind::kParallel,
                   For(j, 0, 32, ForKind::kSerial, For(k, 0, 64, ForKind::kSerial, block)));
  return PrimFunc({{a, Var()}, {b, Var()}, {c, Var()}}, loops, {{"op_pattern", "matmul"}});
}

TEST(Stmt, BuildsABlockReductionInALoopNest) {
  PrimFunc f = MatmulFunc();
  ASSERT_EQ(f->params.size(), 3u);
  const auto* outer = f->body.as<ForNode>();
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->for_kind, ForKind::kParallel);
  const auto* k_loop = outer->body.as<ForNode>()->body.as<ForNode>();
  const auto* block = k_loop->body.as<BlockNode>();
  ASSERT_NE(block, nullptr);
  EXPECT_TRUE(block->is_reduction());
  EXPECT_TRUE(block->init.defined());
  EXPECT_EQ(f->attrs.at("op_pattern"), "matmul");
}

TEST(Stmt, SeqStmtFlattensAndUnwrapsASingleStatement) {
  Var x("x");
  Stmt e = Evaluate(x);
  EXPECT_TRUE(SeqStmt({e}).same_as(e));
  Stmt nested = SeqStmt({SeqStmt({e, e}), e});
  ASSERT_NE(nested.as<SeqStmtNode>(), nullptr);
  EXPECT_EQ(nested.as<SeqStmtNode>()->seq.size(), 3u);
}

TEST(Stmt, ForKindsHaveTextNames) {
  EXPECT_STREQ(ForKindName(ForKind::kVectorized), "vectorized");
  EXPECT_STREQ(ForKindName(ForKind::kThreadBinding), "thread_binding");
}

TEST(StmtDeathTest, StoreOfTheWrongTypeIsAnInvariantFailure) {
  Buffer a("A", DataType::Float32(), {4});
  EXPECT_DEATH(BufferStore(a, IntImm(DataType::Int32(), 1), {0}), "store of int32 to A");
}

TEST(StmtDeathTest, ThreadTagOnlyWithThreadBinding) {
  Var i("i");
  EXPECT_DEATH(For(i, 0, 4, ForKind::kSerial, Evaluate(i), "threadIdx.x"), "thread_binding");
}

}  // namespace
}  // namespace kiln::tir
