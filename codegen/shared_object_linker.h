// LinkSharedObject: turns an ELF object file into the bytes of a shared object by running
// the system C compiler driver as the linker (`cc -shared -o x.so x.o -lm`).
//
// The driver is looked up on PATH ($KILN_LINKER names another one). Work happens in a
// private temporary directory that is always removed. Unresolved symbols are an error at
// link time (-Wl,--no-undefined), not when the VM loads the kernels. A missing linker or
// a failing link is an error carrying the linker's own output.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace kiln::codegen {

absl::StatusOr<std::string> LinkSharedObject(const std::string& object_bytes);

}  // namespace kiln::codegen
