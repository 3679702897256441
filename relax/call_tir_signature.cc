// CheckCallTirSignature (relax/call_tir_signature.h): the call's values are laid against the
// parameters in the order the kernel receives them (vm_codegen: inputs, outputs, tir_vars).
#include "relax/call_tir_signature.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "relax/struct_info.h"

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

}  // namespace

absl::Status CheckCallTirSignature(const CallNode& call, const tir::PrimFunc& callee, const std::string& callee_name) {
  if (call.args.size() < 2 || call.sinfo_args.size() != 1) return absl::OkStatus();  // inference says why
  const std::string who = absl::StrCat("call_tir @", callee_name);
  // Each value the kernel receives, with how the error names it.
  struct Passed {
    std::string what;
    StructInfo sinfo;  // undefined for a tir_var
  };
  std::vector<Passed> passed;
  const auto* input_exprs = call.args[1].as<TupleNode>();
  std::vector<StructInfo> inputs = Fields(call.args[1].struct_info());
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string what = absl::StrCat("input ", i);
    if (input_exprs != nullptr && i < input_exprs->fields.size()) {
      if (const auto* v = input_exprs->fields[i].as<VarNode>()) absl::StrAppend(&what, " '", v->name_hint, "'");
    }
    passed.push_back({what, inputs[i]});
  }
  std::vector<StructInfo> outputs = Fields(call.sinfo_args[0]);
  for (size_t i = 0; i < outputs.size(); ++i) passed.push_back({absl::StrCat("output ", i), outputs[i]});
  size_t tir_vars = 0;
  if (call.args.size() > 2) {
    if (const auto* shape = call.args[2].as<ShapeExprNode>()) {
      tir_vars = shape->values.size();
    } else if (const auto* s = call.args[2].struct_info().as<ShapeStructInfoNode>(); s != nullptr && s->ndim >= 0) {
      tir_vars = static_cast<size_t>(s->ndim);
    } else {
      return absl::OkStatus();  // a count known only at run time
    }
  }
  for (size_t i = 0; i < tir_vars; ++i) passed.push_back({absl::StrCat("tir_var ", i), StructInfo()});

  const std::vector<tir::PrimFuncParam>& params = callee->params;
  if (passed.size() != params.size()) {
    auto count = [](size_t n, const char* what) { return absl::StrCat(n, " ", what, n == 1 ? "" : "s"); };
    return absl::InvalidArgumentError(absl::StrCat(who, ": the PrimFunc takes ", count(params.size(), "parameter"),
                                                   ", the call passes ", passed.size(), " (", count(inputs.size(), "input"),
                                                   ", ", count(outputs.size(), "output"), ", ",
                                                   count(tir_vars, "tir_var"), ")"));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const tir::PrimFuncParam& param = params[i];
    const Passed& p = passed[i];
    std::string param_text = param.is_buffer()
                                 ? absl::StrCat("parameter ", i, " '", param.buffer->name, "' of @", callee_name, " is ",
                                                BufferText(param.buffer))
                                 : absl::StrCat("parameter ", i, " '", param.var.name(), "' of @", callee_name,
                                                " is a scalar ", param.var.dtype().ToString());
    std::string passed_text = p.sinfo.defined() ? absl::StrCat(p.what, " is ", ToString(p.sinfo)) : p.what;
    const auto* tensor = p.sinfo.defined() ? p.sinfo.as<TensorStructInfoNode>() : nullptr;
    if (!param.is_buffer()) {
      if (tensor != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": ", passed_text, ", but ", param_text));
      }
      continue;  // a scalar: a Prim input or a tir_var, checked when it is compiled
    }
    if (tensor == nullptr) {
      std::string kind = p.sinfo.defined() ? passed_text : absl::StrCat(p.what, " is a symbolic value");
      return absl::InvalidArgumentError(absl::StrCat(who, ": ", kind, ", but ", param_text));
    }
    std::vector<std::string> differences;
    if (tensor->ndim != kUnknownNdim && tensor->ndim != param.buffer.ndim()) {
      differences.push_back(absl::StrCat("rank ", tensor->ndim, ", not ", param.buffer.ndim()));
    }
    if (tensor->dtype && *tensor->dtype != param.buffer->dtype) {
      differences.push_back(
          absl::StrCat("dtype ", tensor->dtype->ToString(), ", not ", param.buffer->dtype.ToString()));
    }
    if (!differences.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": ", passed_text, ", but ", param_text, ": ", absl::StrJoin(differences, "; ")));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::relax
