#include "codegen/vm_codegen.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/struct_info_functions.h"
#include "support/status_macros.h"
#include "tir/string_type.h"
#include "vm/builtin_signature.h"
#include "vm/dtype.h"
#include "vm/tensor.h"

namespace kiln::codegen {
namespace {

using relax::Expr;
using relax::ExprKind;
using vm::Operand;

DLDataType ToDL(relax::DataType t) {
  return DLDataType{static_cast<uint8_t>(t.code()), static_cast<uint8_t>(t.bits()), static_cast<uint16_t>(t.lanes())};
}

const relax::OpNode* AsOp(const Expr& e) { return e.defined() ? e.as<relax::OpNode>() : nullptr; }

// A dimension of a signature or match_cast pattern; `bound` collects the variable names it binds.
vm::Dim DimOf(const tir::PrimExpr& d, std::set<std::string>* bound) {
  if (std::optional<int64_t> v = d.as_int()) return vm::Dim::Fixed(*v);
  if (const auto* var = d.as<tir::VarNode>()) {
    bound->insert(var->name);
    return vm::Dim::Sym(var->name);
  }
  return vm::Dim::Any();
}

vm::ParamSpec ParamSpecOf(const relax::Var& param, std::set<std::string>* bound, vm::ExecutableBuilder& builder) {
  const relax::StructInfo& s = param->struct_info();
  if (const auto* t = s.as<relax::TensorStructInfoNode>()) {
    vm::ParamSpec p;
    p.name = param.name_hint();
    p.kind = vm::Value::Kind::kTensor;
    // A tensor declared on another device must arrive there (the VM checks it); the device
    // goes into the executable's device table by name.
    if (!t->device.empty() && t->device != "cpu") p.device = builder.DeclareDevice(t->device);
    if (t->dtype) {
      p.check_dtype = true;
      p.dtype = ToDL(*t->dtype);
    }
    p.ndim = t->ndim;
    if (t->shape) {
      for (const tir::PrimExpr& d : *t->shape) p.dims.push_back(DimOf(d, bound));
    } else if (t->ndim >= 0) {
      p.dims.assign(t->ndim, vm::Dim::Any());
    }
    return p;
  }
  if (const auto* sh = s.as<relax::ShapeStructInfoNode>()) {
    vm::ParamSpec p;
    p.name = param.name_hint();
    p.kind = vm::Value::Kind::kShape;
    p.ndim = sh->ndim;
    if (sh->values) {
      for (const tir::PrimExpr& d : *sh->values) p.dims.push_back(DimOf(d, bound));
    } else if (sh->ndim >= 0) {
      p.dims.assign(sh->ndim, vm::Dim::Any());
    }
    return p;
  }
  if (const auto* prim = s.as<relax::PrimStructInfoNode>()) {
    vm::ParamSpec p;
    p.name = param.name_hint();
    if (prim->dtype.code() == relax::DataType::Code::kFloat) {
      p.kind = vm::Value::Kind::kDouble;
    } else if (prim->dtype.code() == relax::DataType::Code::kBool) {
      p.kind = vm::Value::Kind::kBool;
    } else {
      p.kind = vm::Value::Kind::kInt;
    }
    return p;
  }
  if (s.as<relax::TupleStructInfoNode>() != nullptr) {
    vm::ParamSpec p;
    p.name = param.name_hint();
    p.kind = vm::Value::Kind::kTuple;
    return p;
  }
  if (s.as<relax::FuncStructInfoNode>() != nullptr) {
    vm::ParamSpec p;
    p.name = param.name_hint();
    p.kind = vm::Value::Kind::kClosure;
    return p;
  }
  return vm::AnyParam(param.name_hint());
}

// What a value of this struct info is at run time, in a builtin signature; `any` where the
// struct info does not say (Object), so the VM checks it when the builtin is called.
vm::BuiltinType BuiltinTypeOf(const relax::StructInfo& s) {
  if (!s.defined()) return vm::BuiltinType::Any();
  if (s.as<relax::TensorStructInfoNode>() != nullptr) return vm::BuiltinType::Of(vm::Value::Kind::kTensor);
  if (s.as<relax::ShapeStructInfoNode>() != nullptr) return vm::BuiltinType::Of(vm::Value::Kind::kShape);
  if (s.as<relax::TupleStructInfoNode>() != nullptr) return vm::BuiltinType::Of(vm::Value::Kind::kTuple);
  if (s.as<relax::FuncStructInfoNode>() != nullptr) return vm::BuiltinType::Of(vm::Value::Kind::kClosure);
  if (const auto* prim = s.as<relax::PrimStructInfoNode>()) {
    if (prim->dtype.code() == relax::DataType::Code::kFloat) return vm::BuiltinType::Of(vm::Value::Kind::kDouble);
    // A Prim(bool) is a bool when it arrives as a parameter but a 0 / 1 int when the VM's
    // integer instructions computed it, so its kind is checked by the builtin itself.
    if (prim->dtype.code() == relax::DataType::Code::kBool) return vm::BuiltinType::Any();
    return vm::BuiltinType::Of(vm::Value::Kind::kInt);
  }
  return vm::BuiltinType::Any();
}

class FunctionCodegen {
 public:
  FunctionCodegen(std::string name, const relax::FunctionNode& fn, vm::FunctionBuilder& f, vm::ExecutableBuilder& b,
                  const relax::IRModule& module, const std::map<std::string, int32_t>& kernels,
                  std::set<std::string> bound)
      : name_(std::move(name)), fn_(fn), f_(f), b_(b), module_(module), kernels_(kernels), bound_(std::move(bound)) {}

