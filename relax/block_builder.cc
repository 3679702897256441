#include "relax/block_builder.h"

#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "relax/call_tir_signature.h"
#include "relax/op_registry.h"
#include "relax/struct_info_functions.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "tir/stmt_functor.h"
#include "tir/verify_index_bounds.h"

namespace kiln::relax {

namespace {

bool IsLeaf(const Expr& expr) {
  switch (expr.kind()) {
    case ExprKind::kVar:
    case ExprKind::kDataflowVar:
    case ExprKind::kConstant:
    case ExprKind::kShapeExpr:
    case ExprKind::kPrimValue:
    case ExprKind::kStringImm:
    case ExprKind::kGlobalVar:
    case ExprKind::kOp:
    case ExprKind::kExternFunc: return true;
    default: return false;
  }
}

absl::Status WithPrefix(const absl::Status& status, const std::string& prefix) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

// Error context for a binding; an inner binding's context is the more useful one, so an
// error already naming a binding is left alone.
absl::Status InBinding(const absl::Status& status, const std::string& name) {
  if (absl::StartsWith(status.message(), "binding '")) return status;
  return WithPrefix(status, absl::StrCat("binding '", name, "': "));
}

// Binds the callee's symbolic variables that appear bare in `param` to the matching
// dimensions of `arg`.
void BindSignatureVars(const StructInfo& param, const StructInfo& arg, VarMap* map) {
  if (!param.defined() || !arg.defined() || param.kind() != arg.kind()) return;
  auto bind_dims = [&](const std::vector<PrimExpr>& p, const std::vector<PrimExpr>& a) {
    if (p.size() != a.size()) return;
    for (size_t i = 0; i < p.size(); ++i) {
      // A value of another type (a bool or float Prim for a Prim(int64, value=k)) binds
      // nothing: the argument check below refuses it, where substituting it aborted.
      if (p[i].kind() != tir::ExprKind::kVar || p[i].dtype() != a[i].dtype()) continue;
      map->emplace(p[i].as<tir::VarNode>(), a[i]);
    }
  };
  switch (param.kind()) {
    case StructInfoKind::kPrim: {
      const auto* p = param.as<PrimStructInfoNode>();
      const auto* a = arg.as<PrimStructInfoNode>();
      if (p->value.defined() && a->value.defined()) bind_dims({p->value}, {a->value});
      return;
    }
    case StructInfoKind::kShape: {
      const auto* p = param.as<ShapeStructInfoNode>();
      const auto* a = arg.as<ShapeStructInfoNode>();
      if (p->values && a->values) bind_dims(*p->values, *a->values);
      return;
    }
    case StructInfoKind::kTensor: {
      const auto* p = param.as<TensorStructInfoNode>();
      const auto* a = arg.as<TensorStructInfoNode>();
      if (p->shape && a->shape) bind_dims(*p->shape, *a->shape);
      return;
    }
    case StructInfoKind::kTuple: {
      const auto* p = param.as<TupleStructInfoNode>();
      const auto* a = arg.as<TupleStructInfoNode>();
      if (p->fields.size() != a->fields.size()) return;
      for (size_t i = 0; i < p->fields.size(); ++i) BindSignatureVars(p->fields[i], a->fields[i], map);
      return;
    }
    default: return;
  }
}

// Visits `expr` and every expression inside it (binding values, bound Vars, params).
void VisitAll(const Expr& expr, const std::function<void(const Expr&)>& fn) {
  if (!expr.defined()) return;
  fn(expr);
  switch (expr.kind()) {
    case ExprKind::kTuple:
      for (const Expr& f : expr.as<TupleNode>()->fields) VisitAll(f, fn);
      return;
    case ExprKind::kTupleGetItem: VisitAll(expr.as<TupleGetItemNode>()->tuple, fn); return;
    case ExprKind::kCall: {
      const auto* n = expr.as<CallNode>();
      VisitAll(n->op, fn);
      for (const Expr& a : n->args) VisitAll(a, fn);
      return;
    }
    case ExprKind::kIf: {
      const auto* n = expr.as<IfNode>();
      VisitAll(n->condition, fn);
      VisitAll(n->true_branch, fn);
      VisitAll(n->false_branch, fn);
      return;
    }
    case ExprKind::kSeqExpr: {
      const auto* n = expr.as<SeqExprNode>();
      for (const BindingBlock& block : n->blocks) {
        for (const Binding& b : block.bindings) {
          VisitAll(b.var, fn);
          VisitAll(b.value, fn);
        }
      }
      VisitAll(n->body, fn);
      return;
    }
    case ExprKind::kFunction: {
      const auto* n = expr.as<FunctionNode>();
      for (const Var& p : n->params) VisitAll(p, fn);
      VisitAll(n->body, fn);
      return;
    }
    default: return;
  }
}

}  // namespace

BlockBuilder::BlockBuilder(const IRModule* module)
    : module_(module), analyzer_(std::make_unique<tir::Analyzer>()) {}

BlockBuilder::~BlockBuilder() = default;

tir::Analyzer& BlockBuilder::analyzer() { return *analyzer_; }

void BlockBuilder::ReserveName(const std::string& name) { used_names_.insert(name); }

std::string BlockBuilder::FreshName(const std::string& hint) {
  if (!hint.empty()) {
    used_names_.insert(hint);
    return hint;
  }
  std::string name;
  do {
    name = absl::StrCat("lv", name_counter_++);
  } while (used_names_.count(name));
  used_names_.insert(name);
  return name;
}

Var BlockBuilder::MakeVar(std::string name_hint, StructInfo sinfo, bool dataflow) {
  return Var(FreshName(name_hint), std::move(sinfo), dataflow);
}

BlockBuilder::Frame* BlockBuilder::CurrentFrame() { return frames_.empty() ? nullptr : &frames_.back(); }

void BlockBuilder::BeginDataflowBlock() { frames_.push_back(Frame{{}, true}); }
void BlockBuilder::BeginBindingBlock() { frames_.push_back(Frame{{}, false}); }

BindingBlock BlockBuilder::EndBlock() {
  KILN_CHECK(!frames_.empty()) << "EndBlock without a block";
  Frame frame = std::move(frames_.back());
  frames_.pop_back();
  return BindingBlock{std::move(frame.bindings), frame.dataflow};
}

std::vector<const tir::VarNode*> BlockBuilder::DefineSymbolicVars(const StructInfo& sinfo) {
  std::vector<const tir::VarNode*> added;
  for (const tir::Var& v : DefinableVars(sinfo)) {
    if (defined_tir_vars_.insert(v.get()).second) added.push_back(v.get());
  }
  return added;
}

absl::Status BlockBuilder::DefineMatchCastVars(const StructInfo& cast, const StructInfo& value) {
  std::vector<const tir::VarNode*> added = DefineSymbolicVars(cast);
  absl::Status status = CheckSymbolicVarsDefined(cast, "match_cast to");
  if (status.ok() && CheckBaseOf(cast, value, *analyzer_) == BaseCheck::kNo) {
    status = absl::InvalidArgumentError(absl::StrCat("match_cast can never succeed: value is ",
                                                     ToString(value), ", cast to ", ToString(cast)));
  }
  if (!status.ok()) {
    for (const tir::VarNode* v : added) defined_tir_vars_.erase(v);
  }
  return status;
}

absl::Status BlockBuilder::CheckSymbolicVarsDefined(const StructInfo& sinfo, const std::string& what) {
  for (const tir::Var& v : CollectVars(sinfo)) {
    if (!defined_tir_vars_.count(v.get())) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " ", ToString(sinfo), " uses symbolic variable '", v.name(),
          "' before it is defined (by a parameter's struct info or a match_cast)"));
    }
  }
  return absl::OkStatus();
}

