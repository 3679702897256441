// CheckCallTirSignature (relax/call_tir_signature.h): the call's values are laid against the
// parameters in the order the kernel receives them (vm_codegen: inputs, outputs, tir_vars).
// Dims follow the kernel's own argument check (tir/transform/make_kernel_abi): a buffer dim
// that is a bare variable takes its value from the first argument that has it, every later
// one must equal it, and a dim that is an expression must equal its value.
#include "relax/call_tir_signature.h"

#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "relax/op/op_common.h"
#include "relax/struct_info.h"
#include "tir/stmt_functor.h"

namespace kiln::relax {
namespace {

// A buffer parameter as the text format declares it: `Buffer((m,), float32)`.
std::string BufferText(const tir::Buffer& buffer) {
  std::vector<std::string> dims;
  for (const tir::PrimExpr& d : buffer->shape) dims.push_back(tir::ToString(d));
  return absl::StrCat("Buffer((", absl::StrJoin(dims, ", "), dims.size() == 1 ? "," : "", "), ",
                      buffer->dtype.ToString(), ")");
}

std::vector<StructInfo> Fields(const StructInfo& sinfo) {
  if (!sinfo.defined()) return {};
  if (const auto* tuple = sinfo.as<TupleStructInfoNode>()) return tuple->fields;
  return {sinfo};
}

// Where a PrimFunc variable got its value: "input 0 'x' dim 1" or "tir_var 0".
struct VarValue {
  tir::PrimExpr value;
  std::string from;
};

// Binds `var` to `value` (passed as `from`) unless it is bound already; then returns the
// earlier binding when the two certainly differ. Values of another dtype than the variable (an
// int32 shape variable) are not bound: comparing them would need casts, and the kernel still
// checks them when it runs.
const VarValue* BindOrConflict(const tir::VarNode* var, const tir::PrimExpr& value, const std::string& from,
                              std::unordered_map<const tir::VarNode*, VarValue>& bound, tir::Analyzer& analyzer) {
  if (value.dtype() != var->dtype()) return nullptr;
  auto [it, inserted] = bound.emplace(var, VarValue{value, from});
  if (inserted || !op::DimsDiffer(it->second.value, value, analyzer)) return nullptr;
  return &it->second;
}

// Why `value` certainly lies outside the bounds `var` declares (`where n <= 4`), or "".
std::string OutsideDeclaredBounds(const tir::VarNode* var, const tir::PrimExpr& value, tir::Analyzer& analyzer) {
  if (value.dtype() != var->dtype() || !value.dtype().is_integer() || !value.dtype().is_scalar()) return "";
  if (var->upper_bound && *var->upper_bound != tir::IntBound::kPosInf &&
      analyzer.CanProveLT(tir::IntImm(value.dtype(), *var->upper_bound), value)) {
    return absl::StrCat("'", var->name, "' is declared at most ", *var->upper_bound);
  }
  if (var->lower_bound && *var->lower_bound > 0 &&
      analyzer.CanProveLT(value, tir::IntImm(value.dtype(), *var->lower_bound))) {
    return absl::StrCat("'", var->name, "' is declared at least ", *var->lower_bound);
  }
  return "";
}

}  // namespace

absl::Status CheckCallTirSignature(const CallNode& call, const tir::PrimFunc& callee, const std::string& callee_name,
                                   tir::Analyzer& analyzer) {
  if (call.args.size() < 2 || call.sinfo_args.size() != 1) return absl::OkStatus();  // inference says why
  const std::string who = absl::StrCat("call_tir @", callee_name);
  // Each value the kernel receives, with how the error names it.
  struct Passed {
    std::string what;
    StructInfo sinfo;     // undefined for a tir_var
    tir::PrimExpr value;  // a tir_var's value, when written out
  };
  std::vector<Passed> passed;
  const auto* input_exprs = call.args[1].as<TupleNode>();
  std::vector<StructInfo> inputs = Fields(call.args[1].struct_info());
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string what = absl::StrCat("input ", i);
    if (input_exprs != nullptr && i < input_exprs->fields.size()) {
      if (const auto* v = input_exprs->fields[i].as<VarNode>()) absl::StrAppend(&what, " '", v->name_hint, "'");
    }
    passed.push_back({what, inputs[i], tir::PrimExpr()});
  }
  std::vector<StructInfo> outputs = Fields(call.sinfo_args[0]);
  for (size_t i = 0; i < outputs.size(); ++i) {
    passed.push_back({absl::StrCat("output ", i), outputs[i], tir::PrimExpr()});
  }
  size_t tir_vars = 0;
  std::vector<tir::PrimExpr> tir_var_values;
  if (call.args.size() > 2) {
    if (const auto* shape = call.args[2].as<ShapeExprNode>()) {
      tir_vars = shape->values.size();
      tir_var_values = shape->values;
    } else if (const auto* s = call.args[2].struct_info().as<ShapeStructInfoNode>(); s != nullptr && s->ndim >= 0) {
      tir_vars = static_cast<size_t>(s->ndim);
      if (s->values) tir_var_values = *s->values;
    } else {
      return absl::OkStatus();  // a count known only at run time
    }
  }
  for (size_t i = 0; i < tir_vars; ++i) {
    passed.push_back({absl::StrCat("tir_var ", i), StructInfo(),
                      i < tir_var_values.size() ? tir_var_values[i] : tir::PrimExpr()});
  }

