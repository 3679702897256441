// PrimExpr: scalar (and SIMD vector) expressions of the loop-level IR, also used as the
// symbolic dimensions of Relax shapes (`n + 1`, `4 * s`, `floordiv(n, 2)`).
//
// Semantics:
//  - Nodes are immutable and shared; a PrimExpr is a cheap reference. Identity of a Var is
//    the identity of its node: two Vars named "n" are different variables.
//  - Integer arithmetic is exact; a program whose values overflow their dtype has undefined
//    results, and the analyzer assumes no overflow.
//  - FloorDiv/FloorMod round toward negative infinity (floormod has the divisor's sign).
//    Division by zero is undefined. Div is true division and is meant for floats; integer
//    index arithmetic uses FloorDiv.
//  - Floating point follows IEEE 754 except for Min/Max, which propagate NaN as NumPy's
//    np.minimum/np.maximum do: if either operand is NaN the result is NaN (either operand's
//    NaN; the payload is unspecified), otherwise the smaller/larger operand (between -0.0
//    and +0.0 either may be returned). So max(x, 0) is NaN for a NaN x, and a max/min
//    reduction over values containing a NaN is NaN whatever the order of the combines.
//    Comparisons are IEEE (false for a NaN operand, except !=).
//  - Both operands of a binary node have the same dtype; comparisons and And/Or/Not yield
//    bool (with the operands' lanes). Evaluation has no side effects, so order is free.
//  - Call names a pure math intrinsic (see IsMathIntrinsic), whose dtype is its first
//    argument's, or an intrinsic of lowered TIR (tir/intrinsics.h), typed by its signature.
//  - Bit operations (BitAnd, BitOr, BitXor, BitNot, Shl, Shr) take integer operands (int or
//    uint of any width and lanes; both operands of one type) and work on the two's
//    complement bits of the value. Shr is arithmetic (copies the sign bit) for int and
//    logical (shifts in zeros) for uint. Shl never overflows: bits shifted out are lost.
//    A shift amount outside [0, bits) -- negative ones included -- shifts every bit out:
//    Shl and uint Shr give 0, int Shr gives 0 or -1 by the sign of the value. (This is
//    the arithmetic meaning of x * 2^k and floor(x / 2^k), and unlike C and LLVM it is
//    never undefined; the interpreter, the simplifier and the LLVM emitter all implement
//    it, see EvalBitwise.)
//  - Reinterpret reads the bits of a value as another type of the same total width
//    (uint16 -> float16, int32x4 -> float32x4, float32x2 -> int64); bool is not allowed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tir/data_type.h"

namespace kiln::tir {

enum class ExprKind : uint8_t {
  kIntImm,
  kFloatImm,
  kVar,
  // Binary arithmetic (BinaryNode).
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kFloorMod,
  kMin,
  kMax,
  // Comparisons (BinaryNode, bool result).
  kEQ,
  kNE,
  kLT,
  kLE,
  kGT,
  kGE,
  // Logic (BinaryNode, bool operands and result).
  kAnd,
  kOr,
  kNot,
  kSelect,
  kCast,
  kCall,
  kBufferLoad,
  kRamp,
  kBroadcast,
  kLet,
  // Bit operations on integers (BinaryNode, the operands' type). Appended, so that the
  // numbers of the kinds above (which hashes mix in) stay as they were.
  kBitAnd,
  kBitOr,
  kBitXor,
  kShl,
  kShr,
  kBitNot,       // BitNotNode
  kReinterpret,  // ReinterpretNode
};

bool IsArithmetic(ExprKind kind);  // kAdd .. kMax
bool IsComparison(ExprKind kind);  // kEQ .. kGE
bool IsLogical(ExprKind kind);     // kAnd, kOr
bool IsBitwise(ExprKind kind);     // kBitAnd, kBitOr, kBitXor, kShl, kShr (binary ones)
bool IsBinary(ExprKind kind);      // any of the four above
// "+", "floordiv", "==", "&&", "<<", "~", ... as the text format writes it.
const char* KindName(ExprKind kind);

class PrimExprNode {
 public:
  virtual ~PrimExprNode() = default;
  ExprKind kind() const { return kind_; }
  DataType dtype() const { return dtype_; }

 protected:
  PrimExprNode(ExprKind kind, DataType dtype) : kind_(kind), dtype_(dtype) {}

