#include "tir/schedule/schedule_utils.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "tir/analyzer.h"
#include "tir/stmt_functor.h"

namespace kiln::tir::schedule_internal {

namespace {

// Walks children in field order; `path` holds the ancestors of the statement visited.
bool Walk(const Stmt& stmt, std::vector<Stmt>* path, const std::function<bool(const Stmt&)>& fn) {
  if (!stmt.defined()) return false;
  if (fn(stmt)) return true;
  path->push_back(stmt);
  bool stop = false;
  auto visit = [&](const Stmt& child) {
    if (!stop) stop = Walk(child, path, fn);
  };
  switch (stmt.kind()) {
    case StmtKind::kFor:
      visit(stmt.as<ForNode>()->body);
      break;
    case StmtKind::kBlock:
      visit(stmt.as<BlockNode>()->init);
      visit(stmt.as<BlockNode>()->body);
      break;
    case StmtKind::kIfThenElse:
      visit(stmt.as<IfThenElseNode>()->then_case);
      visit(stmt.as<IfThenElseNode>()->else_case);
      break;
    case StmtKind::kSeqStmt:
      for (const Stmt& s : stmt.as<SeqStmtNode>()->seq) visit(s);
      break;
    case StmtKind::kAllocate:
      visit(stmt.as<AllocateNode>()->body);
      break;
    case StmtKind::kLetStmt:
      visit(stmt.as<LetStmtNode>()->body);
      break;
    default:
      break;
  }
  if (!stop) path->pop_back();
  return stop;
}

class Replacer : public StmtExprMutator {
 public:
  Replacer(const StmtNode* target, Stmt replacement) : target_(target), replacement_(std::move(replacement)) {}
  Stmt VisitStmt(const Stmt& stmt) override {
    if (stmt.get() == target_) return replacement_;
    return StmtExprMutator::VisitStmt(stmt);
  }

 private:
  const StmtNode* target_;
  Stmt replacement_;
};

class VarUseFinder : public StmtExprVisitor {
 public:
  explicit VarUseFinder(std::vector<const VarNode*> vars) : vars_(std::move(vars)) {}
  void VisitExpr_(const VarNode* op, const PrimExpr&) override {
    for (const VarNode* v : vars_) found_ |= v == op;
  }
  bool found() const { return found_; }

 private:
  std::vector<const VarNode*> vars_;
  bool found_ = false;
};

class NameCollector : public StmtExprVisitor {
 public:
  void VisitVarDef(const Var& var) override { names.insert(var.name()); }
  void VisitStmt_(const BlockNode* op, const Stmt& self) override {
    names.insert(op->name);
    StmtExprVisitor::VisitStmt_(op, self);
  }
  NameSet names;
};

class IndexSimplifier : public StmtExprMutator {
 public:
  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    PrimExpr e = StmtExprMutator::VisitExpr_(op, self);
    const auto* load = e.as<BufferLoadNode>();
    std::vector<PrimExpr> indices;
    bool changed = false;
    for (const PrimExpr& i : load->indices) {
      indices.push_back(SimplifyExpr(i));
      changed |= !indices.back().same_as(i);
    }
    if (!changed) return e;
    return Buffer(load->buffer).Load(std::move(indices));
  }
  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* store = s.as<BufferStoreNode>();
    std::vector<PrimExpr> indices;
    bool changed = false;
    for (const PrimExpr& i : store->indices) {
      indices.push_back(SimplifyExpr(i));
      changed |= !indices.back().same_as(i);
    }
    if (!changed) return s;
    return BufferStore(store->buffer, store->value, std::move(indices));
  }
  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
    Stmt s = StmtExprMutator::VisitStmt_(op, self);
    const auto* block = s.as<BlockNode>();
    std::vector<IterVar> iter_vars = block->iter_vars;
    for (IterVar& iv : iter_vars) iv.value = SimplifyExpr(iv.value);
    PrimExpr predicate = block->predicate.defined() ? SimplifyExpr(block->predicate) : PrimExpr();
    if (auto c = predicate.defined() ? predicate.as_int() : std::nullopt) {
      if (*c != 0) predicate = PrimExpr();  // provably true
    }
    return Block(block->name, std::move(iter_vars), block->body, block->init, predicate, block->alloc_buffers);
  }
};

}  // namespace

void ForEachStmt(const Stmt& root, const std::function<void(const Stmt&)>& fn) {
  std::vector<Stmt> path;
  Walk(root, &path, [&](const Stmt& s) {
    fn(s);
    return false;
  });
}

