// DecomposeReduction: a reduction block's init becomes its own block before a loop.
#include <set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

absl::StatusOr<DecomposeResult> DecomposeReduction(const PrimFunc& func, const std::string& block_name,
                                                   const std::string& loop_name) {
  KILN_ASSIGN_OR_RETURN(Stmt block_stmt, FindBlock(func, block_name, "decompose_reduction"));
  KILN_ASSIGN_OR_RETURN(Stmt loop_stmt, FindLoop(func, loop_name, "decompose_reduction"));
  const auto* block = block_stmt.as<BlockNode>();
  if (!block->init.defined()) {
    return absl::InvalidArgumentError(absl::StrCat("decompose_reduction: block '", block_name, "' has no init"));
  }
  std::vector<Stmt> ancestors = AncestorsOf(func->body, block);
  std::vector<Stmt> loops = LoopsAbove(func->body, block);
  size_t pos = 0;
  while (pos < loops.size() && !loops[pos].same_as(loop_stmt)) ++pos;
  if (pos == loops.size()) {
    return absl::InvalidArgumentError(absl::StrCat("decompose_reduction: loop '", loop_name,
                                                   "' is not in block '", block_name, "''s loop nest"));
  }
  // Between the loop and the block only loops and sequences may stand: a condition there
  // would have to guard the init too.
  bool inside = false;
  for (const Stmt& a : ancestors) {
    if (a.same_as(loop_stmt)) inside = true;
    if (inside && a.kind() != StmtKind::kFor && a.kind() != StmtKind::kSeqStmt) {
      return absl::InvalidArgumentError(absl::StrCat("decompose_reduction: a non-loop statement stands between loop '",
                                                     loop_name, "' and block '", block_name, "'"));
    }
  }
  std::vector<const VarNode*> outer_vars, inner_vars;
  for (size_t i = 0; i < loops.size(); ++i) {
    (i < pos ? outer_vars : inner_vars).push_back(loops[i].as<ForNode>()->loop_var.get());
  }
  std::vector<const VarNode*> reduce_vars;  // loop variables bound to reduction variables
  for (const IterVar& iv : block->iter_vars) {
    if (iv.type != IterType::kReduction) continue;
    if (UsesAnyVar(iv.value, outer_vars)) {
      return absl::InvalidArgumentError(
          absl::StrCat("decompose_reduction: reduction variable '", iv.var.name(), "' of block '", block_name,
                       "' is bound to a loop outside '", loop_name, "'; the init would run more than once"));
    }
    for (const VarNode* v : inner_vars) {
      if (UsesVar(iv.value, v)) reduce_vars.push_back(v);
    }
  }
  // Inner loops the spatial bindings (or the predicate) use are copied around the init.
  NameSet used = UsedNames(func);
  VarMap loop_map;
  std::vector<const ForNode*> copied;
  std::vector<Var> copied_vars;
  for (size_t i = pos; i < loops.size(); ++i) {
    const auto* l = loops[i].as<ForNode>();
    bool spatial = UsesVar(block->predicate, l->loop_var.get());
    for (const IterVar& iv : block->iter_vars) {
      if (iv.type == IterType::kSpatial) spatial |= UsesVar(iv.value, l->loop_var.get());
    }
    if (!spatial) continue;
    for (const VarNode* r : reduce_vars) {
      if (r == l->loop_var.get()) {
        return absl::InvalidArgumentError(absl::StrCat("decompose_reduction: loop '", l->loop_var.name(),
                                                       "' binds both spatial and reduction variables of block '",
                                                       block_name, "'"));
      }
    }
    copied.push_back(l);
    copied_vars.emplace_back(FreshName(absl::StrCat(l->loop_var.name(), "_init"), &used), l->loop_var.dtype());
    loop_map[l->loop_var.get()] = copied_vars.back();
  }
  std::vector<IterVar> iter_vars;
  VarMap iter_map;
  for (const IterVar& iv : block->iter_vars) {
    if (iv.type != IterType::kSpatial) continue;
    Var v(FreshName(absl::StrCat(iv.var.name(), "_init"), &used), iv.var.dtype());
    iter_map[iv.var.get()] = v;
    iter_vars.push_back(IterVar{v, iv.extent, IterType::kSpatial, Substitute(iv.value, loop_map)});
  }
  PrimExpr predicate = block->predicate.defined() ? Substitute(block->predicate, loop_map) : PrimExpr();
  std::string init_name = FreshName(absl::StrCat(block_name, "_init"), &used);
  Stmt init = Block(init_name, iter_vars, Substitute(block->init, iter_map), Stmt(), predicate);
  for (size_t i = copied.size(); i-- > 0;) {
    const ForNode* l = copied[i];
    // A vectorized inner loop stays vectorized; parallel copies would nest parallel regions.
    ForKind kind = l->for_kind == ForKind::kParallel ? ForKind::kSerial : l->for_kind;
    init = For(copied_vars[i],
               l->min, l->extent, kind, init);
  }
  Stmt without_init =
      Block(block->name, block->iter_vars, block->body, Stmt(), block->predicate, block->alloc_buffers);
  class Rewriter : public StmtExprMutator {
   public:
    Rewriter(const StmtNode* block, Stmt new_block, const StmtNode* loop, Stmt init)
        : block_(block), new_block_(std::move(new_block)), loop_(loop), init_(std::move(init)) {}
    Stmt VisitStmt(const Stmt& s) override {
      if (s.get() == block_) return new_block_;
      if (s.get() == loop_) return SeqStmt({init_, StmtExprMutator::VisitStmt(s)});
      return StmtExprMutator::VisitStmt(s);
    }

   private:
    const StmtNode* block_;
    Stmt new_block_;
    const StmtNode* loop_;
    Stmt init_;
  };
  Stmt body = Rewriter(block, without_init, loop_stmt.get(), init).VisitStmt(func->body);
  return DecomposeResult{WithBody(func, body), init_name};
}

}  // namespace kiln::tir::schedule_primitive
