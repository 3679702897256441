#include "tir/expr.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/check.h"
#include "tir/buffer.h"
#include "tir/intrinsics.h"
#include "tir/math_intrinsic_arity.h"

namespace kiln::tir {

bool IsArithmetic(ExprKind kind) { return kind >= ExprKind::kAdd && kind <= ExprKind::kMax; }
bool IsComparison(ExprKind kind) { return kind >= ExprKind::kEQ && kind <= ExprKind::kGE; }
bool IsLogical(ExprKind kind) { return kind == ExprKind::kAnd || kind == ExprKind::kOr; }
bool IsBitwise(ExprKind kind) {
  return kind == ExprKind::kBitAnd || kind == ExprKind::kBitOr || kind == ExprKind::kBitXor ||
         kind == ExprKind::kShl || kind == ExprKind::kShr;
}
bool IsBinary(ExprKind kind) {
  return IsArithmetic(kind) || IsComparison(kind) || IsLogical(kind) || IsBitwise(kind);
}

const char* KindName(ExprKind kind) {
  switch (kind) {
    case ExprKind::kIntImm: return "int";
    case ExprKind::kFloatImm: return "float";
    case ExprKind::kVar: return "var";
    case ExprKind::kAdd: return "+";
    case ExprKind::kSub: return "-";
    case ExprKind::kMul: return "*";
    case ExprKind::kDiv: return "/";
    case ExprKind::kFloorDiv: return "floordiv";
    case ExprKind::kFloorMod: return "floormod";
    case ExprKind::kMin: return "min";
    case ExprKind::kMax: return "max";
    case ExprKind::kEQ: return "==";
    case ExprKind::kNE: return "!=";
    case ExprKind::kLT: return "<";
    case ExprKind::kLE: return "<=";
    case ExprKind::kGT: return ">";
    case ExprKind::kGE: return ">=";
    case ExprKind::kAnd: return "&&";
    case ExprKind::kOr: return "||";
    case ExprKind::kNot: return "!";
    case ExprKind::kSelect: return "select";
    case ExprKind::kCast: return "cast";
    case ExprKind::kCall: return "call";
    case ExprKind::kBufferLoad: return "load";
    case ExprKind::kRamp: return "ramp";
    case ExprKind::kBroadcast: return "broadcast";
    case ExprKind::kLet: return "let";
    case ExprKind::kBitAnd: return "&";
    case ExprKind::kBitOr: return "|";
    case ExprKind::kBitXor: return "^";
    case ExprKind::kShl: return "<<";
    case ExprKind::kShr: return ">>";
    case ExprKind::kBitNot: return "~";
    case ExprKind::kReinterpret: return "reinterpret";
  }
  return "?";
}

PrimExpr::PrimExpr(int64_t value) : node_(std::make_shared<IntImmNode>(DataType::Int64(), value)) {}

std::optional<int64_t> PrimExpr::as_int() const {
  if (const auto* imm = as<IntImmNode>()) return imm->value;
  return std::nullopt;
}

Var::Var(std::string name, DataType dtype, std::optional<int64_t> lower_bound,
         std::optional<int64_t> upper_bound)
    : PrimExpr(std::make_shared<VarNode>(std::move(name), dtype, lower_bound, upper_bound)) {}

PrimExpr IntImm(DataType dtype, int64_t value) {
  KILN_CHECK(dtype.is_integer() || dtype.is_bool()) << "IntImm of " << dtype.ToString();
  return PrimExpr(std::make_shared<IntImmNode>(dtype, value));
}

PrimExpr FloatImm(DataType dtype, double value) {
  KILN_CHECK(dtype.is_floating()) << "FloatImm of " << dtype.ToString();
  return PrimExpr(std::make_shared<FloatImmNode>(dtype, value));
}

PrimExpr MakeBinary(ExprKind kind, PrimExpr a, PrimExpr b) {
  KILN_CHECK(IsBinary(kind)) << KindName(kind);
  KILN_CHECK(a.defined() && b.defined());
  KILN_CHECK(a.dtype() == b.dtype()) << "operands of " << KindName(kind) << " differ in type: "
                                     << a.dtype().ToString() << " vs " << b.dtype().ToString();
  DataType result = a.dtype();
  if (IsComparison(kind)) result = DataType::Bool(a.dtype().lanes());
  if (IsLogical(kind)) KILN_CHECK(a.dtype().is_bool()) << KindName(kind) << " needs bool operands";
  if (IsBitwise(kind)) KILN_CHECK(a.dtype().is_integer()) << KindName(kind) << " needs integer operands";
  return PrimExpr(std::make_shared<BinaryNode>(kind, result, std::move(a), std::move(b)));
}

PrimExpr Add(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kAdd, std::move(a), std::move(b)); }
PrimExpr Sub(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kSub, std::move(a), std::move(b)); }
PrimExpr Mul(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kMul, std::move(a), std::move(b)); }
PrimExpr Div(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kDiv, std::move(a), std::move(b)); }
PrimExpr FloorDiv(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kFloorDiv, std::move(a), std::move(b)); }
PrimExpr FloorMod(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kFloorMod, std::move(a), std::move(b)); }
PrimExpr Min(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kMin, std::move(a), std::move(b)); }
PrimExpr Max(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kMax, std::move(a), std::move(b)); }
PrimExpr EQ(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kEQ, std::move(a), std::move(b)); }
PrimExpr NE(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kNE, std::move(a), std::move(b)); }
PrimExpr LT(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kLT, std::move(a), std::move(b)); }
PrimExpr LE(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kLE, std::move(a), std::move(b)); }
PrimExpr GT(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kGT, std::move(a), std::move(b)); }
PrimExpr GE(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kGE, std::move(a), std::move(b)); }
PrimExpr And(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kAnd, std::move(a), std::move(b)); }
PrimExpr Or(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kOr, std::move(a), std::move(b)); }