absl::Status BlockBuilder::BeginFunction(const std::vector<Var>& params) {
  scopes_.push_back(Scope{std::move(frames_), defined_tir_vars_, params, {}});
  frames_.clear();
  for (const Var& p : params) {
    if (!p.struct_info().defined()) {
      if (failed_var_ == nullptr) failed_var_ = p.get();
      PopScope();
      return absl::InvalidArgumentError(
          absl::StrCat("parameter '", p.name_hint(), "' has no struct info annotation"));
    }
    used_names_.insert(p.name_hint());
    DefineSymbolicVars(p.struct_info());
  }
  for (const Var& p : params) {
    absl::Status status = CheckSymbolicVarsDefined(
        p.struct_info(), absl::StrCat("parameter '", p.name_hint(), "':"));
    if (!status.ok()) {
      PopScope();
      return status;
    }
  }
  scopes_.back().function_vars = defined_tir_vars_;
  return absl::OkStatus();
}

BlockBuilder::Scope BlockBuilder::PopScope() {
  KILN_CHECK(!scopes_.empty()) << "EndFunction without BeginFunction";
  Scope scope = std::move(scopes_.back());
  scopes_.pop_back();
  frames_ = std::move(scope.frames);
  defined_tir_vars_ = scope.defined_tir_vars;
  return scope;
}

