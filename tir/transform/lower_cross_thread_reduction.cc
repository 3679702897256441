#include "tir/transform/lower_cross_thread_reduction.h"

#include "absl/strings/str_cat.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule/tile_conditions.h"
#include "tir/stmt_functor.h"
#include "tir/structural_equal.h"
#include "tir/transform/cross_thread_arg_reduction.h"
#include "tir/transform/cross_thread_partials.h"

namespace kiln::tir::transform {

namespace {

using schedule_internal::ReadsBuffer;
using schedule_internal::UsesAnyVar;
using schedule_internal::UsesVar;

bool IsConstant(const PrimExpr& e) { return e.as<IntImmNode>() || e.as<FloatImmNode>(); }

// The constant's value as a double (ints and bools exactly, in the range reductions use).
double ConstantValue(const PrimExpr& e) {
  if (const auto* i = e.as<IntImmNode>()) return static_cast<double>(i->value);
  return e.as<FloatImmNode>()->value;
}

// Whether `c op c == c`, so that T partials each starting at c combine to the serial result.
bool AbsorbsItself(ExprKind op, const PrimExpr& c) {
  switch (op) {
    case ExprKind::kAdd: return ConstantValue(c) == 0.0;
    case ExprKind::kMul: return ConstantValue(c) == 1.0;
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kAnd:
    case ExprKind::kOr: return true;
    default: return false;
  }
}

PrimExpr Combine(ExprKind op, PrimExpr a, PrimExpr b) { return MakeBinary(op, std::move(a), std::move(b)); }

// Whether `var` appears in a spatial variable's binding.
bool SpatialUses(const BlockNode* block, const VarNode* var) {
  for (const IterVar& iv : block->iter_vars) {
    if (iv.type == IterType::kSpatial && UsesVar(iv.value, var)) return true;
  }
  return false;
}

// Whether `var` appears in a reduction variable's binding and in no spatial one.
bool BindsReduction(const BlockNode* block, const VarNode* var) {
  bool reduction = false;
  for (const IterVar& iv : block->iter_vars) {
    if (iv.type == IterType::kReduction && UsesVar(iv.value, var)) reduction = true;
  }
  return reduction && !SpatialUses(block, var);
}

// The loops between `loop` and the block its body reaches through loops only (nullptr when
// something else is in between).
const BlockNode* BlockUnder(const ForNode* loop, std::vector<const ForNode*>* chain) {
  Stmt s = loop->body;
  while (const auto* f = s.as<ForNode>()) {
    chain->push_back(f);
    s = f->body;
  }
  return s.as<BlockNode>();
}

// Why the chain cannot carry per-thread partials ("" when it can).
std::string ChainProblem(const std::vector<const ForNode*>& chain, const BlockNode* block) {
  for (const ForNode* f : chain) {
    if (f->for_kind != ForKind::kSerial && f->for_kind != ForKind::kUnrolled) {
      return absl::StrCat("the loop '", f->loop_var.name(), "' between it and the block is not serial");
    }
    if (SpatialUses(block, f->loop_var.get())) {
      return absl::StrCat("the spatial loop '", f->loop_var.name(), "' lies inside it");
    }
  }
  return "";
}

// The partials of a single combine (+, *, min, max, &&, ||): one value per thread,
// starting at the init (an identity of the combine).
ThreadPartials SingleCombinePartials(const ReductionCombiner& c, DataType index_type, int64_t threads) {
  auto Index = [index_type](int64_t v) { return IntImm(index_type, v); };
  const DataType dtype = c.output->dtype;
  const std::string& name = c.output->name;
  Buffer partial(absl::StrCat(name, "_partial"), dtype, {Index(1)}, {}, "local");
  Buffer combine(absl::StrCat(name, "_combine"), dtype, {Index(threads)}, {}, "shared");
  ThreadPartials p;
  p.partials = {partial};
  p.slots = {combine};
  p.init = BufferStore(partial, c.init, {Index(0)});
  p.accumulate = BufferStore(partial, Combine(c.op, partial.Load({Index(0)}), c.update), {Index(0)});
  p.merge = [c, combine](const PrimExpr& into, const PrimExpr& from) {
    return BufferStore(combine, Combine(c.op, combine.Load({into}), combine.Load({from})), {into});
  };
  p.write = [c, combine](const VarMap& spatial, const PrimExpr& first) {
    std::vector<PrimExpr> indices;
    for (const PrimExpr& i : c.indices) indices.push_back(Substitute(i, spatial));
    return BufferStore(c.output, combine.Load({first}), indices);
  };
  return p;
}

// The block's partials, when its combine is one the threads can merge.
std::optional<ThreadPartials> PartialsOf(const BlockNode* block, DataType index_type, int64_t threads) {
  if (threads < 1) return std::nullopt;
  if (std::optional<ReductionCombiner> c = CrossThreadCombinerOf(block)) {
    return SingleCombinePartials(*c, index_type, threads);
  }
  if (std::optional<ArgReductionCombiner> c = CrossThreadArgCombinerOf(block)) {
    return ArgReductionPartials(*c, index_type, threads);
  }
  return std::nullopt;
}

class Lowerer : public StmtExprMutator {
 public:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (!status.ok()) return self;
    if (IsSerial(op)) {
      // Serial loops above the thread loop (the rule's order: ro outside tx, so that run
      // serially the row is summed in its own order): they move inside the thread loop.
      std::vector<const ForNode*> above;
      const ForNode* f = op;
      while (f && IsSerial(f)) {
        above.push_back(f);
        f = f->body.as<ForNode>();
      }
      if (f && IsThreadLoop(f)) {
        std::vector<const ForNode*> below;
        const BlockNode* block = BlockUnder(f, &below);
        bool reduction_only = block && block->is_reduction() && BindsReduction(block, f->loop_var.get());
        for (const ForNode* a : above) {
          reduction_only = reduction_only && !SpatialUses(block, a->loop_var.get()) && !UsesVar(f->extent, a->loop_var.get());
        }
        if (reduction_only) {
          above.insert(above.end(), below.begin(), below.end());
          return LowerThreadLoop(f, above, block, self);
        }
      }
      return StmtExprMutator::VisitStmt_(op, self);
    }
    if (!IsThreadLoop(op)) return StmtExprMutator::VisitStmt_(op, self);
    std::vector<const ForNode*> chain;
    const BlockNode* block = BlockUnder(op, &chain);
    if (!block || !block->is_reduction() || !BindsReduction(block, op->loop_var.get())) {
      // A thread loop over outputs: the reductions inside it combine within each of its
      // threads' groups (several outputs per block).
      groups_.push_back(op);
      Stmt result = StmtExprMutator::VisitStmt_(op, self);
      groups_.pop_back();
      return result;
    }
    return LowerThreadLoop(op, chain, block, self);
  }