  const std::vector<tir::PrimFuncParam>& params = callee->params;
  if (passed.size() != params.size()) {
    auto count = [](size_t n, const char* what) { return absl::StrCat(n, " ", what, n == 1 ? "" : "s"); };
    return absl::InvalidArgumentError(absl::StrCat(who, ": the PrimFunc takes ", count(params.size(), "parameter"),
                                                   ", the call passes ", passed.size(), " (", count(inputs.size(), "input"),
                                                   ", ", count(outputs.size(), "output"), ", ",
                                                   count(tir_vars, "tir_var"), ")"));
  }
  // "output 0 is Tensor((4, 8), float32), but parameter 1 'B' of @k is Buffer((4, 16), float32)".
  auto mismatch = [&](size_t i) {
    const tir::PrimFuncParam& param = params[i];
    const Passed& p = passed[i];
    std::string param_text = param.is_buffer()
                                 ? absl::StrCat("parameter ", i, " '", param.buffer->name, "' of @", callee_name, " is ",
                                                BufferText(param.buffer))
                                 : absl::StrCat("parameter ", i, " '", param.var.name(), "' of @", callee_name,
                                                " is a scalar ", param.var.dtype().ToString());
    std::string passed_value = p.sinfo.defined()   ? ToString(p.sinfo)
                               : p.value.defined() ? tir::ToString(p.value)
                                                   : "a symbolic value";
    std::string passed_text = absl::StrCat(p.what, " is ", passed_value);
    return absl::StrCat(who, ": ", passed_text, ", but ", param_text);
  };
  auto tensor_of = [&](size_t i) {
    return passed[i].sinfo.defined() ? passed[i].sinfo.as<TensorStructInfoNode>() : nullptr;
  };
  for (size_t i = 0; i < params.size(); ++i) {
    const tir::PrimFuncParam& param = params[i];
    const auto* tensor = tensor_of(i);
    if (!param.is_buffer()) {
      if (tensor != nullptr) return absl::InvalidArgumentError(mismatch(i));
      continue;  // a scalar: a Prim input or a tir_var, checked when it is compiled
    }
    if (tensor == nullptr) return absl::InvalidArgumentError(mismatch(i));
    std::vector<std::string> differences;
    if (tensor->ndim != kUnknownNdim && tensor->ndim != param.buffer.ndim()) {
      differences.push_back(absl::StrCat("rank ", tensor->ndim, ", not ", param.buffer.ndim()));
    }
    if (tensor->dtype && *tensor->dtype != param.buffer->dtype) {
      differences.push_back(
          absl::StrCat("dtype ", tensor->dtype->ToString(), ", not ", param.buffer->dtype.ToString()));
    }
    if (!differences.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(mismatch(i), ": ", absl::StrJoin(differences, "; ")));
    }
  }

  // Dims, as the kernel checks them: a bare variable takes the first value passed for it (a
  // dim or a scalar), then every dim that is a constant or an expression over bound
  // variables must not certainly differ from what is passed. Dims known only at run time,
  // and unknown shapes, are left to the kernel.
  std::unordered_map<const tir::VarNode*, VarValue> bound;
  auto conflict = [&](size_t i, const std::string& what, const tir::PrimExpr& value, const tir::VarNode* var,
                      const VarValue& earlier) {
    std::string got = what.empty() ? "" : absl::StrCat(what, " is ", tir::ToString(value), ", but ");
    return absl::InvalidArgumentError(absl::StrCat(mismatch(i), ": ", got, "'", var->name, "' is ",
                                                   tir::ToString(earlier.value), " (from ", earlier.from, ")"));
  };
  for (size_t i = 0; i < params.size(); ++i) {
    const tir::PrimFuncParam& param = params[i];
    if (!param.is_buffer()) {
      tir::PrimExpr value = passed[i].value;
      if (const auto* prim = passed[i].sinfo.defined() ? passed[i].sinfo.as<PrimStructInfoNode>() : nullptr) {
        value = prim->value;
      }
      if (!value.defined()) continue;
      if (const VarValue* earlier = BindOrConflict(param.var.get(), value, passed[i].what, bound, analyzer)) {
        return conflict(i, "", value, param.var.get(), *earlier);
      }
      if (std::string why = OutsideDeclaredBounds(param.var.get(), value, analyzer); !why.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(mismatch(i), ": ", why));
      }
      continue;
    }
    const auto* tensor = tensor_of(i);
    if (tensor == nullptr || !tensor->shape) continue;
    for (size_t d = 0; d < tensor->shape->size(); ++d) {
      const tir::PrimExpr& want = param.buffer->shape[d];
      const tir::PrimExpr& got = (*tensor->shape)[d];
      const std::string dim = absl::StrCat("dim ", d);
      if (const auto* var = want.as<tir::VarNode>()) {
        const std::string from = absl::StrCat(passed[i].what, " ", dim);
        if (const VarValue* earlier = BindOrConflict(var, got, from, bound, analyzer)) {
          return conflict(i, dim, got, var, *earlier);
        }
        if (std::string why = OutsideDeclaredBounds(var, got, analyzer); !why.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(mismatch(i), ": ", dim, " is ", tir::ToString(got), ", but ", why));
        }
      }
    }
  }
  tir::VarMap values;
  for (const auto& [var, binding] : bound) values.emplace(var, binding.value);
  for (size_t i = 0; i < params.size(); ++i) {
    const auto* tensor = params[i].is_buffer() ? tensor_of(i) : nullptr;
    if (tensor == nullptr || !tensor->shape) continue;
    for (size_t d = 0; d < tensor->shape->size(); ++d) {
      const tir::PrimExpr& want = params[i].buffer->shape[d];
      const tir::PrimExpr& got = (*tensor->shape)[d];
      if (want.as<tir::VarNode>() != nullptr) continue;
      tir::PrimExpr expected = analyzer.Simplify(tir::Substitute(want, values));
      if (expected.dtype() != got.dtype() || !op::DimsDiffer(expected, got, analyzer)) continue;
      std::string value = tir::ToString(expected);
      std::string text = tir::ToString(want);
      return absl::InvalidArgumentError(absl::StrCat(mismatch(i), ": dim ", d, " is ", tir::ToString(got), ", not ",
                                                     text, text == value ? "" : absl::StrCat(" = ", value)));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::relax
