#include "relax/transform/fuse_tir.h"

#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/expr_functor.h"
#include "support/name_set.h"
#include "support/status_macros.h"
#include "tir/analyzer.h"

namespace kiln::relax {
namespace {

const TensorStructInfoNode* KnownTensor(const StructInfo& sinfo) {
  const auto* t = sinfo.defined() ? sinfo.as<TensorStructInfoNode>() : nullptr;
  if (t == nullptr || !t->shape.has_value() || !t->dtype.has_value()) return nullptr;
  return t;
}

bool IsPrimitive(const FunctionNode& func) {
  auto it = func.attrs.find("primitive");
  return it != func.attrs.end() && std::holds_alternative<bool>(it->second) && std::get<bool>(it->second);
}

// One kernel's body, rewritten to run inside the fused PrimFunc: parameter buffers replaced,
// symbolic variables mapped, every definition fresh, block names unique in the fused body.
class KernelInliner : public tir::StmtExprMutator {
 public:
  KernelInliner(tir::VarMap vars, std::unordered_map<const tir::BufferNode*, tir::Buffer> buffers,
                support::NameSet* block_names)
      : block_names_(block_names) {
    var_remap_ = std::move(vars);
    buffer_remap_ = std::move(buffers);
  }

  tir::Var VisitVarDef(const tir::Var& var) override {
    return tir::Var(var->name, var->dtype(), var->lower_bound, var->upper_bound);
  }

  tir::Buffer VisitBuffer(const tir::Buffer& buffer) override {
    auto it = buffer_remap_.find(buffer.get());
    if (it != buffer_remap_.end()) return it->second;
    bool changed = false;
    std::vector<PrimExpr> shape = VisitExprs(buffer->shape, &changed);
    std::vector<PrimExpr> strides = VisitExprs(buffer->strides, &changed);
    // Always a new buffer: a kernel inlined twice must not share its scratch buffers.
    tir::Buffer fresh(buffer->name, buffer->dtype, std::move(shape), std::move(strides), buffer->scope);
    buffer_remap_.emplace(buffer.get(), fresh);
    return fresh;
  }

  tir::Stmt VisitStmt_(const tir::BlockNode* op, const tir::Stmt& self) override {
    tir::Stmt stmt = tir::StmtExprMutator::VisitStmt_(op, self);
    std::string name = block_names_->Fresh(op->name);
    const auto* block = stmt.as<tir::BlockNode>();
    if (block->name == name) return stmt;
    return tir::Block(name, block->iter_vars, block->body, block->init, block->predicate, block->alloc_buffers);
  }

