// FuseSiblings: two loops of one sequence over the same range become one loop that runs
// both bodies in each iteration (a row's passes then share the row while it is in cache).
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"
#include "tir/structural_equal.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

// Every access of a buffer in a statement, its indices in loop terms (block iteration
// variables replaced by their bindings).
struct Access {
  std::vector<PrimExpr> indices;
  bool write = false;
};
class LoopTermAccesses : public StmtExprVisitor {
 public:
  void VisitStmt_(const BlockNode* op, const Stmt& self) override {
    VarMap saved = map_;
    for (const IterVar& iv : op->iter_vars) map_[iv.var.get()] = Substitute(iv.value, saved);
    StmtExprVisitor::VisitStmt_(op, self);
    map_ = saved;
  }
  void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    Record(op->buffer.get(), op->indices, false);
    StmtExprVisitor::VisitExpr_(op, self);
  }
  void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    Record(op->buffer.get(), op->indices, true);
    StmtExprVisitor::VisitStmt_(op, self);
  }
  std::map<const BufferNode*, std::vector<Access>> accesses;

 private:
  void Record(const BufferNode* b, const std::vector<PrimExpr>& indices, bool write) {
    Access a{{}, write};
    for (const PrimExpr& i : indices) a.indices.push_back(SimplifyExpr(Substitute(i, map_)));
    accesses[b].push_back(std::move(a));
  }
  VarMap map_;
};

bool Writes(const std::vector<Access>& list) {
  for (const Access& a : list) {
    if (a.write) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<PrimFunc> FuseSiblings(const PrimFunc& func, const std::string& first_name,
                                      const std::string& second_name) {
  KILN_ASSIGN_OR_RETURN(Stmt first_stmt, FindLoop(func, first_name, "fuse_siblings"));
  KILN_ASSIGN_OR_RETURN(Stmt second_stmt, FindLoop(func, second_name, "fuse_siblings"));
  auto fail = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("fuse_siblings: loops '", first_name, "' and '", second_name, "' ", why));
  };
  const auto* a = first_stmt.as<ForNode>();
  const auto* b = second_stmt.as<ForNode>();
  SeqPosition pos = CommonSeq(func->body, a, b);
  if (!pos.seq || pos.seq->seq[pos.first].get() != a || pos.seq->seq[pos.second].get() != b || pos.first >= pos.second) {
    return fail("are not statements of one sequence, the first before the second");
  }
  if (a->for_kind != b->for_kind || (a->for_kind != ForKind::kSerial && a->for_kind != ForKind::kParallel)) {
    return fail(absl::StrCat("are ", KindWord(a->for_kind), " and ", KindWord(b->for_kind),
                             "; both must be serial or both parallel"));
  }
  if (!StructuralEqual(a->min, b->min) || !StructuralEqual(a->extent, b->extent)) {
    return fail(absl::StrCat("have different ranges (", ToString(a->min), ", ", ToString(a->extent), ") and (",
                             ToString(b->min), ", ", ToString(b->extent), ")"));
  }
  // The statements between move before the first loop: they must not touch what it writes
  // nor write what it touches.
  BufferAccesses first_acc = AccessesOf(first_stmt);
  std::vector<Stmt> between;
  for (size_t i = pos.first + 1; i < pos.second; ++i) {
    const Stmt& s = pos.seq->seq[i];
    BufferAccesses acc = AccessesOf(s);
    for (const BufferNode* w : acc.writes) {
      if (first_acc.Touches(w)) return fail(absl::StrCat("have a statement between them that writes '", w->name, "'"));
    }
    for (const BufferNode* w : first_acc.writes) {
      if (acc.Touches(w)) return fail(absl::StrCat("have a statement between them that reads '", w->name, "'"));
    }
    between.push_back(s);
  }
  // Iteration i of the fused loop runs both bodies at i. That reorders the second body's
  // iteration i before the first's iterations j > i, which is safe when every buffer one
  // writes and the other accesses is touched only in a slice selected by the loop variable
  // itself (one dimension indexed by it in every access).
  Stmt second_body = Substitute(b->body, VarMap{{b->loop_var.get(), a->loop_var}});
  LoopTermAccesses in_first, in_second;
  in_first.VisitStmt(a->body);
  in_second.VisitStmt(second_body);
  for (const auto& [buffer, list] : in_first.accesses) {
    auto other = in_second.accesses.find(buffer);
    if (other == in_second.accesses.end() || (!Writes(list) && !Writes(other->second))) continue;
    std::vector<Access> all = list;
    all.insert(all.end(), other->second.begin(), other->second.end());
    bool sliced = false;
    for (size_t d = 0; d < buffer->shape.size() && !sliced; ++d) {
      bool every = true;
      for (const Access& acc : all) every &= acc.indices[d].get() == a->loop_var.get();
      sliced = every;
    }
    if (!sliced) {
      return fail(absl::StrCat("both access '", buffer->name,
                               "' (and one writes it) other than in one dimension indexed by the loop variable"));
    }
  }
  Stmt fused = For(a->loop_var, a->min, a->extent, a->for_kind, SeqStmt({a->body, second_body}), a->thread_tag);
  std::vector<Stmt> seq;
  for (size_t i = 0; i < pos.first; ++i) seq.push_back(pos.seq->seq[i]);
  for (const Stmt& s : between) seq.push_back(s);
  seq.push_back(fused);
  for (size_t i = pos.second + 1; i < pos.seq->seq.size(); ++i) seq.push_back(pos.seq->seq[i]);
  return WithBody(func, ReplaceStmt(func->body, pos.seq, SeqStmt(seq)));
}

}  // namespace kiln::tir::schedule_primitive
