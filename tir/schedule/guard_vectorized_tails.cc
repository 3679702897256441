// GuardVectorizedTails: vectorized loops in the form the CPU code generator turns into SIMD
// code directly — constant extent, straight-line body, no condition on the lane — with the
// lanes that may leave the domain handled by a serial copy.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "tir/analyzer.h"
#include "tir/const_int_bound.h"
#include "tir/target.h"
#include "tir/schedule/edge_loop_cut.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule/tile_conditions.h"
#include "tir/stmt_functor.h"
#include "tir/structural_equal.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

// A vectorized loop without the conditions on its lane in its blocks' predicates, and
// those conditions evaluated at the last lane; nullopt when a lane condition has a form
// other than `a < b` with `a` increasing with the lane.
struct LaneSplit {
  Stmt body;                    // the loop's body, lane conditions dropped
  std::vector<PrimExpr> guards; // all hold => every lane is in range
  // For each lane condition `lane + c < b`, b - c: the lanes below every one of these are
  // the lanes in range (the condition's `a` grows by exactly one per lane).
  std::vector<PrimExpr> lane_bounds;
};
std::optional<LaneSplit> SplitLaneConditions(const ForNode* loop) {
  std::optional<int64_t> lanes = loop->extent.as_int();
  const VarNode* v = loop->loop_var.get();
  Analyzer analyzer;
  LaneSplit out{loop->body, {}, {}};
  for (const Stmt& b : OutermostBlocks(loop->body)) {
    const auto* block = b.as<BlockNode>();
    if (!block->predicate.defined() || !UsesVar(block->predicate, v)) continue;
    std::vector<PrimExpr> conjuncts, keep;
    FlattenAnd(block->predicate, &conjuncts);
    for (const PrimExpr& c : conjuncts) {
      if (!UsesVar(c, v)) {
        keep.push_back(c);
        continue;
      }
      const auto* lt = c.as<BinaryNode>();
      if (c.kind() != ExprKind::kLT || UsesVar(lt->b, v) ||
          UsesVar(analyzer.Simplify(Sub(lt->a, loop->loop_var)), v)) {
        return std::nullopt;
      }
      PrimExpr last = analyzer.Simplify(loop->min + IntImm(loop->loop_var.dtype(), *lanes - 1));
      out.guards.push_back(analyzer.Simplify(Substitute(c, VarMap{{v, last}})));
      out.lane_bounds.push_back(analyzer.Simplify(Sub(lt->b, Sub(lt->a, loop->loop_var))));
    }
    PrimExpr predicate;
    for (const PrimExpr& c : keep) predicate = predicate.defined() ? And(predicate, c) : c;
    out.body = ReplaceStmt(out.body, b.get(),
                           Block(block->name, block->iter_vars, block->body, block->init, predicate,
                                 block->alloc_buffers));
  }
  return out;
}

// The edge tiles' copy: vectorized loops whose lanes may leave the domain run serially.
class LaneLoopSerializer : public StmtExprMutator {
 public:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* loop = s.as<ForNode>();
    if (loop->for_kind != ForKind::kVectorized || !loop->extent.as_int()) return s;
    std::optional<LaneSplit> split = SplitLaneConditions(loop);
    if (split && split->guards.empty()) return s;
    return For(loop->loop_var, loop->min, loop->extent, ForKind::kSerial, loop->body);
  }
};