  absl::Status status;

 private:
  std::vector<const ForNode*> groups_;  // thread loops over outputs around the visited statement

  // The number of thread groups: the product of the extents of the thread loops over
  // outputs around the reduction's thread loop (1 when there is none), or 0 when one of
  // them is not a positive constant.
  int64_t GroupCount() const {
    int64_t groups = 1;
    for (const ForNode* g : groups_) {
      std::optional<int64_t> e = g->extent.as_int();
      if (!e || *e < 1) return 0;
      groups *= *e;
    }
    return groups;
  }
  // This thread's group, numbered 0 .. GroupCount() - 1 (the loops' indices, innermost fastest).
  PrimExpr GroupIndex(DataType dtype) const {
    PrimExpr index;
    for (const ForNode* g : groups_) {
      PrimExpr v = g->loop_var;
      if (v.dtype() != dtype) v = Cast(dtype, v);
      std::optional<int64_t> min = g->min.as_int();
      if (!min || *min != 0) v = v - (g->min.dtype() == dtype ? g->min : Cast(dtype, g->min));
      index = index.defined() ? index * IntImm(dtype, *g->extent.as_int()) + v : v;
    }
    return index.defined() ? index : IntImm(dtype, 0);
  }

  static bool IsSerial(const ForNode* f) {
    return f->for_kind == ForKind::kSerial || f->for_kind == ForKind::kUnrolled;
  }
  static bool IsThreadLoop(const ForNode* f) {
    return f->for_kind == ForKind::kThreadBinding && f->thread_tag.rfind("threadIdx.", 0) == 0;
  }