absl::StatusOr<Expr> BlockBuilder::EndFunction(std::vector<BindingBlock> blocks, Expr body,
                                               StructInfo ret_sinfo, bool is_pure, Attrs attrs) {
  KILN_CHECK(!scopes_.empty()) << "EndFunction without BeginFunction";
  KILN_CHECK(frames_.empty()) << "EndFunction with a block still open";
  frames_.push_back(Frame{{}, false});
  absl::StatusOr<Expr> leaf = NormalizeArg(body);
  BindingBlock tail = EndBlock();
  if (!leaf.ok()) {
    PopScope();
    return leaf.status();
  }
  if (!tail.bindings.empty()) blocks.push_back(std::move(tail));
  StructInfo body_sinfo = EraseUndefinedVars(leaf->struct_info(), scopes_.back().function_vars);
  return FinishFunction(std::move(blocks), *leaf, body_sinfo, std::move(ret_sinfo), is_pure,
                        std::move(attrs));
}

absl::StatusOr<Expr> BlockBuilder::FinishFunction(std::vector<BindingBlock> blocks, Expr body,
                                                  StructInfo body_sinfo, StructInfo ret_sinfo,
                                                  bool is_pure, Attrs attrs) {
  defined_tir_vars_ = scopes_.back().function_vars;
  absl::Status status = absl::OkStatus();
  if (ret_sinfo.defined()) {
    status = CheckSymbolicVarsDefined(ret_sinfo, "return annotation");
    if (status.ok()) {
      BaseCheck check = CheckBaseOf(ret_sinfo, body_sinfo, *analyzer_);
      if (check == BaseCheck::kNo) {
        status = absl::InvalidArgumentError(absl::StrCat("return annotation ", ToString(ret_sinfo),
                                                         " contradicts the body's ",
                                                         ToString(body_sinfo)));
      } else if (check == BaseCheck::kMaybe) {
        status = absl::InvalidArgumentError(absl::StrCat(
            "return annotation ", ToString(ret_sinfo), " does not follow from the body's ",
            ToString(body_sinfo), " (use match_cast to check it at run time)"));
      }
    }
  } else {
    ret_sinfo = body_sinfo;
  }
  Scope scope = PopScope();
  if (!status.ok()) return status;
  return Function(scope.params, SeqExpr(std::move(blocks), std::move(body), body_sinfo),
                  std::move(ret_sinfo), is_pure, std::move(attrs));
}

absl::StatusOr<Var> BlockBuilder::Emit(Expr value, std::string name_hint) {
  Frame* frame = CurrentFrame();
  return EmitImpl(std::move(value), std::move(name_hint), frame != nullptr && frame->dataflow);
}

absl::StatusOr<Var> BlockBuilder::EmitOutput(Expr value, std::string name_hint) {
  return EmitImpl(std::move(value), std::move(name_hint), false);
}

absl::StatusOr<Var> BlockBuilder::EmitImpl(Expr value, std::string name_hint, bool dataflow_var) {
  if (CurrentFrame() == nullptr) {
    return absl::FailedPreconditionError("Emit needs an open block (BeginDataflowBlock or BeginBindingBlock)");
  }
  KILN_ASSIGN_OR_RETURN(Expr normalized, NormalizeValue(value));
  Var var = MakeVar(std::move(name_hint), normalized.struct_info(), dataflow_var);
  CurrentFrame()->bindings.push_back(Binding{var, normalized, StructInfo()});
  return var;
}

absl::StatusOr<Var> BlockBuilder::EmitMatchCast(Expr value, StructInfo sinfo, std::string name_hint) {
  Frame* frame = CurrentFrame();
  if (frame == nullptr) {
    return absl::FailedPreconditionError("EmitMatchCast needs an open block");
  }
  KILN_ASSIGN_OR_RETURN(Expr normalized, NormalizeValue(value));
  KILN_RETURN_IF_ERROR(DefineMatchCastVars(sinfo, normalized.struct_info()));
  frame = CurrentFrame();  // normalizing may have bound nested values
  Var var = MakeVar(std::move(name_hint), sinfo, frame->dataflow);
  frame->bindings.push_back(Binding{var, normalized, sinfo});
  return var;
}

absl::StatusOr<Expr> BlockBuilder::Normalize(Expr expr) { return NormalizeValue(expr); }

