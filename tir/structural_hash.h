// Structural hashing of TIR, consistent with tir/structural_equal.h: objects that are
// StructuralEqual hash equal.
//
// What it promises:
//  - A bound variable (or buffer) hashes by the order of its definition in the traversal,
//    never by its name or address, so alpha-equivalent objects hash equal. Its definition
//    hashes its dtype and bounds (a buffer's: dtype, scope, shape and strides).
//  - A free variable hashes by its name and dtype, a free buffer by its name, so hashes are
//    stable across runs (two distinct free variables with one name and dtype collide; they
//    still compare unequal).
//  - Float immediates hash their bits. Hashes are deterministic for a given build, not a
//    stable file format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tir/buffer.h"
#include "tir/expr.h"
#include "tir/stmt.h"

namespace kiln::tir {

uint64_t StructuralHash(const PrimExpr& expr);
uint64_t StructuralHash(const Stmt& stmt);
uint64_t StructuralHash(const PrimFunc& func);

// For hash containers keyed by structure, with StructuralEqualFn of tir/structural_equal.h.
struct StructuralHashFn {
  template <typename T>
  size_t operator()(const T& x) const {
    return static_cast<size_t>(StructuralHash(x));
  }
};

// The hasher with its definition numbering exposed, for callers (the Relax level) that
// hash many pieces against one numbering. Each method mirrors the StructuralEqualizer
// method of the same role and visits in the same order.
class StructuralHasher {
 public:
  uint64_t HashExpr(const PrimExpr& expr);
  uint64_t HashDefExpr(const PrimExpr& expr);
  uint64_t DefineVar(const VarNode* var);
  uint64_t HashStmt(const Stmt& stmt);
  uint64_t HashPrimFunc(const PrimFunc& func);
  uint64_t DefineBuffer(const BufferNode* buffer, bool define_shape_vars);
  uint64_t HashBufferUse(const BufferNode* buffer);

  // Mirrors StructuralEqualizer::SaveVarScope / RestoreVarScope.
  using VarScope = std::unordered_map<const VarNode*, uint64_t>;
  VarScope SaveVarScope() const { return var_index_; }
  void RestoreVarScope(VarScope scope) { var_index_ = std::move(scope); }

  static uint64_t HashString(std::string_view text);
  static uint64_t HashDataType(DataType dtype);

 private:
  uint64_t Expr(const PrimExpr& expr, bool define);
  uint64_t Exprs(const std::vector<PrimExpr>& exprs, bool define);
  uint64_t VarUse(const VarNode* var, bool define);

  std::unordered_map<const VarNode*, uint64_t> var_index_;
  std::unordered_map<const BufferNode*, uint64_t> buffer_index_;
};

}  // namespace kiln::tir