// The lanes of a column-edge tile's vectorized loops, for running the edge in fewer whole
// vectors: every vectorized loop whose blocks carry a lane condition has the same constant
// extent from 0, and every block directly in such a loop keeps only the lanes below one
// common bound (`lane + c < b` with b - c the same expression for all of them), so that when
// the bound is at most w vectors the lanes from w vectors on do nothing.
struct EdgeLanes {
  int64_t extent = 0;  // the lanes of each such loop
  PrimExpr bound;      // the lanes in range are those below it
};
std::optional<EdgeLanes> CommonEdgeLanes(const Stmt& body) {
  std::optional<EdgeLanes> common;
  std::string bound_text;
  bool ok = true;
  Analyzer analyzer;
  ForEachStmt(body, [&](const Stmt& st) {
    const auto* loop = st.as<ForNode>();
    if (!ok || !loop || loop->for_kind != ForKind::kVectorized) return;
    std::optional<int64_t> extent = loop->extent.as_int();
    std::optional<int64_t> min = loop->min.as_int();
    std::optional<LaneSplit> split = extent ? SplitLaneConditions(loop) : std::nullopt;
    if (!split || split->guards.empty()) return;  // no lane condition: every lane runs
    std::vector<Stmt> parts{loop->body};
    if (const auto* seq = loop->body.as<SeqStmtNode>()) parts = seq->seq;
    for (const Stmt& part : parts) {
      const auto* block = part.as<BlockNode>();
      if (!block || !block->predicate.defined()) {
        ok = false;
        return;
      }
      std::vector<PrimExpr> conjuncts;
      FlattenAnd(block->predicate, &conjuncts);
      bool bounded = false;
      for (const PrimExpr& c : conjuncts) {
        if (!UsesVar(c, loop->loop_var.get()) || c.kind() != ExprKind::kLT) continue;
        const auto* lt = c.as<BinaryNode>();
        PrimExpr bound = analyzer.Simplify(Sub(lt->b, Sub(lt->a, loop->loop_var)));
        if (!common) {
          common = EdgeLanes{*extent, bound};
          bound_text = ToString(bound);
        }
        bounded |= ToString(bound) == bound_text;
      }
      ok &= bounded;
    }
    ok &= min == 0 && common && *extent == common->extent;
  });
  if (!ok || !common) return std::nullopt;
  return common;
}

// The edge tile's vectorized loops cut to their first `lanes` lanes (CommonEdgeLanes' loops;
// right where its bound is at most `lanes`: the lanes cut off are all out of range).
class LaneLoopNarrower : public StmtExprMutator {
 public:
  LaneLoopNarrower(int64_t extent, int64_t lanes) : extent_(extent), lanes_(lanes) {}
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* loop = s.as<ForNode>();
    if (loop->for_kind != ForKind::kVectorized || loop->extent.as_int() != extent_) return s;
    std::optional<LaneSplit> split = SplitLaneConditions(loop);
    if (!split || split->guards.empty()) return s;
    return For(loop->loop_var, loop->min, IntImm(loop->extent.dtype(), lanes_), ForKind::kVectorized, loop->body);
  }

 private:
  int64_t extent_, lanes_;
};

// A buffer private to one thread whose whole extent is known: a tile (an accumulator, a
// packed panel) that the code generator keeps in registers or on the stack.
bool IsLocalTile(const BufferNode* buffer) {
  if (buffer->scope != "local") return false;
  for (const PrimExpr& d : buffer->shape) {
    if (!d.as_int()) return false;
  }
  return true;
}

// The block variables of `body` bound to their values (in loop variables), so that an index
// written in block variables can be read in the loops'.
VarMap BlockBindings(const Stmt& body) {
  VarMap bindings;
  ForEachStmt(body, [&](const Stmt& st) {
    if (const auto* block = st.as<BlockNode>()) {
      for (const IterVar& iv : block->iter_vars) bindings[iv.var.get()] = iv.value;
    }
  });
  return bindings;
}

// Whether an access's indices (in block variables) depend on `lane`.
bool LaneDependent(const std::vector<PrimExpr>& indices, const VarMap& bindings, const VarNode* lane) {
  for (const PrimExpr& i : indices) {
    if (UsesVar(Substitute(i, bindings), lane)) return true;
  }
  return false;
}

// Whether an access's indices (in block variables) are consecutive elements along `lane`:
// only the last index uses it, as `lane + c`.
bool ConsecutiveInLane(const std::vector<PrimExpr>& indices, const VarMap& bindings, const Var& lane) {
  for (size_t d = 0; d + 1 < indices.size(); ++d) {
    if (UsesVar(Substitute(indices[d], bindings), lane.get())) return false;
  }
  const PrimExpr last = Substitute(indices.back(), bindings);
  return !UsesVar(SimplifyExpr(Sub(last, lane)), lane.get());
}

