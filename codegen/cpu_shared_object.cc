#include "codegen/cpu_shared_object.h"

#include <functional>
#include <memory>

#include "codegen/llvm_optimizer.h"
#include "codegen/object_emitter.h"
#include "codegen/shared_object_linker.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "support/status_macros.h"

namespace kiln::codegen {

namespace {

// LLVM prints warnings such as "loop not vectorized" (a vectorize hint on a generated loop it
// could not honour) to stderr by default. They are about Kiln's generated code, not the
// user's model, and say nothing a user can act on: dropped. Errors are still printed, without
// LLVM's default exit.
void DropLlvmWarnings(llvm::LLVMContext& context) {
  context.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo& info, void*) {
        if (info.getSeverity() != llvm::DS_Error) return;
        llvm::DiagnosticPrinterRawOStream printer(llvm::errs());
        llvm::errs() << "LLVM error: ";
        info.print(printer);
        llvm::errs() << "\n";
      },
      nullptr);
}

using ModuleMaker = std::function<absl::StatusOr<std::unique_ptr<llvm::Module>>(llvm::LLVMContext&,
                                                                                const llvm::TargetMachine&)>;

// The module `make` emits for `target`'s machine, optimized, compiled and linked.
absl::StatusOr<std::string> CompileAndLink(const CpuTarget& target, const ModuleMaker& make) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> machine, CreateTargetMachine(target));
  llvm::LLVMContext context;
  DropLlvmWarnings(context);
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> module, make(context, *machine));
  KILN_RETURN_IF_ERROR(OptimizeModule(*module, *machine));
  KILN_ASSIGN_OR_RETURN(std::string object, EmitObjectFile(*module, *machine));
  return LinkSharedObject(object);
}

}  // namespace

absl::StatusOr<std::string> BuildCpuSharedObject(const std::vector<std::pair<std::string, tir::PrimFunc>>& kernels,
                                                 const CpuTarget& target, const NamedPrimFuncs& lowered_hosts) {
  return CompileAndLink(target, [&](llvm::LLVMContext& context,
                                    const llvm::TargetMachine& machine) -> absl::StatusOr<std::unique_ptr<llvm::Module>> {
    if (lowered_hosts.empty()) return LowerToLlvm(kernels, context, machine);
    KILN_ASSIGN_OR_RETURN(NamedPrimFuncs lowered, LowerForCpu(kernels, machine));
    lowered.insert(lowered.end(), lowered_hosts.begin(), lowered_hosts.end());
    return EmitLlvmModule(lowered, context, machine);
  });
}

absl::StatusOr<std::string> BuildLoweredSharedObject(const NamedPrimFuncs& lowered, const CpuTarget& target) {
  return CompileAndLink(target, [&](llvm::LLVMContext& context, const llvm::TargetMachine& machine) {
    return EmitLlvmModule(lowered, context, machine);
  });
}

absl::StatusOr<std::string> DumpCpuLlvmIr(const std::vector<std::pair<std::string, tir::PrimFunc>>& kernels,
                                          const CpuTarget& target, bool optimize) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> machine, CreateTargetMachine(target));
  llvm::LLVMContext context;
  DropLlvmWarnings(context);
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> module, LowerToLlvm(kernels, context, *machine));
  if (optimize) KILN_RETURN_IF_ERROR(OptimizeModule(*module, *machine));
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, nullptr);
  os.flush();
  return text;
}

}  // namespace kiln::codegen