absl::StatusOr<StructInfo> BlockBuilder::GlobalVarSInfo(const std::string& name) {
  if (module_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot look up function '", name, "': the builder has no module"));
  }
  const IRModule::Entry* entry = module_->Find(name);
  if (entry == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown function '", name, "'"));
  }
  if (!entry->is_relax()) {
    // A PrimFunc writes its outputs in place: only call_tir may call it.
    return OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false);
  }
  const FunctionNode* func = entry->relax_function();
  if (!func->ret_struct_info.defined()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "function '", name, "' has no return struct info yet (recursive calls need a return annotation)"));
  }
  // The signature gets symbolic variables of its own: the callee's `n` is bound anew at each
  // call, and is not the variable its definition binds (which belongs to the callee's body).
  VarMap fresh;
  for (const Var& p : func->params) {
    for (const tir::Var& v : CollectVars(p.struct_info())) {
      if (fresh.count(v.get())) continue;
      fresh[v.get()] = tir::Var(v.name(), v.dtype(), v->lower_bound, v->upper_bound);
    }
  }
  std::vector<StructInfo> params;
  for (const Var& p : func->params) params.push_back(Substitute(p.struct_info(), fresh, *analyzer_));
  return FuncSInfo(std::move(params), Substitute(func->ret_struct_info, fresh, *analyzer_), func->is_pure);
}

absl::StatusOr<Expr> BlockBuilder::NormalizeLeaf(const Expr& expr) {
  switch (expr.kind()) {
    case ExprKind::kVar:
    case ExprKind::kDataflowVar: {
      auto it = var_remap_.find(expr.as<VarNode>());
      if (it != var_remap_.end()) return Expr(it->second);
      if (!expr.struct_info().defined()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "variable '", expr.as<VarNode>()->name_hint,
            "' has no struct info (is it used before its definition?)"));
      }
      return expr;
    }
    case ExprKind::kConstant:
    case ExprKind::kShapeExpr:
    case ExprKind::kPrimValue:
    case ExprKind::kStringImm: {
      if (expr.struct_info().defined()) return expr;
      StructInfo sinfo;
      if (const auto* c = expr.as<ConstantNode>()) {
        sinfo = TensorSInfo(std::vector<PrimExpr>(c->data.shape.begin(), c->data.shape.end()), c->data.dtype);
      } else if (const auto* s = expr.as<ShapeExprNode>()) {
        sinfo = ShapeSInfo(s->values);
      } else if (const auto* p = expr.as<PrimValueNode>()) {
        sinfo = PrimSInfo(p->value.dtype(), p->value);
      } else {
        sinfo = ObjectSInfo();
      }
      return WithStructInfo(expr, sinfo);
    }
    case ExprKind::kGlobalVar: {
      if (expr.struct_info().defined()) return expr;
      // Without a module (a builder used on its own), a GlobalVar passed as a value (e.g. to
      // call_tir) is an opaque function; calling one needs its signature (NormalizeCall).
      if (module_ == nullptr) return WithStructInfo(expr, OpaqueFuncSInfo(ObjectSInfo(), false));
      KILN_ASSIGN_OR_RETURN(StructInfo sinfo, GlobalVarSInfo(expr.as<GlobalVarNode>()->name));
      return WithStructInfo(expr, sinfo);
    }
    case ExprKind::kOp: return expr;
    case ExprKind::kExternFunc:
      if (expr.struct_info().defined()) return expr;
      return WithStructInfo(expr, OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false));
    default: KILN_UNREACHABLE();
  }
  return expr;
}

absl::StatusOr<Expr> BlockBuilder::NormalizeArg(const Expr& expr) {
  if (IsLeaf(expr)) return NormalizeLeaf(expr);
  if (expr.kind() == ExprKind::kTuple) return NormalizeValue(expr);
  KILN_ASSIGN_OR_RETURN(Expr value, NormalizeValue(expr));
  Frame* frame = CurrentFrame();
  if (frame == nullptr) {
    return absl::FailedPreconditionError(
        "a nested expression must be bound to a variable, which needs an open block");
  }
  Var var = MakeVar("", value.struct_info(), frame->dataflow);
  frame->bindings.push_back(Binding{var, value, StructInfo()});
  return Expr(var);
}