  absl::Status Run() {
    for (size_t i = 0; i < fn_.params.size(); ++i) {
      const relax::Var& param = fn_.params[i];
      reg_[param.get()] = f_.param(static_cast<int>(i));
      if (const auto* prim = param->struct_info().as<relax::PrimStructInfoNode>()) {
        KILN_RETURN_IF_ERROR(MatchPrim(f_.param(static_cast<int>(i)), *prim, absl::StrCat("parameter '", param.name_hint(), "'")));
      }
    }
    const auto* seq = fn_.body.as<relax::SeqExprNode>();
    if (seq == nullptr) return Error("", "the body is not a SeqExpr (normalize the module first)");
    // The VM's parameter check sees a tuple as a tuple; its fields bind and check their
    // symbolic dims here, as a match_cast does (`t: Tuple(Tensor((n,), ...), ...)` left n
    // unbound: "symbolic variable 'n' is not bound here").
    for (size_t i = 0; i < fn_.params.size(); ++i) {
      if (const auto* tuple = fn_.params[i]->struct_info().as<relax::TupleStructInfoNode>()) {
        KILN_RETURN_IF_ERROR(
            MatchTupleFields(f_.param(static_cast<int>(i)), *tuple, absl::StrCat("parameter '", fn_.params[i].name_hint(), "'")));
      }
    }
    for (size_t i = 0; i < fn_.params.size(); ++i) {
      const relax::StructInfo& ps = fn_.params[i]->struct_info();
      const std::optional<std::vector<tir::PrimExpr>>* values = nullptr;
      if (const auto* t = ps.as<relax::TensorStructInfoNode>()) values = &t->shape;
      if (const auto* sh = ps.as<relax::ShapeStructInfoNode>()) values = &sh->values;
      if (values != nullptr && *values) {
        KILN_RETURN_IF_ERROR(CheckCompoundDims(f_.param(static_cast<int>(i)), **values,
                                               absl::StrCat("parameter '", fn_.params[i].name_hint(), "'"), ""));
      }
    }
    for (const relax::Var& param : fn_.params) EmitBoundChecks(relax::CollectVars(param->struct_info()));
    pos_ = 0;
    CountSeq(*seq);
    for (const auto& [var, pos] : last_use_) kills_at_[pos].push_back(var);
    pos_ = 0;
    KILN_ASSIGN_OR_RETURN(int32_t result, EmitSeq(*seq));
    f_.Ret(result);
    return absl::OkStatus();
  }

 private:
  template <typename... Parts>
  absl::Status Error(const std::string& binding, const Parts&... parts) {
    if (binding.empty()) return absl::InvalidArgumentError(absl::StrCat("function '", name_, "': ", parts...));
    return absl::InvalidArgumentError(absl::StrCat("function '", name_, "', binding '", binding, "': ", parts...));
  }

  // --- Last uses, in layout order (mirrors EmitSeq / EmitBinding position by position). ---
  void Use(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case ExprKind::kVar:
      case ExprKind::kDataflowVar:
        last_use_[static_cast<const relax::VarNode*>(e.get())] = pos_;
        break;
      case ExprKind::kTuple:
        for (const Expr& field : e.as<relax::TupleNode>()->fields) Use(field);
        break;
      case ExprKind::kTupleGetItem:
        Use(e.as<relax::TupleGetItemNode>()->tuple);
        break;
      case ExprKind::kCall: {
        const auto* call = e.as<relax::CallNode>();
        Use(call->op);
        for (const Expr& arg : call->args) Use(arg);
        break;
      }
      default:
        break;
    }
  }
  void CountSeq(const relax::SeqExprNode& seq) {
    for (const relax::BindingBlock& block : seq.blocks) {
      for (const relax::Binding& b : block.bindings) {
        ++pos_;
        if (const auto* if_node = b.value.as<relax::IfNode>()) {
          Use(if_node->condition);
          CountSeq(*if_node->true_branch.as<relax::SeqExprNode>());
          CountSeq(*if_node->false_branch.as<relax::SeqExprNode>());
        } else {
          Use(b.value);
        }
      }
    }
    ++pos_;
    Use(seq.body);
  }
  void KillAt(int pos) {
    auto it = kills_at_.find(pos);
    if (it == kills_at_.end()) return;
    // In register order: the variables come from a hash map keyed by address, and the
    // bytecode must not depend on where the allocator put them (same input, same bytes).
    std::vector<int32_t> registers;
    for (const relax::VarNode* v : it->second) {
      auto r = reg_.find(v);
      if (r != reg_.end()) registers.push_back(r->second);
    }
    std::sort(registers.begin(), registers.end());
    for (int32_t r : registers) f_.Kill(r);
  }

  // --- Emission. ---
  absl::StatusOr<int32_t> EmitSeq(const relax::SeqExprNode& seq) {
    for (const relax::BindingBlock& block : seq.blocks) {
      for (const relax::Binding& b : block.bindings) KILN_RETURN_IF_ERROR(EmitBinding(b));
    }
    ++pos_;
    if (const auto* v = seq.body.as<relax::VarNode>()) {
      auto it = reg_.find(v);
      if (it == reg_.end()) return Error("", "the result '", v->name_hint, "' is not defined");
      return it->second;
    }
    int32_t reg = f_.NewRegister();
    KILN_RETURN_IF_ERROR(EmitValue(seq.body, reg, "<result>"));
    return reg;
  }

  absl::Status EmitBinding(const relax::Binding& b) {
    ++pos_;
    const int pos = pos_;
    const std::string& name = b.var.name_hint();
    int32_t dst = f_.NewRegister();
    if (const auto* if_node = b.value.as<relax::IfNode>()) {
      KILN_ASSIGN_OR_RETURN(int32_t cond, Condition(if_node->condition, name));
      vm::FunctionBuilder::Label else_label = f_.NewLabel(), end = f_.NewLabel();
      f_.SetDebugName(name);
      f_.If(cond, else_label);
      KILN_ASSIGN_OR_RETURN(int32_t t, EmitSeq(*if_node->true_branch.as<relax::SeqExprNode>()));
      f_.Move(dst, t);
      KillAt(pos_);
      f_.Goto(end);
      f_.Bind(else_label);
      KILN_ASSIGN_OR_RETURN(int32_t e, EmitSeq(*if_node->false_branch.as<relax::SeqExprNode>()));
      f_.Move(dst, e);
      KillAt(pos_);
      f_.Bind(end);
      reg_[b.var.get()] = dst;
      return absl::OkStatus();
    }
    KILN_RETURN_IF_ERROR(EmitValue(b.value, dst, name));
    if (b.is_match_cast()) KILN_RETURN_IF_ERROR(MatchCast(dst, b.match_cast_sinfo, name));
    reg_[b.var.get()] = dst;
    KillAt(pos);
    return absl::OkStatus();
  }

