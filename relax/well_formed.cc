#include "relax/well_formed.h"

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "relax/block_builder.h"
#include "relax/op_registry.h"
#include "relax/struct_info_functions.h"
#include "tir/stmt_functor.h"

namespace kiln::relax {

namespace {

bool IsLeafArg(const Expr& expr) {
  switch (expr.kind()) {
    case ExprKind::kTuple:
      for (const Expr& f : expr.as<TupleNode>()->fields) {
        if (!IsLeafArg(f)) return false;
      }
      return true;
    case ExprKind::kTupleGetItem:
    case ExprKind::kCall:
    case ExprKind::kIf:
    case ExprKind::kSeqExpr:
    case ExprKind::kFunction: return false;
    default: return true;
  }
}

class RelaxChecker {
 public:
  RelaxChecker(const IRModule& module, std::unordered_set<const VarNode*>* ever_defined,
               std::vector<std::string>* errors)
      : module_(module), builder_(&module), ever_defined_(ever_defined), errors_(errors) {}

  void CheckTopLevel(const std::string& name, const FunctionNode& func) {
    name_ = name;
    CheckFunction(func);
  }

 private:
  void Error(const std::string& message) {
    errors_->push_back(absl::StrCat("function '", name_, "': ", message));
  }

  void CheckSymbolicUses(const std::vector<tir::Var>& vars, const std::string& where) {
    for (const tir::Var& v : vars) {
      if (!tir_defined_.count(v.get())) {
        Error(absl::StrCat(where, " uses symbolic variable '", v.name(), "' before its definition"));
      }
    }
  }

  // What can never hold at run time: a negative constant dimension, a symbolic variable
  // whose bounds exclude every value.
  void CheckPossible(const StructInfo& sinfo, const std::string& where) {
    if (!sinfo.defined()) return;
    std::function<void(const StructInfo&)> dims = [&](const StructInfo& s) {
      std::optional<std::vector<PrimExpr>> values;
      if (const auto* t = s.as<TensorStructInfoNode>()) values = t->shape;
      if (const auto* shape = s.as<ShapeStructInfoNode>()) values = shape->values;
      if (const auto* tuple = s.as<TupleStructInfoNode>()) {
        for (const StructInfo& field : tuple->fields) dims(field);
      }
      for (const PrimExpr& d : values.value_or(std::vector<PrimExpr>{})) {
        if (d.as_int() && *d.as_int() < 0) Error(absl::StrCat(where, " has the negative dimension ", *d.as_int()));
      }
    };
    dims(sinfo);
    for (const tir::Var& v : DefinableVars(sinfo)) {
      if (v->lower_bound && v->upper_bound && *v->upper_bound < *v->lower_bound) {
        Error(absl::StrCat(where, ": the bounds of '", v.name(), "' can never hold (", v.name(), " >= ",
                           *v->lower_bound, " and ", v.name(), " <= ", *v->upper_bound, ")"));
      }
    }
  }

  void CheckFunction(const FunctionNode& func) {
    auto saved_scope = in_scope_;
    auto saved_tir = tir_defined_;
    bool saved_pure = func_pure_;
    bool saved_dataflow = in_dataflow_;
    func_pure_ = func.is_pure;
    in_dataflow_ = false;
    for (const Var& p : func.params) {
      DefineVar(p, /*in_dataflow_block=*/false, "parameter");
      for (const tir::Var& v : DefinableVars(p.struct_info())) tir_defined_.insert(v.get());
    }
    for (const Var& p : func.params) {
      const std::string where = absl::StrCat("struct info of parameter '", p.name_hint(), "'");
      CheckSymbolicUses(CollectVars(p.struct_info()), where);
      CheckPossible(p.struct_info(), where);
    }
    CheckSymbolicUses(CollectVars(func.ret_struct_info), "return struct info");
    if (func.body.kind() != ExprKind::kSeqExpr) {
      Error("function body is not a SeqExpr");
    } else {
      CheckSeq(*func.body.as<SeqExprNode>());
      const StructInfo& body_sinfo = func.body.as<SeqExprNode>()->body.struct_info();
      if (func.ret_struct_info.defined() && body_sinfo.defined() &&
          !IsBaseOf(func.ret_struct_info, body_sinfo, builder_.analyzer())) {
        Error(absl::StrCat("return struct info ", ToString(func.ret_struct_info),
                           " does not follow from the body's ", ToString(body_sinfo)));
      }
    }
    in_scope_ = std::move(saved_scope);
    tir_defined_ = std::move(saved_tir);
    func_pure_ = saved_pure;
    in_dataflow_ = saved_dataflow;
  }

