// RFactor: a reduction's innermost loop split into vector lanes, each lane accumulating its
// own partial result in a small local buffer, the lanes combined once at the end.
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"
#include "tir/structural_equal.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

bool SameIndices(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!StructuralEqual(a[i], b[i])) return false;
  }
  return true;
}

// The value x with op(x, y) == y for every y: what a lane that saw no element holds.
// (The block's own init may differ, e.g. a sum starting at 5; it is applied once, in the
// combine, so it must not be repeated in every lane.)
std::optional<PrimExpr> Identity(ExprKind op, DataType t) {
  if (t.is_bool() || !(t.is_floating() || t.is_integer())) return std::nullopt;
  auto constant = [&](double f, int64_t i) { return t.is_floating() ? FloatImm(t, f) : IntImm(t, i); };
  const double inf = std::numeric_limits<double>::infinity();
  const int bits = t.bits();
  switch (op) {
    case ExprKind::kAdd:
      return constant(0.0, 0);
    case ExprKind::kMul:
      return constant(1.0, 1);
    case ExprKind::kMax:
      if (t.is_uint()) return IntImm(t, 0);
      return constant(-inf, bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1)));
    case ExprKind::kMin:
      if (t.is_uint()) return IntImm(t, bits == 64 ? -1 : (int64_t{1} << bits) - 1);
      return constant(inf, bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1);
    default:
      return std::nullopt;
  }
}

// op over the lanes as a balanced tree (lane i with lane i + half, recursively).
PrimExpr CombineTree(ExprKind op, const Buffer& acc, int64_t lanes) {
  std::vector<PrimExpr> level;
  for (int64_t i = 0; i < lanes; ++i) level.push_back(acc.Load({IntImm(DataType::Int64(), i)}));
  while (level.size() > 1) {
    size_t half = (level.size() + 1) / 2;
    std::vector<PrimExpr> next;
    for (size_t i = 0; i < half; ++i) {
      next.push_back(i + half < level.size() ? MakeBinary(op, level[i], level[i + half]) : level[i]);
    }
    level = std::move(next);
  }
  return level[0];
}

}  // namespace

