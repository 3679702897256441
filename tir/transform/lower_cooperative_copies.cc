// LowerCooperativeCopies (lower_cooperative_copies.h): shared tiles loaded by all the threads
// of a block at once.
#include "tir/transform/lower_cooperative_copies.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::transform {

namespace {

using schedule_internal::SimplifyExpr;
using schedule_internal::UsesVar;

bool IsThreadLoop(const ForNode* f) {
  return f->for_kind == ForKind::kThreadBinding && f->thread_tag.rfind("threadIdx.", 0) == 0;
}

// A copy nest into a shared buffer: serial loops of constant extents around one block that
// stores to a "shared" buffer. Fills `loops` (outermost first) and returns the block.
const BlockNode* SharedCopy(const Stmt& stmt, std::vector<const ForNode*>* loops) {
  Stmt s = stmt;
  while (const auto* f = s.as<ForNode>()) {
    if (f->for_kind != ForKind::kSerial || !f->extent.as_int() || !f->min.as_int() || *f->min.as_int() != 0) {
      return nullptr;
    }
    loops->push_back(f);
    s = f->body;
  }
  const auto* block = s.as<BlockNode>();
  if (!block || block->init.defined() || loops->empty()) return nullptr;
  const auto* store = block->body.as<BufferStoreNode>();
  return store && store->buffer->scope == "shared" ? block : nullptr;
}

class Lowerer : public StmtExprMutator {
 public:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    std::vector<const ForNode*> loops;
    if (!threads_.empty() && SharedCopy(self, &loops)) return CopyRun({self});  // alone, not in a sequence
    if (IsThreadLoop(op)) {
      threads_.push_back(op);
      conditional_.push_back(false);
      Stmt result = StmtExprMutator::VisitStmt_(op, self);
      conditional_.pop_back();
      threads_.pop_back();
      return result;
    }
    // A loop whose trip count differs between threads makes the barriers inside it
    // non-uniform, like an `if`.
    bool varies = false;
    for (const ForNode* t : threads_) varies |= UsesVar(op->extent, t->loop_var.get()) || UsesVar(op->min, t->loop_var.get());
    return UnderCondition(varies, [&] { return StmtExprMutator::VisitStmt_(op, self); });
  }
  Stmt VisitStmt_(const IfThenElseNode* op, const Stmt& self) override {
    return UnderCondition(true, [&] { return StmtExprMutator::VisitStmt_(op, self); });
  }
  Stmt VisitStmt_(const SeqStmtNode* op, const Stmt& self) override {
    if (threads_.empty()) return StmtExprMutator::VisitStmt_(op, self);
    std::vector<Stmt> out;
    bool changed = false;
    for (size_t i = 0; i < op->seq.size();) {
      std::vector<const ForNode*> loops;
      const BlockNode* copy = SharedCopy(op->seq[i], &loops);
      if (!copy) {
        Stmt s = VisitStmt(op->seq[i++]);
        changed |= !s.same_as(op->seq[i - 1]);
        out.push_back(std::move(s));
        continue;
      }
      // The run of copies, between two barriers.
      std::vector<Stmt> run;
      for (loops.clear(); i < op->seq.size() && SharedCopy(op->seq[i], &loops); loops.clear()) run.push_back(op->seq[i++]);
      out.push_back(CopyRun(run));
      changed = true;
    }
    return changed ? SeqStmt(std::move(out)) : self;
  }

  absl::Status status;

 private:
  static Stmt Sync() { return Evaluate(Call("storage_sync", {})); }

  // Consecutive copy nests, spread over the threads between two barriers.
  Stmt CopyRun(const std::vector<Stmt>& run) {
    std::vector<Stmt> out = {Sync()};
    for (const Stmt& s : run) {
      std::vector<const ForNode*> loops;
      const BlockNode* copy = SharedCopy(s, &loops);
      if (conditional_.back()) {
        Fail(absl::StrCat("the shared copy '", copy->name,
                          "' lies under a condition or a loop that depends on the thread, where not every thread of ",
                          "the block would reach its barriers"));
        return s;
      }
      out.push_back(Cooperative(loops, copy));
    }
    out.push_back(Sync());
    return SeqStmt(std::move(out));
  }

  void Fail(const std::string& message) {
    if (status.ok()) status = absl::InvalidArgumentError(absl::StrCat("cooperative copy: ", message));
  }

  template <typename F>
  Stmt UnderCondition(bool condition, F visit) {
    if (threads_.empty() || !condition) return visit();
    const bool before = conditional_.back();
    conditional_.back() = true;
    Stmt result = visit();
    conditional_.back() = before;
    return result;
  }

  // The copy nest `loops` around `copy`, spread over the threads of the block.
  Stmt Cooperative(const std::vector<const ForNode*>& loops, const BlockNode* copy) {
    const DataType dt = loops[0]->loop_var.dtype();
    auto Index = [&](int64_t v) { return IntImm(dt, v); };
    // The thread's linear index, the innermost thread loop fastest.
    PrimExpr tid;
    int64_t threads = 1;
    for (const ForNode* t : threads_) {
      const int64_t extent = *t->extent.as_int();  // the verifier requires constant thread extents
      PrimExpr v = t->loop_var.dtype() == dt ? PrimExpr(t->loop_var) : Cast(dt, t->loop_var);
      tid = tid.defined() ? tid * Index(extent) + v : v;
      threads *= extent;
    }
    int64_t elements = 1;
    for (const ForNode* l : loops) elements *= *l->extent.as_int();
    const int64_t rounds = (elements + threads - 1) / threads;
    Var round(absl::StrCat(loops[0]->loop_var.name(), "_coop"), dt);
    PrimExpr element = round * Index(threads) + tid;
    // Each copy loop's variable as a digit of the element's index (row-major).
    VarMap digits;
    int64_t stride = elements;
    for (size_t d = 0; d < loops.size(); ++d) {
      const int64_t extent = *loops[d]->extent.as_int();
      stride /= extent;
      PrimExpr digit = FloorDiv(element, Index(stride));
      if (d > 0) digit = FloorMod(digit, Index(extent));
      digits[loops[d]->loop_var.get()] = SimplifyExpr(digit);
    }
    std::vector<IterVar> iters;
    for (const IterVar& iv : copy->iter_vars) {
      iters.push_back(IterVar{iv.var, iv.extent, iv.type, SimplifyExpr(Substitute(iv.value, digits))});
    }
    PrimExpr predicate;
    if (elements % threads != 0) predicate = LT(element, Index(elements));
    if (copy->predicate.defined()) {
      PrimExpr p = Substitute(copy->predicate, digits);
      predicate = predicate.defined() ? And(predicate, p) : p;
    }
    // The body indexes the tile by the loop variables too (CacheRead's "loop terms").
    Stmt block = Block(copy->name, iters, Substitute(copy->body, digits), Stmt(), predicate, copy->alloc_buffers);
    return For(round, Index(0), Index(rounds), ForKind::kUnrolled, block);
  }

  std::vector<const ForNode*> threads_;  // the enclosing threadIdx loops, outermost first
  std::vector<bool> conditional_;        // per thread loop: under an `if` since it began
};

}  // namespace

absl::StatusOr<PrimFunc> LowerCooperativeCopies(const PrimFunc& func) {
  Lowerer lowerer;
  PrimFunc result = lowerer.VisitPrimFunc(func);
  if (!lowerer.status.ok()) return lowerer.status;
  return result;
}

}  // namespace kiln::tir::transform
