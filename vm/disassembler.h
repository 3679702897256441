// A readable listing of an executable: header facts, tables, and every function's code.
#pragma once

#include <string>

#include "vm/executable.h"

namespace kiln::vm {

std::string Disassemble(const Executable::Contents& contents);

}  // namespace kiln::vm