PrimExpr Not(PrimExpr a) {
  KILN_CHECK(a.dtype().is_bool()) << "! needs a bool operand";
  return PrimExpr(std::make_shared<NotNode>(std::move(a)));
}

PrimExpr BitAnd(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kBitAnd, std::move(a), std::move(b)); }
PrimExpr BitOr(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kBitOr, std::move(a), std::move(b)); }
PrimExpr BitXor(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kBitXor, std::move(a), std::move(b)); }
PrimExpr Shl(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kShl, std::move(a), std::move(b)); }
PrimExpr Shr(PrimExpr a, PrimExpr b) { return MakeBinary(ExprKind::kShr, std::move(a), std::move(b)); }

PrimExpr BitNot(PrimExpr a) {
  KILN_CHECK(a.dtype().is_integer()) << "~ needs an integer operand";
  return PrimExpr(std::make_shared<BitNotNode>(std::move(a)));
}

std::string ReinterpretError(DataType from, DataType to) {
  for (DataType t : {from, to}) {
    if (t.is_bool() || t.is_handle()) return absl::StrCat("reinterpret does not take ", t.ToString());
    // Sub-byte lanes have no byte order to agree on between the interpreter and LLVM.
    if (t.bits() < 8) return absl::StrCat("reinterpret takes elements of at least 8 bits, not ", t.ToString());
  }
  if (from.bits() * from.lanes() != to.bits() * to.lanes()) {
    return absl::StrCat("reinterpret from ", from.ToString(), " to ", to.ToString(), " changes the width (",
                        from.bits() * from.lanes(), " vs ", to.bits() * to.lanes(), " bits)");
  }
  return "";
}

PrimExpr Reinterpret(DataType dtype, PrimExpr value) {
  std::string error = ReinterpretError(value.dtype(), dtype);
  KILN_CHECK(error.empty()) << error;
  return PrimExpr(std::make_shared<ReinterpretNode>(dtype, std::move(value)));
}

int64_t WrapInt(int64_t value, DataType t) {
  const int bits = t.is_bool() ? 1 : t.bits();
  if (bits >= 64) return value;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(value) & mask;
  if (t.is_int() && (u >> (bits - 1)) != 0) u |= ~mask;
  return static_cast<int64_t>(u);
}