absl::StatusOr<RFactorResult> RFactor(const PrimFunc& func, const std::string& block_name, const std::string& loop_name,
                                      int64_t lanes, int64_t tail_lanes) {
  KILN_ASSIGN_OR_RETURN(Stmt block_stmt, FindBlock(func, block_name, "rfactor"));
  KILN_ASSIGN_OR_RETURN(Stmt loop_stmt, FindLoop(func, loop_name, "rfactor"));
  const auto* block = block_stmt.as<BlockNode>();
  const auto* loop = loop_stmt.as<ForNode>();
  auto fail = [&](const std::string& why) { return absl::InvalidArgumentError(absl::StrCat("rfactor: ", why)); };
  auto in_block = [&](const std::string& why) { return fail(absl::StrCat("block '", block_name, "' ", why)); };
  if (lanes < 2 || lanes > 64) return fail(absl::StrCat("lanes must be in [2, 64], got ", lanes));
  if (tail_lanes != 0 && (tail_lanes < 2 || tail_lanes >= lanes || lanes % tail_lanes != 0)) {
    return fail(absl::StrCat("tail lanes must divide the ", lanes, " lanes and be in [2, ", lanes, "), got ", tail_lanes));
  }
  if (!block->init.defined()) {
    return in_block("has no init (rfactor it before decompose_reduction: the combine keeps the init)");
  }
  if (!block->alloc_buffers.empty()) return in_block("allocates buffers");
  // body B[idx] = op(B[idx], e) (or op(e, B[idx])), init B[idx] = c.
  const auto* store = block->body.as<BufferStoreNode>();
  const auto* init = block->init.as<BufferStoreNode>();
  if (!store || !init) return in_block("is not a single store `B[..] = op(B[..], value)` with an init `B[..] = c`");
  if (!init->buffer.same_as(store->buffer) || !SameIndices(init->indices, store->indices)) {
    return in_block("initializes another element than the one it reduces into");
  }
  const auto* bin = store->value.as<BinaryNode>();
  ExprKind op = store->value.defined() ? store->value.kind() : ExprKind::kAdd;
  if (!bin || (op != ExprKind::kAdd && op != ExprKind::kMul && op != ExprKind::kMax && op != ExprKind::kMin)) {
    return in_block("does not combine with +, *, max or min (the lanes need an associative, commutative operation)");
  }
  auto is_self = [&](const PrimExpr& e) {
    const auto* load = e.as<BufferLoadNode>();
    return load && load->buffer.get() == store->buffer.get() && SameIndices(load->indices, store->indices);
  };
  PrimExpr value = is_self(bin->a) ? bin->b : is_self(bin->b) ? bin->a : PrimExpr();
  if (!value.defined()) return in_block("does not read the element it reduces into as an operand of its combination");
  if (CountAccesses(Evaluate(value), store->buffer.get()) != 0) {
    return in_block(absl::StrCat("reads '", store->buffer->name, "' in the value it combines"));
  }
  std::optional<PrimExpr> identity = Identity(op, store->buffer->dtype);
  if (!identity) return in_block(absl::StrCat("reduces values of type ", store->buffer->dtype.ToString()));

  // The loop: innermost around the block, serial from 0, bound directly to one reduction variable.
  if (loop->body.get() != block) return fail(absl::StrCat("loop '", loop_name, "' must directly contain block '", block_name, "'"));
  if (loop->for_kind != ForKind::kSerial) {
    return fail(absl::StrCat("loop '", loop_name, "' is ", KindWord(loop->for_kind), ", not serial"));
  }
  if (loop->min.as_int() != 0) return fail(absl::StrCat("loop '", loop_name, "' does not start at 0"));
  const IterVar* split_var = nullptr;
  for (const IterVar& iv : block->iter_vars) {
    if (!UsesVar(iv.value, loop->loop_var.get())) continue;
    if (iv.type != IterType::kReduction || iv.value.get() != loop->loop_var.get() || split_var) {
      return fail(absl::StrCat("loop '", loop_name, "' must be bound directly to exactly one reduction variable of block '",
                               block_name, "' (rfactor splits the loop itself)"));
    }
    split_var = &iv;
  }
  if (!split_var) return fail(absl::StrCat("loop '", loop_name, "' binds no reduction variable of block '", block_name, "'"));
  std::optional<int64_t> extent = loop->extent.as_int();
  if (extent && *extent < lanes) {
    return fail(absl::StrCat("loop '", loop_name, "' has ", *extent, " iterations, fewer than the ", lanes, " lanes"));
  }

  // The reduction chain: from the outermost loop a reduction variable is bound to, down to
  // the block, directly nested serial loops that nothing spatial depends on. The
  // accumulator lives around it, once per output element.
  std::vector<Stmt> loops = LoopsAbove(func->body, block);
  size_t start = loops.size();
  for (size_t i = 0; i < loops.size() && start == loops.size(); ++i) {
    for (const IterVar& iv : block->iter_vars) {
      if (iv.type == IterType::kReduction && UsesVar(iv.value, loops[i].as<ForNode>()->loop_var.get())) start = i;
    }
  }
  KILN_CHECK(start < loops.size());
  for (size_t i = start; i < loops.size(); ++i) {
    const auto* l = loops[i].as<ForNode>();
    const StmtNode* inner = i + 1 < loops.size() ? loops[i + 1].get() : block;
    if (l->body.get() != inner) {
      return fail(absl::StrCat("loop '", l->loop_var.name(), "' of the reduction holds more than the next loop or block"));
    }
    if (l->for_kind != ForKind::kSerial) {
      return fail(absl::StrCat("reduction loop '", l->loop_var.name(), "' is ", KindWord(l->for_kind), ", not serial"));
    }
    bool spatial = block->predicate.defined() && UsesVar(block->predicate, l->loop_var.get());
    for (const IterVar& iv : block->iter_vars) {
      spatial |= iv.type == IterType::kSpatial && UsesVar(iv.value, l->loop_var.get());
    }
    if (spatial) {
      return fail(absl::StrCat("loop '", l->loop_var.name(), "' lies inside the reduction of block '", block_name,
                               "' but a spatial variable or the predicate depends on it (reorder the spatial loops outside)"));
    }
  }

  NameSet used = UsedNames(func);
  const DataType it = loop->loop_var.dtype();
  const PrimExpr L = IntImm(it, lanes);
  PrimExpr main_extent = extent ? IntImm(it, *extent / lanes) : SimplifyExpr(FloorDiv(loop->extent, L));
  // With tail lanes, the rest of K beyond the lanes' multiple first runs in steps of
  // tail_lanes (into lanes 0 .. tail_lanes - 1, one vector), then one element at a time.
  const PrimExpr TL = IntImm(it, tail_lanes > 0 ? tail_lanes : lanes);
  PrimExpr vector_tail_extent = tail_lanes == 0 ? IntImm(it, 0)
                                : extent        ? IntImm(it, *extent % lanes / tail_lanes)
                                                : SimplifyExpr(FloorDiv(FloorMod(loop->extent, L), TL));
  PrimExpr tail_extent = extent ? IntImm(it, *extent % (tail_lanes > 0 ? tail_lanes : lanes))
                                : SimplifyExpr(FloorMod(loop->extent, TL));
  const bool has_tail = tail_extent.as_int() != 0;
  const bool has_vector_tail = vector_tail_extent.as_int() != 0;
  std::string rf_name = FreshName(absl::StrCat(block_name, "_rf"), &used);
  std::string init_name = FreshName(absl::StrCat(block_name, "_rf_init"), &used);
  std::string tail_name = has_tail ? FreshName(absl::StrCat(block_name, "_rf_tail"), &used) : std::string();
  std::string vector_tail_name =
      has_vector_tail ? FreshName(absl::StrCat(block_name, "_rf_tail_vector"), &used) : std::string();
  Var kv0(FreshName(absl::StrCat(loop_name, "_tail_0"), &used), it);
  Var kv1(FreshName(absl::StrCat(loop_name, "_tail_1"), &used), it);
  Var k0(FreshName(absl::StrCat(loop_name, "_0"), &used), it);
  Var k1(FreshName(absl::StrCat(loop_name, "_1"), &used), it);
  Var kt(FreshName(absl::StrCat(loop_name, "_tail"), &used), it);
  Var ki(FreshName(absl::StrCat(loop_name, "_init"), &used), it);
  const DataType vt = split_var->var.dtype();
  Var vk0(FreshName(absl::StrCat(split_var->var.name(), "_0"), &used), vt);
  Var vl(FreshName(absl::StrCat(split_var->var.name(), "_1"), &used), vt);
  Var vtail(FreshName(absl::StrCat(split_var->var.name(), "_tail"), &used), vt);
  Var vinit(FreshName(absl::StrCat(split_var->var.name(), "_init"), &used), vt);
  Buffer acc(FreshName(absl::StrCat(store->buffer->name, "_lanes"), &used), store->buffer->dtype, {IntImm(DataType::Int64(), lanes)},
             {}, "local");
  const PrimExpr zero = IntImm(DataType::Int64(), 0);

  // Copies of the block's other iteration variables (each block defines its own).
  auto copy_vars = [&](bool spatial_only, VarMap* map) {
    std::vector<IterVar> out;
    for (const IterVar& iv : block->iter_vars) {
      if (&iv == split_var || (spatial_only && iv.type != IterType::kSpatial)) continue;
      Var v(FreshName(iv.var.name(), &used), iv.var.dtype(), iv.var->lower_bound, iv.var->upper_bound);
      (*map)[iv.var.get()] = v;
      out.push_back(IterVar{v, iv.extent, iv.type, iv.value});
    }
    return out;
  };

  // Main part: for k_0 in [0, K / lanes), k_1 in [0, lanes): acc[k_1] = op(acc[k_1], value).
  std::vector<IterVar> rf_vars;
  for (const IterVar& iv : block->iter_vars) {
    if (&iv != split_var) rf_vars.push_back(iv);
  }
  rf_vars.push_back(IterVar{vl, IntImm(vt, lanes), IterType::kSpatial, k1});
  rf_vars.push_back(IterVar{vk0, main_extent, IterType::kReduction, k0});
  PrimExpr rf_value = Substitute(value, VarMap{{split_var->var.get(), vk0 * IntImm(vt, lanes) + vl}});
  Stmt rf_block = Block(rf_name, rf_vars, BufferStore(acc, MakeBinary(op, acc.Load({vl}), rf_value), {vl}), Stmt(),
                        block->predicate);
  Stmt chain = For(k0, IntImm(it, 0), main_extent, ForKind::kSerial, For(k1, IntImm(it, 0), L, ForKind::kSerial, rf_block));

  // Vector tail: steps of tail_lanes elements after the main part, lane l of a step into
  // lane l (indices known per lane once vectorized, so the accumulator stays promotable).
  PrimExpr tail_start = SimplifyExpr(main_extent * IntImm(vt, lanes));
  if (has_vector_tail) {
    VarMap map;
    std::vector<IterVar> vector_vars = copy_vars(false, &map);
    Var vv1(FreshName(absl::StrCat(split_var->var.name(), "_tail_1"), &used), vt);
    Var vv0(FreshName(absl::StrCat(split_var->var.name(), "_tail_0"), &used), vt);
    vector_vars.push_back(IterVar{vv1, IntImm(vt, tail_lanes), IterType::kSpatial, kv1});
    vector_vars.push_back(IterVar{vv0, vector_tail_extent, IterType::kReduction, kv0});
    map[split_var->var.get()] = tail_start + vv0 * IntImm(vt, tail_lanes) + vv1;
    Stmt vector_block = Block(vector_tail_name, vector_vars,
                              BufferStore(acc, MakeBinary(op, acc.Load({vv1}), Substitute(value, map)), {vv1}), Stmt(),
                              block->predicate);
    chain = SeqStmt({chain, For(kv0, IntImm(it, 0), vector_tail_extent, ForKind::kSerial,
                                For(kv1, IntImm(it, 0), TL, ForKind::kSerial, vector_block))});
    tail_start = SimplifyExpr(tail_start + vector_tail_extent * IntImm(vt, tail_lanes));
  }
  // Tail: the last elements one at a time, into lane 0 (a constant index keeps the
  // accumulator promotable to a register). With tail lanes, as one step of tail_lanes lanes
  // instead, lane l into lane l and only the lanes below K % tail_lanes (`k_tail < rest`):
  // vectorized, GuardVectorizedTails blends it (one masked load) where the scalar steps
  // were up to tail_lanes - 1 dependent operations per row.
  if (has_tail && tail_lanes > 0) {
    VarMap map;
    std::vector<IterVar> tail_vars = copy_vars(false, &map);
    tail_vars.push_back(IterVar{vtail, TL, IterType::kSpatial, kt});
    map[split_var->var.get()] = tail_start + vtail;
    PrimExpr in_rest = LT(kt, tail_extent);  // predicates are in the loops' variables
    PrimExpr predicate = block->predicate.defined() ? And(block->predicate, in_rest) : in_rest;
    Stmt tail_block = Block(tail_name, tail_vars,
                            BufferStore(acc, MakeBinary(op, acc.Load({vtail}), Substitute(value, map)), {vtail}),
                            Stmt(), predicate);
    chain = SeqStmt({chain, For(kt, IntImm(it, 0), TL, ForKind::kSerial, tail_block)});
  } else if (has_tail) {
    VarMap map;
    std::vector<IterVar> tail_vars = copy_vars(false, &map);
    tail_vars.push_back(IterVar{vtail, tail_extent, IterType::kReduction, kt});
    map[split_var->var.get()] = tail_start + vtail;
    Stmt tail_block = Block(tail_name, tail_vars,
                            BufferStore(acc, MakeBinary(op, acc.Load({zero}), Substitute(value, map)), {zero}), Stmt(),
                            block->predicate);
    chain = SeqStmt({chain, For(kt, IntImm(it, 0), tail_extent, ForKind::kSerial, tail_block)});
  }
  for (size_t i = loops.size() - 1; i-- > start;) {
    const auto* l = loops[i].as<ForNode>();
    chain = For(l->loop_var, l->min, l->extent, l->for_kind, chain, l->thread_tag);
  }

  // Every lane starts at the identity.
  Stmt init_block = Block(init_name, {IterVar{vinit, IntImm(vt, lanes), IterType::kSpatial, ki}},
                          BufferStore(acc, *identity, {vinit}), Stmt(), block->predicate);
  Stmt init_loop = For(ki, IntImm(it, 0), L, ForKind::kSerial, init_block);

  // Halving steps while the count is even and above 2: half[l] = op(prev[l], prev[l + h])
  // for l in [0, h), each into its own smaller local buffer (a loop that can run as one
  // vector operation on the two halves: read and written buffers differ).
  struct Step {
    Buffer buffer;
    Stmt loop;
  };
  std::vector<Step> steps;
  std::vector<std::string> step_names;
  Buffer prev = acc;
  int64_t count = lanes;
  while (count % 2 == 0 && count > 2) {
    const int64_t h = count / 2;
    Buffer half(FreshName(absl::StrCat(acc->name, "_", h), &used), acc->dtype, {IntImm(DataType::Int64(), h)}, {},
                "local");
    Var lv(FreshName(absl::StrCat(loop_name, "_half"), &used), it);
    Var vv(FreshName(absl::StrCat(split_var->var.name(), "_half"), &used), vt);
    step_names.push_back(FreshName(absl::StrCat(block_name, "_rf_half"), &used));
    Stmt step = Block(step_names.back(), {IterVar{vv, IntImm(vt, h), IterType::kSpatial, lv}},
                      BufferStore(half, MakeBinary(op, prev.Load({vv}), prev.Load({vv + IntImm(vt, h)})), {vv}),
                      Stmt(), block->predicate);
    steps.push_back(Step{half, For(lv, IntImm(it, 0), IntImm(it, h), ForKind::kSerial, step)});
    prev = half;
    count = h;
  }

  // Combine: B[idx] = op(c, the last few lanes as a tree), the original block's name and
  // spatial domain.
  VarMap map;
  std::vector<IterVar> combine_vars = copy_vars(true, &map);
  PrimExpr combined = MakeBinary(op, Substitute(init->value, map), CombineTree(op, prev, count));
  std::vector<PrimExpr> out_index;
  for (const PrimExpr& i : store->indices) out_index.push_back(Substitute(i, map));
  Stmt combine = Block(block_name, combine_vars, BufferStore(store->buffer, combined, out_index), Stmt(), block->predicate);
  for (size_t i = steps.size(); i-- > 0;) combine = Allocate(steps[i].buffer, SeqStmt({steps[i].loop, combine}));

  Stmt replacement = Allocate(acc, SeqStmt({init_loop, chain, combine}));
  RFactorResult result{WithBody(func, ReplaceStmt(func->body, loops[start].get(), replacement)), rf_name, init_name,
                       tail_name, step_names, vector_tail_name};
  return result;
}

}  // namespace kiln::tir::schedule_primitive