// Whether `body` (a vectorized loop's, over `lane`) loads some buffer at lanes that are not
// consecutive elements: a gather, as a transpose's read is (out[d, j] = k[j, d] vectorized
// over j). Such a tail folded into masked steps is one masked gather per vector however
// few of its lanes are in range (on AVX-512 two 8-lane gathers of 64-bit offsets), so it
// becomes the lanes unrolled, each testing its condition and loading alone. Measured (AVX-512
// code, one thread, `kiln run --repeat`, whole-process CPU time, alternated): the fused
// attention at n = 1 (64 one-element tails of its transposed copy of k) 0.75-1.0 us less per
// call, at n = 7 about 0.3 us less, n = 64 unchanged; a (n, 64) transpose alone about 1 us
// less at n = 1-7. A serial loop over the lanes in range instead was vectorized again by
// LLVM (gathers, unrolled by 8), and the attention kernel, one large function, lost
// more than the tail gained.
bool GathersAlongLane(const Stmt& body, const Var& lane) {
  struct Loads : StmtExprVisitor {
    Loads(const Var& lane, VarMap bindings) : lane(lane), bindings(std::move(bindings)) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      gathers |= LaneDependent(op->indices, bindings, lane.get()) && !ConsecutiveInLane(op->indices, bindings, lane);
      StmtExprVisitor::VisitExpr_(op, self);
    }
    const Var& lane;
    VarMap bindings;
    bool gathers = false;
  } loads(lane, BlockBindings(body));
  loads.VisitStmt(body);
  return loads.gathers;
}

// How the lanes of a vector tail's body (a loop of constant extent) use local tiles, each
// access's indices read through the blocks' bindings: every index that uses the lane must be
// `lane + c`, c constant or bounded by the enclosing loops' ranges (`loops`: a wide tile's
// pairs, `256 * sub_tile + 32 * pair + lane`), inside its dimension for every lane of the
// loop, so that any lane reads or writes this thread's tile memory only. `tile_loads`: the lane-dependent loads of
// local tiles (one per distinct buffer and indices).
class LaneAccesses : public StmtExprVisitor {
 public:
  LaneAccesses(const ForNode* loop, const Stmt& body, const VarBoundMap& loops)
      : lane_(loop->loop_var), first_(loop->min.as_int().value_or(-1)), lanes_(*loop->extent.as_int()),
        bindings_(BlockBindings(body)), loops_(loops) {
    ok_ = first_ >= 0;
    VisitStmt(body);
  }
  // Every lane may run the body as it is: it stores only to local tiles, and reads other
  // buffers only at lane-invariant places or at consecutive elements (`lane + c` in the
  // last index, the others lane-invariant), which LaneBlend reads as `select(in range,
  // load, 0)`: the code generator makes that one masked load (codegen's MaskedLoad), so
  // the lanes out of range read nothing past the buffer's end.
  bool all_local() const { return ok_ && all_local_; }
  // The body's local tiles may be read as whole vectors before it runs: it reads them in
  // range and stores to none (so a staged copy cannot miss a store of the body).
  bool tiles_read_only() const { return ok_ && !stores_tile_; }
  const std::vector<const BufferLoadNode*>& tile_loads() const { return tile_loads_; }
  const VarMap& bindings() const { return bindings_; }

  void VisitStmt_(const ForNode*, const Stmt&) override { ok_ = false; }
  void VisitStmt_(const AllocateNode*, const Stmt&) override { ok_ = false; }
  void VisitStmt_(const BlockNode* op, const Stmt& self) override {
    ok_ &= !op->init.defined() && op->alloc_buffers.empty();
    StmtExprVisitor::VisitStmt_(op, self);
  }
  void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    if (IsLocalTile(op->buffer.get())) {
      ok_ &= InTile(op->buffer.get(), op->indices) && LaneDependent(op->indices, bindings_, lane_.get());
      stores_tile_ = true;
    } else {
      all_local_ = false;
    }
    StmtExprVisitor::VisitStmt_(op, self);
  }
  void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    if (LaneDependent(op->indices, bindings_, lane_.get())) {
      if (IsLocalTile(op->buffer.get())) {
        ok_ &= InTile(op->buffer.get(), op->indices);
        std::string key = op->buffer->name;
        for (const PrimExpr& i : op->indices) key += "," + ToString(Substitute(i, bindings_));
        if (seen_.insert(key).second) tile_loads_.push_back(op);
      } else {
        const DataType t = op->buffer->dtype;
        all_local_ &= op->buffer->scope != "local" && !t.is_sub_byte() && !t.is_bool() &&
                      ConsecutiveInLane(op->indices, bindings_, lane_);
      }
    }
    StmtExprVisitor::VisitExpr_(op, self);
  }

 private:
  bool InTile(const BufferNode* buffer, const std::vector<PrimExpr>& indices) const {
    for (size_t d = 0; d < indices.size(); ++d) {
      const PrimExpr index = Substitute(indices[d], bindings_);
      if (!UsesVar(index, lane_.get())) continue;
      const PrimExpr offset = SimplifyExpr(Sub(index, lane_));
      if (UsesVar(offset, lane_.get())) return false;
      const IntBound range = ComputeConstIntBound(offset, loops_);
      std::optional<int64_t> extent = buffer->shape[d].as_int();
      if (!extent || range.min == IntBound::kNegInf || range.max == IntBound::kPosInf || first_ + range.min < 0 ||
          first_ + lanes_ - 1 + range.max >= *extent) {
        return false;
      }
    }
    return true;
  }
  Var lane_;
  int64_t first_, lanes_;
  VarMap bindings_;
  const VarBoundMap& loops_;
  bool ok_ = true, all_local_ = true, stores_tile_ = false;
  std::set<std::string> seen_;
  std::vector<const BufferLoadNode*> tile_loads_;
};