int64_t EvalBitwise(ExprKind kind, DataType dtype, int64_t a, int64_t b) {
  const uint64_t ua = static_cast<uint64_t>(a);
  // An int amount is sign-extended, so a negative one reads as huge: out of range too.
  const uint64_t amount = static_cast<uint64_t>(b);
  const uint64_t bits = static_cast<uint64_t>(dtype.bits());
  switch (kind) {
    case ExprKind::kBitAnd: return WrapInt(a & b, dtype);
    case ExprKind::kBitOr: return WrapInt(a | b, dtype);
    case ExprKind::kBitXor: return WrapInt(a ^ b, dtype);
    case ExprKind::kShl: return amount >= bits ? 0 : WrapInt(static_cast<int64_t>(ua << amount), dtype);
    case ExprKind::kShr:
      // `a` is held extended to 64 bits, so a 64-bit shift gives the narrow result.
      if (dtype.is_int()) return a >> std::min<uint64_t>(amount, bits - 1);
      return amount >= bits ? 0 : static_cast<int64_t>(ua >> amount);
    default: break;
  }
  KILN_CHECK(false) << "EvalBitwise of " << KindName(kind);
  return 0;
}

int64_t EvalBitNot(DataType dtype, int64_t a) { return WrapInt(~a, dtype); }

PrimExpr Select(PrimExpr condition, PrimExpr true_value, PrimExpr false_value) {
  KILN_CHECK(condition.dtype().is_bool()) << "select condition must be bool";
  KILN_CHECK(true_value.dtype() == false_value.dtype()) << "select branches differ in type";
  return PrimExpr(std::make_shared<SelectNode>(std::move(condition), std::move(true_value),
                                               std::move(false_value)));
}

PrimExpr Cast(DataType dtype, PrimExpr value) {
  KILN_CHECK_EQ(dtype.lanes(), value.dtype().lanes()) << "cast may not change lanes";
  return PrimExpr(std::make_shared<CastNode>(dtype, std::move(value)));
}

bool IsMathIntrinsic(std::string_view name) {
  constexpr std::string_view kNames[] = {
      "exp",  "log",  "sqrt", "rsqrt", "tanh", "sigmoid", "erf",   "fabs",  "floor", "ceil",  "round", "pow",
      "sin",  "cos",  "tan",  "asin",  "acos", "atan",    "sinh",  "cosh",  "asinh", "acosh", "atanh", "log1p",
      "expm1", "fmod", "fma"};
  for (std::string_view known : kNames) {
    if (name == known) return true;
  }
  return false;
}

size_t MathIntrinsicArity(std::string_view name) {
  if (name == "fma") return 3;
  return name == "pow" || name == "fmod" ? 2 : 1;
}

PrimExpr Call(std::string op, std::vector<PrimExpr> args) {
  DataType dtype;
  if (const IntrinsicInfo* info = FindIntrinsic(op)) {
    absl::Status fits = CheckIntrinsicCall(op, args);
    KILN_CHECK(fits.ok()) << fits.message();
    dtype = IntrinsicResultType(*info, args);
  } else {
    KILN_CHECK(IsMathIntrinsic(op)) << "unknown intrinsic " << op;
    KILN_CHECK(!args.empty()) << op << " needs an argument";
    dtype = args[0].dtype();
  }
  return PrimExpr(std::make_shared<CallNode>(dtype, std::move(op), std::move(args)));
}

PrimExpr Ramp(PrimExpr base, PrimExpr stride, int lanes) {
  KILN_CHECK(base.dtype() == stride.dtype() && base.dtype().is_scalar());
  KILN_CHECK_GE(lanes, 2);
  return PrimExpr(std::make_shared<RampNode>(std::move(base), std::move(stride), lanes));
}

PrimExpr Broadcast(PrimExpr value, int lanes) {
  KILN_CHECK(value.dtype().is_scalar());
  KILN_CHECK_GE(lanes, 2);
  return PrimExpr(std::make_shared<BroadcastNode>(std::move(value), lanes));
}

PrimExpr Let(Var var, PrimExpr value, PrimExpr body) {
  KILN_CHECK(var.dtype() == value.dtype()) << "let " << var.name() << ": value type differs";
  return PrimExpr(std::make_shared<LetNode>(var.var_node(), std::move(value), std::move(body)));
}

namespace {

PrimExpr LiteralLike(const PrimExpr& other, int64_t value) {
  if (other.dtype().is_floating()) return FloatImm(other.dtype(), static_cast<double>(value));
  return IntImm(other.dtype(), value);
}

}  // namespace

