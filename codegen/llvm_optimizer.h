// OptimizeModule: LLVM's standard O3 pipeline (new pass manager) tuned for the target
// machine, with loop and SLP vectorization on, as clang -O3 would run it.
#pragma once

#include "absl/status/status.h"

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace kiln::codegen {

absl::Status OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine);

}  // namespace kiln::codegen