// The write-back of a tail (lanes of a local tile stored to the function's buffers, lanes
// out of range skipped), with each tile row it reads first copied whole into a vector-sized
// staging buffer that the masked loop reads instead. The tile itself is then accessed only
// as whole vectors at constant places (LLVM keeps it in registers); read in place by the
// loop of symbolic extent, which LLVM turns into a memcpy of variable length, the whole tile
// stayed in memory, through the k loop too.
Stmt StageTileReads(const ForNode* loop, const Stmt& body, const LaneAccesses& accesses, const PrimExpr& lanes) {
  std::vector<Stmt> copies;
  std::vector<Buffer> stages;
  std::map<const BufferLoadNode*, Buffer> stage_of;
  const int64_t width = *loop->extent.as_int();
  for (const BufferLoadNode* load : accesses.tile_loads()) {
    Buffer stage(load->buffer->name + "_stage", load->dtype(), {IntImm(DataType::Int64(), width)}, {}, "local");
    Var lane(loop->loop_var->name + "_stage", loop->loop_var.dtype());
    std::vector<PrimExpr> indices;
    for (const PrimExpr& i : load->indices) {
      indices.push_back(Substitute(Substitute(i, accesses.bindings()), VarMap{{loop->loop_var.get(), lane}}));
    }
    copies.push_back(For(lane, loop->min, loop->extent, ForKind::kVectorized,
                         BufferStore(stage, Buffer(load->buffer).Load(indices), {Sub(lane, loop->min)})));
    stages.push_back(stage);
    stage_of[load] = stage;
  }
  // Every load of a staged tile row (the same buffer and indices as the first one seen).
  class Replace : public StmtExprMutator {
   public:
    Replace(const LaneAccesses& accesses, const std::map<const BufferLoadNode*, Buffer>& stage_of, const ForNode* loop)
        : accesses_(accesses), stage_of_(stage_of), loop_(loop) {}
    PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      for (const auto& [load, stage] : stage_of_) {
        if (load->buffer != op->buffer || load->indices.size() != op->indices.size()) continue;
        bool same = true;
        for (size_t i = 0; i < op->indices.size(); ++i) {
          same &= ToString(Substitute(op->indices[i], accesses_.bindings())) ==
                  ToString(Substitute(load->indices[i], accesses_.bindings()));
        }
        if (same) return stage.Load({Sub(loop_->loop_var, loop_->min)});
      }
      return StmtExprMutator::VisitExpr_(op, self);
    }

   private:
    const LaneAccesses& accesses_;
    const std::map<const BufferLoadNode*, Buffer>& stage_of_;
    const ForNode* loop_;
  };
  copies.push_back(For(loop->loop_var, loop->min, lanes, ForKind::kVectorized,
                       Replace(accesses, stage_of, loop).VisitStmt(body)));
  Stmt staged = SeqStmt(copies);
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) staged = Allocate(*it, staged);
  return staged;
}

