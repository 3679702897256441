// BuildExecutable: a lowered module (after relax/transform/pipeline.h) -> the bytes of a
// .kx executable (docs/vm.md) that vm::Executable::Load accepts.
//
// Every PrimFunc that a call_tir_dps calls is compiled, all together, into ONE CPU shared
// object (codegen/cpu_shared_object.h) carried in the executable and declared as a kernel
// named after it with "_kernel" appended unless it already ends so (`@exp` -> `exp_kernel`,
// `@add_kernel` stays): operator-named kernels would otherwise clash with the C library
// functions the generated code calls. PrimFuncs nobody calls are left out. Then each Relax function
// becomes a VM function of the same name (codegen/vm_codegen.h). A module without kernels
// gets no CPU object.
//
// The executable records the target's CPU name and the instruction-set extensions its kernels
// may use (those of vm::KnownCpuFeatures() that `target` enables), so loading it on a CPU
// without one of them is a clear error rather than SIGILL. Constant tensors larger than
// vm::kInlineConstantMaxBytes go to the file's aligned weights section (docs/vm.md).
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/cpu_target.h"
#include "relax/ir_module.h"
#include "vm/builtin_registry.h"

namespace kiln::codegen {

// `metadata` is recorded as is in the executable's metadata section (Executable::Contents).
// With `kiln_runtime`, every builtin and library function named "kiln." that the executable
// calls must be one that registry provides (vm::Executable::CheckRuntimeProvides, checked
// before the image is encoded): `kiln compile` refuses a misspelt `R.extern("kiln.tuple_gett")`
// instead of writing a file `kiln run` cannot load. Other names are an embedding
// application's, registered only where it runs.
absl::StatusOr<std::string> BuildExecutable(const relax::IRModule& lowered, const CpuTarget& target,
                                            const std::map<std::string, std::string>& metadata = {},
                                            const vm::BuiltinRegistry* kiln_runtime = nullptr);

}  // namespace kiln::codegen
