#include "relax/transform/annotate_patterns.h"

#include <algorithm>
#include <vector>

#include "tir/stmt_functor.h"

namespace kiln::relax {
namespace {

// The order in which patterns absorb each other: a kernel whose reads are of several kinds
// is the most general of them.
enum class Spatial { kElementwise = 0, kBroadcast = 1, kInjective = 2, kOpaque = 3 };

const char* SpatialName(Spatial s) {
  switch (s) {
    case Spatial::kElementwise: return "elementwise";
    case Spatial::kBroadcast: return "broadcast";
    case Spatial::kInjective: return "injective";
    case Spatial::kOpaque: return "opaque";
  }
  return "opaque";
}

// Blocks of a body, and whether anything stores outside a block.
class BlockCollector : public tir::StmtExprVisitor {
 public:
  std::vector<const tir::BlockNode*> blocks;
  bool store_outside_block = false;

  void VisitStmt_(const tir::BlockNode* op, const tir::Stmt& self) override {
    blocks.push_back(op);
    ++depth_;
    tir::StmtExprVisitor::VisitStmt_(op, self);
    --depth_;
  }
  void VisitStmt_(const tir::BufferStoreNode* op, const tir::Stmt& self) override {
    if (depth_ == 0) store_outside_block = true;
    tir::StmtExprVisitor::VisitStmt_(op, self);
  }

