// Structural hashing of Relax, consistent with relax/structural_equal.h: objects that are
// StructuralEqual hash equal.
//
// Bound variables (Relax and symbolic) hash by the order of their definition; a free Relax
// variable hashes by its name and kind, a free symbolic variable by its name and dtype, so
// hashes are stable across runs of one build. An IRModule hashes its entries in name order,
// so entry order does not change the hash.
#pragma once

#include <cstddef>
#include <cstdint>

#include "relax/expr.h"
#include "relax/ir_module.h"
#include "relax/struct_info.h"
#include "tir/structural_hash.h"

namespace kiln::relax {

uint64_t StructuralHash(const StructInfo& sinfo);
uint64_t StructuralHash(const Expr& expr);
uint64_t StructuralHash(const IRModule& module);

// For hash containers keyed by structure (Relax and TIR objects alike).
struct StructuralHashFn {
  template <typename T>
  size_t operator()(const T& x) const {
    return static_cast<size_t>(StructuralHash(x));
  }
};

}  // namespace kiln::relax