  void DefineVar(const Var& var, bool in_dataflow_block, const std::string& what) {
    const std::string& name = var.name_hint();
    if (!ever_defined_->insert(var.get()).second) {
      Error(absl::StrCat("variable '", name, "' is defined more than once"));
    }
    if (var.is_dataflow() && !in_dataflow_block) {
      Error(absl::StrCat("DataflowVar '", name, "' is defined outside a dataflow block (", what, ")"));
    }
    if (!var.struct_info().defined()) {
      Error(absl::StrCat("variable '", name, "' has no struct info"));
    }
    in_scope_.insert(var.get());
  }

  void CheckSeq(const SeqExprNode& seq) {
    auto saved_scope = in_scope_;
    auto saved_tir = tir_defined_;
    bool saved_dataflow = in_dataflow_;
    for (const BindingBlock& block : seq.blocks) {
      in_dataflow_ = block.dataflow;
      std::vector<const VarNode*> block_dataflow_vars;
      for (const Binding& binding : block.bindings) {
        CheckBinding(binding, block.dataflow);
        if (binding.var.defined() && binding.var.is_dataflow()) block_dataflow_vars.push_back(binding.var.get());
      }
      // A dataflow block's DataflowVars are invisible after it.
      for (const VarNode* v : block_dataflow_vars) {
        in_scope_.erase(v);
        retired_dataflow_.insert(v);
      }
    }
    in_dataflow_ = false;
    CheckUse(seq.body);
    in_scope_ = std::move(saved_scope);
    tir_defined_ = std::move(saved_tir);
    in_dataflow_ = saved_dataflow;
  }

  void CheckBinding(const Binding& binding, bool dataflow_block) {
    const std::string& name = binding.var.name_hint();
    CheckUse(binding.value);
    StructInfo bound;
    if (binding.is_match_cast()) {
      for (const tir::Var& v : DefinableVars(binding.match_cast_sinfo)) tir_defined_.insert(v.get());
      CheckSymbolicUses(CollectVars(binding.match_cast_sinfo),
                        absl::StrCat("match_cast of '", name, "'"));
      CheckPossible(binding.match_cast_sinfo, absl::StrCat("match_cast of '", name, "'"));
      StructInfo value_sinfo = ValueStructInfo(binding.value, name);
      if (value_sinfo.defined() &&
          CheckBaseOf(binding.match_cast_sinfo, value_sinfo, builder_.analyzer()) == BaseCheck::kNo) {
        Error(absl::StrCat("binding '", name, "': match_cast to ", ToString(binding.match_cast_sinfo),
                           " can never succeed on a value of ", ToString(value_sinfo)));
      }
      bound = binding.match_cast_sinfo;
    } else {
      bound = ValueStructInfo(binding.value, name);
    }
    DefineVar(binding.var, dataflow_block, "binding");
    const StructInfo& sinfo = binding.var.struct_info();
    if (!sinfo.defined()) return;
    CheckSymbolicUses(CollectVars(sinfo), absl::StrCat("struct info of '", name, "'"));
    if (bound.defined() && !IsBaseOf(sinfo, bound, builder_.analyzer())) {
      Error(absl::StrCat("binding '", name, "': struct info ", ToString(sinfo),
                         " does not follow from the value's ", ToString(bound)));
    }
  }

