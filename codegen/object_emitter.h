// EmitObjectFile: machine code for an (optimized) LLVM module, as the bytes of an ELF
// relocatable object file for the target machine.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace kiln::codegen {

absl::StatusOr<std::string> EmitObjectFile(llvm::Module& module, llvm::TargetMachine& machine);

}  // namespace kiln::codegen
