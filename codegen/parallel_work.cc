#include "codegen/parallel_work.h"

#include "tir/stmt_functor.h"

namespace kiln::codegen {
namespace {

bool AllAvailable(const tir::PrimExpr& e, const std::function<bool(const tir::VarNode*)>& available) {
  class Vars : public tir::StmtExprVisitor {
   public:
    explicit Vars(const std::function<bool(const tir::VarNode*)>& available) : available_(available) {}
    void VisitExpr_(const tir::VarNode* op, const tir::PrimExpr& self) override {
      ok &= available_(op);
      tir::StmtExprVisitor::VisitExpr_(op, self);
    }
    bool ok = true;

   private:
    const std::function<bool(const tir::VarNode*)>& available_;
  } vars(available);
  vars.VisitExpr(e);
  return vars.ok;
}

}  // namespace

tir::PrimExpr ParallelIterationWork(const tir::Stmt& body, const std::function<bool(const tir::VarNode*)>& available) {
  const tir::DataType i64 = tir::DataType::Int64();
  if (!body.defined()) return tir::IntImm(i64, 0);
  switch (body.kind()) {
    case tir::StmtKind::kFor: {
      const auto* loop = body.as<tir::ForNode>();
      tir::PrimExpr inner = ParallelIterationWork(loop->body, available);
      if (!AllAvailable(loop->extent, available)) return inner;
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
    default:  // a store, an evaluation, an assertion
      return tir::IntImm(i64, 1);
  }
}

}  // namespace kiln::codegen
