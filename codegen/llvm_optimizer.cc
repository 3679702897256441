#include "codegen/llvm_optimizer.h"

#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

namespace kiln::codegen {
namespace {

// LLVM's capture tracking stops after 20 uses of a pointer and then takes it as escaped, so
// that every pointer loaded from memory (the kernel's operands, read from its argument
// array) may alias it. A wide tile's accumulators (a workspace allocation) have more uses
// once the loops are unrolled as soon as the tile has a blended column edge, and LICM then
// kept the accumulators' stores inside their k loop: 16 x 4096 x 1000 ran at 28 GF/s
// against 85 for 992 (AVX-512, one thread; opt -O3 shows the same, and sinks the stores
// with the limit raised). Raised once per process, before any pipeline runs.
constexpr unsigned kCaptureTrackingUses = 2000;

void RaiseCaptureTrackingLimit() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::StringMap<llvm::cl::Option*>& options = llvm::cl::getRegisteredOptions();
    auto found = options.find("capture-tracking-max-uses-to-explore");
    // LLVM 14 declares it a cl::opt<unsigned> (lib/Analysis/CaptureTracking.cpp).
    if (found != options.end()) static_cast<llvm::cl::opt<unsigned>*>(found->second)->setValue(kCaptureTrackingUses);
  });
}

}  // namespace

absl::Status OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine) {
  RaiseCaptureTrackingLimit();
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;

  // The analysis managers must outlive the pass managers that use them and be destroyed in
  // the reverse order of their cross-registration: declared here, loop first.
  llvm::LoopAnalysisManager loop_analyses;
  llvm::FunctionAnalysisManager function_analyses;
  llvm::CGSCCAnalysisManager cgscc_analyses;
  llvm::ModuleAnalysisManager module_analyses;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(module_analyses);
  builder.registerCGSCCAnalyses(cgscc_analyses);
  builder.registerFunctionAnalyses(function_analyses);
  builder.registerLoopAnalyses(loop_analyses);
  builder.crossRegisterProxies(loop_analyses, function_analyses, cgscc_analyses, module_analyses);

  llvm::ModulePassManager passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, module_analyses);

  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(module, &os)) {
    os.flush();
    return absl::InternalError(absl::StrCat("LLVM's optimizer produced invalid IR: ", problems));
  }
  return absl::OkStatus();
}

}  // namespace kiln::codegen