// The tail of a loop that updates local tiles only, run on every lane: each store keeps the
// tile's old value in the lanes out of range (`tile[i] = select(in_range, value, tile[i])`),
// and a tile the body only reads gives zeros there (an unwritten lane of a packed panel
// could hold a denormal, which some CPUs multiply slowly). All its accesses are then whole
// vectors at constant places, so LLVM keeps an accumulator tile in registers through the k
// loop; the masked loop of symbolic extent left it in memory, loaded and stored with masks
// at every k step (the symbolic attention scores at n = 16, whose 16 columns all fall in the
// tail of a 32-column tile, ran 5x slower than the tuner's best knobs).
class LaneBlend : public StmtExprMutator {
 public:
  LaneBlend(const VarNode* lane, PrimExpr in_range, std::set<const BufferNode*> written, const VarMap& bindings)
      : lane_(lane), in_range_(std::move(in_range)), written_(std::move(written)), bindings_(bindings) {}
  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* store = s.as<BufferStoreNode>();
    return BufferStore(store->buffer, Select(in_range_, store->value, store->buffer.Load(store->indices)),
                       store->indices);
  }
  // A block's iteration variables would leave their domain on the lanes out of range (a
  // schedule keeps them inside), so the blocks become the statements LowerBlocks would make
  // of them: the body with the bindings substituted, under the predicate.
  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* block = s.as<BlockNode>();
    VarMap bindings;
    for (const IterVar& iv : block->iter_vars) {
      bindings[iv.var.get()] = iv.value.dtype() == iv.var.dtype() ? iv.value : Cast(iv.var.dtype(), iv.value);
    }
    Stmt body = Substitute(block->body, bindings);
    return block->predicate.defined() ? IfThenElse(Substitute(block->predicate, bindings), body) : body;
  }
  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    PrimExpr e = StmtExprMutator::VisitExpr_(op, self);
    if (!LaneDependent(op->indices, bindings_, lane_) || written_.count(op->buffer.get())) return e;
    const DataType t = e.dtype();
    return Select(in_range_, e, t.is_floating() ? FloatImm(t, 0.0) : IntImm(t, 0));
  }

 private:
  const VarNode* lane_;
  PrimExpr in_range_;
  std::set<const BufferNode*> written_;
  VarMap bindings_;
};

// Every occurrence of one expression replaced by a value (the column edge's tile index by
// the last tile's).
class ExprPinner : public StmtExprMutator {
 public:
  ExprPinner(PrimExpr target, PrimExpr value) : target_(std::move(target)), value_(std::move(value)) {}
  PrimExpr VisitExpr(const PrimExpr& e) override {
    if (e.defined() && e.kind() == target_.kind() && StructuralEqual(e, target_)) return value_;
    return StmtExprMutator::VisitExpr(e);
  }

 private:
  PrimExpr target_, value_;
};