 private:
  int depth_ = 0;
};

// Every BufferLoad of an expression (loads nested in indices included).
class LoadCollector : public tir::StmtExprVisitor {
 public:
  std::vector<const tir::BufferLoadNode*> loads;
  void VisitExpr_(const tir::BufferLoadNode* op, const tir::PrimExpr& self) override {
    loads.push_back(op);
    tir::StmtExprVisitor::VisitExpr_(op, self);
  }
};

std::vector<const tir::BufferLoadNode*> LoadsOf(const tir::PrimExpr& e) {
  LoadCollector c;
  c.VisitExpr(e);
  return c.loads;
}

bool IsVar(const tir::PrimExpr& e, const tir::Var& v) { return e.same_as(v); }

// How one read relates to the output index `spatial`.
Spatial ClassifyRead(const tir::BufferLoadNode& load, const std::vector<tir::Var>& spatial) {
  // Index expressions must not read memory (a gather is opaque).
  for (const tir::PrimExpr& index : load.indices) {
    if (!LoadsOf(index).empty()) return Spatial::kOpaque;
  }
  if (load.indices.size() == spatial.size()) {
    bool same = true;
    for (size_t i = 0; i < spatial.size(); ++i) same = same && IsVar(load.indices[i], spatial[i]);
    if (same) return Spatial::kElementwise;
  }
  // A subsequence of the output's variables, in order, with dropped or constant dims.
  bool subsequence = load.indices.size() <= spatial.size();
  size_t next = 0;
  for (const tir::PrimExpr& index : load.indices) {
    if (!subsequence) break;
    if (index.as_int().has_value()) continue;
    size_t found = next;
    while (found < spatial.size() && !IsVar(index, spatial[found])) ++found;
    if (found == spatial.size()) {
      subsequence = false;
    } else {
      next = found + 1;
    }
  }
  if (subsequence) return Spatial::kBroadcast;
  return Spatial::kInjective;
}

// `C[s] = C[s] + a * b` (either operand order), a and b not reading C.
bool IsMultiplyAccumulate(const tir::BufferStoreNode& store) {
  const auto* add = store.value.as<tir::BinaryNode>();
  if (add == nullptr || add->kind() != tir::ExprKind::kAdd) return false;
  auto is_self = [&](const tir::PrimExpr& e) {
    const auto* load = e.as<tir::BufferLoadNode>();
    if (load == nullptr || load->buffer != store.buffer.node() || load->indices.size() != store.indices.size()) {
      return false;
    }
    for (size_t i = 0; i < store.indices.size(); ++i) {
      if (!load->indices[i].same_as(store.indices[i])) return false;
    }
    return true;
  };
  const tir::PrimExpr& product = is_self(add->a) ? add->b : is_self(add->b) ? add->a : tir::PrimExpr();
  if (!product.defined()) return false;
  const auto* mul = product.as<tir::BinaryNode>();
  if (mul == nullptr || mul->kind() != tir::ExprKind::kMul) return false;
  for (const tir::BufferLoadNode* load : LoadsOf(product)) {
    if (load->buffer == store.buffer.node()) return false;
  }
  return true;
}

// `C[s] = combine(C[s], value)` with combine one of + * min max.
bool IsCommutativeReduce(const tir::BufferStoreNode& store) {
  const auto* op = store.value.as<tir::BinaryNode>();
  if (op == nullptr) return false;
  switch (op->kind()) {
    case tir::ExprKind::kAdd:
    case tir::ExprKind::kMul:
    case tir::ExprKind::kMin:
    case tir::ExprKind::kMax: break;
    default: return false;
  }
  int self_reads = 0;
  for (const tir::BufferLoadNode* load : LoadsOf(store.value)) {
    if (load->buffer != store.buffer.node()) continue;
    ++self_reads;
    for (size_t i = 0; i < store.indices.size(); ++i) {
      if (i >= load->indices.size() || !load->indices[i].same_as(store.indices[i])) return false;
    }
  }
  if (self_reads != 1) return false;
  auto reads_self = [&](const tir::PrimExpr& e) {
    const auto* load = e.as<tir::BufferLoadNode>();
    return load != nullptr && load->buffer == store.buffer.node();
  };
  return reads_self(op->a) || reads_self(op->b);
}

}  // namespace

std::string AnalyzeOpPattern(const tir::PrimFunc& func) {
  BlockCollector collector;
  collector.VisitStmt(func->body);
  if (collector.store_outside_block || collector.blocks.size() != 1) return "opaque";
  const tir::BlockNode& block = *collector.blocks[0];
  const auto* store = block.body.as<tir::BufferStoreNode>();
  if (store == nullptr || block.predicate.defined() || !block.alloc_buffers.empty()) return "opaque";
  std::vector<tir::Var> spatial;
  int reductions = 0;
  for (const tir::IterVar& iv : block.iter_vars) {
    if (iv.type == tir::IterType::kSpatial) {
      spatial.push_back(iv.var);
    } else {
      ++reductions;
    }
  }
  // The block writes exactly the element its spatial variables name.
  if (store->indices.size() != spatial.size()) return "opaque";
  for (size_t i = 0; i < spatial.size(); ++i) {
    if (!IsVar(store->indices[i], spatial[i])) return "opaque";
  }
  if (reductions == 0) {
    if (block.init.defined()) return "opaque";
    Spatial pattern = Spatial::kElementwise;
    for (const tir::BufferLoadNode* load : LoadsOf(store->value)) {
      if (load->buffer == store->buffer.node()) return "opaque";
      pattern = std::max(pattern, ClassifyRead(*load, spatial));
    }
    return SpatialName(pattern);
  }
  if (!block.init.defined()) return "opaque";
  if (IsMultiplyAccumulate(*store)) return "out_ewise_fusable";
  if (IsCommutativeReduce(*store)) return "comm_reduce";
  return "opaque";
}

absl::StatusOr<IRModule> AnnotatePatterns(const IRModule& module) {
  IRModule result = module;
  for (const IRModule::Entry& entry : module.entries()) {
    const tir::PrimFunc* func = entry.prim_func();
    if (func == nullptr || (*func)->attrs.count("op_pattern") > 0) continue;
    std::map<std::string, std::string> attrs = (*func)->attrs;
    attrs["op_pattern"] = AnalyzeOpPattern(*func);
    result.Update(entry.name, tir::PrimFunc((*func)->params, (*func)->body, std::move(attrs)));
  }
  return result;
}

}  // namespace kiln::relax
