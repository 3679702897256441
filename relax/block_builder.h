// BlockBuilder: builds Relax functions in A-normal form, inferring struct info as
// expressions are emitted.
//
// What it promises:
//  - Every expression it returns carries struct info, and every argument of a Call, Tuple
//    or TupleGetItem it returns is a leaf (Var, constant, ShapeExpr, PrimValue, StringImm,
//    GlobalVar, Op, ExternFunc) or a Tuple of leaves: nested non-leaf arguments are bound
//    to fresh Vars in the current block first (so Normalize of such an expression needs an
//    open block).
//  - Inference: Calls to an Op go through the op registry (InferCallStructInfo). Calls to
//    a GlobalVar use the callee's signature from the module: arity and argument struct
//    info are checked (a less precise argument is accepted: it is checked at run time) and
//    the callee's symbolic variables are replaced by the argument's dimensions. An If's
//    condition must be a bool Prim and its struct info is the Join of both branches'.
//    MatchCast defines the symbolic variables of its struct info not yet defined.
//  - Normalizing a SeqExpr (or an If branch, or a Function) re-emits its bindings: a bound
//    Var keeps its identity when its struct info is defined and provably a base of the
//    inferred one (an annotation may be less precise: Tensor(ndim=2) for Tensor((n, 4)));
//    a Var without struct info is replaced by a fresh Var carrying the inferred info and
//    every later use is rewritten. An annotation that contradicts the inferred info, or that
//    cannot be proven to hold (it would need a run-time check: use match_cast), is an error
//    naming the binding.
//  - Symbolic variables that leave their scope (a match_cast inside an If branch, or inside a
//    function body for its return) are erased from the struct info that escapes.
//  - Errors are InvalidArgument and name the binding: `binding 'lv1': matmul: ...`.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "relax/expr.h"
#include "relax/ir_module.h"
#include "relax/text_parser.h"
#include "tir/analyzer.h"

namespace kiln::relax {

class BlockBuilder {
 public:
  // `module` (may be null) is where GlobalVar callees' signatures are looked up; it must
  // outlive the builder.
  explicit BlockBuilder(const IRModule* module = nullptr);
  ~BlockBuilder();
  BlockBuilder(const BlockBuilder&) = delete;
  BlockBuilder& operator=(const BlockBuilder&) = delete;

  // Function scope: the parameters' symbolic variables become defined. Blocks emitted
  // between BeginFunction and EndFunction form its body.
  absl::Status BeginFunction(const std::vector<Var>& params);
  // Builds the function from `blocks` and `body` (normalized here). An undefined
  // `ret_sinfo` is inferred from the body; a defined one must be a base of it.
  absl::StatusOr<Expr> EndFunction(std::vector<BindingBlock> blocks, Expr body,
                                   StructInfo ret_sinfo = StructInfo(), bool is_pure = true,
                                   Attrs attrs = {});

  void BeginDataflowBlock();
  void BeginBindingBlock();
  BindingBlock EndBlock();

  // Normalizes `value`, infers its struct info and binds it to a fresh Var (a DataflowVar
  // inside a dataflow block). An empty name_hint picks a fresh "lvN".
  absl::StatusOr<Var> Emit(Expr value, std::string name_hint = "");
  // `var = match_cast(value, sinfo)`; defines the new symbolic variables of `sinfo`.
  absl::StatusOr<Var> EmitMatchCast(Expr value, StructInfo sinfo, std::string name_hint = "");
  // A non-dataflow Var, even inside a dataflow block (the block's output).
  absl::StatusOr<Var> EmitOutput(Expr value, std::string name_hint = "");

  // Infers the struct info of `expr` without binding it (nested non-leaf arguments are
  // still bound in the current block).
  absl::StatusOr<Expr> Normalize(Expr expr);

  // Names the builder must not pick for the Vars it creates (e.g. names used elsewhere in
  // the function being rebuilt).
  void ReserveName(const std::string& name);

  tir::Analyzer& analyzer();

  // The source Var of the innermost binding (or parameter) whose normalization failed, for
  // error locations; nullptr when none did.
  const VarNode* failed_var() const { return failed_var_; }