absl::StatusOr<Expr> BlockBuilder::NormalizeValue(const Expr& expr) {
  if (!expr.defined()) return absl::InvalidArgumentError("missing expression");
  if (IsLeaf(expr)) return NormalizeLeaf(expr);
  switch (expr.kind()) {
    case ExprKind::kTuple: {
      std::vector<Expr> fields;
      std::vector<StructInfo> sinfos;
      for (const Expr& f : expr.as<TupleNode>()->fields) {
        KILN_ASSIGN_OR_RETURN(Expr field, NormalizeArg(f));
        sinfos.push_back(field.struct_info());
        fields.push_back(std::move(field));
      }
      return Tuple(std::move(fields), TupleSInfo(std::move(sinfos)));
    }
    case ExprKind::kTupleGetItem: {
      const auto* n = expr.as<TupleGetItemNode>();
      KILN_ASSIGN_OR_RETURN(Expr tuple, NormalizeArg(n->tuple));
      const StructInfo& sinfo = tuple.struct_info();
      if (!sinfo.defined()) {
        // An operator or a PrimFunc (`R.exp[0]`) is no value; reading its struct info crashed.
        return absl::InvalidArgumentError(absl::StrCat("tuple index [", n->index, "] applied to ",
                                                       tuple.kind() == ExprKind::kOp ? "an operator" : "a non-value",
                                                       ", not to a tuple"));
      }
      if (sinfo.kind() == StructInfoKind::kObject) {
        return TupleGetItem(tuple, n->index, ObjectSInfo());
      }
      const auto* t = sinfo.as<TupleStructInfoNode>();
      if (t == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("tuple index [", n->index, "] applied to a non-tuple ", ToString(sinfo)));
      }
      if (n->index < 0 || n->index >= static_cast<int>(t->fields.size())) {
        return absl::InvalidArgumentError(absl::StrCat("tuple index ", n->index,
                                                       " is out of range for a tuple of ",
                                                       t->fields.size(), " fields"));
      }
      return TupleGetItem(tuple, n->index, t->fields[n->index]);
    }
    case ExprKind::kCall: return NormalizeCall(*expr.as<CallNode>());
    case ExprKind::kIf: return NormalizeIf(*expr.as<IfNode>());
    case ExprKind::kSeqExpr: return NormalizeSeqExpr(expr);
    case ExprKind::kFunction: return NormalizeFunction(*expr.as<FunctionNode>());
    default: KILN_UNREACHABLE();
  }
  return expr;
}

absl::StatusOr<Expr> BlockBuilder::NormalizeCall(const CallNode& call) {
  Expr op;
  if (call.op.kind() == ExprKind::kGlobalVar && !call.op.struct_info().defined()) {
    KILN_ASSIGN_OR_RETURN(StructInfo callee, GlobalVarSInfo(call.op.as<GlobalVarNode>()->name));
    op = WithStructInfo(call.op, callee);
  } else if (IsLeaf(call.op)) {
    KILN_ASSIGN_OR_RETURN(op, NormalizeLeaf(call.op));
  } else {
    KILN_ASSIGN_OR_RETURN(op, NormalizeArg(call.op));
  }
  std::vector<Expr> args;
  for (const Expr& a : call.args) {
    KILN_ASSIGN_OR_RETURN(Expr arg, NormalizeArg(a));
    args.push_back(std::move(arg));
  }
  Expr normalized = Call(op, args, call.attrs, call.sinfo_args);
  const CallNode& node = *normalized.as<CallNode>();
  StructInfo sinfo;
  if (op.kind() == ExprKind::kOp) {
    KILN_ASSIGN_OR_RETURN(sinfo, InferCallStructInfo(node, *analyzer_));
    if (op.as<OpNode>()->name == "call_tir") {
      const auto* gv = node.args[0].as<GlobalVarNode>();
      const IRModule::Entry* entry = gv == nullptr || module_ == nullptr ? nullptr : module_->Find(gv->name);
      if (entry != nullptr && entry->prim_func() != nullptr) {
        KILN_RETURN_IF_ERROR(CheckCallTirSignature(node, *entry->prim_func(), gv->name, *analyzer_));
      } else if (entry != nullptr && entry->is_relax()) {
        // Passed kiln check and failed in the compiler as "call_tir_dps calls @f, which is not
        // a PrimFunc of the module", without a place.
        return absl::InvalidArgumentError(absl::StrCat("call_tir @", gv->name, ": '", gv->name,
                                                       "' is a Relax function, not a PrimFunc: call it as @",
                                                       gv->name, "(...)"));
      }
      KILN_RETURN_IF_ERROR(CheckCallTirWritesOnlyOutputs(node));
    }
  } else if (op.kind() == ExprKind::kGlobalVar) {
    const std::string& name = op.as<GlobalVarNode>()->name;
    const IRModule::Entry* entry = module_ != nullptr ? module_->Find(name) : nullptr;
    if (entry != nullptr && !entry->is_relax()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", name, "' is a PrimFunc and cannot be called directly: use call_tir"));
    }
    KILN_ASSIGN_OR_RETURN(sinfo, InferClosureCall(op.struct_info(), node));
  } else {
    KILN_ASSIGN_OR_RETURN(sinfo, InferClosureCall(op.struct_info(), node));
  }
  return WithStructInfo(normalized, sinfo);
}