 private:
  ExprKind kind_;
  DataType dtype_;
};

class VarNode;
class BufferNode;

// A shared, immutable reference to an expression node. Converts implicitly from integer
// literals (an int64 IntImm) so shapes can be written as {n, 4}.
class PrimExpr {
 public:
  PrimExpr() = default;
  PrimExpr(int64_t value);  // NOLINT(google-explicit-constructor): int64 IntImm
  PrimExpr(int value) : PrimExpr(static_cast<int64_t>(value)) {}  // NOLINT
  explicit PrimExpr(std::shared_ptr<const PrimExprNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const PrimExprNode* get() const { return node_.get(); }
  const PrimExprNode* operator->() const { return node_.get(); }
  ExprKind kind() const { return node_->kind(); }
  DataType dtype() const { return node_->dtype(); }
  bool same_as(const PrimExpr& other) const { return node_ == other.node_; }

  // The node as T, or nullptr if it is not one.
  template <typename T>
  const T* as() const {
    return dynamic_cast<const T*>(node_.get());
  }

  // The literal value if this is an IntImm.
  std::optional<int64_t> as_int() const;

  const std::shared_ptr<const PrimExprNode>& node() const { return node_; }

 private:
  std::shared_ptr<const PrimExprNode> node_;
};

class IntImmNode : public PrimExprNode {
 public:
  IntImmNode(DataType dtype, int64_t value) : PrimExprNode(ExprKind::kIntImm, dtype), value(value) {}
  const int64_t value;
};

class FloatImmNode : public PrimExprNode {
 public:
  FloatImmNode(DataType dtype, double value)
      : PrimExprNode(ExprKind::kFloatImm, dtype), value(value) {}
  const double value;
};

// A named variable. Symbolic shape variables are int64 with lower bound 0; a declared
// upper bound (`n <= 4096`) is what memory planning and tuning may rely on. Bounds are
// inclusive.
class VarNode : public PrimExprNode {
 public:
  VarNode(std::string name, DataType dtype, std::optional<int64_t> lower_bound,
          std::optional<int64_t> upper_bound)
      : PrimExprNode(ExprKind::kVar, dtype),
        name(std::move(name)),
        lower_bound(lower_bound),
        upper_bound(upper_bound) {}
  const std::string name;
  const std::optional<int64_t> lower_bound;
  const std::optional<int64_t> upper_bound;
};

class BinaryNode : public PrimExprNode {
 public:
  BinaryNode(ExprKind kind, DataType dtype, PrimExpr a, PrimExpr b)
      : PrimExprNode(kind, dtype), a(std::move(a)), b(std::move(b)) {}
  const PrimExpr a;
  const PrimExpr b;
};

class NotNode : public PrimExprNode {
 public:
  explicit NotNode(PrimExpr a) : PrimExprNode(ExprKind::kNot, a.dtype()), a(std::move(a)) {}
  const PrimExpr a;
};

// `~a`: every bit of the integer `a` flipped.
class BitNotNode : public PrimExprNode {
 public:
  explicit BitNotNode(PrimExpr a) : PrimExprNode(ExprKind::kBitNot, a.dtype()), a(std::move(a)) {}
  const PrimExpr a;
};

class SelectNode : public PrimExprNode {
 public:
  SelectNode(PrimExpr condition, PrimExpr true_value, PrimExpr false_value)
      : PrimExprNode(ExprKind::kSelect, true_value.dtype()),
        condition(std::move(condition)),
        true_value(std::move(true_value)),
        false_value(std::move(false_value)) {}
  const PrimExpr condition;
  const PrimExpr true_value;
  const PrimExpr false_value;
};

class CastNode : public PrimExprNode {
 public:
  CastNode(DataType dtype, PrimExpr value) : PrimExprNode(ExprKind::kCast, dtype), value(std::move(value)) {}
  const PrimExpr value;
};

// The bits of `value` read as `dtype` (same total width).
class ReinterpretNode : public PrimExprNode {
 public:
  ReinterpretNode(DataType dtype, PrimExpr value)
      : PrimExprNode(ExprKind::kReinterpret, dtype), value(std::move(value)) {}
  const PrimExpr value;
};

class CallNode : public PrimExprNode {
 public:
  CallNode(DataType dtype, std::string op, std::vector<PrimExpr> args)
      : PrimExprNode(ExprKind::kCall, dtype), op(std::move(op)), args(std::move(args)) {}
  const std::string op;
  const std::vector<PrimExpr> args;
};

// A buffer element read, `A[i, j]`. The Buffer is defined in tir/buffer.h.
class Buffer;
class BufferLoadNode : public PrimExprNode {
 public:
  BufferLoadNode(DataType dtype, std::shared_ptr<const BufferNode> buffer, std::vector<PrimExpr> indices)
      : PrimExprNode(ExprKind::kBufferLoad, dtype), buffer(std::move(buffer)), indices(std::move(indices)) {}
  const std::shared_ptr<const BufferNode> buffer;
  const std::vector<PrimExpr> indices;
};

// The vector {base, base + stride, ..., base + (lanes - 1) * stride}.
class RampNode : public PrimExprNode {
 public:
  RampNode(PrimExpr base, PrimExpr stride, int lanes)
      : PrimExprNode(ExprKind::kRamp, base.dtype().with_lanes(lanes)),
        base(std::move(base)),
        stride(std::move(stride)),
        lanes(lanes) {}
  const PrimExpr base;
  const PrimExpr stride;
  const int lanes;
};

// `value` repeated in every lane.
class BroadcastNode : public PrimExprNode {
 public:
  BroadcastNode(PrimExpr value, int lanes)
      : PrimExprNode(ExprKind::kBroadcast, value.dtype().with_lanes(lanes)), value(std::move(value)), lanes(lanes) {}
  const PrimExpr value;
  const int lanes;
};

class Var;
// `let var = value in body`.
class LetNode : public PrimExprNode {
 public:
  LetNode(std::shared_ptr<const VarNode> var, PrimExpr value, PrimExpr body)
      : PrimExprNode(ExprKind::kLet, body.dtype()), var(std::move(var)), value(std::move(value)), body(std::move(body)) {}
  const std::shared_ptr<const VarNode> var;
  const PrimExpr value;
  const PrimExpr body;
};

// A reference known to hold a VarNode.
class Var : public PrimExpr {
 public:
  Var() = default;
  explicit Var(std::string name, DataType dtype = DataType::Int64(),
               std::optional<int64_t> lower_bound = std::nullopt,
               std::optional<int64_t> upper_bound = std::nullopt);
  explicit Var(std::shared_ptr<const VarNode> node) : PrimExpr(std::move(node)) {}
  // A symbolic shape variable: int64, lower bound 0, optional upper bound.
  static Var Shape(std::string name, std::optional<int64_t> upper_bound = std::nullopt) {
    return Var(std::move(name), DataType::Int64(), 0, upper_bound);
  }
  const VarNode* get() const { return static_cast<const VarNode*>(PrimExpr::get()); }
  const VarNode* operator->() const { return get(); }
  std::shared_ptr<const VarNode> var_node() const {
    return std::static_pointer_cast<const VarNode>(node());
  }
  const std::string& name() const { return get()->name; }
};

// --- Constructors. Each checks its operands' dtypes (KILN_CHECK: callers that take user
// input, like the parser, validate first and report a Status). ---

PrimExpr IntImm(DataType dtype, int64_t value);
PrimExpr FloatImm(DataType dtype, double value);
PrimExpr MakeBinary(ExprKind kind, PrimExpr a, PrimExpr b);
PrimExpr Add(PrimExpr a, PrimExpr b);
PrimExpr Sub(PrimExpr a, PrimExpr b);
PrimExpr Mul(PrimExpr a, PrimExpr b);
PrimExpr Div(PrimExpr a, PrimExpr b);
PrimExpr FloorDiv(PrimExpr a, PrimExpr b);
PrimExpr FloorMod(PrimExpr a, PrimExpr b);
PrimExpr Min(PrimExpr a, PrimExpr b);
PrimExpr Max(PrimExpr a, PrimExpr b);
PrimExpr EQ(PrimExpr a, PrimExpr b);
PrimExpr NE(PrimExpr a, PrimExpr b);
PrimExpr LT(PrimExpr a, PrimExpr b);
PrimExpr LE(PrimExpr a, PrimExpr b);
PrimExpr GT(PrimExpr a, PrimExpr b);
PrimExpr GE(PrimExpr a, PrimExpr b);
PrimExpr And(PrimExpr a, PrimExpr b);
PrimExpr Or(PrimExpr a, PrimExpr b);
PrimExpr Not(PrimExpr a);
PrimExpr BitAnd(PrimExpr a, PrimExpr b);
PrimExpr BitOr(PrimExpr a, PrimExpr b);
PrimExpr BitXor(PrimExpr a, PrimExpr b);
PrimExpr Shl(PrimExpr a, PrimExpr b);
PrimExpr Shr(PrimExpr a, PrimExpr b);
PrimExpr BitNot(PrimExpr a);
// Checks that the widths agree and neither side is bool or handle.
PrimExpr Reinterpret(DataType dtype, PrimExpr value);
// Why `from` cannot be reinterpreted as `to`, or "" if it can (for callers reporting a Status).
std::string ReinterpretError(DataType from, DataType to);
PrimExpr Select(PrimExpr condition, PrimExpr true_value, PrimExpr false_value);
PrimExpr Cast(DataType dtype, PrimExpr value);
PrimExpr Call(std::string op, std::vector<PrimExpr> args);
PrimExpr Ramp(PrimExpr base, PrimExpr stride, int lanes);
PrimExpr Broadcast(PrimExpr value, int lanes);
PrimExpr Let(Var var, PrimExpr value, PrimExpr body);

// The math intrinsics Call may name: exp, log, sqrt, rsqrt, tanh, sigmoid, erf, fabs,
// floor, ceil, round (half to even), pow, sin, cos, tan, asin, acos, atan, sinh, cosh, asinh,
// acosh, atanh, log1p, expm1, fmod (C's: the remainder has the dividend's sign). pow and fmod
// take two arguments, the others one; each means what the C library's function does.
bool IsMathIntrinsic(std::string_view name);

// `value` wrapped to the integer (or bool: 1 bit) type `t` as an IntImm of `t` holds it:
// modulo 2^bits, sign-extended for int, zero-extended for uint and bool.
int64_t WrapInt(int64_t value, DataType t);

// The value of `a kind b` for a bitwise kind (IsBitwise) on scalars of the integer type
// `dtype`, the operands held as an IntImm holds them (sign-extended for int, zero-extended
// for uint); the result is held the same way. Implements the semantics above, shift
// amounts out of range included. The interpreter and the simplifier both fold with it.
int64_t EvalBitwise(ExprKind kind, DataType dtype, int64_t a, int64_t b);
// `~a` likewise.
int64_t EvalBitNot(DataType dtype, int64_t a);

// Operators build nodes without simplifying (the analyzer simplifies). An integer literal
// on either side takes the other side's dtype.
PrimExpr operator+(PrimExpr a, PrimExpr b);
PrimExpr operator-(PrimExpr a, PrimExpr b);
PrimExpr operator*(PrimExpr a, PrimExpr b);
PrimExpr operator+(PrimExpr a, int64_t b);
PrimExpr operator-(PrimExpr a, int64_t b);
PrimExpr operator*(PrimExpr a, int64_t b);
PrimExpr operator+(int64_t a, PrimExpr b);
PrimExpr operator-(int64_t a, PrimExpr b);
PrimExpr operator*(int64_t a, PrimExpr b);

// The text-format spelling: `n + 1`, `floordiv(n, 2)`, `A[i, j]`, `select(c, a, b)`,
// `cast(float32, x)`, `float64(1.5)`. Parenthesizes only where precedence needs it.
std::string ToString(const PrimExpr& expr);

// How a printer names variables and buffers. The default uses their own names; the text
// printer (tir/text_printer.h) makes them unique within a function.
class PrimExprNamer {
 public:
  virtual ~PrimExprNamer() = default;
  virtual std::string VarName(const VarNode* var);  // a use
  virtual std::string LetVarName(const VarNode* var) { return VarName(var); }  // `let v = ...`
  virtual std::string BufferName(const BufferNode* buffer);  // a buffer load
};
// Appends the spelling of ToString to `out`, with names from `namer`.
void PrintPrimExpr(const PrimExpr& expr, PrimExprNamer& namer, std::string* out);

// A floating-point literal that reads back to the same value of a `bits`-wide float:
// shortest of 9 (float32) or 17 significant digits, always with a '.', 'e', or as nan/inf.
std::string FloatLiteralText(double value, int bits);
std::ostream& operator<<(std::ostream& os, const PrimExpr& expr);

}  // namespace kiln::tir
