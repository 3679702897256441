// PrefetchNext: while one iteration of a loop nest computes on the panel it copied, the
// panel that the next iteration will copy is prefetched, a few of its rows at a time, so
// the copy then reads from cache instead of waiting on memory.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

PrimExpr AsInt64(const PrimExpr& e) { return e.dtype() == DataType::Int64() ? e : Cast(DataType::Int64(), e); }
PrimExpr I64(int64_t v) { return IntImm(DataType::Int64(), v); }

// `value` (int64) as a value of `var`'s type.
PrimExpr InTypeOf(const Var& var, const PrimExpr& value) {
  return var.dtype() == DataType::Int64() ? value : Cast(var.dtype(), value);
}

// The loops' position in their joint iteration space, outermost slowest: sum of (v - min) *
// the product of the later extents. `extents` are constant.
PrimExpr Linear(const std::vector<const ForNode*>& loops, const std::vector<int64_t>& extents) {
  PrimExpr linear = I64(0);
  for (size_t i = 0; i < loops.size(); ++i) {
    linear = Add(Mul(linear, I64(extents[i])), Sub(AsInt64(loops[i]->loop_var), AsInt64(loops[i]->min)));
  }
  return linear;
}

// Each loop's variable at joint position `linear` (the inverse of Linear), into `vmap`.
void Delinearize(const std::vector<const ForNode*>& loops, const std::vector<int64_t>& extents,
                 const PrimExpr& linear, VarMap* vmap) {
  int64_t stride = 1;
  for (size_t i = loops.size(); i-- > 0;) {
    PrimExpr v = FloorDiv(linear, I64(stride));
    if (i > 0) v = FloorMod(v, I64(extents[i]));
    (*vmap)[loops[i]->loop_var.get()] = InTypeOf(loops[i]->loop_var, Add(v, AsInt64(loops[i]->min)));
    stride *= extents[i];
  }
}

// The constant extents of `loops`, or an error naming the first that has none.
absl::StatusOr<std::vector<int64_t>> ConstantExtents(const std::vector<const ForNode*>& loops,
                                                      const std::string& what) {
  std::vector<int64_t> extents;
  for (const ForNode* l : loops) {
    std::optional<int64_t> e = l->extent.as_int();
    if (!e || *e < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("prefetch_next: loop '", l->loop_var.name(), "' (", what, ") has no constant extent"));
    }
    extents.push_back(*e);
  }
  return extents;
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

}  // namespace