 private:
  support::NameSet* block_names_;
};

struct FusedKernel {
  tir::PrimFunc func;
  std::vector<std::string> callees;
};

absl::StatusOr<FusedKernel> FuseFunction(const IRModule& module, const std::string& name, const FunctionNode& func) {
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("primitive function '", name, "': ", what));
  };
  const auto* seq = func.body.as<SeqExprNode>();
  if (seq == nullptr || seq->blocks.size() != 1 || !seq->blocks[0].dataflow) {
    return error("the body must be one dataflow block of call_tir bindings");
  }
  const auto* result = seq->body.as<VarNode>();
  const std::vector<Binding>& bindings = seq->blocks[0].bindings;
  if (result == nullptr || bindings.empty() || bindings.back().var.get() != result) {
    return error("must return the variable of its last binding");
  }
  std::unordered_map<const VarNode*, tir::Buffer> buffers;
  std::vector<tir::PrimFuncParam> params;
  for (const Var& p : func.params) {
    const TensorStructInfoNode* t = KnownTensor(p->struct_info());
    if (t == nullptr) return error(absl::StrCat("parameter '", p.name_hint(), "' is not a tensor of known shape and dtype"));
    tir::Buffer buffer(p.name_hint(), *t->dtype, *t->shape);
    buffers[p.get()] = buffer;
    params.push_back({buffer, tir::Var()});
  }
  std::vector<tir::Buffer> intermediates;
  std::vector<tir::Stmt> bodies;
  support::NameSet block_names;
  FusedKernel fused;
  std::string pattern;
  for (size_t k = 0; k < bindings.size(); ++k) {
    const Binding& b = bindings[k];
    auto binding_error = [&](const std::string& what) {
      return error(absl::StrCat("binding '", b.var.name_hint(), "': ", what));
    };
    const auto* call = b.value.as<CallNode>();
    if (b.is_match_cast() || call == nullptr || !IsOp(call->op, "call_tir")) return binding_error("is not a call_tir");
    if (call->args.size() != 2 || call->sinfo_args.size() != 1) {
      return binding_error("call_tir with tir_vars or several outputs cannot be fused");
    }
    const auto* callee = call->args[0].as<GlobalVarNode>();
    const auto* args = call->args[1].as<TupleNode>();
    const IRModule::Entry* entry = callee != nullptr ? module.Find(callee->name) : nullptr;
    if (entry == nullptr || entry->prim_func() == nullptr || args == nullptr) {
      return binding_error("does not call a PrimFunc of the module with a tuple of arguments");
    }
    const tir::PrimFunc& kernel = *entry->prim_func();
    const TensorStructInfoNode* out = KnownTensor(call->sinfo_args[0]);
    if (out == nullptr) return binding_error("the output is not a tensor of known shape and dtype");
    std::vector<StructInfo> tensors;
    std::vector<tir::Buffer> actual;
    for (const Expr& field : args->fields) {
      const auto* v = field.as<VarNode>();
      auto it = v != nullptr ? buffers.find(v) : buffers.end();
      if (it == buffers.end()) {
        return binding_error("an argument is neither a parameter nor an earlier binding of the function");
      }
      tensors.push_back(field.struct_info());
      actual.push_back(it->second);
    }
    tensors.push_back(call->sinfo_args[0]);
    tir::Buffer output(b.var.name_hint(), *out->dtype, *out->shape);
    actual.push_back(output);
    buffers[b.var.get()] = output;
    if (k + 1 < bindings.size()) {
      intermediates.push_back(output);
    } else {
      params.push_back({output, tir::Var()});
    }
    absl::StatusOr<tir::VarMap> vars = MatchKernelShapes(kernel, tensors);
    if (!vars.ok()) return binding_error(absl::StrCat(callee->name, ": ", vars.status().message()));
    std::unordered_map<const tir::BufferNode*, tir::Buffer> remap;
    for (size_t i = 0; i < actual.size(); ++i) remap[kernel->params[i].buffer.get()] = actual[i];
    KernelInliner inliner(*std::move(vars), std::move(remap), &block_names);
    bodies.push_back(inliner.VisitStmt(kernel->body));
    if (k == 0) {
      auto it = kernel->attrs.find("op_pattern");
      pattern = it != kernel->attrs.end() ? it->second : "opaque";
    }
    fused.callees.push_back(callee->name);
  }
  tir::Stmt body = tir::SeqStmt(std::move(bodies));
  for (size_t i = intermediates.size(); i-- > 0;) body = tir::Allocate(intermediates[i], body);
  fused.func = tir::PrimFunc(std::move(params), std::move(body), {{"op_pattern", pattern}});
  return fused;
}

// Calls of the fused functions become call_tir of the fused PrimFuncs.
class CallRewriter : public ExprMutator {
 public:
  explicit CallRewriter(const std::unordered_set<std::string>& fused) : fused_(fused) {}

  Expr VisitExpr_(const CallNode* op, const Expr& self) override {
    Expr visited = ExprMutator::VisitExpr_(op, self);
    const auto* call = visited.as<CallNode>();
    const auto* callee = call->op.as<GlobalVarNode>();
    if (callee == nullptr || fused_.count(callee->name) == 0) return visited;
    std::vector<StructInfo> sinfos;
    for (const Expr& arg : call->args) sinfos.push_back(arg.struct_info());
    const StructInfo& out = visited.struct_info();
    return Call(Op("call_tir"),
                {GlobalVar(callee->name, OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false)),
                 Tuple(call->args, TupleSInfo(std::move(sinfos)))},
                {}, {out}, out);
  }

 private:
  const std::unordered_set<std::string>& fused_;
};

