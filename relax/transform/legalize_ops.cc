#include "relax/transform/legalize_ops.h"

#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/expr_functor.h"
#include "relax/op_registry.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "tir/structural_equal.h"
#include "tir/structural_hash.h"

namespace kiln::relax {
namespace {

class Legalizer : public ExprMutator {
 public:
  explicit Legalizer(IRModule* module) : module_(module) {}

  absl::Status status() const { return status_; }
  void set_function(std::string name) { function_ = std::move(name); }

  BindingBlock VisitBindingBlock(const BindingBlock& block) override {
    BindingBlock out;
    out.dataflow = block.dataflow;
    for (const Binding& binding : block.bindings) {
      Binding visited = VisitBinding(binding);
      // A match_cast's value may be an op call too; the cast still checks the kernel's result.
      if (status_.ok()) {
        absl::StatusOr<Expr> lowered = Lower(visited, out);
        if (!lowered.ok()) {
          status_ = absl::Status(lowered.status().code(),
                                 absl::StrCat("function '", function_, "', binding '",
                                              visited.var.name_hint(), "': ", lowered.status().message()));
        } else {
          visited.value = *lowered;
        }
      }
      out.bindings.push_back(std::move(visited));
    }
    return out;
  }

 private:
  // The call_tir replacing binding.value, or the value itself when it is not a tensor op.
  absl::StatusOr<Expr> Lower(const Binding& binding, BindingBlock& out) {
    const auto* call = binding.value.as<CallNode>();
    if (call == nullptr) return binding.value;
    const auto* op = call->op.as<OpNode>();
    if (op == nullptr) return binding.value;
    const OpInfo* info = OpRegistry::Global().Find(op->name);
    if (info == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown operator '", op->name, "'"));
    if (!info->legalize) return binding.value;
    if (!call->struct_info().defined()) {
      return absl::InvalidArgumentError(absl::StrCat(op->name, ": the call has no struct info (normalize first)"));
    }
    KILN_ASSIGN_OR_RETURN(tir::PrimFunc func, info->legalize(*call));
    // Operands, flattened the way the legalizations number their buffers.
    std::vector<Expr> operands;
    for (const Expr& arg : call->args) {
      const StructInfo& sinfo = arg.struct_info();
      if (!sinfo.defined()) continue;
      if (sinfo.kind() == StructInfoKind::kTensor) {
        operands.push_back(arg);
      } else if (const auto* tuple_sinfo = sinfo.as<TupleStructInfoNode>()) {
        if (const auto* tuple = arg.as<TupleNode>()) {
          for (const Expr& field : tuple->fields) operands.push_back(field);
          continue;
        }
        for (size_t i = 0; i < tuple_sinfo->fields.size(); ++i) {
          Var field(absl::StrCat(binding.var.name_hint(), "_in", i), tuple_sinfo->fields[i], out.dataflow);
          out.bindings.push_back(
              Binding{field, TupleGetItem(arg, static_cast<int>(i), tuple_sinfo->fields[i]), StructInfo()});
          operands.push_back(field);
        }
      }
    }
    std::vector<StructInfo> field_sinfos;
    for (const Expr& e : operands) field_sinfos.push_back(e.struct_info());
    // Scalar parameters are symbolic variables of this call's scope (the kernel could not
    // bind them from shapes): they travel as tir_vars. Read them before deduplication,
    // which may substitute an equal kernel with other variables.
    std::vector<PrimExpr> tir_vars;
    for (const tir::PrimFuncParam& param : func->params) {
      if (!param.is_buffer()) tir_vars.push_back(param.var);
    }
    const std::string name = AddKernel(op->name, std::move(func));
    Expr callee = GlobalVar(name, OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false));
    Expr args = Tuple(std::move(operands), TupleSInfo(std::move(field_sinfos)));
    std::vector<Expr> call_args = {callee, args};
    if (!tir_vars.empty()) call_args.push_back(ShapeExpr(tir_vars));
    return Call(Op("call_tir"), std::move(call_args), {}, {call->struct_info()}, call->struct_info());
  }

  std::string AddKernel(const std::string& base, tir::PrimFunc func) {
    const uint64_t hash = tir::StructuralHash(func);
    for (const auto& [existing, name] : kernels_[hash]) {
      if (tir::StructuralEqual(existing, func)) return name;
    }
    // Module names only: the executable builder gives kernels symbols that cannot clash with
    // the C library (codegen/build_executable.cc), so `exp` is a fine name here.
    std::string name = base;
    for (int i = 1; module_->Find(name) != nullptr; ++i) name = absl::StrCat(base, i);
    KILN_CHECK(module_->Add(name, func).ok());
    kernels_[hash].emplace_back(std::move(func), name);
    return name;
  }

  IRModule* module_;
  std::string function_;
  absl::Status status_;
  std::unordered_map<uint64_t, std::vector<std::pair<tir::PrimFunc, std::string>>> kernels_;
};

}  // namespace

absl::StatusOr<IRModule> LegalizeOps(const IRModule& module) {
  IRModule result = module;
  Legalizer legalizer(&result);
  for (const IRModule::Entry& entry : module.entries()) {
    if (!entry.is_relax()) continue;
    legalizer.set_function(entry.name);
    Expr func = legalizer.VisitExpr(std::get<Expr>(entry.func));
    KILN_RETURN_IF_ERROR(legalizer.status());
    result.Update(entry.name, func);
  }
  return result;
}

}  // namespace kiln::relax