namespace {

// The parameters of `func` (by index) that it stores into.
class StoredParams : public tir::StmtExprVisitor {
 public:
  void VisitStmt_(const tir::BufferStoreNode* op, const tir::Stmt& self) override {
    stored.insert(op->buffer.get());
    tir::StmtExprVisitor::VisitStmt_(op, self);
  }
  std::set<const tir::BufferNode*> stored;
};

}  // namespace

// call_tir is pure: its PrimFunc reads the inputs and writes the outputs the caller
// allocated. One that stores into an input changed the caller's tensor behind its back (and
// the constant folder's), and a constant's read-only mapped memory faulted in kiln run.
absl::Status BlockBuilder::CheckCallTirWritesOnlyOutputs(const CallNode& call) {
  if (module_ == nullptr || call.args.size() < 2) return absl::OkStatus();
  const auto* gv = call.args[0].as<GlobalVarNode>();
  const IRModule::Entry* entry = gv == nullptr ? nullptr : module_->Find(gv->name);
  const tir::PrimFunc* callee = entry == nullptr ? nullptr : entry->prim_func();
  if (callee == nullptr) return absl::OkStatus();
  auto count = [](const StructInfo& s) -> size_t {
    const auto* tuple = s.defined() ? s.as<TupleStructInfoNode>() : nullptr;
    return tuple != nullptr ? tuple->fields.size() : 1;
  };
  const size_t inputs = count(call.args[1].struct_info());
  const size_t outputs = call.sinfo_args.empty() ? 1 : count(call.sinfo_args[0]);
  const auto* tir_vars = call.args.size() > 2 ? call.args[2].as<ShapeExprNode>() : nullptr;
  // A call whose arguments do not match the parameters was refused by CheckCallTirSignature
  // (a count known only at run time is refused where it is compiled); which are inputs is moot.
  if (inputs + outputs + (tir_vars != nullptr ? tir_vars->values.size() : 0) != (*callee)->params.size()) {
    return absl::OkStatus();
  }
  auto [it, inserted] = stored_params_.try_emplace(callee->get());
  if (inserted) {
    it->second.first = *callee;
    StoredParams stores;
    stores.VisitStmt((*callee)->body);
    for (size_t i = 0; i < (*callee)->params.size(); ++i) {
      const tir::PrimFuncParam& param = (*callee)->params[i];
      if (param.is_buffer() && stores.stored.count(param.buffer.get())) it->second.second.push_back(i);
    }
  }
  for (size_t i : it->second.second) {
    if (i >= inputs) break;
    return absl::InvalidArgumentError(absl::StrCat(
        "call_tir: @", gv->name, " writes its input '", (*callee)->params[i].buffer->name, "' (parameter ", i,
        "); a PrimFunc called by call_tir writes only its outputs, the parameters after the ", inputs,
        inputs == 1 ? " input" : " inputs"));
  }
  return absl::OkStatus();
}

