// check_dims (lhs: Prim int, rhs: Prim int), attributes relation (string, required: "equal",
// "at_most" or "divisible") and message (string, required). At run time: fails with
// `message`, its first "{}" replaced by lhs's value and its second by rhs's, unless
// lhs == rhs, lhs <= rhs or lhs % rhs == 0 respectively. Returns Object (nothing).
//
// The pass insert_shape_checks (relax/transform/insert_shape_checks.h) emits one per
// relation between symbolic dims that an operator's inference assumed without proving it
// (relax/op/assumed_relations.h). The op is pure - it changes no state, so it may sit in a
// dataflow block and in a pure function - but it is kept_when_unused: dead-code
// elimination never drops it. VM codegen lowers it to the builtin kiln.check_dims_<relation>.
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

absl::Status StringAttr(const CallNode& call, const char* name) {
  auto it = call.attrs.find(name);
  if (it == call.attrs.end() || !std::holds_alternative<std::string>(it->second)) {
    return OpError(call, "attribute '", name, "' is required and must be a string");
  }
  return absl::OkStatus();
}

absl::StatusOr<StructInfo> InferCheckDims(const CallNode& call, tir::Analyzer&) {
  for (size_t i = 0; i < 2; ++i) {
    const StructInfo& sinfo = call.args[i].struct_info();
    const auto* prim = sinfo.defined() ? sinfo.as<PrimStructInfoNode>() : nullptr;
    if (prim == nullptr || !prim->dtype.is_integer()) {
      return OpError(call, i == 0 ? "lhs" : "rhs", " must be an integer Prim, got ", ToString(sinfo));
    }
  }
  KILN_RETURN_IF_ERROR(StringAttr(call, "relation"));
  KILN_RETURN_IF_ERROR(StringAttr(call, "message"));
  const std::string& relation = std::get<std::string>(call.attrs.at("relation"));
  if (relation != "equal" && relation != "at_most" && relation != "divisible") {
    return OpError(call, "attribute 'relation' must be \"equal\", \"at_most\" or \"divisible\", got \"", relation,
                   "\"");
  }
  return ObjectSInfo();
}

}  // namespace

void RegisterCheckOps(OpRegistry& registry) {
  OpInfo info{"check_dims", 2, 2, true, {"relation", "message"}, InferCheckDims};
  info.kept_when_unused = true;
  registry.Register(std::move(info));
}

}  // namespace kiln::relax::op