PrimExpr operator+(PrimExpr a, PrimExpr b) { return Add(std::move(a), std::move(b)); }
PrimExpr operator-(PrimExpr a, PrimExpr b) { return Sub(std::move(a), std::move(b)); }
PrimExpr operator*(PrimExpr a, PrimExpr b) { return Mul(std::move(a), std::move(b)); }
PrimExpr operator+(PrimExpr a, int64_t b) { PrimExpr lit = LiteralLike(a, b); return Add(std::move(a), lit); }
PrimExpr operator-(PrimExpr a, int64_t b) { PrimExpr lit = LiteralLike(a, b); return Sub(std::move(a), lit); }
PrimExpr operator*(PrimExpr a, int64_t b) { PrimExpr lit = LiteralLike(a, b); return Mul(std::move(a), lit); }
PrimExpr operator+(int64_t a, PrimExpr b) { PrimExpr lit = LiteralLike(b, a); return Add(lit, std::move(b)); }
PrimExpr operator-(int64_t a, PrimExpr b) { PrimExpr lit = LiteralLike(b, a); return Sub(lit, std::move(b)); }
PrimExpr operator*(int64_t a, PrimExpr b) { PrimExpr lit = LiteralLike(b, a); return Mul(lit, std::move(b)); }

// ---------------------------------------------------------------- printing

namespace {

// Binding strength of an infix form; higher binds tighter. Function-call forms are atoms.
// The levels are C's: || < && < | < ^ < & < comparisons < << >> < + - < * / < unary.
constexpr int kUnaryPrecedence = 10;
constexpr int kAtomPrecedence = 11;

int Precedence(const PrimExpr& e) {
  switch (e.kind()) {
    case ExprKind::kOr: return 1;
    case ExprKind::kAnd: return 2;
    case ExprKind::kBitOr: return 3;
    case ExprKind::kBitXor: return 4;
    case ExprKind::kBitAnd: return 5;
    case ExprKind::kEQ: case ExprKind::kNE: case ExprKind::kLT:
    case ExprKind::kLE: case ExprKind::kGT: case ExprKind::kGE: return 6;
    case ExprKind::kShl: case ExprKind::kShr: return 7;
    case ExprKind::kAdd: case ExprKind::kSub: return 8;
    case ExprKind::kMul: case ExprKind::kDiv: return 9;
    case ExprKind::kNot: case ExprKind::kBitNot: return kUnaryPrecedence;
    case ExprKind::kLet: return 0;
    case ExprKind::kIntImm: {
      const auto* imm = e.as<IntImmNode>();
      return imm->value < 0 && imm->dtype() == DataType::Int64() ? kUnaryPrecedence : kAtomPrecedence;
    }
    case ExprKind::kFloatImm: {
      const auto* imm = e.as<FloatImmNode>();
      return imm->value < 0 && imm->dtype() == DataType::Float32() ? kUnaryPrecedence : kAtomPrecedence;
    }
    default: return kAtomPrecedence;
  }
}

void Print(const PrimExpr& e, PrimExprNamer& namer, std::string* out);

void PrintOperand(const PrimExpr& e, bool parenthesize, PrimExprNamer& namer, std::string* out) {
  if (parenthesize) out->push_back('(');
  Print(e, namer, out);
  if (parenthesize) out->push_back(')');
}

void PrintList(const std::vector<PrimExpr>& items, PrimExprNamer& namer, std::string* out) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out->append(", ");
    Print(items[i], namer, out);
  }
}