absl::StatusOr<StructInfo> BlockBuilder::InferClosureCall(const StructInfo& callee, const CallNode& call) {
  std::string what = "callee";
  if (const auto* g = call.op.as<GlobalVarNode>()) what = absl::StrCat("function '", g->name, "'");
  if (const auto* v = call.op.as<VarNode>()) what = absl::StrCat("'", v->name_hint, "'");
  if (const auto* e = call.op.as<ExternFuncNode>()) what = absl::StrCat("extern function '", e->symbol, "'");
  const auto* func = callee.defined() ? callee.as<FuncStructInfoNode>() : nullptr;
  if (func == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is not callable: its struct info is ", ToString(callee)));
  }
  // An opaque callee's result comes from the call's sinfo_args when given.
  if (!func->params) {
    if (!call.sinfo_args.empty()) return call.sinfo_args[0];
    return func->ret.defined() ? func->ret : ObjectSInfo();
  }
  const std::vector<StructInfo>& params = *func->params;
  if (params.size() != call.args.size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " takes ", params.size(),
                                                   " arguments but ", call.args.size(),
                                                   " were given"));
  }
  VarMap map;
  for (size_t i = 0; i < params.size(); ++i) {
    BindSignatureVars(params[i], call.args[i].struct_info(), &map);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    StructInfo expected = Substitute(params[i], map, *analyzer_);
    // A less precise argument is checked when the call runs; only a certain mismatch is an error.
    if (CheckBaseOf(expected, call.args[i].struct_info(), *analyzer_) == BaseCheck::kNo) {
      return absl::InvalidArgumentError(absl::StrCat(
          "argument ", i, " of ", what, ": expected ", ToString(expected), " but got ",
          ToString(call.args[i].struct_info())));
    }
  }
  StructInfo ret = Substitute(func->ret.defined() ? func->ret : ObjectSInfo(), map, *analyzer_);
  // Callee variables no argument determined are unknown to the caller.
  std::vector<tir::Var> signature_vars;
  for (const StructInfo& p : params) {
    for (const tir::Var& v : CollectVars(p)) signature_vars.push_back(v);
  }
  for (const tir::Var& v : CollectVars(func->ret)) signature_vars.push_back(v);
  std::unordered_set<const tir::VarNode*> unknown;
  for (const tir::Var& v : signature_vars) {
    if (!map.count(v.get())) unknown.insert(v.get());
  }
  if (unknown.empty()) return ret;
  std::unordered_set<const tir::VarNode*> known;
  for (const tir::Var& v : CollectVars(ret)) {
    if (!unknown.count(v.get())) known.insert(v.get());
  }
  return EraseUndefinedVars(ret, known);
}

absl::StatusOr<Expr> BlockBuilder::NormalizeIf(const IfNode& node) {
  KILN_ASSIGN_OR_RETURN(Expr cond, NormalizeArg(node.condition));
  const auto* prim = cond.struct_info().as<PrimStructInfoNode>();
  if (prim == nullptr || !prim->dtype.is_bool() || prim->dtype.lanes() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("If condition must be a bool Prim, got ",
                                                   ToString(cond.struct_info())));
  }
  KILN_ASSIGN_OR_RETURN(Expr t, NormalizeSeqExpr(node.true_branch));
  KILN_ASSIGN_OR_RETURN(Expr f, NormalizeSeqExpr(node.false_branch));
  return If(cond, t, f, Join(t.struct_info(), f.struct_info(), *analyzer_));
}

absl::StatusOr<Expr> BlockBuilder::NormalizeSeqExpr(const Expr& expr) {
  std::vector<BindingBlock> in_blocks;
  Expr in_body = expr;
  if (const auto* seq = expr.as<SeqExprNode>()) {
    in_blocks = seq->blocks;
    in_body = seq->body;
  }
  std::vector<Frame> saved_frames = std::move(frames_);
  frames_.clear();
  std::unordered_set<const tir::VarNode*> outer_vars = defined_tir_vars_;
  auto restore = [&]() {
    frames_ = std::move(saved_frames);
    defined_tir_vars_ = outer_vars;
  };

  std::vector<BindingBlock> blocks;
  for (const BindingBlock& block : in_blocks) {
    frames_.push_back(Frame{{}, block.dataflow});
    for (const Binding& binding : block.bindings) {
      absl::Status status = ReemitBinding(binding);
      if (!status.ok()) {
        restore();
        return status;
      }
    }
    BindingBlock out = EndBlock();
    if (!out.bindings.empty()) blocks.push_back(std::move(out));
  }
  // The body is a leaf; whatever it nests is bound in a trailing block.
  frames_.push_back(Frame{{}, false});
  absl::StatusOr<Expr> body = NormalizeArg(in_body);
  BindingBlock tail = EndBlock();
  if (!tail.bindings.empty()) blocks.push_back(std::move(tail));
  StructInfo sinfo;
  if (body.ok()) sinfo = EraseUndefinedVars(body->struct_info(), outer_vars);
  restore();
  if (!body.ok()) return body.status();
  return SeqExpr(std::move(blocks), *body, sinfo);
}

