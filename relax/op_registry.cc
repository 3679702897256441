#include "relax/op_registry.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "support/check.h"
#include "support/nearest_name.h"
#include "support/status_macros.h"

namespace kiln::relax {

const OpRegistry& OpRegistry::Global() {
  static const OpRegistry* const registry = [] {
    auto* r = new OpRegistry();
    op::RegisterElementwiseOps(*r);
    op::RegisterMatmulOps(*r);
    op::RegisterManipulateOps(*r);
    op::RegisterReduceOps(*r);
    op::RegisterNnOps(*r);
    op::RegisterNormalizationOps(*r);
    op::RegisterResizeOps(*r);
    op::RegisterCreateOps(*r);
    op::RegisterCallOps(*r);
    op::RegisterLoweredOps(*r);
    op::RegisterQuantizeOps(*r);
    op::RegisterPositionalOps(*r);
    op::RegisterCheckOps(*r);
    op::RegisterIndexingOps(*r);
    op::RegisterRearrangeOps(*r);
    op::RegisterSortOps(*r);
    op::RegisterEinsumOps(*r);
    op::RegisterDynamicShapeOps(*r);
    std::sort(r->ops_.begin(), r->ops_.end(),
              [](const OpInfo& a, const OpInfo& b) { return a.name < b.name; });
    for (size_t i = 1; i < r->ops_.size(); ++i) {
      KILN_CHECK(r->ops_[i - 1].name != r->ops_[i].name)
          << "operator registered twice: " << r->ops_[i].name;
    }
    op::RegisterElementwiseLegalize(*r);
    op::RegisterMatmulLegalize(*r);
    op::RegisterManipulateLegalize(*r);
    op::RegisterReduceLegalize(*r);
    op::RegisterNnLegalize(*r);
    op::RegisterNormalizationLegalize(*r);
    op::RegisterResizeLegalize(*r);
    op::RegisterCreateLegalize(*r);
    op::RegisterQuantizeLegalize(*r);
    op::RegisterPositionalLegalize(*r);
    op::RegisterIndexingLegalize(*r);
    op::RegisterRearrangeLegalize(*r);
    op::RegisterSortLegalize(*r);
    op::RegisterEinsumLegalize(*r);
    op::RegisterDynamicShapeLegalize(*r);
    return r;
  }();
  return *registry;
}

const OpInfo* OpRegistry::Find(std::string_view name) const {
  auto it = std::lower_bound(ops_.begin(), ops_.end(), name,
                             [](const OpInfo& op, std::string_view n) { return op.name < n; });
  if (it == ops_.end() || it->name != name) return nullptr;
  return &*it;
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(ops_.size());
  for (const OpInfo& op : ops_) names.push_back(op.name);
  return names;
}

void OpRegistry::Register(OpInfo info) {
  KILN_CHECK(info.infer != nullptr) << info.name;
  ops_.push_back(std::move(info));
}

void OpRegistry::SetLegalize(std::string_view name, LegalizeFn legalize) {
  auto it = std::lower_bound(ops_.begin(), ops_.end(), name,
                             [](const OpInfo& op, std::string_view n) { return op.name < n; });
  KILN_CHECK(it != ops_.end() && it->name == name) << "legalization for unknown operator " << name;
  it->legalize = std::move(legalize);
}

void OpRegistry::SetLegalize(std::string_view name, KernelLegalizeFn legalize) {
  SetLegalize(name, LegalizeFn([kernel = legalize](LegalizeContext& context,
                                                   const CallNode& call) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(tir::PrimFunc func, kernel(call));
    return op::CallKernel(context, call, std::move(func));
  }));
  auto it = std::lower_bound(ops_.begin(), ops_.end(), name,
                             [](const OpInfo& op, std::string_view n) { return op.name < n; });
  it->legalize_kernel = std::move(legalize);
}

std::string OpRegistry::UnknownOperatorMessage(std::string_view name) const {
  // Other frameworks' names for Kiln's operators (PyTorch, NumPy, ONNX, TVM), for users who
  // write what they know.
  static constexpr std::pair<std::string_view, std::string_view> kOtherNames[] = {
      {"transpose", "permute_dims"}, {"permute", "permute_dims"}, {"cat", "concat"},
      {"concatenate", "concat"},     {"view", "reshape"},         {"mul", "multiply"},
      {"sub", "subtract"},           {"div", "divide"},           {"pow", "power"},
      {"neg", "negative"},           {"mm", "matmul"},            {"bmm", "matmul"},
      {"dot", "matmul"},             {"gather", "take"},          {"unsqueeze", "expand_dims"},
      {"rmsnorm", "rms_norm"},       {"layernorm", "layer_norm"},
  };
  std::string message = "unknown operator '" + std::string(name) + "'";
  for (const auto& [other, kiln_name] : kOtherNames) {
    if (name == other && Find(kiln_name) != nullptr) return message + " (Kiln calls it '" + std::string(kiln_name) + "')";
  }
  const std::vector<std::string> names = Names();
  return message + support::DidYouMean(name, names);
}

absl::StatusOr<StructInfo> InferCallStructInfo(const CallNode& call, tir::Analyzer& analyzer) {
  const auto* op = call.op.defined() ? call.op.as<OpNode>() : nullptr;
  if (op == nullptr) return absl::InvalidArgumentError("call's callee is not an operator");
  const OpInfo* info = OpRegistry::Global().Find(op->name);
  if (info == nullptr)
    return absl::InvalidArgumentError(OpRegistry::Global().UnknownOperatorMessage(op->name));
  const int nargs = static_cast<int>(call.args.size());
  if (nargs < info->min_args || (info->max_args >= 0 && nargs > info->max_args)) {
    std::string expected;
    if (info->max_args == info->min_args) {
      expected = absl::StrCat(info->min_args);
    } else if (info->max_args < 0) {
      expected = absl::StrCat("at least ", info->min_args);
    } else {
      expected = absl::StrCat(info->min_args, " to ", info->max_args);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        op->name, ": expects ", expected, " argument",
        (info->max_args < 0 ? info->min_args : info->max_args) == 1 ? "" : "s", ", got ", nargs));
  }
  if (!call.sinfo_args.empty() && !info->takes_out_sinfo) {
    return absl::InvalidArgumentError(absl::StrCat(op->name,
                                                   ": takes no out_sinfo: its result's struct info is inferred "
                                                   "(annotate the binding with ",
                                                   ToString(call.sinfo_args[0]), " to check it)"));
  }
  for (const auto& [name, value] : call.attrs) {
    if (std::find(info->attr_names.begin(), info->attr_names.end(), name) ==
        info->attr_names.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          op->name, ": unknown attribute '", name, "' (accepted: ",
          info->attr_names.empty() ? "none" : absl::StrJoin(info->attr_names, ", "), ")"));
    }
  }
  for (int i = 0; i < nargs; ++i) {
    if (!call.args[static_cast<size_t>(i)].defined()) {
      return absl::InvalidArgumentError(absl::StrCat(op->name, ": argument ", i, " is missing"));
    }
    // Callees passed as arguments (call_tir's GlobalVar, call_builtin's ExternFunc) need no
    // struct info; the ops check their kind.
    const ExprKind kind = call.args[static_cast<size_t>(i)].kind();
    const bool callee =
        kind == ExprKind::kGlobalVar || kind == ExprKind::kExternFunc || kind == ExprKind::kOp;
    if (!callee && !call.args[static_cast<size_t>(i)].struct_info().defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat(op->name, ": argument ", i, " has no struct info (call is not normalized)"));
    }
  }
  return info->infer(call, analyzer);
}

}  // namespace kiln::relax