  // The struct info the bound value has: re-inferred for calls, so a pass that builds a call
  // with stale struct info is caught.
  StructInfo ValueStructInfo(const Expr& value, const std::string& name) {
    if (value.kind() == ExprKind::kCall) {
      const auto* call = value.as<CallNode>();
      for (size_t i = 0; i < call->args.size(); ++i) {
        if (!IsLeafArg(call->args[i])) {
          Error(absl::StrCat("binding '", name, "': argument ", i, " is not a leaf (not in A-normal form)"));
          return StructInfo();
        }
      }
      if (call->op.kind() == ExprKind::kOp && OpRegistry::Global().Find(call->op.as<OpNode>()->name) == nullptr) {
        return StructInfo();  // reported by CheckUse
      }
      if (call->op.kind() == ExprKind::kGlobalVar && module_.Find(call->op.as<GlobalVarNode>()->name) == nullptr) {
        return StructInfo();
      }
      for (const Expr& arg : call->args) {
        if (!arg.struct_info().defined()) return StructInfo();  // reported at its definition
      }
      absl::StatusOr<Expr> inferred = builder_.Normalize(value);
      if (!inferred.ok()) {
        Error(absl::StrCat("binding '", name, "': ", inferred.status().message()));
        return StructInfo();
      }
      return inferred->struct_info();
    }
    // Tuples and projections of leaves are cheap to re-infer too.
    if ((value.kind() == ExprKind::kTuple && IsLeafArg(value)) ||
        (value.kind() == ExprKind::kTupleGetItem && IsLeafArg(value.as<TupleGetItemNode>()->tuple))) {
      bool children_known = true;
      auto known = [&](const Expr& e) { children_known = children_known && e.struct_info().defined(); };
      if (const auto* t = value.as<TupleNode>()) {
        for (const Expr& f : t->fields) known(f);
      } else {
        known(value.as<TupleGetItemNode>()->tuple);
      }
      if (children_known) {
        absl::StatusOr<Expr> inferred = builder_.Normalize(value);
        if (!inferred.ok()) {
          Error(absl::StrCat("binding '", name, "': ", inferred.status().message()));
          return StructInfo();
        }
        return inferred->struct_info();
      }
    }
    if (!value.struct_info().defined() && value.kind() != ExprKind::kOp) {
      Error(absl::StrCat("binding '", name, "': the bound value has no struct info"));
    }
    return value.struct_info();
  }

  bool CalleeIsPure(const Expr& callee, std::string* what) {
    switch (callee.kind()) {
      case ExprKind::kOp: {
        *what = absl::StrCat("operator '", callee.as<OpNode>()->name, "'");
        const OpInfo* info = OpRegistry::Global().Find(callee.as<OpNode>()->name);
        return info == nullptr || info->pure;
      }
      case ExprKind::kGlobalVar: {
        *what = absl::StrCat("function '", callee.as<GlobalVarNode>()->name, "'");
        const IRModule::Entry* entry = module_.Find(callee.as<GlobalVarNode>()->name);
        if (entry == nullptr) return true;  // reported elsewhere
        return entry->is_relax() && entry->relax_function()->is_pure;
      }
      default: {
        if (const auto* e = callee.as<ExternFuncNode>()) *what = absl::StrCat("extern function '", e->symbol, "'");
        if (const auto* v = callee.as<VarNode>()) *what = absl::StrCat("'", v->name_hint, "'");
        const auto* func = callee.struct_info().defined() ? callee.struct_info().as<FuncStructInfoNode>() : nullptr;
        return func != nullptr && func->pure;
      }
    }
  }