void ForEachStmtWithPath(const Stmt& root,
                         const std::function<void(const Stmt&, const std::vector<Stmt>& ancestors)>& fn) {
  std::vector<Stmt> path;
  Walk(root, &path, [&](const Stmt& s) {
    fn(s, path);
    return false;
  });
}

absl::StatusOr<Stmt> FindLoop(const PrimFunc& func, const std::string& name, std::string_view primitive) {
  std::vector<Stmt> found;
  ForEachStmt(func->body, [&](const Stmt& s) {
    if (const auto* f = s.as<ForNode>(); f && f->loop_var.name() == name) found.push_back(s);
  });
  if (found.empty()) return absl::NotFoundError(absl::StrCat(std::string(primitive), ": no loop named '", name, "'"));
  if (found.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(primitive), ": loop name '", name, "' is ambiguous (", found.size(), " loops)"));
  }
  return found[0];
}

absl::StatusOr<Stmt> FindBlock(const PrimFunc& func, const std::string& name, std::string_view primitive) {
  std::vector<Stmt> found;
  ForEachStmt(func->body, [&](const Stmt& s) {
    if (const auto* b = s.as<BlockNode>(); b && b->name == name) found.push_back(s);
  });
  if (found.empty()) return absl::NotFoundError(absl::StrCat(std::string(primitive), ": no block named '", name, "'"));
  if (found.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(primitive), ": block name '", name, "' is ambiguous (", found.size(), " blocks)"));
  }
  return found[0];
}

std::vector<Stmt> AncestorsOf(const Stmt& root, const StmtNode* target) {
  std::vector<Stmt> path;
  if (!Walk(root, &path, [&](const Stmt& s) { return s.get() == target; })) return {};
  return path;
}

std::vector<Stmt> LoopsAbove(const Stmt& root, const StmtNode* block) {
  std::vector<Stmt> loops;
  for (const Stmt& s : AncestorsOf(root, block)) {
    if (s.kind() == StmtKind::kBlock) loops.clear();
    if (s.kind() == StmtKind::kFor) loops.push_back(s);
  }
  return loops;
}

Stmt ReplaceStmt(const Stmt& root, const StmtNode* target, const Stmt& replacement) {
  return Replacer(target, replacement).VisitStmt(root);
}

std::vector<Stmt> OutermostBlocks(const Stmt& stmt) {
  std::vector<Stmt> blocks;
  std::vector<Stmt> path;
  Walk(stmt, &path, [&](const Stmt& s) {
    if (s.kind() != StmtKind::kBlock) return false;
    for (const Stmt& a : path) {
      if (a.kind() == StmtKind::kBlock) return false;
    }
    blocks.push_back(s);
    return false;
  });
  return blocks;
}

bool UsesVar(const PrimExpr& expr, const VarNode* var) { return UsesAnyVar(expr, {var}); }

bool UsesAnyVar(const PrimExpr& expr, const std::vector<const VarNode*>& vars) {
  if (!expr.defined()) return false;
  VarUseFinder finder(vars);
  finder.VisitExpr(expr);
  return finder.found();
}

bool ReadsBuffer(const PrimExpr& expr, const BufferNode* buffer) {
  class Finder : public StmtExprVisitor {
   public:
    explicit Finder(const BufferNode* b) : b_(b) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      found |= op->buffer.get() == b_;
      StmtExprVisitor::VisitExpr_(op, self);
    }
    bool found = false;

   private:
    const BufferNode* b_;
  } finder(buffer);
  finder.VisitExpr(expr);
  return finder.found;
}

NameSet UsedNames(const PrimFunc& func) {
  NameCollector collector;
  collector.VisitPrimFunc(func);
  for (const PrimFuncParam& p : func->params) {
    if (p.is_buffer()) collector.names.insert(p.buffer->name);
  }
  return std::move(collector.names);
}

std::string FreshName(const std::string& base, NameSet* used) { return used->Fresh(base); }

