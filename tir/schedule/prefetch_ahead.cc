// PrefetchAhead: a block that streams through a buffer along its last dimension asks for
// the data a fixed distance ahead of what it reads now, so that the memory's latency is
// hidden behind the work on the current part. The hardware's stream prefetcher does this
// on its own for one stream; a GEMV's loop reads 8 weight rows 16 KiB apart at once, and the
// software prefetch measured 1.10-1.19x on one thread (docs/schedule.md).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"
#include "tir/structural_equal.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

// The one load of `buffer` in `body` (every load of it with the same indices), or null
// when it has none; `*several` set when it loads it at two different places.
const BufferLoadNode* OnlyLoadOf(const Stmt& body, const BufferNode* buffer, bool* several) {
  const BufferLoadNode* found = nullptr;
  class Loads : public StmtExprVisitor {
   public:
    Loads(const BufferNode* buffer, const BufferLoadNode** found, bool* several)
        : buffer_(buffer), found_(found), several_(several) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      if (op->buffer.get() == buffer_) {
        if (*found_ == nullptr) {
          *found_ = op;
        } else {
          bool same = (*found_)->indices.size() == op->indices.size();
          for (size_t i = 0; same && i < op->indices.size(); ++i) {
            same = StructuralEqual((*found_)->indices[i], op->indices[i]);
          }
          *several_ |= !same;
        }
      }
      StmtExprVisitor::VisitExpr_(op, self);
    }

   private:
    const BufferNode* buffer_;
    const BufferLoadNode** found_;
    bool* several_;
  } loads(buffer, &found, several);
  loads.VisitStmt(body);
  return found;
}

}  // namespace