  void CheckUse(const Expr& expr) {
    if (!expr.defined()) {
      Error("missing expression");
      return;
    }
    switch (expr.kind()) {
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: {
        const auto* v = expr.as<VarNode>();
        if (in_scope_.count(v)) return;
        if (retired_dataflow_.count(v)) {
          Error(absl::StrCat("DataflowVar '", v->name_hint, "' is used outside its dataflow block"));
        } else if (ever_defined_->count(v)) {
          Error(absl::StrCat("variable '", v->name_hint, "' is used outside its scope"));
        } else {
          Error(absl::StrCat("variable '", v->name_hint, "' is used before its definition"));
        }
        return;
      }
      case ExprKind::kGlobalVar:
        if (module_.Find(expr.as<GlobalVarNode>()->name) == nullptr) {
          Error(absl::StrCat("GlobalVar '", expr.as<GlobalVarNode>()->name,
                             "' does not name a function of the module"));
        }
        return;
      case ExprKind::kOp:
        if (OpRegistry::Global().Find(expr.as<OpNode>()->name) == nullptr) {
          Error(OpRegistry::Global().UnknownOperatorMessage(expr.as<OpNode>()->name));
        }
        return;
      case ExprKind::kShapeExpr: {
        std::vector<tir::Var> vars;
        for (const PrimExpr& d : expr.as<ShapeExprNode>()->values) CollectVars(d, &vars);
        CheckSymbolicUses(vars, "shape expression");
        return;
      }
      case ExprKind::kPrimValue: {
        std::vector<tir::Var> vars;
        CollectVars(expr.as<PrimValueNode>()->value, &vars);
        CheckSymbolicUses(vars, "prim value");
        return;
      }
      case ExprKind::kConstant:
      case ExprKind::kStringImm:
      case ExprKind::kExternFunc: return;
      case ExprKind::kTuple:
        for (const Expr& f : expr.as<TupleNode>()->fields) CheckUse(f);
        return;
      case ExprKind::kTupleGetItem: CheckUse(expr.as<TupleGetItemNode>()->tuple); return;
      case ExprKind::kCall: {
        const auto* call = expr.as<CallNode>();
        CheckUse(call->op);
        for (const Expr& a : call->args) CheckUse(a);
        for (const StructInfo& s : call->sinfo_args) CheckSymbolicUses(CollectVars(s), "call struct info argument");
        std::string what;
        if (!CalleeIsPure(call->op, &what)) {
          if (in_dataflow_) {
            Error(absl::StrCat("impure call to ", what, " inside a dataflow block"));
          } else if (func_pure_) {
            Error(absl::StrCat("function is declared pure but calls impure ", what));
          }
        }
        return;
      }
      case ExprKind::kIf: {
        const auto* n = expr.as<IfNode>();
        if (in_dataflow_) Error("If inside a dataflow block");
        CheckUse(n->condition);
        const auto* prim = n->condition.struct_info().defined()
                               ? n->condition.struct_info().as<PrimStructInfoNode>()
                               : nullptr;
        if (prim == nullptr || !prim->dtype.is_bool()) {
          Error(absl::StrCat("If condition must be a bool Prim, got ", ToString(n->condition.struct_info())));
        }
        for (const Expr& branch : {n->true_branch, n->false_branch}) {
          if (branch.kind() != ExprKind::kSeqExpr) {
            Error("If branch is not a SeqExpr");
            CheckUse(branch);
          } else {
            CheckSeq(*branch.as<SeqExprNode>());
          }
        }
        return;
      }
      case ExprKind::kSeqExpr: CheckSeq(*expr.as<SeqExprNode>()); return;
      case ExprKind::kFunction: CheckFunction(*expr.as<FunctionNode>()); return;
    }
  }

  const IRModule& module_;
  BlockBuilder builder_;  // re-infers call struct info
  std::unordered_set<const VarNode*>* ever_defined_;
  std::vector<std::string>* errors_;
  std::string name_;
  std::unordered_set<const VarNode*> in_scope_;
  std::unordered_set<const VarNode*> retired_dataflow_;
  std::unordered_set<const tir::VarNode*> tir_defined_;
  bool in_dataflow_ = false;
  bool func_pure_ = false;
};

class TirChecker : public tir::StmtExprVisitor {
 public:
  TirChecker(std::string name, std::vector<std::string>* errors) : name_(std::move(name)), errors_(errors) {}

  void VisitPrimFunc(const tir::PrimFunc& func) override {
    // Parameter buffers' bare shape and stride variables are defined by the tensors passed in.
    for (const tir::PrimFuncParam& param : func->params) {
      if (param.is_buffer()) {
        buffers_.insert(param.buffer.get());
        std::vector<PrimExpr> dims = param.buffer->shape;
        dims.insert(dims.end(), param.buffer->strides.begin(), param.buffer->strides.end());
        for (const PrimExpr& d : dims) {
          // One variable may size several parameters (A: (n, 4), B: (n, 4)): all one definition.
          const auto* v = d.as<tir::VarNode>();
          if (v != nullptr && !in_scope_.count(v)) {
            Define(tir::Var(std::static_pointer_cast<const tir::VarNode>(d.node())));
          }
        }
      } else {
        VisitVarDef(param.var);
      }
    }
    for (const tir::PrimFuncParam& param : func->params) {
      if (param.is_buffer()) tir::StmtExprVisitor::VisitBufferDef(param.buffer);
    }
    VisitStmt(func->body);
  }