  absl::StatusOr<int32_t> Condition(const Expr& cond, const std::string& binding) {
    KILN_ASSIGN_OR_RETURN(Operand op, ArgOperand(cond, binding));
    if (op.kind == Operand::Kind::kImm) {
      int32_t r = f_.NewRegister();
      f_.IntOp(r, vm::IntOpKind::kNE, op, Operand::Imm(0));
      return r;
    }
    if (cond.struct_info().defined() && cond.struct_info().as<relax::TensorStructInfoNode>() != nullptr) {
      int32_t r = f_.NewRegister();
      f_.CallBuiltin(r, b_.DeclareBuiltin("kiln.read_if_cond", "(any) -> bool"), {op});
      return r;
    }
    return static_cast<int32_t>(op.value);
  }

  // A tensor's or shape's dims (its values, possibly unknown, and its ndim); nullopt for
  // other struct info.
  struct ShapeDims {
    const std::optional<std::vector<tir::PrimExpr>>* values;
    int ndim;
  };
  static std::optional<ShapeDims> ShapeDimsOf(const relax::StructInfo& sinfo) {
    if (const auto* t = sinfo.as<relax::TensorStructInfoNode>()) return ShapeDims{&t->shape, t->ndim};
    if (const auto* s = sinfo.as<relax::ShapeStructInfoNode>()) return ShapeDims{&s->values, s->ndim};
    return std::nullopt;
  }

  // Matches the tensor or shape in `reg` against `shape` (of known ndim): unbound symbolic
  // dims are bound, bound ones and constants checked, compound dims computed and compared.
  absl::Status MatchShapeDims(int32_t reg, const ShapeDims& shape, const std::string& context,
                              const std::string& binding) {
    std::vector<vm::Dim> dims;
    if (*shape.values) {
      for (const tir::PrimExpr& d : **shape.values) dims.push_back(DimOf(d, &bound_));
    } else {
      dims.assign(shape.ndim, vm::Dim::Any());
    }
    f_.MatchShape(reg, dims, context);
    if (*shape.values) KILN_RETURN_IF_ERROR(CheckCompoundDims(reg, **shape.values, context, binding));
    return absl::OkStatus();
  }

  absl::Status MatchCast(int32_t reg, const relax::StructInfo& sinfo, const std::string& name) {
    const std::optional<ShapeDims> shape = ShapeDimsOf(sinfo);
    if (const auto* prim = sinfo.as<relax::PrimStructInfoNode>()) {
      return MatchPrim(reg, *prim, absl::StrCat("match_cast '", name, "'"));
    } else if (sinfo.as<relax::ObjectStructInfoNode>() != nullptr) {
      return absl::OkStatus();
    } else if (const auto* tuple = sinfo.as<relax::TupleStructInfoNode>()) {
      KILN_RETURN_IF_ERROR(MatchTupleFields(reg, *tuple, absl::StrCat("match_cast '", name, "'")));
      EmitBoundChecks(relax::CollectVars(sinfo));
      return absl::OkStatus();
    } else if (const auto* func = sinfo.as<relax::FuncStructInfoNode>()) {
      MatchClosure(reg, *func, absl::StrCat("match_cast '", name, "'"));
      return absl::OkStatus();
    } else if (!shape) {
      return Error(name, "match_cast to ", relax::ToString(sinfo), " is not supported by VM codegen yet");
    }
    if (shape->ndim == relax::kUnknownNdim) return absl::OkStatus();
    KILN_RETURN_IF_ERROR(MatchShapeDims(reg, *shape, absl::StrCat("match_cast '", name, "'"), name));
    EmitBoundChecks(relax::CollectVars(sinfo));
    return absl::OkStatus();
  }

  // The value in `reg` must be a closure, taking as many arguments as `func` has parameters
  // when it lists them: a Func parameter is checked the same way (its kind), and what the
  // arguments and result are is checked when the closure is called, by its function's
  // parameter signatures. Purity cannot be seen at run time and is taken on trust.
  void MatchClosure(int32_t reg, const relax::FuncStructInfoNode& func, const std::string& context) {
    const int32_t text = f_.NewRegister();
    f_.LoadConst(text, b_.AddConstant(vm::Value::FromString(context)));
    f_.SetDebugName(context);
    const int64_t arity = func.params ? static_cast<int64_t>(func.params->size()) : -1;
    f_.CallBuiltin(vm::kNoRegister, b_.DeclareBuiltin("kiln.check_closure", "(any, int, string) -> none"),
                   {Operand::Reg(reg), Operand::Imm(arity), Operand::Reg(text)});
    f_.Kill(text);
  }

