// The `--profile` table of kiln run and kiln generate: each kernel's and builtin's total
// time and calls, slowest first, then which OpenBLAS core ran if any did.
#pragma once

#include <cstdio>

#include "vm/virtual_machine.h"

namespace kiln::tools {

void PrintProfile(const vm::VirtualMachine& machine, std::FILE* out);

}  // namespace kiln::tools