  // `op` (bound to threadIdx) reduces `block` through the serial loops `chain` (outermost
  // first; those that were above `op` included): the rewrite, or an error.
  Stmt LowerThreadLoop(const ForNode* op, const std::vector<const ForNode*>& chain, const BlockNode* block,
                       const Stmt& self) {
    std::optional<int64_t> threads = op->extent.as_int();
    const int64_t groups = GroupCount();
    std::optional<ThreadPartials> partials =
        threads && groups > 0 ? PartialsOf(block, op->loop_var.dtype(), *threads * groups) : std::nullopt;
    std::string why = ChainProblem(chain, block);
    if (!partials) {
      why = "its update is neither an associative combine (out = out op x) whose init op itself is the init nor "
            "argmax / argmin";
    }
    if (groups < 1) why = "a thread loop around it has no positive constant extent";
    if (!threads || *threads < 1) why = "its thread count is not a positive constant";
    if (!why.empty()) {
      status = absl::InvalidArgumentError(absl::StrCat("cross-thread reduction: the loop '", op->loop_var.name(),
                                                       "' bound to ", op->thread_tag, " reduces block '", block->name,
                                                       "', but ", why));
      return self;
    }
    return Rewrite(op, chain, block, *partials, *threads);
  }

  Stmt Rewrite(const ForNode* op, const std::vector<const ForNode*>& chain, const BlockNode* block,
               const ThreadPartials& p, int64_t threads) {
    const PrimExpr tx = op->loop_var;
    // The group's slots: groups_ loops around this one (threads over outputs) each reduce
    // their own rows in slots [first, first + threads).
    const PrimExpr first = groups_.empty() ? IntImm(tx.dtype(), 0) : GroupIndex(tx.dtype()) * IntImm(tx.dtype(), threads);
    const PrimExpr slot = groups_.empty() ? tx : first + tx;
    auto Index = [&](int64_t v) { return IntImm(tx.dtype(), v); };  // an index, in the loop's type
    auto sync = [] { return Evaluate(Call("storage_sync", {})); };

    // Each thread's share of the row, into its partial (the block keeps its predicate: the
    // tail of the row is guarded here, around the loads, before any barrier).
    Stmt update = Block(block->name, block->iter_vars, p.accumulate, Stmt(), block->predicate, block->alloc_buffers);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const ForNode* f = *it;
      update = For(f->loop_var, f->min, f->extent, f->for_kind, update, f->thread_tag);
    }
    std::vector<Stmt> body = {p.init, update};
    for (size_t i = 0; i < p.partials.size(); ++i) {
      body.push_back(BufferStore(p.slots[i], p.partials[i].Load({Index(0)}), {slot}));
    }
    body.push_back(sync());
    // The tree: first fold the threads above the largest power of two P <= T onto the
    // first ones, then halve.
    int64_t power = 1;
    while (power * 2 <= threads) power *= 2;
    auto step = [&](int64_t active, int64_t stride) {
      body.push_back(IfThenElse(LT(tx, Index(active)), p.merge(slot, slot + Index(stride))));
      body.push_back(sync());
    };
    if (power < threads) step(threads - power, power);
    for (int64_t s = power / 2; s >= 1; s /= 2) step(s, s);
    // Thread 0 writes the row's result: the block's output index with its spatial
    // variables bound as the block binds them.
    VarMap spatial;
    for (const IterVar& iv : block->iter_vars) {
      if (iv.type != IterType::kSpatial) continue;
      PrimExpr value = iv.value.dtype() == iv.var.dtype() ? iv.value : Cast(iv.var.dtype(), iv.value);
      spatial[iv.var.get()] = value;
    }
    // Only outputs that exist: the block's conditions on its spatial loops alone (the tail
    // of columns split over a group loop) guard the write too; those on the reduced loops
    // (the row's tail) guarded only the partials.
    PrimExpr write_if = EQ(tx, Index(0));
    if (block->predicate.defined()) {
      std::vector<const VarNode*> reduced = {op->loop_var.get()};
      for (const ForNode* f : chain) reduced.push_back(f->loop_var.get());
      std::vector<PrimExpr> conditions;
      schedule_internal::FlattenAnd(block->predicate, &conditions);
      for (const PrimExpr& c : conditions) {
        if (!UsesAnyVar(c, reduced) && !(c.as<IntImmNode>() && c.as<IntImmNode>()->value != 0)) {
          write_if = And(write_if, c);
        }
      }
    }
    body.push_back(IfThenElse(write_if, p.write(spatial, first)));
    Stmt result = SeqStmt(std::move(body));
    for (size_t i = p.partials.size(); i-- > 0;) result = Allocate(p.slots[i], result);
    for (size_t i = p.partials.size(); i-- > 0;) result = Allocate(p.partials[i], result);
    return For(op->loop_var, op->min, op->extent, op->for_kind, result, op->thread_tag);
  }
};

}  // namespace