  // The value in `reg` must be a tuple of as many fields as `tuple` (a field past its end
  // would otherwise fail at its first use, naming no match). Each field whose struct info
  // names dims (a tensor's or shape's, a Prim's value, a nested tuple's) is then taken out and
  // matched: unbound symbolic variables are bound, bound ones and constants checked. The
  // context names the field ("parameter 't' field 1").
  absl::Status MatchTupleFields(int32_t reg, const relax::TupleStructInfoNode& tuple, const std::string& context) {
    const int32_t text = f_.NewRegister();
    f_.LoadConst(text, b_.AddConstant(vm::Value::FromString(context)));
    f_.SetDebugName(context);
    f_.CallBuiltin(vm::kNoRegister, b_.DeclareBuiltin("kiln.check_tuple", "(any, int, string) -> none"),
                   {Operand::Reg(reg), Operand::Imm(static_cast<int64_t>(tuple.fields.size())), Operand::Reg(text)});
    f_.Kill(text);
    for (size_t j = 0; j < tuple.fields.size(); ++j) {
      const relax::StructInfo& field = tuple.fields[j];
      const std::string where = absl::StrCat(context, " field ", j);
      const std::optional<ShapeDims> shape = ShapeDimsOf(field);
      const bool known_shape = shape && shape->ndim != relax::kUnknownNdim;
      const auto* prim = field.as<relax::PrimStructInfoNode>();
      const auto* inner = field.as<relax::TupleStructInfoNode>();
      const auto* func = field.as<relax::FuncStructInfoNode>();
      if (!known_shape && (prim == nullptr || !prim->value.defined()) && inner == nullptr && func == nullptr) continue;
      const int32_t item = f_.NewRegister();
      f_.SetDebugName(where);
      f_.CallBuiltin(item, b_.DeclareBuiltin("kiln.tuple_get", "(tuple, int) -> any"),
                     {Operand::Reg(reg), Operand::Imm(static_cast<int64_t>(j))});
      if (inner != nullptr) {
        KILN_RETURN_IF_ERROR(MatchTupleFields(item, *inner, where));
      } else if (func != nullptr) {
        MatchClosure(item, *func, where);
      } else if (prim != nullptr) {
        KILN_RETURN_IF_ERROR(MatchPrim(item, *prim, where));
      } else {
        KILN_RETURN_IF_ERROR(MatchShapeDims(item, *shape, where, ""));
      }
      f_.Kill(item);
    }
    return absl::OkStatus();
  }

  // R.check_dims (relax/op/check_dims.cc): the builtin kiln.check_dims_<relation> on the two
  // dims, computed from the bound symbolic variables. The instruction's debug name is
  // "shape check", so the VM's error reads "... at instruction 1 (shape check): builtin ...: binding 'y': ...".
  absl::Status EmitCheckDims(const relax::CallNode& call, int32_t dst, const std::string& name) {
    auto attr = [&](const char* key) -> const std::string* {
      auto it = call.attrs.find(key);
      return it != call.attrs.end() ? std::get_if<std::string>(&it->second) : nullptr;
    };
    const std::string* relation = attr("relation");
    const std::string* message = attr("message");
    if (relation == nullptr || message == nullptr) return Error(name, "check_dims needs relation and message attributes");
    std::vector<Operand> args;
    for (const Expr& arg : call.args) {
      const auto* prim = arg.as<relax::PrimValueNode>();
      if (prim == nullptr) return Error(name, "check_dims takes two R.prim_value operands");
      KILN_ASSIGN_OR_RETURN(Operand o, Prim(prim->value, name));
      args.push_back(o);
    }
    int32_t text = f_.NewRegister();
    f_.LoadConst(text, b_.AddConstant(vm::Value::FromString(*message)));
    args.push_back(Operand::Reg(text));
    f_.SetDebugName("shape check");
    f_.CallBuiltin(dst, b_.DeclareBuiltin(absl::StrCat("kiln.check_dims_", *relation), "(int, int, string) -> none"),
                   args);
    f_.Kill(text);
    return absl::OkStatus();
  }

  // Each newly bound symbolic variable with a declared bound (`where n <= 2048`) is checked
  // once, right after the match that binds it: memory planning and kernels rely on it.
  void EmitBoundChecks(const std::vector<tir::Var>& vars) {
    for (const tir::Var& v : vars) {
      const bool lower = v->lower_bound && *v->lower_bound > 0;
      if ((!v->upper_bound && !lower) || bound_.count(v->name) == 0 || !checked_bounds_.insert(v->name).second) continue;
      if (name_constants_.count(v->name) == 0) name_constants_[v->name] = b_.AddConstant(vm::Value::FromString(v->name));
      int32_t name = f_.NewRegister();
      f_.LoadConst(name, name_constants_[v->name]);
      f_.SetDebugName(absl::StrCat("bounds of ", v->name));
      f_.CallBuiltin(vm::kNoRegister, b_.DeclareBuiltin("kiln.check_bound", "(int, int, int, string) -> none"),
                     {Operand::Reg(f_.sym(v->name)), Operand::Imm(v->lower_bound.value_or(INT64_MIN)),
                      Operand::Imm(v->upper_bound.value_or(INT64_MAX)), Operand::Reg(name)});
      f_.Kill(name);
    }
  }

  // Dimensions such as n + 1 are left out of the binding match (their variables may be
  // bound by it); once every variable is bound they are computed and checked.
  absl::Status CheckCompoundDims(int32_t reg, const std::vector<tir::PrimExpr>& values, const std::string& context,
                                 const std::string& binding) {
    bool any = false;
    for (const tir::PrimExpr& d : values) any |= !d.as_int() && d.as<tir::VarNode>() == nullptr;
    if (!any) return absl::OkStatus();
    std::vector<vm::Dim> dims;
    for (const tir::PrimExpr& d : values) {
      std::vector<tir::Var> vars;
      relax::CollectVars(d, &vars);
      bool all_bound = true;
      for (const tir::Var& v : vars) all_bound &= bound_.count(v->name) > 0;
      if (d.as_int() || d.as<tir::VarNode>() != nullptr || !all_bound) {
        dims.push_back(vm::Dim::Any());
        continue;
      }
      KILN_ASSIGN_OR_RETURN(Operand o, Prim(d, binding));
      if (o.kind == Operand::Kind::kImm) {
        dims.push_back(vm::Dim::Fixed(o.value));
      } else {
        dims.push_back(vm::Dim::Register(static_cast<int32_t>(o.value), tir::ToString(d)));
      }
    }
    f_.MatchShape(reg, dims, context);
    return absl::OkStatus();
  }

  // An int value whose struct info is Prim(int, value=k): binds k at its first sight, else
  // checks it (a fixed value or an earlier-bound variable). The VM matches shapes only, so
  // the int goes through a one-dimensional shape.
  absl::Status MatchPrim(int32_t reg, const relax::PrimStructInfoNode& prim, const std::string& context) {
    if (!prim.value.defined() || prim.dtype.code() == relax::DataType::Code::kFloat ||
        prim.dtype.code() == relax::DataType::Code::kBool) {
      return absl::OkStatus();
    }
    vm::Dim dim = DimOf(prim.value, &bound_);
    if (dim.kind == vm::Dim::Kind::kAny) return absl::OkStatus();
    int32_t shape = f_.NewRegister();
    f_.MakeShape(shape, {Operand::Reg(reg)});
    f_.MatchShape(shape, {dim}, context);
    return absl::OkStatus();
  }