absl::Status BlockBuilder::ReemitBinding(const Binding& binding) {
  const Var& var = binding.var;
  const std::string& name = var.name_hint();
  used_names_.insert(name);
  auto fail = [&](const absl::Status& status) {
    if (failed_var_ == nullptr) failed_var_ = var.get();  // the innermost binding
    return InBinding(status, name);
  };

  absl::StatusOr<Expr> value = NormalizeValue(binding.value);
  if (!value.ok()) return fail(value.status());
  StructInfo bound = value->struct_info();
  if (binding.is_match_cast()) {
    const StructInfo& cast = binding.match_cast_sinfo;
    absl::Status status = DefineMatchCastVars(cast, bound);
    if (!status.ok()) return fail(status);
    bound = cast;
  }

  Var out = var;
  if (var.struct_info().defined()) {
    const StructInfo& annotation = var.struct_info();
    absl::Status status = CheckSymbolicVarsDefined(annotation, "annotation");
    if (!status.ok()) return fail(status);
    BaseCheck check = CheckBaseOf(annotation, bound, *analyzer_);
    if (check == BaseCheck::kNo) {
      return fail(absl::InvalidArgumentError(absl::StrCat("annotation ", ToString(annotation),
                                                          " contradicts the inferred ",
                                                          ToString(bound))));
    }
    if (check == BaseCheck::kMaybe) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("annotation ", ToString(annotation), " does not follow from the inferred ",
                       ToString(bound), " (use match_cast to check it at run time)")));
    }
  } else {
    out = Var(name, bound, var.is_dataflow());
    var_remap_[var.get()] = out;
  }
  CurrentFrame()->bindings.push_back(Binding{out, *value, binding.match_cast_sinfo});
  return absl::OkStatus();
}

absl::StatusOr<Expr> BlockBuilder::NormalizeFunction(const FunctionNode& func) {
  KILN_RETURN_IF_ERROR(BeginFunction(func.params));
  absl::StatusOr<Expr> body = NormalizeSeqExpr(func.body);
  if (!body.ok()) {
    PopScope();
    return body.status();
  }
  const auto* seq = body->as<SeqExprNode>();
  return FinishFunction(seq->blocks, seq->body, body->struct_info(), func.ret_struct_info,
                        func.is_pure, func.attrs);
}

absl::StatusOr<IRModule> NormalizeModule(const IRModule& module, const SourceMap* locations) {
  // Callees without a return annotation are normalized before their callers, so their
  // signature is known when a call to them is inferred.
  IRModule out = module;
  std::map<std::string, int> state;  // 1: in progress, 2: done
  std::function<absl::Status(const std::string&)> normalize = [&](const std::string& name) -> absl::Status {
    const IRModule::Entry* entry = out.Find(name);
    if (entry == nullptr || !entry->is_relax() || state[name] == 2) return absl::OkStatus();
    state[name] = 1;
    Expr func = std::get<Expr>(entry->func);
    std::vector<std::string> callees;
    std::unordered_set<std::string> names;
    VisitAll(func, [&](const Expr& e) {
      if (const auto* g = e.as<GlobalVarNode>()) callees.push_back(g->name);
      if (const auto* v = e.as<VarNode>()) names.insert(v->name_hint);
    });
    for (const std::string& callee : callees) {
      const IRModule::Entry* target = out.Find(callee);
      if (target == nullptr || !target->is_relax() || state[callee] == 2) continue;
      if (target->relax_function()->ret_struct_info.defined()) continue;
      if (state[callee] == 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "function '", name, "': calls '", callee,
            "' recursively, which needs a return struct info annotation"));
      }
      KILN_RETURN_IF_ERROR(normalize(callee));
    }
    BlockBuilder builder(&out);
    for (const std::string& n : names) builder.ReserveName(n);
    absl::StatusOr<Expr> normalized = builder.Normalize(func);
    if (!normalized.ok()) {
      const absl::Status& s = normalized.status();
      std::string sep = absl::StartsWith(s.message(), "binding '") ? ", " : ": ";
      std::string where;
      if (locations != nullptr) {
        auto it = locations->end();
        if (builder.failed_var() != nullptr) it = locations->find(builder.failed_var());
        if (it == locations->end()) it = locations->find(func.get());
        if (it != locations->end()) {
          where = absl::StrCat(it->second.file, ":", it->second.line, ":", it->second.column, ": error: ");
        }
      }
      return WithPrefix(s, absl::StrCat(where, "function '", name, "'", sep));
    }
    out.Update(name, *normalized);
    state[name] = 2;
    return absl::OkStatus();
  };
  for (const IRModule::Entry& entry : module.entries()) {
    // The PrimFuncs here are the user's (legalize adds the generated ones later): an index
    // their loops certainly take out of range is refused before anything compiles them.
    if (const tir::PrimFunc* prim = entry.prim_func()) {
      KILN_RETURN_IF_ERROR(tir::VerifyIndexBounds(*prim, entry.name, locations));
    }
    KILN_RETURN_IF_ERROR(normalize(entry.name));
  }
  return out;
}

}  // namespace kiln::relax