std::optional<ReductionCombiner> CrossThreadCombinerOf(const BlockNode* block) {
  if (!block->init.defined()) return std::nullopt;
  const auto* init = block->init.as<BufferStoreNode>();
  const auto* store = block->body.as<BufferStoreNode>();
  if (!init || !store || !init->buffer.same_as(store->buffer) || !SameIndices(init->indices, store->indices)) {
    return std::nullopt;
  }
  if (!IsConstant(init->value) || store->buffer->dtype.lanes() != 1) return std::nullopt;
  const auto* binary = store->value.as<BinaryNode>();
  if (!binary) return std::nullopt;
  // Which operand is the running value out[idx]; the other is x, which must not read out.
  auto is_running = [&](const PrimExpr& e) {
    const auto* load = e.as<BufferLoadNode>();
    return load && load->buffer.get() == store->buffer.get() && SameIndices(load->indices, store->indices);
  };
  PrimExpr update;
  if (is_running(binary->a)) update = binary->b;
  else if (is_running(binary->b)) update = binary->a;
  else return std::nullopt;
  if (ReadsBuffer(update, store->buffer.get()) || !AbsorbsItself(binary->kind(), init->value)) return std::nullopt;
  // The output index may use spatial variables only (one result per row).
  std::vector<const VarNode*> reduction_vars;
  for (const IterVar& iv : block->iter_vars) {
    if (iv.type == IterType::kReduction) reduction_vars.push_back(iv.var.get());
  }
  for (const PrimExpr& i : store->indices) {
    if (UsesAnyVar(i, reduction_vars)) return std::nullopt;
  }
  return ReductionCombiner{binary->kind(), store->buffer, init->value, update, store->indices};
}

bool CombinesAcrossThreads(const ForNode* loop) {
  std::vector<const ForNode*> chain;
  const BlockNode* block = BlockUnder(loop, &chain);
  return block && block->is_reduction() && BindsReduction(block, loop->loop_var.get()) &&
         ChainProblem(chain, block).empty() && CrossThreadPartialBytes(block).has_value();
}

std::optional<int64_t> CrossThreadPartialBytes(const BlockNode* block) {
  if (std::optional<ReductionCombiner> c = CrossThreadCombinerOf(block)) return c->output->dtype.bytes();
  if (std::optional<ArgReductionCombiner> c = CrossThreadArgCombinerOf(block)) {
    return c->index->dtype.bytes() + c->value->dtype.bytes();
  }
  return std::nullopt;
}

absl::StatusOr<PrimFunc> LowerCrossThreadReductions(const PrimFunc& func) {
  Lowerer lowerer;
  PrimFunc result = lowerer.VisitPrimFunc(func);
  if (!lowerer.status.ok()) return lowerer.status;
  return result;
}

}  // namespace kiln::tir::transform
