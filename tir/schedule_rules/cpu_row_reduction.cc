// The CPU rule for reductions other than matmuls (row sums, max, softmax's and layer_norm's
// passes): vector lanes of partial results, rows in parallel, a row's passes fused.
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/cpu_rules.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::cpu_rules {

using namespace schedule_internal;  // NOLINT

namespace {

// Whether `e` is `var` plus terms that do not use it (`kb * 32 + h * 16 + var`): consecutive
// values of var then index consecutive elements.
bool IsVarPlusInvariant(const PrimExpr& e, const VarNode* var) {
  if (e.get() == var) return true;
  const auto* add = e.as<BinaryNode>();
  if (!add || add->kind() != ExprKind::kAdd) return false;
  return (IsVarPlusInvariant(add->a, var) && !UsesVar(add->b, var)) ||
         (IsVarPlusInvariant(add->b, var) && !UsesVar(add->a, var));
}

// Whether every load that depends on `var` reads it as its last index, plus terms that do
// not depend on it: the lanes then load one contiguous vector.
bool ReadsContiguously(const Stmt& body, const VarNode* var) {
  class Loads : public StmtExprVisitor {
   public:
    explicit Loads(const VarNode* var) : var_(var) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      for (size_t i = 0; i < op->indices.size(); ++i) {
        bool last = i + 1 == op->indices.size();
        if (UsesVar(op->indices[i], var_) && !(last && IsVarPlusInvariant(op->indices[i], var_))) ok = false;
      }
      StmtExprVisitor::VisitExpr_(op, self);
    }
    bool ok = true;

   private:
    const VarNode* var_;
  } loads(var);
  loads.VisitStmt(body);
  return loads.ok;
}

// The innermost reduction loop as `lanes` vector lanes of partial results, a rest of at
// least `vector` elements in vector steps too; whether it applied (the function is
// unchanged otherwise).
bool VectorizeRowReduction(Schedule* s, const std::string& name, int lanes, int vector) {
  if (lanes < 2) return false;
  absl::StatusOr<Stmt> b = FindBlock(s->func(), name, "");
  if (!b.ok()) return false;
  const auto* block = b->as<BlockNode>();
  std::vector<Stmt> loops = LoopsAbove(s->func()->body, block);
  if (loops.empty()) return false;
  const auto* inner = loops.back().as<ForNode>();
  const IterVar* bound = nullptr;
  for (const IterVar& iv : block->iter_vars) {
    if (iv.value.get() == inner->loop_var.get()) bound = &iv;
  }
  if (!bound || bound->type != IterType::kReduction || !ReadsContiguously(block->body, bound->var.get())) return false;
  std::optional<int64_t> extent = inner->extent.as_int();
  if (extent && *extent < lanes) return false;
  Schedule attempt = *s;
  const int tail_lanes = lanes > vector && vector >= 2 && lanes % vector == 0 ? vector : 0;
  absl::StatusOr<std::vector<std::string>> blocks = attempt.RFactor(name, inner->loop_var.name(), lanes, tail_lanes);
  if (!blocks.ok()) return false;
  for (size_t i = 0; i < blocks->size(); ++i) {
    if ((i == 2 && tail_lanes == 0) || (*blocks)[i].empty()) continue;  // a scalar tail, or no vector tail
    absl::StatusOr<std::vector<std::string>> lane_loops = attempt.GetLoops((*blocks)[i]);
    if (!lane_loops.ok() || !attempt.Vectorize(lane_loops->back()).ok()) return false;
  }
  *s = attempt;
  return true;
}

// Lanes of partial results for a row: four vectors when the row may be long (symbolic, or
// at least 16 vectors), two from 8 vectors, one otherwise (at most 64 lanes). Each vector
// of partials is one dependency chain through the row; a float max that propagates NaN
// costs a compare, a mask merge and a blend per step (about 6 cycles), a sum one add (3-4),
// so one chain bounds the pass at a fraction of the loads' speed; each more chain shortens
// it. The rest of a row beyond a multiple of the lanes runs in vector steps into the first
// vector of lanes (RFactor's vector tail), then element by element for under a vector, so
// long accumulators no longer lengthen the serial tail (rows of 300: 300 % 64 = 44 serial
// steps without the vector tail, 12 with it). The softmax of 1024 x 1024 scores (one
// thread, AVX-512) spent 19 % of its time in the max pass with two vectors.
int DefaultLanes(const PlainNest& nest, const CpuScheduleOptions& options) {
  const int vector = options.vector_lanes;
  if (nest.loops.empty() || vector < 2 || 2 * vector > 64) return vector;
  std::optional<int64_t> row = nest.loops.back()->extent.as_int();
  if ((!row || *row >= 16 * vector) && 4 * vector <= 64) return 4 * vector;
  return !row || *row >= 8 * vector ? 2 * vector : vector;
}

}  // namespace

absl::Status ScheduleReduction(Schedule* s, const PlainNest& nest, const CpuScheduleOptions& block_options) {
  CpuScheduleOptions options = block_options;
  if (!options.knobs.reduction.parallel) options.num_threads = 1;
  const int lanes = options.knobs.reduction.lanes > 0 ? options.knobs.reduction.lanes : DefaultLanes(nest, options);
  std::vector<std::string> spatial;
  for (size_t i = 0; i < nest.loops.size() && !IsReductionLoop(nest, i); ++i) {
    spatial.push_back(nest.loops[i]->loop_var.name());
  }
  VectorizeRowReduction(s, nest.block->name, lanes, options.vector_lanes);
  return ParallelOver(s, spatial, options);
}

void FuseRowPasses(Schedule* s) {
  // Each fusion leaves one loop fewer, so this ends.
  while (true) {
    std::vector<std::pair<std::string, std::string>> candidates;
    ForEachStmt(s->func()->body, [&](const Stmt& st) {
      const auto* seq = st.as<SeqStmtNode>();
      if (!seq) return;
      std::vector<Stmt> loops;
      for (const Stmt& c : seq->seq) {
        if (c.as<ForNode>()) loops.push_back(c);
      }
      for (size_t i = 0; i + 1 < loops.size(); ++i) {
        BufferAccesses a = AccessesOf(loops[i]), b = AccessesOf(loops[i + 1]);
        bool shared = false;
        for (const BufferNode* w : a.writes) shared |= b.Touches(w);
        for (const BufferNode* w : b.writes) shared |= a.Touches(w);
        if (shared) {
          candidates.emplace_back(loops[i].as<ForNode>()->loop_var.name(), loops[i + 1].as<ForNode>()->loop_var.name());
        }
      }
    });
    bool changed = false;
    for (const auto& [first, second] : candidates) {
      Schedule attempt = *s;
      if (attempt.FuseSiblings(first, second).ok()) {
        *s = attempt;
        changed = true;
        break;
      }
    }
    if (!changed) return;
  }
}

}  // namespace kiln::tir::cpu_rules
