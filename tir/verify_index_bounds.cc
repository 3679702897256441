// VerifyIndexBounds (tir/verify_index_bounds.h). For each index of each access the verifier
// looks for one iteration that certainly goes out: the loops are taken innermost first, each
// set to its first or last value (the one the analyzer proves gives the larger index, or the
// smaller one for the lower end), after guards on that loop variable have narrowed its range.
// Each choice is an expression of the outer loops, so substituting the choices innermost
// first gives the index, the guards and the inner loops' extents at that iteration in terms
// of the function's symbolic variables alone, where the analyzer can prove or fail to prove
// them. A proof is only ever of "out of bounds": anything undecided stays silent.
#include "tir/verify_index_bounds.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/int_math.h"
#include "tir/analyzer.h"
#include "tir/stmt_functor.h"

namespace kiln::tir {
namespace {

bool IsIntScalar(const PrimExpr& e) { return e.defined() && e.dtype().is_integer() && e.dtype().is_scalar(); }

PrimExpr Int64(const PrimExpr& e) { return e.dtype() == DataType::Int64() ? e : Cast(DataType::Int64(), e); }

// `expr` with `var` replaced by `value`.
PrimExpr Replace(const PrimExpr& expr, const Var& var, const PrimExpr& value) {
  return Substitute(expr, VarMap{{var.get(), value}});
}

// The facts `d >= 0` (int64) that `condition` states, or nothing when it is not a
// conjunction of integer comparisons (then it can only be proven or not, never used).
std::optional<std::vector<PrimExpr>> NonNegativeFacts(const PrimExpr& condition) {
  bool negated = false;
  PrimExpr c = condition;
  if (const auto* n = c.as<NotNode>()) {
    negated = true;
    c = n->a;
  }
  const auto* bin = c.as<BinaryNode>();
  if (bin == nullptr) return std::nullopt;
  if (c.kind() == ExprKind::kAnd && !negated) {
    auto a = NonNegativeFacts(bin->a);
    auto b = NonNegativeFacts(bin->b);
    if (!a || !b) return std::nullopt;
    a->insert(a->end(), b->begin(), b->end());
    return a;
  }
  if (!IsComparison(c.kind()) || !IsIntScalar(bin->a) || !IsIntScalar(bin->b)) return std::nullopt;
  ExprKind kind = c.kind();
  if (negated) {
    switch (kind) {
      case ExprKind::kLT: kind = ExprKind::kGE; break;
      case ExprKind::kLE: kind = ExprKind::kGT; break;
      case ExprKind::kGT: kind = ExprKind::kLE; break;
      case ExprKind::kGE: kind = ExprKind::kLT; break;
      case ExprKind::kNE: kind = ExprKind::kEQ; break;
      default: return std::nullopt;  // not (a == b) is two ranges
    }
  }
  PrimExpr a = Int64(bin->a), b = Int64(bin->b);
  switch (kind) {
    case ExprKind::kLT: return std::vector<PrimExpr>{b - a - 1};
    case ExprKind::kLE: return std::vector<PrimExpr>{b - a};
    case ExprKind::kGT: return std::vector<PrimExpr>{a - b - 1};
    case ExprKind::kGE: return std::vector<PrimExpr>{a - b};
    case ExprKind::kEQ: return std::vector<PrimExpr>{a - b, b - a};
    default: return std::nullopt;
  }
}

// d == coef * var + rest for a constant coef and a `rest` free of var, when d is linear in var.
struct Linear {
  int64_t coef = 0;
  PrimExpr rest;
};
std::optional<Linear> LinearIn(const PrimExpr& d, const Var& var, Analyzer& analyzer) {
  PrimExpr rest = analyzer.Simplify(Replace(d, var, IntImm(var.dtype(), 0)));
  PrimExpr at_one = analyzer.Simplify(Replace(d, var, IntImm(var.dtype(), 1)));
  std::optional<int64_t> coef = analyzer.Simplify(at_one - rest).as_int();
  if (!coef || *coef == 0) return std::nullopt;
  PrimExpr v = d.dtype() == var.dtype() ? PrimExpr(var) : Cast(d.dtype(), var);
  std::optional<int64_t> diff = analyzer.Simplify(d - (IntImm(d.dtype(), *coef) * v + rest)).as_int();
  if (!diff || *diff != 0) return std::nullopt;
  return Linear{*coef, rest};
}

// The variables `expr` uses.
std::vector<Var> VarsOf(const PrimExpr& expr) {
  VarUseCollector collector;
  collector.VisitExpr(expr);
  return collector.vars();
}

bool UsesAnyVar(const PrimExpr& expr, const std::vector<const VarNode*>& vars) {
  if (!expr.defined()) return false;
  for (const Var& v : VarsOf(expr)) {
    if (std::find(vars.begin(), vars.end(), v.get()) != vars.end()) return true;
  }
  return false;
}
bool UsesVar(const PrimExpr& expr, const VarNode* var) { return UsesAnyVar(expr, {var}); }

// One loop around an access, its bounds in terms of the loops outside it and the function's
// symbolic variables (block iteration and let variables substituted away).
struct Loop {
  Var var;
  PrimExpr min;
  PrimExpr extent;
};

// A value the index takes at one iteration that every guard admits.
struct Reach {
  PrimExpr value;
  std::string where;  // "i = n - 1, j = 0"
  bool extreme = false;  // the index is monotone in every loop: no iteration goes further
};

class IterationSearch {
 public:
  // `varying`: the loop variables and any other variable whose value changes between
  // iterations (anything else is one of the function's symbolic variables).
  IterationSearch(const std::vector<Loop>& loops, const std::vector<PrimExpr>& guards,
                  std::vector<const VarNode*> varying)
      : loops_(loops), guards_(guards), varying_(std::move(varying)) {}