  // A symbolic integer expression as an operand: immediates stay immediates, variables are
  // their bound registers, arithmetic becomes IntOps.
  absl::StatusOr<Operand> Prim(const tir::PrimExpr& e, const std::string& binding) {
    if (std::optional<int64_t> v = e.as_int()) return Operand::Imm(*v);
    if (const auto* var = e.as<tir::VarNode>()) {
      if (bound_.count(var->name) == 0) {
        return Error(binding, "symbolic variable '", var->name, "' is not bound here");
      }
      return Operand::Reg(f_.sym(var->name));
    }
    if (const auto* cast = e.as<tir::CastNode>()) {
      if (cast->dtype().code() == relax::DataType::Code::kInt || cast->dtype().code() == relax::DataType::Code::kUInt) {
        return Prim(cast->value, binding);
      }
    }
    if (const auto* bin = e.as<tir::BinaryNode>()) {
      static const std::unordered_map<int, vm::IntOpKind> kOps = {
          {static_cast<int>(tir::ExprKind::kAdd), vm::IntOpKind::kAdd},
          {static_cast<int>(tir::ExprKind::kSub), vm::IntOpKind::kSub},
          {static_cast<int>(tir::ExprKind::kMul), vm::IntOpKind::kMul},
          {static_cast<int>(tir::ExprKind::kFloorDiv), vm::IntOpKind::kFloorDiv},
          {static_cast<int>(tir::ExprKind::kFloorMod), vm::IntOpKind::kFloorMod},
          {static_cast<int>(tir::ExprKind::kMin), vm::IntOpKind::kMin},
          {static_cast<int>(tir::ExprKind::kMax), vm::IntOpKind::kMax},
          {static_cast<int>(tir::ExprKind::kEQ), vm::IntOpKind::kEQ},
          {static_cast<int>(tir::ExprKind::kNE), vm::IntOpKind::kNE},
          {static_cast<int>(tir::ExprKind::kLT), vm::IntOpKind::kLT},
          {static_cast<int>(tir::ExprKind::kLE), vm::IntOpKind::kLE},
          {static_cast<int>(tir::ExprKind::kGT), vm::IntOpKind::kGT},
          {static_cast<int>(tir::ExprKind::kGE), vm::IntOpKind::kGE},
      };
      auto it = kOps.find(static_cast<int>(e.kind()));
      if (it != kOps.end() && bin->a.dtype().code() != relax::DataType::Code::kFloat) {
        KILN_ASSIGN_OR_RETURN(Operand a, Prim(bin->a, binding));
        KILN_ASSIGN_OR_RETURN(Operand b, Prim(bin->b, binding));
        int32_t r = f_.NewRegister();
        f_.IntOp(r, it->second, a, b);
        return Operand::Reg(r);
      }
    }
    // Logic on comparison results (ints 0 / 1): && is the min, || the max of the truths.
    if (e.kind() == tir::ExprKind::kAnd || e.kind() == tir::ExprKind::kOr) {
      const auto* bin = e.as<tir::BinaryNode>();
      KILN_ASSIGN_OR_RETURN(Operand a, Truth(bin->a, binding));
      KILN_ASSIGN_OR_RETURN(Operand b, Truth(bin->b, binding));
      int32_t r = f_.NewRegister();
      f_.IntOp(r, e.kind() == tir::ExprKind::kAnd ? vm::IntOpKind::kMin : vm::IntOpKind::kMax, a, b);
      return Operand::Reg(r);
    }
    if (const auto* n = e.as<tir::NotNode>()) {
      KILN_ASSIGN_OR_RETURN(Operand a, Prim(n->a, binding));
      int32_t r = f_.NewRegister();
      f_.IntOp(r, vm::IntOpKind::kEQ, a, Operand::Imm(0));
      return Operand::Reg(r);
    }
    return Error(binding, "symbolic expression ", tir::ToString(e),
                 " has no VM lowering (integer + - * floordiv floormod min max, comparisons, && || ! only)");
  }

  // 1 when `e` is nonzero, else 0.
  absl::StatusOr<Operand> Truth(const tir::PrimExpr& e, const std::string& binding) {
    KILN_ASSIGN_OR_RETURN(Operand a, Prim(e, binding));
    int32_t r = f_.NewRegister();
    f_.IntOp(r, vm::IntOpKind::kNE, a, Operand::Imm(0));
    return Operand::Reg(r);
  }

  int32_t Constant(const relax::ConstantNode* c) {
    auto it = constants_.find(c);
    if (it != constants_.end()) return it->second;
    if (c->data.is_external()) {
      int32_t index = b_.AddExternalConstant(c->data.external_name, ToDL(c->data.dtype), c->data.shape);
      constants_[c] = index;
      return index;
    }
    vm::Tensor t = *vm::Tensor::Empty(c->data.shape, ToDL(c->data.dtype));
    if (c->data.bytes && !c->data.bytes->empty()) std::memcpy(t.data(), c->data.bytes->data(), c->data.bytes->size());
    int32_t index = b_.AddConstant(vm::Value(std::move(t)));
    constants_[c] = index;
    return index;
  }

  // A leaf (or tuple of leaves) as a call operand; non-register leaves are materialized.
  absl::StatusOr<Operand> ArgOperand(const Expr& e, const std::string& binding) {
    if (const auto* v = e.as<relax::VarNode>()) {
      auto it = reg_.find(v);
      if (it == reg_.end()) return Error(binding, "variable '", v->name_hint, "' is not defined");
      return Operand::Reg(it->second);
    }
    if (const auto* p = e.as<relax::PrimValueNode>()) {
      if (const auto* fl = p->value.as<tir::FloatImmNode>()) {
        int32_t r = f_.NewRegister();
        f_.LoadConst(r, b_.AddConstant(vm::Value(fl->value)));
        return Operand::Reg(r);
      }
      return Prim(p->value, binding);
    }
    int32_t r = f_.NewRegister();
    KILN_RETURN_IF_ERROR(EmitValue(e, r, binding));
    return Operand::Reg(r);
  }