class GlobalVarCollector : public ExprVisitor {
 public:
  std::unordered_set<std::string> names;
  void VisitExpr_(const GlobalVarNode* op, const Expr&) override { names.insert(op->name); }
};

}  // namespace

absl::StatusOr<tir::VarMap> MatchKernelShapes(const tir::PrimFunc& func, const std::vector<StructInfo>& tensors) {
  if (func->params.size() != tensors.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the kernel has ", func->params.size(), " parameters, the call passes ", tensors.size(), " tensors"));
  }
  tir::VarMap vars;
  std::vector<const TensorStructInfoNode*> known;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const tir::PrimFuncParam& param = func->params[i];
    const TensorStructInfoNode* t = KnownTensor(tensors[i]);
    if (!param.is_buffer()) return absl::InvalidArgumentError(absl::StrCat("parameter ", i, " is a scalar"));
    const tir::Buffer& buffer = param.buffer;
    if (!buffer->strides.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("parameter ", i, " (", buffer->name, ") has strides"));
    }
    if (t == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", i, " has no known shape and dtype"));
    }
    if (*t->dtype != buffer->dtype || t->shape->size() != buffer->shape.size()) {
      return absl::InvalidArgumentError(absl::StrCat("parameter ", i, " (", buffer->name, ") is ", buffer->dtype.ToString(),
                                                     " of rank ", buffer->shape.size(), ", the call passes ",
                                                     ToString(tensors[i])));
    }
    for (size_t d = 0; d < buffer->shape.size(); ++d) {
      const auto* v = buffer->shape[d].as<tir::VarNode>();
      if (v != nullptr && vars.count(v) == 0) vars[v] = (*t->shape)[d];
    }
    known.push_back(t);
  }
  tir::Analyzer analyzer;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const tir::Buffer& buffer = func->params[i].buffer;
    for (size_t d = 0; d < buffer->shape.size(); ++d) {
      PrimExpr mapped = tir::Substitute(buffer->shape[d], vars);
      if (!analyzer.CanProveEqual(mapped, (*known[i]->shape)[d])) {
        return absl::InvalidArgumentError(absl::StrCat("parameter ", i, " (", buffer->name, ") dim ", d, " is ",
                                                       tir::ToString(mapped), ", the call passes ",
                                                       tir::ToString((*known[i]->shape)[d])));
      }
    }
  }
  return vars;
}

absl::StatusOr<IRModule> FuseTir(const IRModule& module) {
  IRModule result = module;
  std::unordered_set<std::string> fused;
  std::unordered_set<std::string> callees;
  for (const IRModule::Entry& entry : module.entries()) {
    const FunctionNode* func = entry.relax_function();
    if (func == nullptr || !IsPrimitive(*func)) continue;
    KILN_ASSIGN_OR_RETURN(FusedKernel kernel, FuseFunction(module, entry.name, *func));
    result.Update(entry.name, kernel.func);
    fused.insert(entry.name);
    callees.insert(kernel.callees.begin(), kernel.callees.end());
  }
  if (fused.empty()) return module;
  CallRewriter rewriter(fused);
  GlobalVarCollector referenced;
  const std::vector<IRModule::Entry> entries = result.entries();
  for (const IRModule::Entry& entry : entries) {
    if (!entry.is_relax()) continue;
    Expr func = rewriter.VisitExpr(std::get<Expr>(entry.func));
    referenced.VisitExpr(func);
    if (!func.same_as(std::get<Expr>(entry.func))) result.Update(entry.name, func);
  }
  // The kernels only the fused functions called are now dead.
  for (const std::string& name : callees) {
    if (referenced.names.count(name) == 0) result.Remove(name);
  }
  return result;
}

}  // namespace kiln::relax
