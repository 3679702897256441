// The call forms (DESIGN.md §3) and other structural operators.
//
// call_tir (callee: GlobalVar of a PrimFunc, args: Tuple, [tir_vars: Shape]). Pure:
//   destination-passing, the caller allocates the outputs. The result struct info is the
//   call's single sinfo_args entry (required): a Tensor or a Tuple of Tensors, each with a
//   known ndim. tir_vars carries extra symbolic values the PrimFunc needs.
// call_dps_library (callee: ExternFunc, args: Tuple). Pure, destination-passing; result as
//   call_tir.
// call_builtin (callee: ExternFunc, args...). IMPURE (a builtin may have side effects). The
//   result is sinfo_args[0] when given (at most one entry), else Object.
// call_pure_builtin (callee: ExternFunc, args...). As call_builtin but PURE: for builtins that
//   only compute their result from their arguments (the string operators,
//   builtins/string_builtins.cc), so a dataflow block may hold the call and dead code
//   elimination may drop it.
// shape_of (data: Tensor) -> Shape(data.shape), or Shape(ndim=...) when only the rank is
//   known. Pure.
// print (values...), attribute format (string, optional): as many "{}" as values, or none
//   (the values follow the text). IMPURE; returns Object.
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::Status CheckDpsResult(const CallNode& call, const StructInfo& sinfo) {
  auto check_tensor = [&](const StructInfo& s) -> absl::Status {
    const auto* t = s.defined() ? s.as<TensorStructInfoNode>() : nullptr;
    if (t == nullptr) {
      return OpError(call, "outputs must be Tensors, got ", ToString(s));
    }
    if (t->ndim == kUnknownNdim) {
      return OpError(call, "output ", ToString(s),
                     " must have a known ndim (the caller allocates it)");
    }
    return absl::OkStatus();
  };
  if (const auto* tuple = sinfo.as<TupleStructInfoNode>()) {
    for (const StructInfo& field : tuple->fields) KILN_RETURN_IF_ERROR(check_tensor(field));
    return absl::OkStatus();
  }
  return check_tensor(sinfo);
}

absl::StatusOr<StructInfo> InferDpsCall(const CallNode& call, ExprKind callee_kind,
                                        const char* callee_what) {
  if (call.args[0].kind() != callee_kind) {
    return OpError(call, "argument 0 must be ", callee_what);
  }
  if (call.args[1].struct_info().as<TupleStructInfoNode>() == nullptr) {
    return OpError(call, "argument 1 must be a Tuple of arguments, got ",
                   ToString(call.args[1].struct_info()));
  }
  if (call.args.size() > 2) KILN_RETURN_IF_ERROR(ShapeArg(call, 2, "tir_vars").status());
  if (call.sinfo_args.size() != 1) {
    return OpError(call, "needs exactly one output struct info (sinfo_args), got ",
                   call.sinfo_args.size());
  }
  KILN_RETURN_IF_ERROR(CheckDpsResult(call, call.sinfo_args[0]));
  return call.sinfo_args[0];
}

absl::StatusOr<StructInfo> InferCallBuiltin(const CallNode& call, tir::Analyzer&) {
  if (call.args[0].kind() != ExprKind::kExternFunc) {
    return OpError(call, "argument 0 must be an ExternFunc");
  }
  if (call.sinfo_args.size() > 1) {
    return OpError(call, "takes at most one result struct info (sinfo_args), got ",
                   call.sinfo_args.size());
  }
  if (call.sinfo_args.empty()) return ObjectSInfo();
  if (!call.sinfo_args[0].defined()) return OpError(call, "result struct info is undefined");
  return call.sinfo_args[0];
}

absl::StatusOr<StructInfo> InferShapeOf(const CallNode& call, tir::Analyzer& analyzer) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* data, TensorArg(call, 0, "data"));
  if (data->shape) return ShapeSInfo(SimplifyDims(*data->shape, analyzer));
  return ShapeSInfoOfNdim(data->ndim);
}

absl::StatusOr<StructInfo> InferPrint(const CallNode& call, tir::Analyzer&) {
  auto it = call.attrs.find("format");
  if (it == call.attrs.end()) return ObjectSInfo();
  const std::string* format = std::get_if<std::string>(&it->second);
  if (format == nullptr) return OpError(call, "attribute 'format' must be a string");
  // kiln.print fills the "{}"s left to right; one too many would print "{}" itself and one
  // too few would tack the value on at the end, both a miscounted format. A format without
  // any is a label that the values follow.
  size_t placeholders = 0;
  for (size_t at = format->find("{}"); at != std::string::npos; at = format->find("{}", at + 2)) ++placeholders;
  if (placeholders > 0 && placeholders != call.args.size()) {
    return OpError(call, "format \"", *format, "\" has ", placeholders, " {} for ", call.args.size(),
                   call.args.size() == 1 ? " value" : " values");
  }
  return ObjectSInfo();
}

}  // namespace

void RegisterCallOps(OpRegistry& registry) {
  auto with_out_sinfo = [](OpInfo info) {
    info.takes_out_sinfo = true;
    return info;
  };
  registry.Register(with_out_sinfo({"call_tir", 2, 3, true, {}, [](const CallNode& call, tir::Analyzer&) {
                                      return InferDpsCall(call, ExprKind::kGlobalVar, "a GlobalVar (a PrimFunc)");
                                    }}));
  registry.Register(with_out_sinfo({"call_dps_library", 2, 2, true, {}, [](const CallNode& call, tir::Analyzer&) {
                                      return InferDpsCall(call, ExprKind::kExternFunc, "an ExternFunc");
                                    }}));
  registry.Register(with_out_sinfo({"call_builtin", 1, -1, false, {}, InferCallBuiltin}));
  registry.Register(with_out_sinfo({"call_pure_builtin", 1, -1, true, {}, InferCallBuiltin}));
  registry.Register({"shape_of", 1, 1, true, {}, InferShapeOf});
  registry.Register({"print", 0, -1, false, {"format"}, InferPrint});
}

}  // namespace kiln::relax::op