  // An int operand (immediate or register) of an integer PrimValue or variable.
  absl::StatusOr<Operand> IntArg(const Expr& e, const std::string& binding, const char* what) {
    if (const auto* p = e.as<relax::PrimValueNode>()) {
      if (p->value.dtype().code() == relax::DataType::Code::kFloat) return Error(binding, what, " must be an integer");
      return Prim(p->value, binding);
    }
    return ArgOperand(e, binding);
  }

  absl::Status EmitValue(const Expr& e, int32_t dst, const std::string& name) {
    f_.SetDebugName(name);
    switch (e.kind()) {
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: {
        KILN_ASSIGN_OR_RETURN(Operand src, ArgOperand(e, name));
        f_.Move(dst, static_cast<int32_t>(src.value));
        return absl::OkStatus();
      }
      case ExprKind::kConstant:
        if (tir::IsStringType(e.as<relax::ConstantNode>()->data.dtype)) {
          // A string tensor's elements point into memory its owner holds (vm/string_tensor.h):
          // the constant pool, written to a file, cannot hold one.
          return absl::UnimplementedError(absl::StrCat("binding '", name, "': a constant string tensor is not supported"));
        }
        f_.LoadConst(dst, Constant(e.as<relax::ConstantNode>()));
        return absl::OkStatus();
      case ExprKind::kStringImm:
        f_.LoadConst(dst, b_.AddConstant(vm::Value::FromString(e.as<relax::StringImmNode>()->value)));
        return absl::OkStatus();
      case ExprKind::kPrimValue: {
        KILN_ASSIGN_OR_RETURN(Operand v, ArgOperand(e, name));
        if (v.kind == Operand::Kind::kImm) {
          f_.IntOp(dst, vm::IntOpKind::kAdd, v, Operand::Imm(0));
        } else {
          f_.Move(dst, static_cast<int32_t>(v.value));
        }
        return absl::OkStatus();
      }
      case ExprKind::kShapeExpr: {
        std::vector<Operand> dims;
        for (const tir::PrimExpr& d : e.as<relax::ShapeExprNode>()->values) {
          KILN_ASSIGN_OR_RETURN(Operand o, Prim(d, name));
          dims.push_back(o);
        }
        f_.SetDebugName(name);
        f_.MakeShape(dst, dims);
        return absl::OkStatus();
      }
      case ExprKind::kTuple: {
        std::vector<Operand> fields;
        for (const Expr& field : e.as<relax::TupleNode>()->fields) {
          KILN_ASSIGN_OR_RETURN(Operand o, ArgOperand(field, name));
          fields.push_back(o);
        }
        f_.SetDebugName(name);
        f_.CallBuiltin(dst, b_.DeclareBuiltin("kiln.tuple_make", "(any...) -> tuple"), fields);
        return absl::OkStatus();
      }
      case ExprKind::kTupleGetItem: {
        const auto* get = e.as<relax::TupleGetItemNode>();
        KILN_ASSIGN_OR_RETURN(Operand t, ArgOperand(get->tuple, name));
        f_.SetDebugName(name);
        f_.CallBuiltin(dst, b_.DeclareBuiltin("kiln.tuple_get", "(tuple, int) -> any"), {t, Operand::Imm(get->index)});
        return absl::OkStatus();
      }
      case ExprKind::kCall:
        return EmitCall(*e.as<relax::CallNode>(), dst, name);
      case ExprKind::kGlobalVar: {  // a function used as a value: a closure capturing nothing
        const std::string& callee = e.as<relax::GlobalVarNode>()->name;
        const relax::IRModule::Entry* entry = module_.Find(callee);
        if (entry == nullptr || !entry->is_relax()) {
          return Error(name, "@", callee, " is not a Relax function of the module, so it cannot be used as a value",
                       " (PrimFuncs are called with R.call_tir)");
        }
        f_.SetDebugName(name);
        f_.MakeClosure(dst, b_.FunctionIndex(callee), {});
        return absl::OkStatus();
      }
      case ExprKind::kExternFunc:
        return Error(name, "R.extern(\"", e.as<relax::ExternFuncNode>()->symbol,
                     "\") can only be called here, not used as a value");
      default:
        return Error(name, "this kind of value has no VM lowering");
    }
  }

