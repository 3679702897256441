#include "tests/reference/reference_evaluator.h"

#include <pthread.h>

#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tests/reference/kernels.h"
#include "tests/reference/prim_eval.h"

namespace kiln::reference {
namespace {

using relax::ExprKind;
using relax::StructInfo;
using relax::StructInfoKind;

// Deep enough for recursive examples. With kEvaluatorStackBytes of stack the limit, not the
// stack, ends runaway recursion (an ASan build overflowed a default 8 MiB stack before 256).
constexpr int kMaxCallDepth = 256;
constexpr size_t kEvaluatorStackBytes = size_t{64} << 20;

// One Relax function invocation: its variables and symbolic variables.
struct Frame {
  std::string function;
  std::unordered_map<const relax::VarNode*, RefValue> vars;
  SymbolEnv symbols;
};

absl::Status Prefix(const absl::Status& status, const std::string& context) {
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

// Matching a value against struct info runs twice: a binding pass defines the symbolic
// variables that appear bare (`n`, not `n + 1`) and are still unbound, then a checking pass
// evaluates every dim, so `Tensor((n + 1, n))` works whatever the order.
class Matcher {
 public:
  Matcher(SymbolEnv& symbols, bool bind) : symbols_(symbols), bind_(bind) {}

  // In the binding pass mismatches are ignored (the checking pass reports them).
  absl::Status Match(const RefValue& v, const StructInfo& s) {
    if (!s.defined()) return absl::OkStatus();
    switch (s.kind()) {
      case StructInfoKind::kObject:
        return absl::OkStatus();
      case StructInfoKind::kPrim: {
        const auto* p = s.as<relax::PrimStructInfoNode>();
        if (v.kind() != RefValue::Kind::kPrim) return Mismatch("not a Prim");
        if (v.prim().dtype != p->dtype) return Mismatch("dtype differs");
        if (p->value.defined()) return MatchScalar(p->value, v.prim(), "value");
        return absl::OkStatus();
      }
      case StructInfoKind::kShape: {
        const auto* sh = s.as<relax::ShapeStructInfoNode>();
        if (v.kind() != RefValue::Kind::kShape) return Mismatch("not a Shape");
        return MatchDims(sh->values, sh->ndim, v.shape());
      }
      case StructInfoKind::kTensor: {
        const auto* t = s.as<relax::TensorStructInfoNode>();
        if (!v.is_tensor()) return Mismatch("not a Tensor");
        if (t->dtype && *t->dtype != v.tensor().dtype()) return Mismatch("dtype differs");
        return MatchDims(t->shape, t->ndim, v.tensor().shape());
      }
      case StructInfoKind::kTuple: {
        const auto* t = s.as<relax::TupleStructInfoNode>();
        if (v.kind() != RefValue::Kind::kTuple) return Mismatch("not a Tuple");
        if (v.fields().size() != t->fields.size()) return Mismatch("tuple size differs");
        for (size_t i = 0; i < t->fields.size(); ++i) {
          absl::Status st = Match(v.fields()[i], t->fields[i]);
          if (!st.ok()) return Prefix(st, absl::StrCat("field ", i));
        }
        return absl::OkStatus();
      }
      case StructInfoKind::kFunc:
        if (v.kind() != RefValue::Kind::kFunction) return Mismatch("not a function");
        return absl::OkStatus();
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Mismatch(const char* why) {
    return bind_ ? absl::OkStatus() : absl::InvalidArgumentError(why);
  }

  absl::Status MatchDims(const std::optional<std::vector<tir::PrimExpr>>& dims, int ndim,
                         const std::vector<int64_t>& actual) {
    if (ndim != relax::kUnknownNdim && static_cast<size_t>(ndim) != actual.size()) {
      return Mismatch("rank differs");
    }
    if (!dims) return absl::OkStatus();
    for (size_t k = 0; k < dims->size(); ++k) {
      KILN_RETURN_IF_ERROR(MatchScalar((*dims)[k], PrimScalar{DataType::Int64(), actual[k], 0.0},
                                       absl::StrCat("dim ", k)));
    }
    return absl::OkStatus();
  }

  absl::Status MatchScalar(const tir::PrimExpr& expr, const PrimScalar& actual, const std::string& what) {
    if (bind_) {
      const auto* var = expr.as<tir::VarNode>();
      if (var != nullptr && !symbols_.count(var)) symbols_[var] = CastScalar(actual, var->dtype());
      return absl::OkStatus();
    }
    KILN_ASSIGN_OR_RETURN(PrimScalar expected, EvalPrimExpr(expr, symbols_));
    bool equal = expected.dtype.is_floating() || actual.dtype.is_floating()
                     ? expected.AsDouble() == actual.AsDouble()
                     : expected.AsInt() == actual.AsInt();
    if (equal) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is ", RefValue::Prim(actual).TypeString(), " but ", tir::ToString(expr), " = ",
        RefValue::Prim(expected).TypeString()));
  }

  SymbolEnv& symbols_;
  bool bind_;
};

// Binds then checks; the error reads "expected <sinfo>, got <value> (<why>)".
absl::Status MatchValue(const RefValue& v, const StructInfo& s, SymbolEnv& symbols) {
  KILN_RETURN_IF_ERROR(Matcher(symbols, /*bind=*/true).Match(v, s));
  absl::Status st = Matcher(symbols, /*bind=*/false).Match(v, s);
  if (st.ok()) return st;
  return absl::Status(st.code(), absl::StrCat("expected ", relax::ToString(s), ", got ",
                                              v.TypeString(), " (", st.message(), ")"));
}

class Evaluator {
 public:
  explicit Evaluator(const relax::IRModule& module) : module_(module) {}

  absl::StatusOr<RefValue> CallFunction(const std::string& name, std::vector<RefValue> args) {
    const relax::IRModule::Entry* entry = module_.Find(name);
    if (entry == nullptr) return absl::NotFoundError(absl::StrCat("no function '", name, "' in the module"));
    const relax::FunctionNode* fn = entry->relax_function();
    if (fn == nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          "'", name, "' is a PrimFunc; the reference evaluator does not interpret TIR"));
    }
    if (depth_ >= kMaxCallDepth) {
      return absl::ResourceExhaustedError(absl::StrCat("function '", name, "': call depth exceeds ", kMaxCallDepth));
    }
    if (args.size() != fn->params.size()) {
      return absl::InvalidArgumentError(absl::StrCat("function '", name, "' takes ", fn->params.size(),
                                                     " arguments, got ", args.size()));
    }
    Frame frame;
    frame.function = name;
    // Bind every parameter's bare symbolic dims first so that checks may use any of them.
    for (size_t i = 0; i < args.size(); ++i) {
      KILN_RETURN_IF_ERROR(Matcher(frame.symbols, true).Match(args[i], fn->params[i]->struct_info()));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      absl::Status st = MatchValue(args[i], fn->params[i]->struct_info(), frame.symbols);
      if (!st.ok()) {
        return Prefix(st, absl::StrCat("function '", name, "', parameter '",
                                       fn->params[i].name_hint(), "'"));
      }
      frame.vars[fn->params[i].get()] = std::move(args[i]);
    }
    ++depth_;
    absl::StatusOr<RefValue> result = Eval(fn->body, frame);
    --depth_;
    if (!result.ok()) return result.status();
    absl::Status st = MatchValue(*result, fn->ret_struct_info, frame.symbols);
    if (!st.ok()) return Prefix(st, absl::StrCat("function '", name, "', return value"));
    return result;
  }