  // Restricts the symbolic variables `vars` (each declared >= 0) to sizes of at least
  // `at_least` (or their declared upper bound, when that is smaller). From then on the
  // conditions on them alone, that the loops run and the guards hold, must be proven rather
  // than assumed: a proof of "out of bounds" is then a proof for every size in a non-empty set
  // of sizes the function allows, none of which skips the access.
  void RestrictSizes(const std::vector<Var>& vars, int64_t at_least) {
    for (const Var& v : vars) {
      int64_t upper = v->upper_bound.value_or(IntBound::kPosInf);
      analyzer_.Bind(v, std::max(v->lower_bound.value_or(0), std::min(at_least, upper)), upper);
    }
    sizes_restricted_ = true;
  }

  // False when the access certainly never runs (then nothing it reads matters), or, with
  // the sizes restricted, when it cannot be shown to run.
  bool AssumeItRuns() {
    for (const Loop& l : loops_) {
      if (!Varies(l) && !Assume(GE(Int64(l.extent), IntImm(DataType::Int64(), 1)))) return false;
    }
    for (const PrimExpr& g : guards_) {
      if (!UsesAnyVar(g, varying_) && !Assume(g)) return false;
    }
    for (const Var& v : bound_vars_) {
      IntBound b = analyzer_.ConstIntBound(v);
      if (b.min > b.max) return false;
    }
    return true;
  }

  // The largest (or smallest) value of `index` at one iteration the guards admit, when the
  // analyzer can find and check one.
  std::optional<Reach> Extreme(const PrimExpr& index, bool largest) {
    for (bool free_last : {false, true}) {
      if (auto reach = TryExtreme(index, largest, free_last)) return reach;
    }
    return std::nullopt;
  }

  // `e` at the iteration the last Extreme found.
  PrimExpr At(const PrimExpr& e) {
    PrimExpr out = e;
    for (const auto& [var, value] : choices_) out = Replace(out, var, value);
    return analyzer_.Simplify(out);
  }

  Analyzer& analyzer() { return analyzer_; }

 private:
  bool Varies(const Loop& l) const { return UsesAnyVar(l.min, varying_) || UsesAnyVar(l.extent, varying_); }

