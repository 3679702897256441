#include "codegen/cpu_target.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status_macros.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Triple.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/Host.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

extern "C" {
void LLVMInitializeX86TargetInfo();
void LLVMInitializeX86Target();
void LLVMInitializeX86TargetMC();
void LLVMInitializeX86AsmPrinter();
void LLVMInitializeX86AsmParser();
}

namespace kiln::codegen {
namespace {

// Only the x86 backend is linked, so it is registered by hand instead of through
// InitializeAllTargets (which would pull in every backend).
void InitializeX86Backend() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeX86AsmParser();
  });
}

absl::StatusOr<const llvm::Target*> LookupX86Target(const std::string& triple) {
  InitializeX86Backend();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (target == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("the CPU code generator supports x86-64 only; no LLVM target for triple '",
                     triple, "': ", error));
  }
  return target;
}

}  // namespace

std::string CpuTargetTriple() {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  // Kernels are always x86-64 Linux code; a different host is refused by LookupX86Target.
  return triple.normalize();
}

CpuTarget CpuTarget::Host() {
  CpuTarget target;
  target.mcpu = llvm::sys::getHostCPUName().str();
  if (target.mcpu.empty() || target.mcpu == "generic") target.mcpu = "x86-64";
  llvm::StringMap<bool> host_features;
  if (llvm::sys::getHostCPUFeatures(host_features)) {
    std::vector<std::string> features;
    for (const auto& entry : host_features) {
      features.push_back(absl::StrCat(entry.getValue() ? "+" : "-", entry.getKey().str()));
    }
    std::sort(features.begin(), features.end());
    target.features = absl::StrJoin(features, ",");
  }
  return target;
}

absl::StatusOr<CpuTarget> CpuTarget::Named(const std::string& mcpu) {
  if (mcpu == "host" || mcpu == "native") return Host();
  if (mcpu.empty()) return absl::InvalidArgumentError("empty CPU name; use 'host' or an x86 CPU name such as 'haswell'");
  std::string triple = CpuTargetTriple();
  absl::StatusOr<const llvm::Target*> target = LookupX86Target(triple);
  if (!target.ok()) return target.status();
  std::unique_ptr<llvm::MCSubtargetInfo> info((*target)->createMCSubtargetInfo(triple, "", ""));
  if (info == nullptr || !info->isCPUStringValid(mcpu)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown CPU '", mcpu, "' for --mcpu; use 'host' or an LLVM x86 CPU name such as 'haswell', ",
        "'skylake-avx512', 'znver3' or 'x86-64-v3' (`llc-14 -march=x86-64 -mcpu=help` lists them all)"));
  }
  return CpuTarget{mcpu, ""};
}

absl::StatusOr<CpuTarget> CpuTarget::FromFlag(const std::string& flag) {
  constexpr absl::string_view kPrefix = "--mcpu=";
  absl::string_view name = flag;
  if (absl::StartsWith(name, kPrefix)) name.remove_prefix(kPrefix.size());
  return Named(std::string(name));
}

std::string CpuTarget::ToString() const {
  return features.empty() ? mcpu : absl::StrCat(mcpu, " [", features, "]");
}

absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> CreateTargetMachine(const CpuTarget& cpu) {
  std::string triple = CpuTargetTriple();
  absl::StatusOr<const llvm::Target*> target = LookupX86Target(triple);
  if (!target.ok()) return target.status();
  llvm::TargetOptions options;
  // Multiply-adds may fuse into FMA instructions where the CPU has them (one rounding
  // instead of two), as deep-learning kernels expect; nothing else is relaxed.
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> machine((*target)->createTargetMachine(
      triple, cpu.mcpu, cpu.features, options, llvm::Reloc::PIC_, llvm::CodeModel::Small,
      llvm::CodeGenOpt::Aggressive));
  if (machine == nullptr) {
    return absl::InternalError(absl::StrCat("LLVM could not create a target machine for ", cpu.ToString()));
  }
  return machine;
}

absl::StatusOr<std::vector<std::string>> EnabledCpuFeatures(const CpuTarget& target,
                                                            const std::vector<std::string>& candidates) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> machine, CreateTargetMachine(target));
  const llvm::MCSubtargetInfo* subtarget = machine->getMCSubtargetInfo();
  std::vector<std::string> enabled;
  for (const std::string& name : candidates) {
    if (subtarget->checkFeatures("+" + name)) enabled.push_back(name);
  }
  return enabled;
}

absl::StatusOr<int> Float32VectorLanes(const CpuTarget& target) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> machine, CreateTargetMachine(target));
  const llvm::MCSubtargetInfo* subtarget = machine->getMCSubtargetInfo();
  if (subtarget->checkFeatures("+avx512f")) return 16;
  if (subtarget->checkFeatures("+avx")) return 8;
  return 4;
}

}  // namespace kiln::codegen
