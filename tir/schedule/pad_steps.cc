// PadSteps: each step of a serial loop inside a row-edge tile runs whole once its first row
// is in range. Its blocks only update local tiles, so the rows past the edge can be computed
// into tile rows that the write-back never reads; the reads of other buffers at such a row
// read the last row in range instead (clamped), so nothing is read out of bounds.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/analyzer.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule/tile_conditions.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

// The blocks of a step as the statements LowerBlocks would make of them (their variables
// would leave their domains on the padded rows), without their conditions `a < b`; a load of
// a buffer other than a local tile at an index equal to some `a` reads `min(a, b - 1)`.
// Every store must be to a local tile of constant shape, at indices inside it over every
// iteration of the loops that enclose the step and the step's own (`why` says what failed).
class StepPadder : public StmtExprMutator {
 public:
  StepPadder(std::vector<const ForNode*> enclosing, std::vector<const VarNode*> inner)
      : loops_(std::move(enclosing)), inner_(std::move(inner)) {}

  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    loops_.push_back(op);
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    loops_.pop_back();
    return s;
  }

  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
    if (op->init.defined() || !op->alloc_buffers.empty()) return Fail(op->name + " has an init or buffers");
    std::vector<PrimExpr> conjuncts;
    if (op->predicate.defined()) FlattenAnd(op->predicate, &conjuncts);
    clamps_.clear();
    for (const PrimExpr& c : conjuncts) {
      if (c.kind() != ExprKind::kLT) return Fail(op->name + " has a condition other than a < b");
      const auto* lt = c.as<BinaryNode>();
      clamps_.push_back({SimplifyExpr(lt->a), SimplifyExpr(Sub(lt->b, IntImm(lt->b.dtype(), 1)))});
    }
    VarMap bindings;
    for (const IterVar& iv : op->iter_vars) {
      bindings[iv.var.get()] = iv.value.dtype() == iv.var.dtype() ? iv.value : Cast(iv.var.dtype(), iv.value);
    }
    return VisitStmt(Substitute(op->body, bindings));
  }

  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    if (!InTile(op->buffer.get(), op->indices)) return Fail("a store to " + op->buffer->name + " may leave its tile");
    return StmtExprMutator::VisitStmt_(op, self);
  }

  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    PrimExpr e = StmtExprMutator::VisitExpr_(op, self);
    if (IsLocalTile(op->buffer.get())) {
      if (!InTile(op->buffer.get(), op->indices)) Fail("a load of " + op->buffer->name + " may leave its tile");
      return e;
    }
    std::vector<PrimExpr> indices;
    bool clamped = false;
    for (const PrimExpr& index : e.as<BufferLoadNode>()->indices) {
      PrimExpr i = SimplifyExpr(index);
      for (const auto& [a, last] : clamps_) {
        if (ToString(i) == ToString(a)) {
          i = Min(i, last);
          clamped = true;
        } else if (UsesAnyVar(i, VarsOf(a))) {
          Fail("a load of " + op->buffer->name + " at " + ToString(i) + " is not at a condition's row");
        }
      }
      indices.push_back(i);
    }
    return clamped ? Buffer(op->buffer).Load(indices) : e;
  }

  bool ok = true;
  std::string why;

 private:
  Stmt Fail(const std::string& what) {
    if (ok) why = what;
    ok = false;
    return Evaluate(IntImm(DataType::Int32(), 0));
  }

  static bool IsLocalTile(const BufferNode* buffer) {
    if (buffer->scope != "local") return false;
    for (const PrimExpr& d : buffer->shape) {
      if (!d.as_int()) return false;
    }
    return true;
  }

  // The variables of the loops inside the step (the tile's own rows) that `a` uses.
  std::vector<const VarNode*> VarsOf(const PrimExpr& a) const {
    std::vector<const VarNode*> vars;
    for (const VarNode* v : inner_) {
      if (UsesVar(a, v)) vars.push_back(v);
    }
    return vars;
  }

  bool InTile(const BufferNode* buffer, const std::vector<PrimExpr>& indices) const {
    if (!IsLocalTile(buffer) || indices.size() != buffer->shape.size()) return false;
    Analyzer analyzer;
    for (const ForNode* l : loops_) {
      std::optional<int64_t> min = l->min.as_int(), extent = l->extent.as_int();
      if (min && extent && *extent > 0) analyzer.Bind(l->loop_var, *min, *min + *extent - 1);
    }
    for (size_t d = 0; d < indices.size(); ++d) {
      IntBound bound = analyzer.ConstIntBound(analyzer.Simplify(indices[d]));
      if (bound.min < 0 || bound.max == IntBound::kPosInf || bound.max >= *buffer->shape[d].as_int()) return false;
    }
    return true;
  }

  std::vector<const ForNode*> loops_;
  std::vector<const VarNode*> inner_;
  std::vector<std::pair<PrimExpr, PrimExpr>> clamps_;  // (a, b - 1) of the current block's conditions
};

}  // namespace

absl::StatusOr<PrimFunc> PadSteps(const PrimFunc& func, const std::string& loop_name) {
  KILN_ASSIGN_OR_RETURN(Stmt loop_stmt, FindLoop(func, loop_name, "pad_steps"));
  const auto* loop = loop_stmt.as<ForNode>();
  auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("pad_steps: loop '", loop_name, "' ", why));
  };
  if (loop->for_kind != ForKind::kSerial) return refuse("is not serial");
  DefinedVars inner;
  inner.VisitStmt(loop->body);
  // The conditions at each step's first iteration: a step whose first rows are out of range
  // has none in range (each condition's left side only grows) and runs nothing.
  TileConditionStripper stripper(inner.vars, TileConditionStripper::Drop::kAll);
  Stmt stripped = stripper.VisitStmt(loop->body);
  bool kept = false;
  ForEachStmt(stripped, [&](const Stmt& st) {
    if (const auto* b = st.as<BlockNode>()) kept |= b->predicate.defined();
  });
  if (!stripper.ok || kept) return refuse("has a condition that cannot be checked per step");
  bool on_step = false;
  for (const PrimExpr& g : stripper.guards) on_step |= UsesVar(g, loop->loop_var.get());
  if (!on_step) return refuse("has no block condition that changes with its steps");
  if (stripper.first_guards.size() != static_cast<size_t>(stripper.blocks)) {
    return refuse("has a block without the others' conditions");
  }
  const std::string first = ToString(AllOf(stripper.first_guards[0]));
  for (const std::vector<PrimExpr>& f : stripper.first_guards) {
    if (ToString(AllOf(f)) != first) return refuse("has blocks with different conditions");
  }
  std::vector<const ForNode*> enclosing;
  for (const Stmt& s : AncestorsOf(func->body, loop)) {
    if (const auto* f = s.as<ForNode>()) enclosing.push_back(f);
  }
  enclosing.push_back(loop);
  StepPadder padder(enclosing, inner.vars);
  Stmt padded = padder.VisitStmt(loop->body);
  if (!padder.ok) return refuse("cannot run whole steps: " + padder.why);
  Stmt body = IfThenElse(AllOf(stripper.first_guards[0]), padded);
  return WithBody(func, ReplaceStmt(func->body, loop,
                                    For(loop->loop_var, loop->min, loop->extent, loop->for_kind, body,
                                        loop->thread_tag)));
}

}  // namespace kiln::tir::schedule_primitive