Stmt CopyWithFreshDefinitions(const Stmt& stmt, const std::string& suffix, NameSet* used) {
  class Copier : public StmtExprMutator {
   public:
    Copier(std::string suffix, NameSet* used) : suffix_(std::move(suffix)), used_(used) {}
    Var VisitVarDef(const Var& var) override {
      return Var(var.name(), var.dtype(), var->lower_bound, var->upper_bound);
    }
    Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
      Var loop_var(FreshName(op->loop_var.name() + suffix_, used_), op->loop_var.dtype(), op->loop_var->lower_bound,
                   op->loop_var->upper_bound);
      PrimExpr min = VisitExpr(op->min);
      PrimExpr extent = VisitExpr(op->extent);
      var_remap_[op->loop_var.get()] = loop_var;
      return For(loop_var, min, extent, op->for_kind, VisitStmt(op->body), op->thread_tag);
    }
    Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
      for (const Buffer& b : op->alloc_buffers) Renew(b);
      std::string name = FreshName(op->name + suffix_, used_);
      Stmt s = StmtExprMutator::VisitStmt_(op, self);
      const auto* b = s.as<BlockNode>();
      return Block(name, b->iter_vars, b->body, b->init, b->predicate, b->alloc_buffers);
    }
    Stmt VisitStmt_(const AllocateNode* op, const Stmt& self) override {
      Renew(op->buffer);
      return StmtExprMutator::VisitStmt_(op, self);
    }

   private:
    void Renew(const Buffer& b) {
      bool changed = false;
      std::vector<PrimExpr> shape = VisitExprs(b->shape, &changed);
      std::vector<PrimExpr> strides = VisitExprs(b->strides, &changed);
      buffer_remap_[b.get()] = Buffer(b->name, b->dtype, std::move(shape), std::move(strides), b->scope);
    }
    std::string suffix_;
    NameSet* used_;
  };
  return Copier(suffix, used).VisitStmt(stmt);
}

std::vector<Var> FunctionVars(const PrimFunc& func) {
  VarUseCollector collector;
  for (const PrimFuncParam& p : func->params) {
    if (!p.is_buffer()) {
      collector.Add(p.var);
      continue;
    }
    for (const PrimExpr& d : p.buffer->shape) collector.VisitExpr(d);
    for (const PrimExpr& d : p.buffer->strides) collector.VisitExpr(d);
  }
  return collector.vars();
}

PrimExpr SimplifyExpr(const PrimExpr& expr) {
  if (!expr.defined()) return expr;
  Analyzer analyzer;
  return analyzer.Simplify(expr);
}

Stmt SimplifyIndices(const Stmt& stmt) { return IndexSimplifier().VisitStmt(stmt); }

PrimFunc WithBody(const PrimFunc& func, Stmt body) { return PrimFunc(func->params, std::move(body), func->attrs); }

BufferAccesses AccessesOf(const Stmt& stmt) {
  class Collector : public StmtExprVisitor {
   public:
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      out.reads.insert(op->buffer.get());
      StmtExprVisitor::VisitExpr_(op, self);
    }
    void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
      out.writes.insert(op->buffer.get());
      StmtExprVisitor::VisitStmt_(op, self);
    }
    BufferAccesses out;
  } collector;
  collector.VisitStmt(stmt);
  return collector.out;
}

std::optional<std::vector<int>> DimsOfIterVars(const BlockNode* block, const BufferNode* buffer) {
  class Loads : public StmtExprVisitor {
   public:
    explicit Loads(const BufferNode* b) : b_(b) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      if (op->buffer.get() == b_) indices.push_back(op->indices);
      StmtExprVisitor::VisitExpr_(op, self);
    }
    std::vector<std::vector<PrimExpr>> indices;

   private:
    const BufferNode* b_;
  } loads(buffer);
  loads.VisitStmt(block->body);
  const size_t num_iters = block->iter_vars.size();
  std::vector<int> dim_of_iter(num_iters, -1);
  for (const std::vector<PrimExpr>& idx : loads.indices) {
    if (idx.size() != num_iters) return std::nullopt;
    for (size_t d = 0; d < idx.size(); ++d) {
      int k = -1;
      for (size_t i = 0; i < num_iters; ++i) {
        if (idx[d].get() == block->iter_vars[i].var.get()) k = static_cast<int>(i);
      }
      if (k < 0 || (dim_of_iter[k] >= 0 && dim_of_iter[k] != static_cast<int>(d))) return std::nullopt;
      dim_of_iter[k] = static_cast<int>(d);
    }
  }
  for (int d : dim_of_iter) {
    if (d < 0) return std::nullopt;
  }
  return dim_of_iter;
}

int CountAccesses(const Stmt& stmt, const BufferNode* buffer) {
  class Counter : public StmtExprVisitor {
   public:
    explicit Counter(const BufferNode* b) : b_(b) {}
    void VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
      count += op->buffer.get() == b_;
      StmtExprVisitor::VisitExpr_(op, self);
    }
    void VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
      count += op->buffer.get() == b_;
      StmtExprVisitor::VisitStmt_(op, self);
    }
    int count = 0;

   private:
    const BufferNode* b_;
  } counter(buffer);
  counter.VisitStmt(stmt);
  return counter.count;
}