void Print(const PrimExpr& e, PrimExprNamer& namer, std::string* out) {
  if (!e.defined()) {
    out->append("<undefined>");
    return;
  }
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      const auto* imm = e.as<IntImmNode>();
      if (imm->dtype().is_bool()) {
        out->append(imm->value ? "true" : "false");
      } else if (imm->dtype() == DataType::Int64()) {
        absl::StrAppend(out, imm->value);
      } else {
        absl::StrAppend(out, imm->dtype().ToString(), "(", imm->value, ")");
      }
      return;
    }
    case ExprKind::kFloatImm: {
      const auto* imm = e.as<FloatImmNode>();
      std::string text = FloatLiteralText(imm->value, imm->dtype().bits());
      bool plain = imm->dtype() == DataType::Float32() && std::isfinite(imm->value);
      if (plain) {
        out->append(text);
      } else {
        absl::StrAppend(out, imm->dtype().ToString(), "(", text, ")");
      }
      return;
    }
    case ExprKind::kVar: out->append(namer.VarName(e.as<VarNode>())); return;
    case ExprKind::kFloorDiv: case ExprKind::kFloorMod:
    case ExprKind::kMin: case ExprKind::kMax: {
      const auto* bin = e.as<BinaryNode>();
      absl::StrAppend(out, KindName(e.kind()), "(");
      Print(bin->a, namer, out);
      out->append(", ");
      Print(bin->b, namer, out);
      out->push_back(')');
      return;
    }
    case ExprKind::kNot: {
      out->push_back('!');
      const PrimExpr& a = e.as<NotNode>()->a;
      PrintOperand(a, Precedence(a) < kUnaryPrecedence, namer, out);
      return;
    }
    case ExprKind::kBitNot: {
      out->push_back('~');
      const PrimExpr& a = e.as<BitNotNode>()->a;
      PrintOperand(a, Precedence(a) < kUnaryPrecedence, namer, out);
      return;
    }
    case ExprKind::kReinterpret: {
      const auto* r = e.as<ReinterpretNode>();
      absl::StrAppend(out, "reinterpret(", r->dtype().ToString(), ", ");
      Print(r->value, namer, out);
      out->push_back(')');
      return;
    }
    case ExprKind::kSelect: {
      const auto* s = e.as<SelectNode>();
      out->append("select(");
      PrintList({s->condition, s->true_value, s->false_value}, namer, out);
      out->push_back(')');
      return;
    }
    case ExprKind::kCast: {
      const auto* c = e.as<CastNode>();
      absl::StrAppend(out, "cast(", c->dtype().ToString(), ", ");
      Print(c->value, namer, out);
      out->push_back(')');
      return;
    }
    case ExprKind::kCall: {
      const auto* c = e.as<CallNode>();
      absl::StrAppend(out, c->op, "(");
      PrintList(c->args, namer, out);
      out->push_back(')');
      return;
    }
    case ExprKind::kBufferLoad: {
      const auto* load = e.as<BufferLoadNode>();
      absl::StrAppend(out, namer.BufferName(load->buffer.get()), "[");
      PrintList(load->indices, namer, out);
      out->push_back(']');
      return;
    }
    case ExprKind::kRamp: {
      const auto* r = e.as<RampNode>();
      out->append("ramp(");
      PrintList({r->base, r->stride}, namer, out);
      absl::StrAppend(out, ", ", r->lanes, ")");
      return;
    }
    case ExprKind::kBroadcast: {
      const auto* b = e.as<BroadcastNode>();
      out->append("broadcast(");
      Print(b->value, namer, out);
      absl::StrAppend(out, ", ", b->lanes, ")");
      return;
    }
    case ExprKind::kLet: {
      const auto* let = e.as<LetNode>();
      absl::StrAppend(out, "let ", namer.LetVarName(let->var.get()), " = ");
      Print(let->value, namer, out);
      out->append(" in ");
      Print(let->body, namer, out);
      return;
    }
    default: {
      // Infix binary forms. Left-associative: the right operand is parenthesized at equal
      // precedence so that printing then parsing rebuilds the same tree; comparisons do
      // not chain, so both sides are.
      const auto* bin = e.as<BinaryNode>();
      KILN_CHECK(bin != nullptr);
      int p = Precedence(e);
      bool comparison = IsComparison(e.kind());
      PrintOperand(bin->a, comparison ? Precedence(bin->a) <= p : Precedence(bin->a) < p, namer, out);
      absl::StrAppend(out, " ", KindName(e.kind()), " ");
      PrintOperand(bin->b, Precedence(bin->b) <= p, namer, out);
      return;
    }
  }
}

}  // namespace

std::string PrimExprNamer::VarName(const VarNode* var) { return var->name; }
std::string PrimExprNamer::BufferName(const BufferNode* buffer) { return buffer->name; }

void PrintPrimExpr(const PrimExpr& expr, PrimExprNamer& namer, std::string* out) { Print(expr, namer, out); }

std::string FloatLiteralText(double value, int bits) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), bits <= 32 ? "%.9g" : "%.17g", value);
  std::string text = buffer;
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

std::string ToString(const PrimExpr& expr) {
  PrimExprNamer own_names;
  std::string out;
  Print(expr, own_names, &out);
  return out;
}

std::ostream& operator<<(std::ostream& os, const PrimExpr& expr) { return os << ToString(expr); }

}  // namespace kiln::tir