  absl::Status EmitCall(const relax::CallNode& call, int32_t dst, const std::string& name) {
    if (const auto* op = AsOp(call.op)) {
      if (op->name == "alloc_tensor") {
        KILN_ASSIGN_OR_RETURN(Operand shape, ArgOperand(call.args[0], name));
        auto it = call.attrs.find("dtype");
        if (it == call.attrs.end() || !std::holds_alternative<relax::DataType>(it->second)) {
          return Error(name, "alloc_tensor needs a dtype attribute");
        }
        f_.SetDebugName(name);
        f_.CallBuiltin(dst, b_.DeclareBuiltin("kiln.alloc_tensor", "(shape, int) -> tensor"),
                       {shape, Operand::Imm(vm::PackDType(ToDL(std::get<relax::DataType>(it->second))))});
        return absl::OkStatus();
      }
      if (op->name == "alloc_storage") {
        KILN_ASSIGN_OR_RETURN(Operand bytes, IntArg(call.args[0], name, "alloc_storage size"));
        f_.SetDebugName(name);
        f_.AllocStorage(dst, bytes);
        return absl::OkStatus();
      }
      if (op->name == "storage_tensor") {
        KILN_ASSIGN_OR_RETURN(Operand storage, ArgOperand(call.args[0], name));
        KILN_ASSIGN_OR_RETURN(Operand offset, IntArg(call.args[1], name, "storage_tensor offset"));
        KILN_ASSIGN_OR_RETURN(Operand shape, ArgOperand(call.args[2], name));
        auto it = call.attrs.find("dtype");
        if (it == call.attrs.end() || !std::holds_alternative<relax::DataType>(it->second)) {
          return Error(name, "storage_tensor needs a dtype attribute");
        }
        f_.SetDebugName(name);
        f_.AllocTensor(dst, static_cast<int32_t>(storage.value), offset, static_cast<int32_t>(shape.value),
                       ToDL(std::get<relax::DataType>(it->second)));
        return absl::OkStatus();
      }
      if (op->name == "call_tir_dps") return EmitKernelCall(call, dst, name);
      if (op->name == "shape_of") {
        KILN_ASSIGN_OR_RETURN(Operand t, ArgOperand(call.args[0], name));
        f_.SetDebugName(name);
        f_.CallBuiltin(dst, b_.DeclareBuiltin("kiln.shape_of", "(tensor) -> shape"), {t});
        return absl::OkStatus();
      }
      if (op->name == "tensor_to_shape") {  // a shape from data (relax/op/dynamic_shape.cc)
        KILN_ASSIGN_OR_RETURN(Operand t, ArgOperand(call.args[0], name));
        f_.SetDebugName(name);
        f_.CallBuiltin(dst, b_.DeclareBuiltin("kiln.tensor_to_shape", "(tensor) -> shape"), {t});
        return absl::OkStatus();
      }
      if (op->name == "reshape") {  // a view: legalization leaves it to the runtime
        KILN_ASSIGN_OR_RETURN(Operand t, ArgOperand(call.args[0], name));
        KILN_ASSIGN_OR_RETURN(Operand shape, ArgOperand(call.args[1], name));
        f_.SetDebugName(name);
        f_.CallBuiltin(dst, b_.DeclareBuiltin("kiln.reshape", "(tensor, shape) -> tensor"), {t, shape});
        return absl::OkStatus();
      }
      if (op->name == "call_builtin" || op->name == "call_pure_builtin") {
        const auto* callee = call.args.empty() ? nullptr : call.args[0].as<relax::ExternFuncNode>();
        if (callee == nullptr) return Error(name, "R.", op->name, " needs R.extern(\"name\") as its first argument");
        return EmitBuiltinCall(callee->symbol, call, 1, dst, name);
      }
      if (op->name == "print") {
        auto it = call.attrs.find("format");
        std::string format = it != call.attrs.end() && std::holds_alternative<std::string>(it->second)
                                 ? std::get<std::string>(it->second)
                                 : "";
        std::vector<Operand> args;
        int32_t text = f_.NewRegister();
        f_.LoadConst(text, b_.AddConstant(vm::Value::FromString(format)));
        args.push_back(Operand::Reg(text));
        for (const Expr& arg : call.args) {
          KILN_ASSIGN_OR_RETURN(Operand o, ArgOperand(arg, name));
          args.push_back(o);
        }
        f_.SetDebugName(name);
        f_.CallBuiltin(dst, b_.DeclareBuiltin("kiln.print", "(string, any...) -> none"), args);
        return absl::OkStatus();
      }
      if (op->name == "check_dims") return EmitCheckDims(call, dst, name);
      if (op->name == "check_slice_strides") {  // relax/op/dynamic_shape.cc: strides read on the host
        auto it = call.attrs.find("axes");
        const auto* axes = it != call.attrs.end() ? std::get_if<std::vector<int64_t>>(&it->second) : nullptr;
        if (axes == nullptr || call.args.size() != 1) return Error(name, "check_slice_strides needs strides and axes");
        KILN_ASSIGN_OR_RETURN(Operand strides, ArgOperand(call.args[0], name));
        int32_t shape = f_.NewRegister();
        f_.LoadConst(shape, b_.AddConstant(vm::Value::FromShape(*axes)));
        f_.SetDebugName(name);
        f_.CallBuiltin(dst, b_.DeclareBuiltin("kiln.check_slice_strides", "(tensor, shape) -> none"),
                       {strides, Operand::Reg(shape)});
        f_.Kill(shape);
        return absl::OkStatus();
      }
      if (op->name == "call_tir") return Error(name, "R.call_tir must be lowered first (pass lower_call_tir)");
      return Error(name, "operator R.", op->name,
                   " has no VM lowering (tensor operators must be legalized to R.call_tir; this one is not)");
    }
    if (const auto* gv = call.op.as<relax::GlobalVarNode>()) {
      const relax::IRModule::Entry* entry = module_.Find(gv->name);
      if (entry == nullptr || !entry->is_relax()) {
        return Error(name, "@", gv->name, " is not a Relax function of the module (call PrimFuncs with R.call_tir)");
      }
      std::vector<Operand> args;
      for (const Expr& arg : call.args) {
        KILN_ASSIGN_OR_RETURN(Operand o, ArgOperand(arg, name));
        args.push_back(o);
      }
      f_.SetDebugName(name);
      f_.CallFunction(dst, b_.FunctionIndex(gv->name), args);
      return absl::OkStatus();
    }
    if (const auto* callee = call.op.as<relax::ExternFuncNode>()) return EmitBuiltinCall(callee->symbol, call, 0, dst, name);
    if (call.op.as<relax::VarNode>() != nullptr) {  // a closure held in a variable
      KILN_ASSIGN_OR_RETURN(Operand closure, ArgOperand(call.op, name));
      std::vector<Operand> args;
      for (const Expr& arg : call.args) {
        KILN_ASSIGN_OR_RETURN(Operand o, ArgOperand(arg, name));
        args.push_back(o);
      }
      f_.SetDebugName(name);
      f_.CallClosure(dst, static_cast<int32_t>(closure.value), args);
      return absl::OkStatus();
    }
    return Error(name, "this callee has no VM lowering (call a function of the module, a closure in a variable or R.extern)");
  }