 private:
  struct Frame {
    std::vector<Binding> bindings;
    bool dataflow = false;
  };

  absl::StatusOr<Var> EmitImpl(Expr value, std::string name_hint, bool dataflow_var);
  Var MakeVar(std::string name_hint, StructInfo sinfo, bool dataflow);
  std::string FreshName(const std::string& hint);
  Frame* CurrentFrame();

  absl::StatusOr<Expr> NormalizeArg(const Expr& expr);
  absl::StatusOr<Expr> NormalizeValue(const Expr& expr);
  absl::StatusOr<Expr> NormalizeLeaf(const Expr& expr);
  absl::StatusOr<Expr> NormalizeCall(const CallNode& call);
  absl::Status CheckCallTirWritesOnlyOutputs(const CallNode& call);
  absl::StatusOr<StructInfo> InferGlobalCall(const std::string& name, const CallNode& call);
  absl::StatusOr<StructInfo> InferClosureCall(const StructInfo& callee, const CallNode& call);
  absl::StatusOr<Expr> NormalizeIf(const IfNode& node);
  // A SeqExpr in its own scope (its bindings and match_cast variables do not escape).
  absl::StatusOr<Expr> NormalizeSeqExpr(const Expr& expr);
  absl::StatusOr<Expr> NormalizeFunction(const FunctionNode& func);
  absl::Status ReemitBinding(const Binding& binding);
  absl::StatusOr<Expr> FinishFunction(std::vector<BindingBlock> blocks, Expr body,
                                      StructInfo body_sinfo, StructInfo ret_sinfo, bool is_pure,
                                      Attrs attrs);
  struct Scope;
  Scope PopScope();
  // Returns the variables that were not defined before.
  std::vector<const tir::VarNode*> DefineSymbolicVars(const StructInfo& sinfo);
  // Defines a match_cast's new variables, or defines nothing and explains why the cast is wrong.
  absl::Status DefineMatchCastVars(const StructInfo& cast, const StructInfo& value);
  absl::Status CheckSymbolicVarsDefined(const StructInfo& sinfo, const std::string& what);
  absl::StatusOr<StructInfo> GlobalVarSInfo(const std::string& name);

  const IRModule* module_;
  std::unique_ptr<tir::Analyzer> analyzer_;
  // Per PrimFunc of the module: the parameter indices it stores into, increasing
  // (CheckCallTirWritesOnlyOutputs); the handle keeps the node, and so the key, alive.
  std::unordered_map<const tir::PrimFuncNode*, std::pair<tir::PrimFunc, std::vector<size_t>>> stored_params_;
  std::vector<Frame> frames_;
  // Rewrites of Vars whose binding was re-emitted with a new Var.
  std::unordered_map<const VarNode*, Var> var_remap_;
  std::unordered_set<const tir::VarNode*> defined_tir_vars_;
  // Saved state of enclosing function scopes (BeginFunction nests).
  struct Scope {
    std::vector<Frame> frames;  // the enclosing function's open blocks
    std::unordered_set<const tir::VarNode*> defined_tir_vars;  // the enclosing scope's
    std::vector<Var> params;
    std::unordered_set<const tir::VarNode*> function_vars;  // enclosing + parameters'
  };
  std::vector<Scope> scopes_;
  std::unordered_set<std::string> used_names_;
  int name_counter_ = 0;
  const VarNode* failed_var_ = nullptr;
};

// Rebuilds every Relax function of a module as the text parser produces it (Vars may lack
// struct info; calls may nest) in A-normal form with inferred struct info on every Var,
// checking annotations against what is inferred. PrimFuncs pass through unchanged, once
// tir/verify_index_bounds.h found no index of theirs certainly out of range. Errors
// name the function: `function 'main', binding 'lv1': matmul: inner dimensions differ ...`;
// given the parser's `locations`, they start with where the binding (or, failing that, the
// function) was written: `model.kir:7:7: error: function 'main', binding 'lv1': ...`.
absl::StatusOr<IRModule> NormalizeModule(const IRModule& module,
                                         const SourceMap* locations = nullptr);

}  // namespace kiln::relax