absl::StatusOr<PrimFunc> PrefetchNext(const PrimFunc& func, const std::string& copy_name, const std::string& outer_name,
                                      const std::string& into_name, int64_t cycle) {
  KILN_ASSIGN_OR_RETURN(Stmt copy_stmt, FindBlock(func, copy_name, "prefetch_next"));
  KILN_ASSIGN_OR_RETURN(Stmt into_stmt, FindLoop(func, into_name, "prefetch_next"));
  const auto* copy = copy_stmt.as<BlockNode>();
  const auto* into = into_stmt.as<ForNode>();
  auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("prefetch_next: ", why));
  };
  const auto* store = copy->body.as<BufferStoreNode>();
  const auto* source = store ? store->value.as<BufferLoadNode>() : nullptr;
  if (source == nullptr || copy->init.defined()) {
    return refuse(absl::StrCat("block '", copy_name, "' is not a copy (a store of one buffer element)"));
  }
  const DataType element = source->buffer->dtype;
  if (element.lanes() != 1 || element.bits() < 8 || source->dtype().lanes() != 1) {
    return refuse(absl::StrCat("block '", copy_name, "' copies ", element.ToString(), ", not whole scalar bytes"));
  }
  // The copy's own loops (a chain directly around it, rows outermost) and the loops above
  // them, the last of which (the panel loop) runs the copy once per iteration.
  std::vector<Stmt> loops = LoopsAbove(func->body, copy);
  Stmt own_root = NestRoot(func->body, copy);
  size_t first_own = loops.size();
  for (size_t i = 0; i < loops.size(); ++i) {
    if (loops[i].get() == own_root.get()) first_own = i;
  }
  size_t first_walked = loops.size();
  for (size_t i = 0; i < loops.size(); ++i) {
    if (loops[i].as<ForNode>()->loop_var.name() == outer_name) first_walked = i;
  }
  if (first_own == loops.size() || first_own == 0) {
    return refuse(absl::StrCat("block '", copy_name, "' has no loop of its own below a panel loop"));
  }
  if (first_walked >= first_own) {
    return refuse(absl::StrCat("loop '", outer_name, "' does not enclose the loops of block '", copy_name, "'"));
  }
  std::vector<const ForNode*> walked, own;
  for (size_t i = first_walked; i < first_own; ++i) walked.push_back(loops[i].as<ForNode>());
  for (size_t i = first_own; i < loops.size(); ++i) own.push_back(loops[i].as<ForNode>());
  for (size_t i = 0; i < walked.size(); ++i) {
    if (walked[i]->for_kind != ForKind::kSerial) {
      return refuse(absl::StrCat("loop '", walked[i]->loop_var.name(), "' is ", KindWord(walked[i]->for_kind),
                                 ", not serial"));
    }
    if (i + 1 < walked.size() && walked[i]->body.get() != walked[i + 1]) {
      return refuse(absl::StrCat("loop '", walked[i]->loop_var.name(), "' does not directly enclose loop '",
                                 walked[i + 1]->loop_var.name(), "'"));
    }
  }
  // The copy must run at every iteration of the panel loop: no condition between them (a
  // copy under `if s < 1` would have its pattern prefetched where another copy runs).
  bool below_panel = false;
  for (const Stmt& s : AncestorsOf(func->body, copy)) {
    if (s.get() == own_root.get()) break;
    if (below_panel && s.as<IfThenElseNode>()) {
      return refuse(absl::StrCat("block '", copy_name, "' runs under a condition inside loop '",
                                 walked.back()->loop_var.name(), "'"));
    }
    below_panel |= s.get() == walked.back();
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> walked_extents, ConstantExtents(walked, "walked to the next panel"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> own_extents, ConstantExtents(own, "of the copy"));
  // The loops from the panel loop down to `into`, whose iterations share the prefetches.
  const ForNode* panel = walked.back();
  std::vector<Stmt> into_path = AncestorsOf(func->body, into);
  bool under_panel = false;
  std::vector<const ForNode*> spread;
  for (const Stmt& s : into_path) {
    if (s.get() == panel) {
      under_panel = true;
      continue;
    }
    if (under_panel && s.as<ForNode>()) spread.push_back(s.as<ForNode>());
  }
  spread.push_back(into);
  if (!under_panel) return refuse(absl::StrCat("loop '", into_name, "' is not inside loop '", panel->loop_var.name(), "'"));
  for (const Stmt& s : AncestorsOf(func->body, copy)) {
    if (s.get() == into) return refuse(absl::StrCat("loop '", into_name, "' encloses block '", copy_name, "'"));
  }
  for (const ForNode* l : spread) {
    if (l->for_kind != ForKind::kSerial && l->for_kind != ForKind::kUnrolled) {
      return refuse(absl::StrCat("loop '", l->loop_var.name(), "' is ", KindWord(l->for_kind),
                                 ", not serial or unrolled"));
    }
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> spread_extents, ConstantExtents(spread, "sharing the prefetches"));

  // Each iteration of the spread loops prefetches `per` rows of the next panel (its copy's
  // outermost loop), each row one line at a time over the copy's inner loops; with a cycle,
  // the rows are shared between the first `cycle` iterations and the later ones repeat them.
  const int64_t rows = own_extents[0];
  const int64_t all_turns = Product(spread_extents);
  if (cycle < 0 || cycle > all_turns) {
    return refuse(absl::StrCat("a cycle of ", cycle, " iterations, not between 1 and the ", all_turns,
                               " iterations of the loops down to '", into_name, "' (0: all of them)"));
  }
  const int64_t turns = cycle > 0 ? cycle : all_turns;
  const int64_t per = (rows + turns - 1) / turns;
  std::vector<const ForNode*> inner(own.begin() + 1, own.end());
  std::vector<int64_t> inner_extents(own_extents.begin() + 1, own_extents.end());
  const int64_t run = Product(inner_extents);
  const int64_t per_line = ElementsPerCacheLine(element);
  const int64_t lines = (run + per_line - 1) / per_line;

  NameSet used = UsedNames(func);
  Var row_var(FreshName(copy_name + "_prefetch_row", &used), DataType::Int64());
  Var line_var(FreshName(copy_name + "_prefetch_line", &used), DataType::Int64());
  PrimExpr next = Add(Linear(walked, walked_extents), I64(1));
  // Loops of one iteration are left out (their variable is 0).
  const PrimExpr row_term = per > 1 ? PrimExpr(row_var) : I64(0);
  const PrimExpr line_term = lines > 1 ? PrimExpr(line_var) : I64(0);
  PrimExpr turn = Linear(spread, spread_extents);
  if (turns < all_turns) turn = FloorMod(turn, I64(turns));
  PrimExpr row = Add(Mul(turn, I64(per)), row_term);
  PrimExpr offset = Min(Mul(line_term, I64(per_line)), I64(run - 1));
  VarMap at;
  Delinearize(walked, walked_extents, next, &at);
  at[own[0]->loop_var.get()] = InTypeOf(own[0]->loop_var, Add(row, AsInt64(own[0]->min)));
  Delinearize(inner, inner_extents, offset, &at);
  std::vector<PrimExpr> indices;
  for (const PrimExpr& index : source->indices) indices.push_back(SimplifyExpr(Substitute(InLoopTerms(copy, index), at)));
  Stmt body = Evaluate(Call("prefetch", {Buffer(source->buffer).Load(indices)}));
  if (copy->predicate.defined()) {
    body = IfThenElse(SimplifyExpr(Substitute(InLoopTerms(copy, copy->predicate), at)), body);
  }
  if (lines > 1) body = For(line_var, I64(0), I64(lines), ForKind::kUnrolled, body);
  if (per * turns > rows) body = IfThenElse(SimplifyExpr(LT(row, I64(rows))), body);
  if (per > 1) body = For(row_var, I64(0), I64(per), ForKind::kUnrolled, body);
  body = IfThenElse(SimplifyExpr(LT(next, I64(Product(walked_extents)))), body);
  Stmt with = For(into->loop_var, into->min, into->extent, into->for_kind, SeqStmt({body, into->body}),
                  into->thread_tag);
  return WithBody(func, ReplaceStmt(func->body, into, with));
}

}  // namespace kiln::tir::schedule_primitive
