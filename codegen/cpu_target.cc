#include "codegen/cpu_target.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>
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
  // A 32-bit CPU name (i386, pentium, ...) passes the check above, but LLVM aborts the
  // process when asked for x86-64 code for it: refuse it here instead.
  std::unique_ptr<llvm::MCSubtargetInfo> named((*target)->createMCSubtargetInfo(triple, mcpu, ""));
  if (named == nullptr || !named->checkFeatures("+64bit")) {
    return absl::InvalidArgumentError(absl::StrCat("CPU '", mcpu, "' cannot run x86-64 code (Kiln's CPU kernels are 64-bit); "
                                                   "use 'host' or a 64-bit CPU name such as 'x86-64', 'haswell' or 'znver3'"));
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

namespace {

// LLVM's subtarget for a CPU name and feature string (no machine needed), and whether it
// knows a feature.
absl::StatusOr<std::unique_ptr<llvm::MCSubtargetInfo>> Subtarget(const std::string& mcpu, const std::string& features) {
  std::string triple = CpuTargetTriple();
  KILN_ASSIGN_OR_RETURN(const llvm::Target* target, LookupX86Target(triple));
  std::unique_ptr<llvm::MCSubtargetInfo> info(target->createMCSubtargetInfo(triple, mcpu, features));
  if (info == nullptr) return absl::InternalError(absl::StrCat("LLVM has no subtarget for CPU '", mcpu, "'"));
  return info;
}

// Turning a feature LLVM knows on and off gives different feature bits; an unknown one is
// ignored (with LLVM's own warning on stderr).
bool KnownFeature(const llvm::MCSubtargetInfo& info, const std::string& name) {
  llvm::MCSubtargetInfo copy(info);
  llvm::FeatureBitset on = copy.ApplyFeatureFlag("+" + name);
  llvm::FeatureBitset off = copy.ApplyFeatureFlag("-" + name);
  return on != off;
}

}  // namespace

tir::Target HostTarget(int num_threads) {
  CpuTarget host = CpuTarget::Host();
  tir::Target t = tir::Target::Cpu(host.mcpu, 0, num_threads);
  absl::StatusOr<std::unique_ptr<llvm::MCSubtargetInfo>> info = Subtarget(host.mcpu, "");
  llvm::StringMap<bool> host_features;
  if (info.ok() && llvm::sys::getHostCPUFeatures(host_features)) {
    // The host's feature names come from LLVM's own host detection, so LLVM knows them.
    for (const auto& entry : host_features) {
      std::string name = entry.getKey().str();
      bool implied = (*info)->checkFeatures("+" + name);
      if (implied != entry.getValue()) t.features.push_back(absl::StrCat(entry.getValue() ? "+" : "-", name));
    }
    std::sort(t.features.begin(), t.features.end());
  }
  if (absl::StatusOr<int> lanes = Float32VectorLanes(host); lanes.ok()) t.vector_bits = *lanes * 32;
  return t;
}

absl::StatusOr<tir::Target> ResolveCpuTarget(const tir::Target& target) {
  if (!target.is_cpu()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", target.ToString(), "' is not a cpu target; the CPU code generator needs one"));
  }
  tir::Target t = target;
  if (t.mcpu == "host" || t.mcpu == "native") {
    tir::Target host = HostTarget(t.num_threads);
    t.mcpu = host.mcpu;
    t.features = host.features;
    t.features.insert(t.features.end(), target.features.begin(), target.features.end());
    if (t.vector_bits == 0 && target.features.empty()) t.vector_bits = host.vector_bits;
  } else {
    KILN_RETURN_IF_ERROR(CpuTarget::Named(t.mcpu).status());
  }
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::MCSubtargetInfo> info, Subtarget(t.mcpu, ""));
  for (const std::string& f : target.features) {
    if (!KnownFeature(*info, f.substr(1))) {
      return absl::InvalidArgumentError(absl::StrCat("unknown CPU feature '", f.substr(1), "' in -mattr (",
                                                     "`llc-14 -march=x86-64 -mattr=help` lists them)"));
    }
  }
  // -mattr=-64bit would make LLVM abort the process when the first kernel is compiled.
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::MCSubtargetInfo> with_features, Subtarget(t.mcpu, absl::StrJoin(t.features, ",")));
  if (!with_features->checkFeatures("+64bit")) {
    return absl::InvalidArgumentError("-mattr=-64bit: Kiln's CPU kernels are x86-64 code; the 64bit feature cannot be turned off");
  }
  if (t.vector_bits == 0) {
    KILN_ASSIGN_OR_RETURN(int lanes, Float32VectorLanes(CpuTarget{t.mcpu, absl::StrJoin(t.features, ",")}));
    t.vector_bits = lanes * 32;
  }
  return t;
}

absl::StatusOr<CpuTarget> ToCpuTarget(const tir::Target& target) {
  KILN_ASSIGN_OR_RETURN(tir::Target resolved, ResolveCpuTarget(target));
  return CpuTarget{resolved.mcpu, absl::StrJoin(resolved.features, ",")};
}

}  // namespace kiln::codegen
