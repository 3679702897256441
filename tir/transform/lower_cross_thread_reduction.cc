#include "tir/transform/lower_cross_thread_reduction.h"

#include "absl/strings/str_cat.h"
#include "tir/schedule/schedule_utils.h"
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
  p.write = [c, combine, Index](const VarMap& spatial) {
    std::vector<PrimExpr> indices;
    for (const PrimExpr& i : c.indices) indices.push_back(Substitute(i, spatial));
    return BufferStore(c.output, combine.Load({Index(0)}), indices);
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
      return StmtExprMutator::VisitStmt_(op, self);
    }
    return LowerThreadLoop(op, chain, block, self);
  }

  absl::Status status;

 private:
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
    std::optional<ThreadPartials> partials =
        threads ? PartialsOf(block, op->loop_var.dtype(), *threads) : std::nullopt;
    std::string why = ChainProblem(chain, block);
    if (!partials) {
      why = "its update is neither an associative combine (out = out op x) whose init op itself is the init nor "
            "argmax / argmin";
    }
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
      body.push_back(BufferStore(p.slots[i], p.partials[i].Load({Index(0)}), {tx}));
    }
    body.push_back(sync());
    // The tree: first fold the threads above the largest power of two P <= T onto the
    // first ones, then halve.
    int64_t power = 1;
    while (power * 2 <= threads) power *= 2;
    auto step = [&](int64_t active, int64_t stride) {
      body.push_back(IfThenElse(LT(tx, Index(active)), p.merge(tx, tx + Index(stride))));
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
    body.push_back(IfThenElse(EQ(tx, Index(0)), p.write(spatial)));
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