Stmt NestRoot(const Stmt& root, const StmtNode* block) {
  std::vector<Stmt> ancestors = AncestorsOf(root, block);
  const StmtNode* inner = block;
  Stmt top;
  for (size_t i = ancestors.size(); i-- > 0;) {
    const auto* l = ancestors[i].as<ForNode>();
    if (!l || l->body.get() != inner) break;
    top = ancestors[i];
    inner = l;
  }
  if (top.defined()) return top;
  // The block itself: find its Stmt handle among its parent's children.
  Stmt self;
  ForEachStmt(root, [&](const Stmt& s) {
    if (s.get() == block) self = s;
  });
  return self;
}

SeqPosition CommonSeq(const Stmt& root, const StmtNode* a, const StmtNode* b) {
  std::vector<Stmt> pa = AncestorsOf(root, a), pb = AncestorsOf(root, b);
  size_t common = 0;
  while (common < pa.size() && common < pb.size() && pa[common].same_as(pb[common])) ++common;
  SeqPosition pos;
  if (common == 0) return pos;
  const auto* seq = pa[common - 1].as<SeqStmtNode>();
  if (!seq) return pos;
  const StmtNode* child_a = common < pa.size() ? pa[common].get() : a;
  const StmtNode* child_b = common < pb.size() ? pb[common].get() : b;
  for (size_t i = 0; i < seq->seq.size(); ++i) {
    if (seq->seq[i].get() == child_a) pos.first = i;
    if (seq->seq[i].get() == child_b) pos.second = i;
  }
  pos.seq = seq;
  return pos;
}

PrimExpr InLoopTerms(const BlockNode* block, const PrimExpr& expr) {
  VarMap vmap;
  for (const IterVar& iv : block->iter_vars) vmap[iv.var.get()] = iv.value;
  return SimplifyExpr(Substitute(expr, vmap));
}

absl::StatusOr<IndexRange> RangeOver(const PrimExpr& index, const std::vector<const ForNode*>& inner) {
  VarMap at_min, at_max;
  for (const ForNode* l : inner) {
    if (!UsesVar(index, l->loop_var.get())) continue;
    PrimExpr step = SimplifyExpr(Substitute(index, VarMap{{l->loop_var.get(), l->loop_var + 1}}) - index);
    std::optional<int64_t> c = step.as_int();
    if (!c || *c < 0) return absl::InvalidArgumentError("");
    at_min[l->loop_var.get()] = l->min;
    at_max[l->loop_var.get()] = SimplifyExpr(l->min + l->extent - 1);
  }
  PrimExpr lo = SimplifyExpr(Substitute(index, at_min));
  PrimExpr hi = SimplifyExpr(Substitute(index, at_max));
  return IndexRange{lo, SimplifyExpr(hi - lo + 1)};
}

Stmt DropAllocations(const Stmt& stmt, const std::unordered_set<const BufferNode*>& buffers) {
  // Removes the allocations (an Allocate or a block's alloc_buffers entry).
  class Dropper : public StmtExprMutator {
   public:
    explicit Dropper(const std::unordered_set<const BufferNode*>& buffers) : buffers_(buffers) {}
    Stmt VisitStmt_(const AllocateNode* op, const Stmt& self) override {
      if (buffers_.count(op->buffer.get())) return VisitStmt(op->body);
      return StmtExprMutator::VisitStmt_(op, self);
    }
    Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
      Stmt s = StmtExprMutator::VisitStmt_(op, self);
      const auto* b = s.as<BlockNode>();
      std::vector<Buffer> kept;
      for (const Buffer& buf : b->alloc_buffers) {
        if (!buffers_.count(buf.get())) kept.push_back(buf);
      }
      if (kept.size() == b->alloc_buffers.size()) return s;
      return Block(b->name, b->iter_vars, b->body, b->init, b->predicate, kept);
    }

   private:
    const std::unordered_set<const BufferNode*>& buffers_;
  };
  return Dropper(buffers).VisitStmt(stmt);
}

Stmt DropAllocation(const Stmt& stmt, const BufferNode* buffer) {
  if (CountAccesses(stmt, buffer) != 0) return stmt;
  return DropAllocations(stmt, {buffer});
}

std::string KindWord(ForKind kind) { return ForKindName(kind); }

int64_t ElementsPerCacheLine(DataType element) {
  constexpr int64_t kCacheLineBytes = 64;
  return std::max<int64_t>(1, kCacheLineBytes / (element.bits() / 8));
}

}  // namespace kiln::tir::schedule_internal
