#include "codegen/build_executable.h"

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cpu_shared_object.h"
#include "codegen/cuda_module.h"
#include "codegen/vm_codegen.h"
#include "codegen/vulkan_module.h"
#include "tir/target.h"
#include "relax/expr_functor.h"
#include "support/status_macros.h"
#include "vm/cpu_features.h"
#include "vm/executable_builder.h"

namespace kiln::codegen {
namespace {

// The PrimFunc names call_tir_dps calls, in first-call order.
class KernelCollector : public relax::ExprVisitor {
 public:
  void VisitExpr_(const relax::CallNode* op, const relax::Expr& self) override {
    const auto* callee = op->op.defined() ? op->op.as<relax::OpNode>() : nullptr;
    if (callee != nullptr && callee->name == "call_tir_dps" && !op->args.empty()) {
      if (const auto* gv = op->args[0].as<relax::GlobalVarNode>()) {
        if (seen_.insert(gv->name).second) names_.push_back(gv->name);
      }
    }
    relax::ExprVisitor::VisitExpr_(op, self);
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::set<std::string> seen_;
  std::vector<std::string> names_;
};

}  // namespace

absl::StatusOr<std::string> BuildExecutable(const relax::IRModule& lowered, const CpuTarget& target,
                                            const std::map<std::string, std::string>& metadata,
                                            const vm::BuiltinRegistry* kiln_runtime) {
  KernelCollector collector;
  for (const relax::IRModule::Entry& entry : lowered.entries()) {
    if (entry.is_relax()) collector.VisitExpr(std::get<relax::Expr>(entry.func));
  }
  std::vector<std::pair<std::string, tir::PrimFunc>> kernels;
  for (const std::string& name : collector.names()) {
    const relax::IRModule::Entry* entry = lowered.Find(name);
    if (entry == nullptr || entry->prim_func() == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("call_tir_dps calls @", name, ", which is not a PrimFunc of the module"));
    }
    kernels.emplace_back(name, *entry->prim_func());
  }
  // Symbols in the shared object: legalized kernels are named after operators ("exp",
  // "sqrt"), which are C library functions the generated code itself calls, so every
  // symbol ends in "_kernel" (kept unique); the VM's kernel table uses the same names.
  std::vector<std::pair<std::string, tir::PrimFunc>> symbols;
  std::map<std::string, std::string> symbol_of;
  std::set<std::string> taken;
  for (const auto& [name, func] : kernels) {
    std::string base = name;
    const std::string suffix = "_kernel";
    if (base.size() < suffix.size() || base.compare(base.size() - suffix.size(), suffix.size(), suffix) != 0) {
      base += suffix;
    }
    std::string symbol = base;
    for (int i = 1; !taken.insert(symbol).second; ++i) symbol = absl::StrCat(base, i);
    symbol_of[name] = symbol;
    symbols.emplace_back(symbol, func);
  }
  vm::ExecutableBuilder builder;
  for (const auto& [key, value] : metadata) builder.SetMetadata(key, value);
  std::map<std::string, int32_t> kernel_index;
  // Functions for a cuda or vulkan target: their host parts join the CPU object, their
  // device kernels go to the device code section, and they run on the VM's default device
  // (which `kiln run --device cuda|vulkan` makes the GPU).
  std::vector<std::pair<std::string, tir::PrimFunc>> cpu_symbols;
  std::vector<std::pair<std::string, tir::PrimFunc>> cuda_symbols;
  std::vector<std::pair<std::string, tir::PrimFunc>> vulkan_symbols;
  for (const auto& [symbol, func] : symbols) {
    absl::StatusOr<std::optional<tir::Target>> t = tir::TargetOf(func);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("kernel ", symbol, ": ", t.status().message()));
    if (t->has_value() && (*t)->kind == tir::TargetKind::kCuda) {
      cuda_symbols.emplace_back(symbol, func);
    } else if (t->has_value() && (*t)->kind == tir::TargetKind::kVulkan) {
      vulkan_symbols.emplace_back(symbol, func);
    } else {
      cpu_symbols.emplace_back(symbol, func);
    }
  }
  NamedPrimFuncs hosts;
  if (!cuda_symbols.empty()) {
    absl::StatusOr<CudaModule> cuda = BuildCudaModule(cuda_symbols);
    if (!cuda.ok()) {
      return absl::Status(cuda.status().code(), absl::StrCat("compiling CUDA kernels: ", cuda.status().message()));
    }
    hosts = std::move(cuda->hosts);
    builder.AddDeviceCode(std::move(cuda->code));
  }
  if (!vulkan_symbols.empty()) {
    absl::StatusOr<VulkanModule> vulkan = BuildVulkanModule(vulkan_symbols);
    if (!vulkan.ok()) {
      return absl::Status(vulkan.status().code(),
                          absl::StrCat("compiling Vulkan kernels: ", vulkan.status().message()));
    }
    hosts.insert(hosts.end(), vulkan->hosts.begin(), vulkan->hosts.end());
    if (!vulkan->code.kernels.empty()) builder.AddDeviceCode(std::move(vulkan->code));
  }
  if (!kernels.empty()) {
    absl::StatusOr<std::string> so = BuildCpuSharedObject(cpu_symbols, target, hosts);
    if (!so.ok()) {
      return absl::Status(so.status().code(), absl::StrCat("compiling kernels: ", so.status().message()));
    }
    builder.SetCpuObject(*std::move(so));
    // The loader refuses a host lacking any of these instead of dying of SIGILL in a kernel.
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> features, EnabledCpuFeatures(target, vm::KnownCpuFeatures()));
    builder.SetCpuTarget(target.mcpu, std::move(features));
    for (const auto& [name, func] : kernels) {
      kernel_index[name] = builder.DeclareKernel(symbol_of[name], KernelArgSignature(func));
    }
  }
  KILN_RETURN_IF_ERROR(GenerateVmCode(lowered, kernel_index, builder));
  if (kiln_runtime != nullptr) KILN_RETURN_IF_ERROR(builder.CheckRuntimeProvides(*kiln_runtime, "kiln."));
  return builder.Build();
}

}  // namespace kiln::codegen