 private:
  absl::StatusOr<RefValue> Eval(const relax::Expr& e, Frame& f) {
    switch (e.kind()) {
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: {
        auto it = f.vars.find(e.as<relax::VarNode>());
        if (it == f.vars.end()) {
          return absl::InternalError(absl::StrCat("variable '", e.as<relax::VarNode>()->name_hint,
                                                  "' is used before it is defined"));
        }
        return it->second;
      }
      case ExprKind::kConstant: {
        const relax::ConstantData& d = e.as<relax::ConstantNode>()->data;
        if (!IsSupportedDType(d.dtype)) {
          return absl::UnimplementedError(absl::StrCat("constants of dtype ", d.dtype.ToString()));
        }
        if (d.is_external()) {
          return absl::UnimplementedError(absl::StrCat("external constant '", d.external_name, "' (no bytes here)"));
        }
        return RefValue(HostTensor::FromBytes(d.dtype, d.shape, *d.bytes));
      }
      case ExprKind::kShapeExpr: {
        std::vector<int64_t> dims;
        for (const tir::PrimExpr& v : e.as<relax::ShapeExprNode>()->values) {
          KILN_ASSIGN_OR_RETURN(PrimScalar s, EvalPrimExpr(v, f.symbols));
          dims.push_back(s.AsInt());
        }
        return RefValue::Shape(std::move(dims));
      }
      case ExprKind::kPrimValue: {
        KILN_ASSIGN_OR_RETURN(PrimScalar s, EvalPrimExpr(e.as<relax::PrimValueNode>()->value, f.symbols));
        return RefValue::Prim(s);
      }
      case ExprKind::kStringImm:
        return RefValue::String(e.as<relax::StringImmNode>()->value);
      case ExprKind::kTuple: {
        std::vector<RefValue> fields;
        for (const relax::Expr& field : e.as<relax::TupleNode>()->fields) {
          KILN_ASSIGN_OR_RETURN(RefValue v, Eval(field, f));
          fields.push_back(std::move(v));
        }
        return RefValue::Tuple(std::move(fields));
      }
      case ExprKind::kTupleGetItem: {
        const auto* t = e.as<relax::TupleGetItemNode>();
        KILN_ASSIGN_OR_RETURN(RefValue tuple, Eval(t->tuple, f));
        if (tuple.kind() != RefValue::Kind::kTuple) {
          return absl::InvalidArgumentError(absl::StrCat("indexing ", tuple.TypeString(), ", not a tuple"));
        }
        if (t->index < 0 || static_cast<size_t>(t->index) >= tuple.fields().size()) {
          return absl::InvalidArgumentError(absl::StrCat("tuple index ", t->index, " out of range for ",
                                                         tuple.TypeString()));
        }
        return tuple.fields()[static_cast<size_t>(t->index)];
      }
      case ExprKind::kCall:
        return EvalCall(*e.as<relax::CallNode>(), f);
      case ExprKind::kIf: {
        const auto* node = e.as<relax::IfNode>();
        KILN_ASSIGN_OR_RETURN(RefValue cond, Eval(node->condition, f));
        bool taken;
        if (cond.kind() == RefValue::Kind::kPrim) {
          taken = cond.prim().AsBool();
        } else if (cond.is_tensor() && cond.tensor().numel() == 1 && cond.tensor().ndim() == 0) {
          taken = cond.tensor().GetInt(0) != 0;
        } else {
          return absl::InvalidArgumentError(absl::StrCat("if condition is ", cond.TypeString(),
                                                         ", not a bool scalar"));
        }
        return Eval(taken ? node->true_branch : node->false_branch, f);
      }
      case ExprKind::kSeqExpr: {
        const auto* seq = e.as<relax::SeqExprNode>();
        for (const relax::BindingBlock& block : seq->blocks) {
          for (const relax::Binding& b : block.bindings) {
            KILN_RETURN_IF_ERROR(EvalBinding(b, f));
          }
        }
        return Eval(seq->body, f);
      }
      case ExprKind::kGlobalVar: {
        const std::string& name = e.as<relax::GlobalVarNode>()->name;
        if (module_.Find(name) == nullptr) {
          return absl::NotFoundError(absl::StrCat("no function '", name, "' in the module"));
        }
        return RefValue::Function(name);
      }
      case ExprKind::kFunction:
        return absl::UnimplementedError("local function definitions (closures) are not supported");
      case ExprKind::kOp:
        return absl::InvalidArgumentError(absl::StrCat("operator R.", e.as<relax::OpNode>()->name,
                                                       " used as a value"));
      case ExprKind::kExternFunc:
        return absl::UnimplementedError(absl::StrCat("extern function '", e.as<relax::ExternFuncNode>()->symbol,
                                                     "' (the reference evaluator has no runtime)"));
    }
    return absl::InternalError("unknown expression kind");
  }

