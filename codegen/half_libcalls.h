// Float16 conversions for x86-64 CPUs without F16C.
//
// LLVM 14 keeps no half value in a register: it widens each to float and narrows the result
// back, with vcvtph2ps / vcvtps2ph where the CPU has F16C and otherwise with calls of
// `__gnu_h2f_ieee` (i16 -> float) and `__gnu_f2h_ieee` (float -> i16). GCC 12's libgcc has
// neither (its helpers are `__extendhfsf2` / `__truncsfhf2`, with _Float16 in xmm0), so
// float16 code for such a CPU (`--mcpu x86-64`) failed to link. DefineHalfLibcalls writes
// both functions into the kernel module, in integer IR: the shared object needs nothing
// from the C runtime for float16, and its bits are those of F16C (round to nearest even;
// subnormals, infinities and signed zeros exact; a NaN keeps its sign and its payload's top
// bits and comes out quiet). For a CPU with F16C it adds nothing.
#pragma once

#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

namespace kiln::codegen {

// The names of the functions DefineHalfLibcalls defines (a kernel may not take them).
inline constexpr const char* kHalfToFloatLibcall = "__gnu_h2f_ieee";
inline constexpr const char* kFloatToHalfLibcall = "__gnu_f2h_ieee";

// Defines both conversion functions in `module` (hidden, so the shared object does not
// export them) when `machine`'s CPU lacks F16C; otherwise does nothing.
void DefineHalfLibcalls(llvm::Module& module, const llvm::TargetMachine& machine);

}  // namespace kiln::codegen