  void VisitVarDef(const tir::Var& var) override { Define(var); }

  void VisitExpr_(const tir::VarNode* op, const PrimExpr&) override {
    if (in_scope_.count(op)) return;
    if (defined_.count(op)) {
      Error(absl::StrCat("variable '", op->name, "' is used outside its scope"));
    } else {
      Error(absl::StrCat("variable '", op->name, "' is used but never defined"));
    }
  }

  void VisitExpr_(const tir::LetNode* op, const PrimExpr& self) override {
    auto saved = in_scope_;
    tir::StmtExprVisitor::VisitExpr_(op, self);
    in_scope_ = std::move(saved);
  }

  void VisitExpr_(const tir::BufferLoadNode* op, const PrimExpr& self) override {
    CheckAccess("BufferLoad from", op->buffer.get(), op->indices.size());
    tir::StmtExprVisitor::VisitExpr_(op, self);
  }

  void VisitStmt_(const tir::BufferStoreNode* op, const tir::Stmt& self) override {
    CheckAccess("BufferStore to", op->buffer.get(), op->indices.size());
    tir::StmtExprVisitor::VisitStmt_(op, self);
  }

  void VisitStmt_(const tir::ForNode* op, const tir::Stmt& self) override {
    Scoped([&] { tir::StmtExprVisitor::VisitStmt_(op, self); });
  }
  void VisitStmt_(const tir::BlockNode* op, const tir::Stmt& self) override {
    Scoped([&] { tir::StmtExprVisitor::VisitStmt_(op, self); });
  }
  void VisitStmt_(const tir::LetStmtNode* op, const tir::Stmt& self) override {
    Scoped([&] { tir::StmtExprVisitor::VisitStmt_(op, self); });
  }
  void VisitStmt_(const tir::AllocateNode* op, const tir::Stmt& self) override {
    Scoped([&] { tir::StmtExprVisitor::VisitStmt_(op, self); });
  }

  void VisitBufferDef(const tir::Buffer& buffer) override {
    tir::StmtExprVisitor::VisitBufferDef(buffer);
    buffers_.insert(buffer.get());
  }

 private:
  void Error(const std::string& message) {
    errors_->push_back(absl::StrCat("function '", name_, "': ", message));
  }

  void Define(const tir::Var& var) {
    if (!defined_.insert(var.get()).second) {
      Error(absl::StrCat("variable '", var.name(), "' is defined more than once"));
    }
    in_scope_.insert(var.get());
  }

  template <typename F>
  void Scoped(F visit) {
    auto saved_vars = in_scope_;
    auto saved_buffers = buffers_;
    visit();
    in_scope_ = std::move(saved_vars);
    buffers_ = std::move(saved_buffers);
  }

  void CheckAccess(const char* what, const tir::BufferNode* buffer, size_t indices) {
    if (!buffers_.count(buffer)) {
      Error(absl::StrCat("buffer '", buffer->name, "' is used but is neither a parameter nor allocated in scope"));
    }
    if (indices != buffer->shape.size()) {
      Error(absl::StrCat(what, " '", buffer->name, "' has ", indices, " indices but the buffer has ",
                         buffer->shape.size(), " dimensions"));
    }
  }

  std::string name_;
  std::vector<std::string>* errors_;
  std::unordered_set<const tir::VarNode*> defined_;
  std::unordered_set<const tir::VarNode*> in_scope_;
  std::unordered_set<const tir::BufferNode*> buffers_;
};

}  // namespace

absl::Status CheckWellFormed(const IRModule& module) {
  std::vector<std::string> errors;
  std::unordered_set<const VarNode*> ever_defined;
  for (const IRModule::Entry& entry : module.entries()) {
    if (const FunctionNode* func = entry.relax_function()) {
      RelaxChecker checker(module, &ever_defined, &errors);
      checker.CheckTopLevel(entry.name, *func);
    } else if (const tir::PrimFunc* prim = entry.prim_func()) {
      TirChecker checker(entry.name, &errors);
      checker.VisitPrimFunc(*prim);
    }
  }
  if (errors.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
}

}  // namespace kiln::relax
