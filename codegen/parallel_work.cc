#include "codegen/parallel_work.h"

#include "codegen/loop_invariance.h"

namespace kiln::codegen {

tir::PrimExpr ParallelIterationWork(const tir::Stmt& body, const std::function<bool(const tir::VarNode*)>& available) {
  const tir::DataType i64 = tir::DataType::Int64();
  if (!body.defined()) return tir::IntImm(i64, 0);
  switch (body.kind()) {
    case tir::StmtKind::kFor: {
      const auto* loop = body.as<tir::ForNode>();
      tir::PrimExpr inner = ParallelIterationWork(loop->body, available);
      if (!UsesOnlyAvailableVars(loop->extent, available)) return inner;
      tir::PrimExpr extent = loop->extent.dtype() == i64 ? loop->extent : tir::Cast(i64, loop->extent);
      return tir::Max(extent, tir::IntImm(i64, 0)) * inner;
    }
    case tir::StmtKind::kSeqStmt: {
      tir::PrimExpr sum = tir::IntImm(i64, 0);
      for (const tir::Stmt& s : body.as<tir::SeqStmtNode>()->seq) sum = sum + ParallelIterationWork(s, available);
      return sum;
    }
    case tir::StmtKind::kIfThenElse: {
      const auto* branch = body.as<tir::IfThenElseNode>();
      // One branch runs: the larger. (A tiled kernel's full tile and its edge tile are the two
      // branches of one `if`; their sum counted every tile twice.)
      return tir::Max(ParallelIterationWork(branch->then_case, available),
                      ParallelIterationWork(branch->else_case, available));
    }
    case tir::StmtKind::kAllocate:
      return ParallelIterationWork(body.as<tir::AllocateNode>()->body, available);
    case tir::StmtKind::kLetStmt:
      return ParallelIterationWork(body.as<tir::LetStmtNode>()->body, available);
    case tir::StmtKind::kDeclBuffer:
      return ParallelIterationWork(body.as<tir::DeclBufferNode>()->body, available);
    case tir::StmtKind::kBlock:
      return ParallelIterationWork(body.as<tir::BlockNode>()->body, available);
    case tir::StmtKind::kBufferStore:
      // One unit per lane: vectorize_loops turned `for j in vectorized(0, 32)` into one
      // 32-lane store, the same work as the loop it replaced. Counted as 1, the n = 300
      // attention scores (5.8 M multiply-add lanes) looked like 200 k units and ran serially.
      return tir::IntImm(i64, body.as<tir::BufferStoreNode>()->value.dtype().lanes());
    default:  // an evaluation, an assertion
      return tir::IntImm(i64, 1);
  }
}

}  // namespace kiln::codegen