  // Uses a fact about the symbolic variables alone that holds whenever the access runs: a
  // linear bound on one variable becomes a bound the analyzer knows. False when the fact is
  // certainly false.
  bool Assume(const PrimExpr& fact) {
    if (sizes_restricted_) return analyzer_.CanProve(fact);
    if (analyzer_.CanProve(Not(fact))) return false;
    auto facts = NonNegativeFacts(fact);
    if (!facts) return true;
    for (const PrimExpr& d : *facts) {
      std::vector<Var> vars = VarsOf(d);
      if (vars.size() != 1 || !IsIntScalar(vars[0])) continue;
      auto lin = LinearIn(d, vars[0], analyzer_);
      std::optional<int64_t> rest = lin ? lin->rest.as_int() : std::nullopt;
      if (!rest) continue;
      // coef * v + rest >= 0
      if (lin->coef > 0) {
        analyzer_.Bind(vars[0], -support::FloorDiv(*rest, lin->coef), IntBound::kPosInf);
      } else {
        analyzer_.Bind(vars[0], IntBound::kNegInf, support::FloorDiv(*rest, -lin->coef));
      }
      bound_vars_.push_back(vars[0]);
    }
    return true;
  }

  // Loop k's variable over [lo, hi], in terms of the outer loops: the loop's range narrowed
  // by the guards that bound the variable linearly.
  struct Range {
    PrimExpr lo, hi;
    bool narrowed_lo = false, narrowed_hi = false;
  };
  Range RangeOf(size_t k) {
    const Loop& l = loops_[k];
    Range r{analyzer_.Simplify(l.min), analyzer_.Simplify(l.min + l.extent - 1)};
    std::vector<const VarNode*> inner;
    for (size_t j = k + 1; j < loops_.size(); ++j) inner.push_back(loops_[j].var.get());
    for (const PrimExpr& g : guards_) {
      if (!UsesVar(g, l.var.get())) continue;
      auto facts = NonNegativeFacts(g);
      if (!facts) continue;
      for (const PrimExpr& d : *facts) {
        auto lin = LinearIn(d, l.var, analyzer_);
        if (!lin || UsesAnyVar(lin->rest, inner) || (lin->coef != 1 && lin->coef != -1)) continue;
        // var >= -rest, or var <= rest
        PrimExpr bound = analyzer_.Simplify(lin->coef == 1 ? IntImm(DataType::Int64(), 0) - lin->rest : lin->rest);
        if (bound.dtype() != l.var.dtype()) continue;
        if (lin->coef == 1 && analyzer_.CanProveLT(r.lo, bound)) {
          r.lo = bound;
          r.narrowed_lo = true;
        }
        if (lin->coef == -1 && analyzer_.CanProveLT(bound, r.hi)) {
          r.hi = bound;
          r.narrowed_hi = true;
        }
      }
    }
    return r;
  }

  // `e` never decreases (increasing) or never increases as `var` grows by one.
  bool Monotone(const PrimExpr& e, const Var& var, bool increasing) {
    PrimExpr next = analyzer_.Simplify(Replace(e, var, var + IntImm(var.dtype(), 1)));
    return increasing ? analyzer_.CanProveLE(e, next) : analyzer_.CanProveLE(next, e);
  }

  std::optional<Reach> TryExtreme(const PrimExpr& index, bool largest, bool free_last) {
    choices_.clear();
    PrimExpr cur = analyzer_.Simplify(index);
    bool extreme = true;
    // Whether each loop's choice must still be shown to lie in the loop.
    std::vector<bool> check_in_loop(loops_.size());
    for (size_t k = loops_.size(); k-- > 0;) {
      const Loop& l = loops_[k];
      Range r = RangeOf(k);
      bool last = free_last;
      if (UsesVar(cur, l.var.get())) {
        if (Monotone(cur, l.var, largest)) {
          last = true;
        } else if (Monotone(cur, l.var, !largest)) {
          last = false;
        } else {
          // Not monotone: the larger (smaller) end is still an iteration, not the extreme.
          extreme = false;
          PrimExpr at_lo = analyzer_.Simplify(Replace(cur, l.var, r.lo));
          PrimExpr at_hi = analyzer_.Simplify(Replace(cur, l.var, r.hi));
          if (analyzer_.CanProveLE(largest ? at_lo : at_hi, largest ? at_hi : at_lo)) {
            last = true;
          } else if (analyzer_.CanProveLE(largest ? at_hi : at_lo, largest ? at_lo : at_hi)) {
            last = false;
          } else {
            return std::nullopt;
          }
        }
      }
      // A loop over the symbolic variables alone is assumed to run, so its first and last
      // values are iterations. So is a narrowed range over them: every iteration that runs
      // the access lies in it, so it is not empty when the access runs. Any other choice is
      // shown to lie in the loop below.
      bool narrowed = last ? r.narrowed_hi : r.narrowed_lo;
      if (narrowed && !Varies(l) && !UsesAnyVar(r.lo, varying_) && !UsesAnyVar(r.hi, varying_)) {
        if (!Assume(LE(r.lo, r.hi))) return std::nullopt;
        narrowed = false;
      }
      check_in_loop[k] = Varies(l) || narrowed;
      PrimExpr choice = last ? r.hi : r.lo;
      choices_.emplace_back(l.var, choice);
      cur = analyzer_.Simplify(Replace(cur, l.var, choice));
    }
    for (size_t k = 0; k < loops_.size(); ++k) {
      if (!check_in_loop[k]) continue;
      const Loop& l = loops_[k];
      PrimExpr value = At(l.var);
      if (!analyzer_.CanProveLE(At(l.min), value) || !analyzer_.CanProveLE(value, At(l.min + l.extent - 1))) {
        return std::nullopt;
      }
    }
    for (const PrimExpr& g : guards_) {
      if (UsesAnyVar(g, varying_) && !analyzer_.CanProve(At(g))) return std::nullopt;
    }
    std::string where;
    for (const Loop& l : loops_) {
      if (!UsesVar(index, l.var.get())) continue;
      absl::StrAppend(&where, where.empty() ? "" : ", ", l.var.name(), " = ", ToString(At(l.var)));
    }
    return Reach{cur, where, extreme};
  }