absl::StatusOr<PrimFunc> PrefetchAhead(const PrimFunc& func, const std::string& block_name, const std::string& loop_name,
                                       const std::string& buffer_name, int64_t distance, const std::string& first_of) {
  auto refuse = [&](const std::string& why) { return absl::InvalidArgumentError(absl::StrCat("prefetch_ahead: ", why)); };
  KILN_ASSIGN_OR_RETURN(Stmt block_stmt, FindBlock(func, block_name, "prefetch_ahead"));
  KILN_ASSIGN_OR_RETURN(Stmt loop_stmt, FindLoop(func, loop_name, "prefetch_ahead"));
  const auto* block = block_stmt.as<BlockNode>();
  const auto* loop = loop_stmt.as<ForNode>();
  if (distance < 1) return refuse(absl::StrCat("the distance must be at least 1 element, got ", distance));

  // The loops from `loop` down to the block: `loop`, then a chain, each directly the body
  // of the one above, the last directly around the block.
  std::vector<Stmt> loops = LoopsAbove(func->body, block);
  size_t at = loops.size();
  for (size_t i = 0; i < loops.size(); ++i) {
    if (loops[i].get() == loop) at = i;
  }
  if (at == loops.size()) return refuse(absl::StrCat("loop '", loop_name, "' does not enclose block '", block_name, "'"));
  if (at + 1 == loops.size()) return refuse(absl::StrCat("block '", block_name, "' has no loop of its own below '", loop_name, "'"));
  std::vector<const ForNode*> chain;
  for (size_t i = at + 1; i < loops.size(); ++i) chain.push_back(loops[i].as<ForNode>());
  for (size_t i = 0; i < chain.size(); ++i) {
    const ForNode* above = i == 0 ? loop : chain[i - 1];
    if (above->body.get() != chain[i]) {
      return refuse(absl::StrCat("loop '", chain[i]->loop_var.name(), "' is not directly inside the loop above it"));
    }
    if (!chain[i]->extent.as_int() || !chain[i]->min.as_int()) {
      return refuse(absl::StrCat("loop '", chain[i]->loop_var.name(), "' has no constant range"));
    }
  }
  if (chain.back()->body.get() != block) {
    return refuse(absl::StrCat("block '", block_name, "' is not directly inside loop '", chain.back()->loop_var.name(), "'"));
  }
  const ForNode* guard_loop = nullptr;
  if (!first_of.empty()) {
    for (size_t i = 0; i < at; ++i) {
      if (loops[i].as<ForNode>()->loop_var.name() == first_of) guard_loop = loops[i].as<ForNode>();
    }
    if (guard_loop == nullptr) return refuse(absl::StrCat("loop '", first_of, "' does not enclose loop '", loop_name, "'"));
  }

  const BufferNode* buffer = nullptr;
  for (const BufferNode* r : AccessesOf(block->body).reads) {
    if (r->name == buffer_name) buffer = r;
  }
  if (buffer == nullptr) return refuse(absl::StrCat("block '", block_name, "' does not read buffer '", buffer_name, "'"));
  bool several = false;
  const BufferLoadNode* load = OnlyLoadOf(block->body, buffer, &several);
  if (load == nullptr || several || load->indices.empty()) {
    return refuse(absl::StrCat("block '", block_name, "' reads buffer '", buffer_name, "' at more than one place"));
  }
  const DataType element = buffer->dtype;
  if (element.lanes() != 1 || element.bits() < 8) {
    return refuse(absl::StrCat("buffer '", buffer_name, "' holds ", element.ToString(), ", not whole scalar bytes"));
  }

  // The read in loop terms; the innermost loop must walk its last index one element per
  // iteration and touch no other index (a contiguous run, prefetched line by line).
  std::vector<PrimExpr> indices;
  for (const PrimExpr& index : load->indices) indices.push_back(SimplifyExpr(InLoopTerms(block, index)));
  const ForNode* run = chain.back();
  const VarNode* run_var = run->loop_var.get();
  for (size_t i = 0; i + 1 < indices.size(); ++i) {
    if (UsesVar(indices[i], run_var)) {
      return refuse(absl::StrCat("loop '", run->loop_var.name(), "' moves along a dimension of '", buffer_name,
                                 "' other than its last"));
    }
  }
  VarMap next_element;
  next_element[run_var] = Add(run->loop_var, IntImm(run->loop_var.dtype(), 1));
  const PrimExpr step = SimplifyExpr(Sub(Substitute(indices.back(), next_element), indices.back()));
  if (step.as_int() != std::optional<int64_t>(1)) {
    return refuse(absl::StrCat("loop '", run->loop_var.name(), "' does not walk the last index of '", buffer_name,
                               "' one element at a time"));
  }

  // The prefetches: an unrolled loop for each chain loop the read depends on (the run's one
  // per cache line), the others left out; the read `distance` elements further along.
  NameSet used = UsedNames(func);
  const int64_t per_line = ElementsPerCacheLine(element);
  const int64_t run_extent = *run->extent.as_int();
  const int64_t lines = (run_extent + per_line - 1) / per_line;
  VarMap at_prefetch, at_first;
  std::vector<std::pair<Var, int64_t>> nest;  // outermost first
  for (const ForNode* l : chain) {
    const int64_t min = *l->min.as_int();
    at_first[l->loop_var.get()] = IntImm(l->loop_var.dtype(), min);
    bool read = false;
    for (const PrimExpr& index : indices) read |= UsesVar(index, l->loop_var.get());
    if (!read) continue;
    const int64_t extent = l == run ? lines : *l->extent.as_int();
    if (extent == 1) {  // one iteration: the loop's variable at its min
      at_prefetch[l->loop_var.get()] = at_first[l->loop_var.get()];
      continue;
    }
    Var v(FreshName(l->loop_var.name() + "_prefetch", &used), l->loop_var.dtype());
    PrimExpr value = l == run ? Mul(v, IntImm(v.dtype(), per_line)) : PrimExpr(v);
    at_prefetch[l->loop_var.get()] = Add(value, IntImm(v.dtype(), min));
    nest.push_back({v, extent});
  }
  std::vector<PrimExpr> ahead;
  for (size_t i = 0; i < indices.size(); ++i) {
    PrimExpr index = Substitute(indices[i], at_prefetch);
    if (i + 1 == indices.size()) index = Add(index, IntImm(index.dtype(), distance));
    ahead.push_back(SimplifyExpr(index));
  }
  Stmt body = Evaluate(Call("prefetch", {Buffer(load->buffer).Load(ahead)}));
  for (size_t i = nest.size(); i-- > 0;) {
    body = For(nest[i].first, IntImm(nest[i].first.dtype(), 0), IntImm(nest[i].first.dtype(), nest[i].second),
               ForKind::kUnrolled, body);
  }
  // Only where the block runs at the chain's first iteration (its predicate there), and
  // with `first_of` only in that loop's first iteration.
  std::optional<PrimExpr> condition;
  if (guard_loop != nullptr) {
    condition = EQ(guard_loop->loop_var, guard_loop->min);
    at_first[guard_loop->loop_var.get()] = guard_loop->min;
  }
  if (block->predicate.defined()) {
    PrimExpr p = SimplifyExpr(Substitute(InLoopTerms(block, block->predicate), at_first));
    condition = condition ? And(*condition, p) : p;
  }
  if (condition) body = IfThenElse(SimplifyExpr(*condition), body);
  Stmt with = For(loop->loop_var, loop->min, loop->extent, loop->for_kind, SeqStmt({body, loop->body}), loop->thread_tag);
  return WithBody(func, ReplaceStmt(func->body, loop, with));
}

}  // namespace kiln::tir::schedule_primitive