  // A runtime builtin: arguments call.args[first..], the signature recorded for the loader
  // from their struct info and the call's.
  absl::Status EmitBuiltinCall(const std::string& builtin, const relax::CallNode& call, size_t first, int32_t dst,
                               const std::string& name) {
    vm::BuiltinSignature sig;
    std::vector<Operand> args;
    for (size_t i = first; i < call.args.size(); ++i) {
      const Expr& arg = call.args[i];
      KILN_ASSIGN_OR_RETURN(Operand o, ArgOperand(arg, name));
      sig.params.push_back(BuiltinTypeOf(arg.struct_info()));
      args.push_back(o);
    }
    sig.result = BuiltinTypeOf(call.struct_info());
    f_.SetDebugName(name);
    f_.CallBuiltin(dst, b_.DeclareBuiltin(builtin, sig.ToString()), args);
    return absl::OkStatus();
  }

  absl::Status EmitKernelCall(const relax::CallNode& call, int32_t dst, const std::string& name) {
    const auto* gv = call.args[0].as<relax::GlobalVarNode>();
    const auto* library = call.args[0].as<relax::ExternFuncNode>();
    auto kernel = gv == nullptr ? kernels_.end() : kernels_.find(gv->name);
    if (kernel == kernels_.end() && library == nullptr) return Error(name, "call_tir_dps callee is not a declared kernel");
    const auto* inputs = call.args[1].as<relax::TupleNode>();
    const auto* outputs = call.args[2].as<relax::TupleNode>();
    if (inputs == nullptr || outputs == nullptr) {
      return Error(name, "call_tir_dps needs literal input and output tuples");
    }
    std::vector<Operand> args;
    for (const Expr& in : inputs->fields) {
      KILN_ASSIGN_OR_RETURN(Operand o, ArgOperand(in, name));
      args.push_back(o);
    }
    std::vector<Operand> outs;
    for (const Expr& out : outputs->fields) {
      KILN_ASSIGN_OR_RETURN(Operand o, ArgOperand(out, name));
      outs.push_back(o);
      args.push_back(o);
    }
    if (call.args.size() > 3) {
      const auto* vars = call.args[3].as<relax::ShapeExprNode>();
      if (vars == nullptr) return Error(name, "call_tir_dps tir_vars must be a literal R.shape");
      for (const tir::PrimExpr& v : vars->values) {
        KILN_ASSIGN_OR_RETURN(Operand o, Prim(v, name));
        args.push_back(o);
      }
    }
    int32_t kernel_index = 0;
    if (library != nullptr) {
      // A library kernel (e.g. from dispatch_libraries) takes tensors only; the loader
      // resolves it by name in the runtime's registry and checks this signature.
      if (call.args.size() > 3) return Error(name, "library kernel '", library->symbol, "' takes no tir_vars");
      kernel_index = b_.DeclareKernel(library->symbol, std::string(args.size(), 't'), vm::KernelDecl::Source::kLibrary);
    } else {
      kernel_index = kernel->second;
    }
    const relax::IRModule::Entry* entry = gv == nullptr ? nullptr : module_.Find(gv->name);
    if (entry != nullptr && entry->prim_func() != nullptr) {
      size_t expected = KernelArgSignature(*entry->prim_func()).size();
      if (expected != args.size()) {
        return Error(name, "@", gv->name, " takes ", expected, " arguments, the call passes ", args.size(),
                     " (inputs, outputs, tir_vars)");
      }
    }
    f_.SetDebugName(name);
    f_.CallKernel(kernel_index, args);
    if (outs.size() == 1) {
      f_.Move(dst, static_cast<int32_t>(outs[0].value));
    } else {
      f_.CallBuiltin(dst, b_.DeclareBuiltin("kiln.tuple_make", "(any...) -> tuple"), outs);
    }
    return absl::OkStatus();
  }

  std::string name_;
  const relax::FunctionNode& fn_;
  vm::FunctionBuilder& f_;
  vm::ExecutableBuilder& b_;
  const relax::IRModule& module_;
  const std::map<std::string, int32_t>& kernels_;
  std::set<std::string> bound_;
  std::unordered_map<const relax::VarNode*, int32_t> reg_;
  std::unordered_map<const relax::VarNode*, int> last_use_;
  std::unordered_map<int, std::vector<const relax::VarNode*>> kills_at_;
  std::set<std::string> checked_bounds_;           // symbolic variables whose bounds are checked
  std::map<std::string, int32_t> name_constants_;  // variable name -> its string constant
  std::unordered_map<const relax::ConstantNode*, int32_t> constants_;
  int pos_ = 0;
};

}  // namespace

std::string KernelArgSignature(const tir::PrimFunc& func) {
  std::string sig;
  for (const tir::PrimFuncParam& p : func->params) {
    if (p.is_buffer()) {
      sig += 't';
    } else if (p.var->dtype().code() == tir::DataType::Code::kFloat) {
      sig += 'f';
    } else {
      sig += 'i';
    }
  }
  return sig;
}

absl::Status GenerateVmCode(const relax::IRModule& module, const std::map<std::string, int32_t>& kernels,
                            vm::ExecutableBuilder& builder) {
  // Declare every function first, so calls may go forward (and recurse).
  struct Pending {
    std::string name;
    const relax::FunctionNode* fn;
    vm::FunctionBuilder* builder;
    std::set<std::string> bound;
  };
  std::vector<Pending> pending;
  for (const relax::IRModule::Entry& entry : module.entries()) {
    const relax::FunctionNode* fn = entry.relax_function();
    if (fn == nullptr) continue;
    std::set<std::string> bound;
    std::vector<vm::ParamSpec> params;
    for (const relax::Var& p : fn->params) params.push_back(ParamSpecOf(p, &bound, builder));
    vm::FunctionBuilder& f = builder.AddFunction(entry.name, params);
    pending.push_back({entry.name, fn, &f, std::move(bound)});
  }
  for (Pending& p : pending) {
    FunctionCodegen gen(p.name, *p.fn, *p.builder, builder, module, kernels, std::move(p.bound));
    KILN_RETURN_IF_ERROR(gen.Run());
  }
  return absl::OkStatus();
}

}  // namespace kiln::codegen
