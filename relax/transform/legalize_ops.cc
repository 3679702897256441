#include "relax/transform/legalize_ops.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/block_builder.h"
#include "relax/expr_functor.h"
#include "relax/op_registry.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "tir/string_type.h"
#include "tir/structural_equal.h"
#include "tir/structural_hash.h"

namespace kiln::relax {
namespace {

// Lowers the bindings of one module's functions. It is the LegalizeContext of every
// legalization it runs: one BlockBuilder per function collects the glue they emit.
class Legalizer : public ExprMutator, public LegalizeContext {
 public:
  Legalizer(IRModule* module, const LegalizeMap& custom) : module_(module), custom_(custom) {}

  absl::Status status() const { return status_; }
  void set_function(std::string name) {
    function_ = std::move(name);
    builder_ = std::make_unique<BlockBuilder>(module_);
  }

  BindingBlock VisitBindingBlock(const BindingBlock& block) override {
    BindingBlock out;
    out.dataflow = block.dataflow;
    for (const Binding& binding : block.bindings) {
      Binding visited = VisitBinding(binding);
      // A match_cast's value may be an op call too; the cast still checks the kernel's result.
      if (status_.ok()) {
        absl::Status lowered = LowerInto(visited, out, /*depth=*/0);
        if (!lowered.ok()) {
          status_ = absl::Status(lowered.code(), absl::StrCat("function '", function_, "', binding '",
                                                              visited.var.name_hint(), "': ", lowered.message()));
          out.bindings.push_back(std::move(visited));
        }
      } else {
        out.bindings.push_back(std::move(visited));
      }
    }
    return out;
  }

  // ---- LegalizeContext
  BlockBuilder& builder() override { return *builder_; }
  const IRModule& module() const override { return *module_; }
  const std::string& binding_name() const override { return binding_name_; }

  Expr AddPrimFunc(const std::string& name_hint, tir::PrimFunc func) override {
    const uint64_t hash = tir::StructuralHash(func);
    std::string name;
    for (const auto& [existing, existing_name] : kernels_[hash]) {
      if (tir::StructuralEqual(existing, func)) name = existing_name;
    }
    if (name.empty()) {
      // Module names only: the executable builder gives kernels symbols that cannot clash
      // with the C library (codegen/build_executable.cc), so `exp` is a fine name here.
      name = name_hint;
      for (int i = 1; module_->Find(name) != nullptr; ++i) name = absl::StrCat(name_hint, i);
      KILN_CHECK(module_->Add(name, func).ok());
      kernels_[hash].emplace_back(std::move(func), name);
    }
    return GlobalVar(name, OpaqueFuncSInfo(ObjectSInfo(), /*pure=*/false));
  }

 private:
  // Glue may call operators whose legalizations emit glue: bounded, in case one emits itself.
  static constexpr int kMaxDepth = 16;

  // Appends to `out` the bindings `binding` lowers to: the glue its legalization emitted
  // (each lowered in turn), then the binding with the legalized value.
  absl::Status LowerInto(Binding binding, BindingBlock& out, int depth) {
    KILN_ASSIGN_OR_RETURN(const LegalizeFn* legalize, Find(binding.value));
    if (legalize == nullptr) {
      out.bindings.push_back(std::move(binding));
      return absl::OkStatus();
    }
    const auto* call = binding.value.as<CallNode>();
    const std::string& op = call->op.as<OpNode>()->name;
    if (depth > kMaxDepth) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": legalizations nest deeper than ", kMaxDepth,
                                                     " levels (does one emit its own operator?)"));
    }
    if (!call->struct_info().defined()) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": the call has no struct info (normalize first)"));
    }
    if (HasStrings(*call)) {
      // A reshape of strings stays a view (VM codegen: kiln.reshape, which keeps the owner);
      // any other operator would copy element handles into a tensor that does not own them.
      if (op == "reshape") {
        out.bindings.push_back(std::move(binding));
        return absl::OkStatus();
      }
      return absl::UnimplementedError(absl::StrCat(op, ": string tensors are not supported by this operator (only "
                                                   "by the string builtins and reshape)"));
    }
    std::string saved_name = std::move(binding_name_);
    binding_name_ = binding.var.name_hint();
    out.dataflow ? builder_->BeginDataflowBlock() : builder_->BeginBindingBlock();
    absl::StatusOr<Expr> value = (*legalize)(*this, *call);
    if (value.ok() && !value->struct_info().defined()) value = builder_->Normalize(*value);
    BindingBlock glue = builder_->EndBlock();
    binding_name_ = std::move(saved_name);
    KILN_RETURN_IF_ERROR(value.status());
    for (Binding& g : glue.bindings) KILN_RETURN_IF_ERROR(LowerInto(std::move(g), out, depth + 1));
    binding.value = *std::move(value);
    out.bindings.push_back(std::move(binding));
    return absl::OkStatus();
  }

  // Whether an operand or the result is a string tensor (vm/string_tensor.h).
  static bool HasStrings(const CallNode& call) {
    auto is_string = [](const StructInfo& s) {
      const auto* t = s.defined() ? s.as<TensorStructInfoNode>() : nullptr;
      return t != nullptr && t->dtype && tir::IsStringType(*t->dtype);
    };
    bool strings = is_string(call.struct_info());
    for (const Expr& arg : call.args) strings = strings || is_string(arg.struct_info());
    return strings;
  }

  // The legalization of `value` if it calls an operator that has one (custom ones first),
  // nullptr if it does not.
  absl::StatusOr<const LegalizeFn*> Find(const Expr& value) {
    const auto* call = value.as<CallNode>();
    const auto* op = call != nullptr ? call->op.as<OpNode>() : nullptr;
    if (op == nullptr) return nullptr;
    auto custom = custom_.find(op->name);
    if (custom != custom_.end()) return &custom->second;
    const OpInfo* info = OpRegistry::Global().Find(op->name);
    if (info == nullptr) return absl::InvalidArgumentError(OpRegistry::Global().UnknownOperatorMessage(op->name));
    if (!info->legalize) return nullptr;
    return &info->legalize;
  }

  IRModule* module_;
  const LegalizeMap& custom_;
  std::unique_ptr<BlockBuilder> builder_;
  std::string function_;
  std::string binding_name_;
  absl::Status status_;
  std::unordered_map<uint64_t, std::vector<std::pair<tir::PrimFunc, std::string>>> kernels_;
};

}  // namespace

absl::StatusOr<IRModule> LegalizeOps(const IRModule& module, const LegalizeMap& custom) {
  IRModule result = module;
  Legalizer legalizer(&result, custom);
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