class TailGuard : public StmtExprMutator {
 public:
  TailGuard(NameSet* used, int vector_bits) : used_(used), vector_bits_(vector_bits), native_masks_(vector_bits >= 512) {}
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    // The loop's range for the tails inside it (an edge's loops cut at its last column keep
    // their bound: min(extent, ...)).
    const IntBound first = ComputeConstIntBound(op->min, loop_ranges_);
    const IntBound count = ComputeConstIntBound(op->extent, loop_ranges_);
    if (first.min != IntBound::kNegInf && first.max != IntBound::kPosInf && count.max != IntBound::kPosInf &&
        count.max >= 1) {
      loop_ranges_[op->loop_var.get()] = IntBound{first.min, first.max + count.max - 1};
    }
    if (const auto* mul = op->extent.as<BinaryNode>(); mul && op->extent.kind() == ExprKind::kMul && op->min.as_int() == 0) {
      if (std::optional<int64_t> c = mul->a.as_int()) fused_extents_[op->loop_var.get()] = {*c, mul->b};
      if (std::optional<int64_t> c = mul->b.as_int()) fused_extents_[op->loop_var.get()] = {*c, mul->a};
    }
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    loop_ranges_.erase(op->loop_var.get());
    fused_extents_.erase(op->loop_var.get());
    const auto* loop = s.as<ForNode>();
    if (loop->for_kind != ForKind::kVectorized || !loop->extent.as_int()) return s;
    std::optional<LaneSplit> split = SplitLaneConditions(loop);
    if (!split || split->guards.empty()) return s;  // other forms are left to the code generator
    Stmt vector_loop = For(loop->loop_var, loop->min, loop->extent, ForKind::kVectorized, split->body);
    if (InWholeVectors(loop, *split)) return IfThenElse(AllOf(split->guards), vector_loop);
    return IfThenElse(AllOf(split->guards), vector_loop, Tail(loop, *split));
  }
  // A local tile buffer: guards for the whole tile, above the allocation, so the tile is
  // indexed only with constants and vector lanes (LLVM then keeps it in registers):
  //   if (every column lane in range) {
  //     if (every row in range) { no conditions } else { row conditions kept }
  //   } else { a copy with its own buffer, its vector loops serial }
  // Each copy defines its own variables and buffer.
  Stmt VisitStmt_(const AllocateNode* op, const Stmt& self) override {
    bool constant = op->buffer->scope == "local";
    for (const PrimExpr& d : op->buffer->shape) constant &= d.as_int().has_value();
    if (!constant) return StmtExprMutator::VisitStmt_(op, self);
    DefinedVars inner;
    inner.VisitStmt(op->body);
    using Drop = TileConditionStripper::Drop;
    TileConditionStripper lanes(inner.vars, Drop::kLanes);
    Stmt lane_free = lanes.VisitStmt(op->body);
    TileConditionStripper all(inner.vars, Drop::kAll);
    Stmt condition_free = all.VisitStmt(op->body);
    if (!lanes.ok || !all.ok) return StmtExprMutator::VisitStmt_(op, self);
    std::vector<PrimExpr> other;  // the guards of `all` that `lanes` did not need
    std::set<std::string> lane_text;
    for (const PrimExpr& g : lanes.guards) lane_text.insert(ToString(g));
    for (const PrimExpr& g : all.guards) {
      if (!lane_text.count(ToString(g)) && !decided_.count(ToString(g))) other.push_back(g);
    }
    if (lanes.guards.empty() && other.empty()) return StmtExprMutator::VisitStmt_(op, self);
    // Inside the row-edge copy the guards `other` do not all hold: a tile allocated in it (a
    // packed panel) is not guarded on them again (its body keeps the blocks' conditions, so
    // it is right either way). Guarded again, the edge held a second copy of its k loops that
    // never ran, and with it LLVM kept the edge's accumulators in memory (AVX2's packed wide
    // tiles: loaded and stored at every k step).
    auto tile = [&](const Stmt& body, bool renew) {
      std::vector<std::string> pushed;
      if (renew) {
        for (const PrimExpr& g : other) {
          if (decided_.insert(ToString(g)).second) pushed.push_back(ToString(g));
        }
      }
      Stmt t = Allocate(op->buffer, VisitStmt(body));
      for (const std::string& g : pushed) decided_.erase(g);
      return renew ? CopyWithFreshDefinitions(t, "_edge", used_) : t;
    };
    Stmt full_columns = other.empty() ? tile(lane_free, false)
                                      : IfThenElse(AllOf(other), tile(condition_free, false), tile(lane_free, true));
    if (lanes.guards.empty()) return full_columns;
    auto one_edge = [&](const Stmt& body) {
      return CopyWithFreshDefinitions(LaneLoopSerializer().VisitStmt(Allocate(op->buffer, VisitStmt(body))), "_edge",
                                      used_);
    };
    // The column edge in as many whole vectors as its columns in range need: `if (bound <=
    // 1 vector) { 1 vector } else if (bound <= 2 vectors) { 2 } ... else { all }`, each
    // version's loops of constant extent (the accumulators stay in registers) and its last
    // vector blended. Run in all the tile's vectors, the 12 columns left at n = 300 of a
    // 32-column AVX-512 tile did the work of 32.
    // The edge's serial loops over vector groups stop at the last group with a column in
    // range (a wide tile's 4 columns at n = 4100 walked all 128 pairs of its 4096).
    auto column_edge = [&](const Stmt& uncut) {
      const Stmt body = CutLoopsPastLaneBounds(uncut);
      const int64_t vector = vector_bits_ / std::max(op->buffer->dtype.bits(), 1);
      std::optional<EdgeLanes> edge_lanes = CommonEdgeLanes(body);
      // The versions' test goes above the tile: its bound may use no variable of the tile's
      // (a wide tile's lanes are bounded per pair).
      if (edge_lanes && UsesAnyVar(edge_lanes->bound, inner.vars)) edge_lanes.reset();
      if (!edge_lanes || vector < 1 || edge_lanes->extent <= vector || edge_lanes->extent % vector != 0 ||
          !narrowed_.insert(ToString(edge_lanes->bound)).second) {
        return one_edge(body);
      }
      const PrimExpr& bound = edge_lanes->bound;
      Stmt all = one_edge(body);
      for (int64_t w = edge_lanes->extent / vector - 1; w >= 1; --w) {
        Stmt narrow = one_edge(LaneLoopNarrower(edge_lanes->extent, w * vector).VisitStmt(body));
        all = IfThenElse(LE(bound, IntImm(bound.dtype(), w * vector)), narrow, all);
      }
      narrowed_.erase(ToString(bound));
      return all;
    };
    Stmt edge = column_edge(PinLastTile(op->body, lanes.guards));
    // The column edge in full rows too (the symbolic attention scores at n = 16: every
    // column in the tail, every row in range) runs without the rows' conditions: with them,
    // each row's update sat in its own branch inside the k loop and LLVM (AVX-512 code) left
    // the accumulator tile in memory.
    TileConditionStripper others(inner.vars, Drop::kOthers);
    Stmt lane_conditions_only = others.VisitStmt(op->body);
    if (others.ok && !others.guards.empty()) {
      edge = IfThenElse(AllOf(others.guards), column_edge(PinLastTile(lane_conditions_only, lanes.guards)), edge);
    }
    return IfThenElse(AllOf(lanes.guards), full_columns, edge);
  }

 private:
  // The column edge is the last column tile when a guard reads `x < k` with x at most k: in
  // the edge x == k, written so, and the edge's extents and offsets become constants. A loop
  // variable's range says so directly; a tile index taken from a loop that the parallel loop
  // fused (`floordiv(f, r)` with f over [0, c * r)) is at most c - 1 when r is symbolic (the
  // rows), which no interval says: left symbolic, the 2-thread build of a 64 x 4096 x 4096
  // matmul ran its last, partial column tile with masked loads at every k step and took
  // 1.27x the 1-thread build's time on one thread (AVX2, 4 x 3 step).
  // With different guards the edge is where any one of them fails: nothing is pinned.
  Stmt PinLastTile(const Stmt& body, const std::vector<PrimExpr>& guards) const {
    if (guards.empty()) return body;
    const PrimExpr& g = guards[0];
    for (const PrimExpr& other : guards) {
      if (!StructuralEqual(other, g)) return body;
    }
    const auto* lt = g.as<BinaryNode>();
    std::optional<int64_t> k = lt ? lt->b.as_int() : std::nullopt;
    if (g.kind() != ExprKind::kLT || !k) return body;
    const PrimExpr& x = lt->a;
    bool last = ComputeConstIntBound(x, loop_ranges_).max == *k;
    const auto* div = x.as<BinaryNode>();
    if (!last && div && x.kind() == ExprKind::kFloorDiv) {
      const auto* v = div->a.as<VarNode>();
      auto fused = v ? fused_extents_.find(v) : fused_extents_.end();
      last = fused != fused_extents_.end() && fused->second.first == *k + 1 &&
             StructuralEqual(fused->second.second, div->b);
    }
    return last ? SimplifyIndices(ExprPinner(x, IntImm(x.dtype(), *k)).VisitStmt(body)) : body;
  }

  // Whether the lanes in range always fill the loop or leave it empty: each lane bound, less
  // the loop's start, a multiple of its extent (`256 - 24 * step - 8 * vector` for 8 lanes).
  // Where a guard fails its bound is then at most the start and no lane is in range, so the
  // loop needs no tail. Without this, the 256-column edge of a 4 x 3 step tile (its last
  // step two vectors wide) ran the out-of-range vectors as masked tails doing nothing, each
  // loading and storing its accumulators at every k step: a third of a 64 x 4096 x 4096
  // matmul's time on AVX2, for 6 % of its columns.
  static bool InWholeVectors(const ForNode* loop, const LaneSplit& split) {
    const DataType t = loop->loop_var.dtype();  // the type of the loop's start and extent
    for (const PrimExpr& bound : split.lane_bounds) {
      PrimExpr lanes = Sub(bound.dtype() == t ? bound : Cast(t, bound), loop->min);
      std::optional<int64_t> rest = SimplifyExpr(FloorMod(lanes, loop->extent)).as_int();
      if (!rest || *rest != 0) return false;
    }
    return !split.lane_bounds.empty();
  }

  // The lanes in range run as a vectorized loop of symbolic extent, without the lane
  // conditions; the code generator hands such a loop to LLVM's vectorizer with its tail
  // folded into masked loads and stores, so the last, partial vector is one masked step
  // instead of a scalar loop over all the lanes testing each (an attention-score tile at
  // n = 300, 12 columns of a 32-column tile, ran 4x slower than at n = 288 with the scalar
  // tail). With a lane condition in a nested block, the tail is the serial copy instead;
  // so it is where the lanes update a local buffer in place (an accumulator tile) and the
  // target has no native masks (AVX2): a masked store there is not forwarded to the next
  // step's masked load, and the scores at n = 300 ran 1.5x slower than with the serial tail
  // on AVX2 code (vmaskmovps), 2.8x faster on AVX-512 code (measured on one Zen machine).
  // A body that gathers (GathersAlongLane) runs its lanes unrolled, each testing its own.
  Stmt Tail(const ForNode* loop, const LaneSplit& split) {
    bool nested_lane_condition = false;
    ForEachStmt(split.body, [&](const Stmt& st) {
      const auto* b = st.as<BlockNode>();
      nested_lane_condition |= b && b->predicate.defined() && UsesVar(b->predicate, loop->loop_var.get());
    });
    const DataType t = loop->loop_var.dtype();
    PrimExpr bound = split.lane_bounds[0];
    for (size_t i = 1; i < split.lane_bounds.size(); ++i) bound = Min(bound, split.lane_bounds[i]);
    if (bound.dtype() != t) bound = Cast(t, bound);
    BufferAccesses accesses = AccessesOf(split.body);
    PrimExpr lanes = SimplifyExpr(Min(loop->extent, Max(IntImm(t, 0), Sub(bound, loop->min))));
    if (!nested_lane_condition) {
      LaneAccesses lane_accesses(loop, split.body, loop_ranges_);
      if (lane_accesses.all_local()) {
        Stmt blended = LaneBlend(loop->loop_var.get(), LT(loop->loop_var, bound), accesses.writes,
                                 lane_accesses.bindings())
                           .VisitStmt(split.body);
        return CopyWithFreshDefinitions(For(loop->loop_var, loop->min, loop->extent, ForKind::kVectorized, blended),
                                        "_tail", used_);
      }
      if (lane_accesses.tiles_read_only() && !lane_accesses.tile_loads().empty()) {
        return CopyWithFreshDefinitions(StageTileReads(loop, split.body, lane_accesses, lanes), "_tail", used_);
      }
    }
    bool local_round_trip = false;
    for (const BufferNode* w : accesses.writes) local_round_trip |= w->scope == "local" && accesses.reads.count(w);
    if (nested_lane_condition || (local_round_trip && !native_masks_)) {
      return CopyWithFreshDefinitions(For(loop->loop_var, loop->min, loop->extent, ForKind::kSerial, loop->body),
                                      "_tail", used_);
    }
    if (GathersAlongLane(split.body, loop->loop_var)) {
      return CopyWithFreshDefinitions(For(loop->loop_var, loop->min, loop->extent, ForKind::kUnrolled, loop->body),
                                      "_tail", used_);
    }
    return CopyWithFreshDefinitions(For(loop->loop_var, loop->min, lanes, ForKind::kVectorized, split.body), "_tail",
                                    used_);
  }

  NameSet* used_;
  int vector_bits_;
  bool native_masks_;
  VarBoundMap loop_ranges_;  // the enclosing loops' variables, each over its range
  // The enclosing loops of extent c * r (c constant, r not): a parallel loop fused from a
  // loop of c iterations around one of r.
  std::map<const VarNode*, std::pair<int64_t, PrimExpr>> fused_extents_;
  std::set<std::string> decided_;  // guards that fail in the copy being visited (its row edge)
  // Lane bounds whose column edge is being split into whole vectors: a tile nested in it (an
  // accumulator inside a packed panel's edge) is not split again.
  std::set<std::string> narrowed_;
};