  const std::vector<Loop>& loops_;
  const std::vector<PrimExpr>& guards_;
  const std::vector<const VarNode*> varying_;
  std::vector<Var> bound_vars_;
  bool sizes_restricted_ = false;
  Analyzer analyzer_;
  std::vector<std::pair<Var, PrimExpr>> choices_;  // innermost loop first
};

class IndexBoundsVerifier : public StmtExprVisitor {
 public:
  IndexBoundsVerifier(std::string name, const SourceMap* locations, const void* func)
      : name_(std::move(name)), locations_(locations), func_(func) {}

  absl::Status status() const { return status_; }

  void VisitStmt_(const ForNode* op, const Stmt& self) override {
    VisitExpr(op->min);
    VisitExpr(op->extent);
    loops_.push_back(Loop{op->loop_var, Bound(op->min), Bound(op->extent)});
    VisitStmt(op->body);
    loops_.pop_back();
  }

  void VisitStmt_(const BlockNode* op, const Stmt& self) override {
    for (const IterVar& iv : op->iter_vars) {
      VisitExpr(iv.extent);
      VisitExpr(iv.value);
      Define(iv.var, iv.value);
    }
    size_t guards = guards_.size();
    if (op->predicate.defined()) {
      VisitExpr(op->predicate);
      Guard(op->predicate);
    }
    if (op->init.defined()) {
      // The init runs where every reduction variable is 0.
      size_t outer = guards_.size();
      for (const IterVar& iv : op->iter_vars) {
        if (iv.type == IterType::kReduction && IsIntScalar(iv.var)) Guard(EQ(iv.var, IntImm(iv.var.dtype(), 0)));
      }
      VisitStmt(op->init);
      guards_.resize(outer);
    }
    VisitStmt(op->body);
    guards_.resize(guards);
  }

  void VisitStmt_(const IfThenElseNode* op, const Stmt& self) override {
    VisitExpr(op->condition);
    Guard(op->condition);
    VisitStmt(op->then_case);
    guards_.pop_back();
    if (op->else_case.defined()) {
      Guard(Not(op->condition));
      VisitStmt(op->else_case);
      guards_.pop_back();
    }
  }

  // A statement after an assert runs only where the assert held.
  void VisitStmt_(const SeqStmtNode* op, const Stmt& self) override {
    size_t guards = guards_.size();
    for (const Stmt& s : op->seq) {
      VisitStmt(s);
      if (const auto* a = s.as<AssertNode>()) Guard(a->condition);
    }
    guards_.resize(guards);
  }

  void VisitStmt_(const LetStmtNode* op, const Stmt& self) override {
    VisitExpr(op->value);
    Define(op->var, op->value);
    VisitStmt(op->body);
  }

  void VisitExpr_(const LetNode* op, const PrimExpr& self) override {
    VisitExpr(op->value);
    Define(Var(op->var), op->value);
    VisitExpr(op->body);
  }

