#pragma once

// A function attribute that asks the LLVM back end to address a local buffer's element as a
// chain of GEPs, one per trailing term of its flat offset, instead of one GEP of the whole
// sum (codegen/llvm_buffer_lowering.cc, ElementPointer). Its value names those buffers,
// separated by commas. Set by the CPU schedule (AVX2) on the local buffers that register
// steps of three or more vectors store to (the packed wide tiles' 4 x 3 steps): with one GEP
// InstCombine factors the step's `24 t + 8 g` into `8 (3 t + g)`, LLVM 14's alias analysis
// can then not tell the twelve accumulators apart and keeps them in memory. Not applied to
// other buffers: on the unpacked wide tiles the chain made LLVM store their accumulators at
// every k step (docs/schedule.md, mm20).

namespace kiln::tir {

inline constexpr char kLocalAddressPerTermAttr[] = "local_address_per_term";

}  // namespace kiln::tir