// Branches decided by constants replaced by the branch taken: a column edge pinned to the
// last tile (TailGuard::PinLastTile) knows its lanes in range, so the tests built from them
// (`if false`, `if 4 <= 16`) need not reach the code or the printed schedule.
class DecidedBranchFolder : public StmtExprMutator {
 public:
  Stmt VisitStmt_(const IfThenElseNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* branch = s.as<IfThenElseNode>();
    std::optional<int64_t> decided = SimplifyExpr(branch->condition).as_int();
    if (!decided) return s;
    if (*decided != 0) return branch->then_case;
    return branch->else_case.defined() ? branch->else_case : s;
  }
};

}  // namespace

PrimFunc GuardVectorizedTails(const PrimFunc& func) {
  NameSet used = UsedNames(func);
  // Masked loads and stores are native instructions with 512-bit vectors (AVX-512); a
  // function without a target attribute (or whose width is not known yet) is treated as AVX2.
  absl::StatusOr<std::optional<Target>> target = TargetOf(func);
  int vector_bits = 256;
  if (target.ok() && target->has_value() && (*target)->is_cpu() && (*target)->vector_bits > 0) {
    vector_bits = (*target)->vector_bits;
  }
  Stmt body = DecidedBranchFolder().VisitStmt(TailGuard(&used, vector_bits).VisitStmt(func->body));
  return body.same_as(func->body) ? func : WithBody(func, body);
}

}  // namespace kiln::tir::schedule_primitive