  // docs/ir.md: a select's true value that is a load of whole-byte elements is read only in
  // the lanes where the condition holds.
  void VisitExpr_(const SelectNode* op, const PrimExpr& self) override {
    VisitExpr(op->condition);
    const auto* load = op->true_value.as<BufferLoadNode>();
    bool masked = load != nullptr && !load->dtype().is_bool() && load->dtype().bits() % 8 == 0;
    if (masked) Guard(op->condition);
    VisitExpr(op->true_value);
    if (masked) guards_.pop_back();
    VisitExpr(op->false_value);
  }

  void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    Check(Buffer(op->buffer), op->indices, static_cast<const PrimExprNode*>(op));
    StmtExprVisitor::VisitExpr_(op, self);
  }

  void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    Check(op->buffer, op->indices, static_cast<const StmtNode*>(op));
    StmtExprVisitor::VisitStmt_(op, self);
  }

 private:
  // `e` in terms of loop variables and the function's symbolic variables.
  PrimExpr Bound(const PrimExpr& e) const { return values_.empty() ? e : Substitute(e, values_); }

  // A variable that is not an integer expression of the loops (a float let) changes between
  // iterations in ways this check does not follow: it is never taken for a constant.
  void Define(const Var& var, const PrimExpr& value) {
    if (!IsIntScalar(var) || !IsIntScalar(value)) {
      opaque_.push_back(var.get());
      return;
    }
    PrimExpr v = Bound(value);
    values_[var.get()] = v.dtype() == var.dtype() ? v : Cast(var.dtype(), v);
  }

  // A vector condition guards lanes, which this check does not follow: an undefined guard
  // silences every access under it.
  void Guard(const PrimExpr& condition) {
    guards_.push_back(condition.dtype().is_scalar() ? Bound(condition) : PrimExpr());
  }

  void Check(const Buffer& buffer, const std::vector<PrimExpr>& indices, const void* node) {
    if (!status_.ok()) return;
    for (const PrimExpr& g : guards_) {
      if (!g.defined()) return;
    }
    for (size_t d = 0; d < indices.size() && d < buffer->shape.size() && status_.ok(); ++d) {
      CheckDim(buffer, d, indices[d], node);
    }
  }

  void CheckDim(const Buffer& buffer, size_t dim, const PrimExpr& written, const void* node) {
    std::vector<Loop> loops = loops_;
    PrimExpr index = written;
    // A vector index: each lane is one more iteration.
    if (const auto* ramp = written.as<RampNode>()) {
      if (!IsIntScalar(ramp->base) || ramp->base.dtype() != ramp->stride.dtype()) return;
      Var lane("lane", ramp->base.dtype());
      loops.push_back(Loop{lane, IntImm(lane.dtype(), 0), IntImm(lane.dtype(), ramp->lanes)});
      index = ramp->base + lane * ramp->stride;
    } else if (const auto* broadcast = written.as<BroadcastNode>()) {
      index = broadcast->value;
    }
    if (!IsIntScalar(index) || !IsIntScalar(buffer->shape[dim])) return;
    index = Int64(Bound(index));
    PrimExpr extent = Int64(Bound(buffer->shape[dim]));

    std::vector<const VarNode*> varying = opaque_;
    for (const Loop& l : loops) varying.push_back(l.var.get());
    std::optional<std::string> out = OutOfBounds(buffer, dim, written, loops, index, extent, varying, {}, 0);
    // An index in range only for small sizes (A[2 * i] over serial(0, n), A of extent n: n <=
    // 1) is out for every larger one, which the signature allows as well. The smallest
    // threshold that proves it is named in the error.
    std::vector<Var> sizes = SizeVars(loops, index, extent, varying);
    if (!out && !sizes.empty() && OutOfBounds(buffer, dim, written, loops, index, extent, varying, sizes, kLargeSize)) {
      int64_t lo = 1, hi = kLargeSize;
      while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (OutOfBounds(buffer, dim, written, loops, index, extent, varying, sizes, mid)) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      out = OutOfBounds(buffer, dim, written, loops, index, extent, varying, sizes, hi);
    }
    if (out) status_ = absl::InvalidArgumentError(absl::StrCat(Where(node), *out));
  }

  // A size large enough that an index out of range for every larger size is out there.
  static constexpr int64_t kLargeSize = 1024;