  absl::Status EvalBinding(const relax::Binding& b, Frame& f) {
    const std::string context = absl::StrCat("function '", f.function, "', binding '", b.var.name_hint(), "'");
    absl::StatusOr<RefValue> value = Eval(b.value, f);
    if (!value.ok()) return Prefix(value.status(), context);
    if (b.is_match_cast()) {
      absl::Status st = MatchValue(*value, b.match_cast_sinfo, f.symbols);
      if (!st.ok()) return Prefix(st, absl::StrCat(context, ": match_cast"));
    }
    absl::Status st = MatchValue(*value, b.var->struct_info(), f.symbols);
    if (!st.ok()) {
      // The value is what the operator's semantics give; its struct info was inferred. Either
      // an assumption inference leaves to run time fails for these inputs (n vs m broadcast
      // with n = 1, m = 3), or inference is wrong; the evaluator cannot tell which.
      return absl::InvalidArgumentError(absl::StrCat(
          context, ": the value disagrees with the inferred struct info (a run-time condition of the "
          "operator fails, or inference is wrong): ", st.message()));
    }
    f.vars[b.var.get()] = *std::move(value);
    return absl::OkStatus();
  }

  absl::StatusOr<RefValue> EvalCall(const relax::CallNode& call, Frame& f) {
    std::vector<RefValue> args;
    const ExprKind callee = call.op.kind();
    if (callee == ExprKind::kOp) {
      const std::string& op = call.op.as<relax::OpNode>()->name;
      if (op == "call_tir" || op == "call_dps_library" || op == "call_builtin" || op == "call_pure_builtin" ||
          op == "print") {
        return absl::UnimplementedError(absl::StrCat(
            "R.", op, " is not supported: the reference evaluator interprets no TIR and has no runtime"));
      }
      Kernel kernel = FindKernel(op);
      if (kernel == nullptr) {
        return absl::UnimplementedError(absl::StrCat("no reference kernel for operator R.", op));
      }
      for (const relax::Expr& a : call.args) {
        KILN_ASSIGN_OR_RETURN(RefValue v, Eval(a, f));
        args.push_back(std::move(v));
      }
      return kernel(KernelCall{call, op, args});
    }
    if (callee == ExprKind::kExternFunc) {
      return absl::UnimplementedError(absl::StrCat("calling extern function '",
                                                   call.op.as<relax::ExternFuncNode>()->symbol,
                                                   "' (the reference evaluator has no runtime)"));
    }
    KILN_ASSIGN_OR_RETURN(RefValue fn, Eval(call.op, f));
    if (fn.kind() != RefValue::Kind::kFunction) {
      return absl::InvalidArgumentError(absl::StrCat("calling ", fn.TypeString(), ", not a function"));
    }
    for (const relax::Expr& a : call.args) {
      KILN_ASSIGN_OR_RETURN(RefValue v, Eval(a, f));
      args.push_back(std::move(v));
    }
    return CallFunction(fn.str(), std::move(args));
  }

  const relax::IRModule& module_;
  int depth_ = 0;
};

}  // namespace

absl::StatusOr<RefValue> Evaluate(const relax::IRModule& normalized_module, std::string_view function,
                                  std::vector<RefValue> args) {
  // The interpreter recurses once per Relax call level; it runs on a thread of its own with a
  // large stack so that kMaxCallDepth is reached before the stack ends, sanitizers included.
  struct Job {
    const relax::IRModule* module;
    std::string function;
    std::vector<RefValue> args;
    absl::StatusOr<RefValue> result;
  } job{&normalized_module, std::string(function), std::move(args), absl::UnknownError("not run")};
  auto run = [](void* p) -> void* {
    auto* j = static_cast<Job*>(p);
    j->result = Evaluator(*j->module).CallFunction(j->function, std::move(j->args));
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kEvaluatorStackBytes);
  pthread_t thread;
  int error = pthread_create(&thread, &attr, run, &job);
  pthread_attr_destroy(&attr);
  if (error != 0) return absl::ResourceExhaustedError("cannot start the evaluator's thread");
  pthread_join(thread, nullptr);
  return std::move(job.result);
}

}  // namespace kiln::reference
