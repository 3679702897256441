// How many arguments each math intrinsic (tir/expr.h, IsMathIntrinsic) takes. Besides the
// names listed there, `fma` (a * b + c rounded once, C's fma): code that must reproduce
// another program's floats spells its fused multiply-adds, since the emitters do not
// contract a * b + c the same way on every target (NVRTC does by default, SPIR-V drivers
// may). pow and fmod take two arguments, fma three, the others one.
#pragma once

#include <cstddef>
#include <string_view>

namespace kiln::tir {

size_t MathIntrinsicArity(std::string_view name);

}  // namespace kiln::tir
