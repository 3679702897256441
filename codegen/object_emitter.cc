#include "codegen/object_emitter.h"

#include "absl/strings/str_cat.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

namespace kiln::codegen {

absl::StatusOr<std::string> EmitObjectFile(llvm::Module& module, llvm::TargetMachine& machine) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  // LLVM 14's code generator still runs on the legacy pass manager.
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, os, nullptr, llvm::CGFT_ObjectFile)) {
    return absl::InternalError(
        absl::StrCat("LLVM cannot emit object files for ", machine.getTargetTriple().str()));
  }
  passes.run(module);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace kiln::codegen