  // The symbolic variables the access depends on (its index, its extent, the loops around it
  // and its guards), when they are all sizes (declared >= 0); none when another variable (a
  // scalar parameter, an offset that may be negative) takes part, since an access that goes
  // out only when such a variable grows may be meant for its small values.
  std::vector<Var> SizeVars(const std::vector<Loop>& loops, const PrimExpr& index, const PrimExpr& extent,
                            const std::vector<const VarNode*>& varying) const {
    std::vector<PrimExpr> exprs = {index, extent};
    for (const Loop& l : loops) exprs.insert(exprs.end(), {l.min, l.extent});
    exprs.insert(exprs.end(), guards_.begin(), guards_.end());
    std::vector<Var> sizes;
    for (const PrimExpr& e : exprs) {
      for (const Var& v : VarsOf(e)) {
        if (std::find(varying.begin(), varying.end(), v.get()) != varying.end()) continue;
        if (!IsIntScalar(v) || v->lower_bound.value_or(-1) < 0) return {};
        if (std::none_of(sizes.begin(), sizes.end(), [&](const Var& s) { return s.same_as(v); })) sizes.push_back(v);
      }
    }
    return sizes;
  }

  // The error for an index that goes out of [0, extent) at some iteration, proven for every
  // size the function allows, or, with `sizes`, for every size of at least `at_least`.
  std::optional<std::string> OutOfBounds(const Buffer& buffer, size_t dim, const PrimExpr& written,
                                         const std::vector<Loop>& loops, const PrimExpr& index,
                                         const PrimExpr& extent, const std::vector<const VarNode*>& varying,
                                         const std::vector<Var>& sizes, int64_t at_least) const {
    IterationSearch search(loops, guards_, varying);
    if (!sizes.empty()) search.RestrictSizes(sizes, at_least);
    if (!search.AssumeItRuns()) return std::nullopt;
    Analyzer& analyzer = search.analyzer();
    std::optional<Reach> low = search.Extreme(index, /*largest=*/false);
    bool low_out = low && analyzer.CanProveLT(low->value, IntImm(DataType::Int64(), 0));
    std::optional<Reach> high = search.Extreme(index, /*largest=*/true);
    bool high_out = high && analyzer.CanProveLE(search.At(extent), high->value);
    if (!low_out && !high_out) return std::nullopt;

    const Reach& out = high_out ? *high : *low;
    std::string values = absl::StrCat("reaches ", ToString(out.value));
    if (low && high && low->extreme && high->extreme) {
      values = absl::StrCat("takes values in [", ToString(low->value), ", ", ToString(high->value), "]");
    }
    std::string when;
    for (const Var& v : sizes) {
      if (v->lower_bound.value_or(0) >= at_least) continue;
      absl::StrAppend(&when, when.empty() ? " for " : ", ", v.name());
    }
    if (!when.empty()) absl::StrAppend(&when, " >= ", at_least);
    return absl::StrCat("prim_func '", name_, "': index ", dim, " of buffer '", buffer->name, "' is ", ToString(written),
                        ", which ", values, ": ", ToString(out.value),
                        out.where.empty() ? "" : absl::StrCat(" (at ", out.where, ")"), " is outside [0, ",
                        ToString(high_out ? search.At(extent) : analyzer.Simplify(extent)), ")", when);
  }

  std::string Where(const void* node) const {
    if (locations_ == nullptr) return "";
    auto it = locations_->find(node);
    if (it == locations_->end()) it = locations_->find(func_);
    if (it == locations_->end()) return "";
    return absl::StrCat(it->second.file, ":", it->second.line, ":", it->second.column, ": error: ");
  }

  std::string name_;
  const SourceMap* locations_;
  const void* func_;
  std::vector<Loop> loops_;
  std::vector<PrimExpr> guards_;  // undefined: a guard this check cannot follow
  VarMap values_;                 // block iteration and let variables -> their values
  std::vector<const VarNode*> opaque_;  // defined inside the function, not in values_
  absl::Status status_;
};

}  // namespace

absl::Status VerifyIndexBounds(const PrimFunc& func, const std::string& name, const SourceMap* locations) {
  IndexBoundsVerifier verifier(name, locations, func.get());
  verifier.VisitStmt(func->body);
  return verifier.status();
}

}  // namespace kiln::tir
