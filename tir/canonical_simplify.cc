#include "tir/canonical_simplify.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/check.h"
#include "support/int_math.h"
#include "tir/buffer.h"

namespace kiln::tir {
namespace {

// Past this many terms a product of sums stays a product: expanding nested products of
// sums grows exponentially and makes nothing simpler.
constexpr size_t kMaxProductTerms = 64;

constexpr int64_t kInt64Min = IntBound::kNegInf;

bool IsIntScalar(const PrimExpr& e) { return e.dtype().is_integer() && e.dtype().is_scalar(); }

// A string naming `e` up to structure, with variables and buffers by identity. Used to
// recognise repeated atoms; never printed.
void AppendKey(const PrimExpr& e, std::string* out) {
  DataType t = e.dtype();
  absl::StrAppend(out, "(", static_cast<int>(e.kind()), ":", static_cast<int>(t.code()), ".", t.bits(), ".",
                  t.lanes());
  switch (e.kind()) {
    case ExprKind::kIntImm: absl::StrAppend(out, " ", e.as<IntImmNode>()->value); break;
    case ExprKind::kFloatImm: {
      uint64_t bits;
      double value = e.as<FloatImmNode>()->value;
      std::memcpy(&bits, &value, sizeof(bits));
      absl::StrAppend(out, " ", bits);
      break;
    }
    case ExprKind::kVar: absl::StrAppend(out, " v", reinterpret_cast<uintptr_t>(e.get())); break;
    case ExprKind::kNot: AppendKey(e.as<NotNode>()->a, out); break;
    case ExprKind::kBitNot: AppendKey(e.as<BitNotNode>()->a, out); break;
    case ExprKind::kReinterpret: AppendKey(e.as<ReinterpretNode>()->value, out); break;
    case ExprKind::kSelect: {
      const auto* s = e.as<SelectNode>();
      AppendKey(s->condition, out);
      AppendKey(s->true_value, out);
      AppendKey(s->false_value, out);
      break;
    }
    case ExprKind::kCast: AppendKey(e.as<CastNode>()->value, out); break;
    case ExprKind::kCall: {
      const auto* c = e.as<CallNode>();
      absl::StrAppend(out, " ", c->op);
      for (const PrimExpr& arg : c->args) AppendKey(arg, out);
      break;
    }
    case ExprKind::kBufferLoad: {
      const auto* load = e.as<BufferLoadNode>();
      absl::StrAppend(out, " b", reinterpret_cast<uintptr_t>(load->buffer.get()));
      for (const PrimExpr& index : load->indices) AppendKey(index, out);
      break;
    }
    case ExprKind::kRamp: {
      const auto* r = e.as<RampNode>();
      AppendKey(r->base, out);
      AppendKey(r->stride, out);
      absl::StrAppend(out, " ", r->lanes);
      break;
    }
    case ExprKind::kBroadcast: {
      const auto* b = e.as<BroadcastNode>();
      AppendKey(b->value, out);
      absl::StrAppend(out, " ", b->lanes);
      break;
    }
    case ExprKind::kLet: {
      const auto* let = e.as<LetNode>();
      absl::StrAppend(out, " v", reinterpret_cast<uintptr_t>(let->var.get()));
      AppendKey(let->value, out);
      AppendKey(let->body, out);
      break;
    }
    default: {
      const auto* bin = e.as<BinaryNode>();
      KILN_CHECK(bin != nullptr);
      AppendKey(bin->a, out);
      AppendKey(bin->b, out);
      break;
    }
  }
  out->push_back(')');
}

std::string Key(const PrimExpr& e) {
  std::string out;
  AppendKey(e, &out);
  return out;
}

uint64_t Magnitude(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

uint64_t Gcd(uint64_t a, uint64_t b) {
  while (b != 0) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// Floor division and modulo by a constant b other than 0 and -1 (callers handle those).
using support::FloorDiv;
using support::FloorMod;

bool IsTrueImm(const PrimExpr& e) {
  auto v = e.as_int();
  return v && *v != 0;
}

PrimExpr BoolLike(const PrimExpr& like, bool value) { return IntImm(like.dtype(), value ? 1 : 0); }

ExprKind Negate(ExprKind kind) {
  switch (kind) {
    case ExprKind::kEQ: return ExprKind::kNE;
    case ExprKind::kNE: return ExprKind::kEQ;
    case ExprKind::kLT: return ExprKind::kGE;
    case ExprKind::kGE: return ExprKind::kLT;
    case ExprKind::kLE: return ExprKind::kGT;
    default: return ExprKind::kLE;  // kGT
  }
}

PrimExpr FoldCast(DataType t, const PrimExpr& v) {
  if (v.dtype() == t) return v;
  if (!t.is_scalar() || !v.dtype().is_scalar()) return Cast(t, v);
  if (auto iv = v.as_int()) {
    bool exact_source = v.dtype().is_bool() || v.dtype().is_int() || v.dtype().bits() < 64;
    if (t.is_bool()) return IntImm(t, *iv != 0 ? 1 : 0);
    if (t.is_integer()) return IntImm(t, WrapInt(*iv, t));
    if (exact_source && t.is_float() && t.bits() == 64) return FloatImm(t, static_cast<double>(*iv));
    if (exact_source && t.is_float() && t.bits() == 32) {
      return FloatImm(t, static_cast<double>(static_cast<float>(*iv)));
    }
  }
  if (const auto* f = v.as<FloatImmNode>()) {
    double value = f->value;
    if (t.is_float() && t.bits() == 64) return FloatImm(t, value);
    if (t.is_float() && t.bits() == 32) return FloatImm(t, static_cast<double>(static_cast<float>(value)));
    if (t.is_bool()) return IntImm(t, value != 0 ? 1 : 0);
    if (t.is_integer() && std::isfinite(value)) {
      // Only values the target holds exactly: out of range the conversion is undefined.
      double truncated = std::trunc(value);
      IntBound range = DTypeBound(t);
      if (truncated >= -9.2e18 && truncated <= 9.2e18) {
        auto i = static_cast<int64_t>(truncated);
        if (range.Contains(i)) return IntImm(t, i);
      }
    }
  }
  return Cast(t, v);
}

// A product of atoms (sorted, repeated for powers) times a coefficient.
struct Term {
  std::vector<int> atoms;
  int64_t coef;
};

// sum(terms) + constant, in `dtype`.
struct Sum {
  DataType dtype;
  std::vector<Term> terms;
  int64_t constant = 0;
  bool is_const() const { return terms.empty(); }
};

struct Atom {
  PrimExpr expr;
  std::string key;
  std::string order;  // printed text: the sort key
  std::optional<IntBound> bound;
  // For floordiv/floormod by a positive constant: the divisor and the dividend's key, to
  // recognise c * floordiv(x, c) + floormod(x, c).
  int64_t divisor = 0;
  std::string operand_key;
};

}  // namespace

struct CanonicalSimplifier::Impl {
  explicit Impl(const VarBoundMap& b) : bounds(b) {}

  VarBoundMap bounds;  // a copy: Let adds the bound of its variable while inside the body
  std::vector<Atom> atoms;
  std::unordered_map<std::string, int> atom_ids;
  // ToSum results by node; the PrimExpr keeps the node (and so the key) alive.
  std::unordered_map<const PrimExprNode*, std::pair<PrimExpr, Sum>> sum_memo;
  int distribute_depth = 0;

  // ------------------------------------------------------------------ atoms and sums

  int Intern(const PrimExpr& e) {
    std::string key = Key(e);
    auto it = atom_ids.find(key);
    if (it != atom_ids.end()) return it->second;
    Atom atom;
    atom.expr = e;
    // Variables sort before other atoms, so `x + floordiv(y, 4)`, not the reverse.
    atom.order = absl::StrCat(e.kind() == ExprKind::kVar ? "0" : "1", ToString(e));
    if (e.kind() == ExprKind::kFloorDiv || e.kind() == ExprKind::kFloorMod) {
      const auto* bin = e.as<BinaryNode>();
      auto c = bin->b.as_int();
      if (c && *c > 0) {
        atom.divisor = *c;
        atom.operand_key = Key(bin->a);
      }
    }
    int id = static_cast<int>(atoms.size());
    atom_ids.emplace(key, id);
    atom.key = std::move(key);
    atoms.push_back(std::move(atom));
    return id;
  }

  bool AtomLess(int a, int b) const {
    if (a == b) return false;
    const std::string& x = atoms[a].order;
    const std::string& y = atoms[b].order;
    if (x != y) return x < y;
    return a < b;
  }

  bool MonoLess(const std::vector<int>& a, const std::vector<int>& b) const {
    size_t n = std::min(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
      if (a[i] != b[i]) return AtomLess(a[i], b[i]);
    }
    return a.size() < b.size();
  }

  static Sum Constant(DataType t, int64_t v) {
    Sum s;
    s.dtype = t;
    s.constant = v;
    return s;
  }

  Sum AtomSum(const PrimExpr& e) {
    if (auto v = e.as_int()) return Constant(e.dtype(), *v);
    Sum s;
    s.dtype = e.dtype();
    s.terms.push_back({{Intern(e)}, 1});
    return s;
  }

  // Sorts terms, merges equal monomials, drops zeros. False on coefficient overflow.
  bool Normalize(Sum* s) {
    std::stable_sort(s->terms.begin(), s->terms.end(),
                     [this](const Term& x, const Term& y) { return MonoLess(x.atoms, y.atoms); });
    std::vector<Term> out;
    for (Term& t : s->terms) {
      if (!out.empty() && out.back().atoms == t.atoms) {
        if (__builtin_add_overflow(out.back().coef, t.coef, &out.back().coef)) return false;
      } else {
        out.push_back(std::move(t));
      }
    }
    out.erase(std::remove_if(out.begin(), out.end(), [](const Term& t) { return t.coef == 0; }), out.end());
    s->terms = std::move(out);
    return true;
  }

  std::optional<Sum> Scale(const Sum& a, int64_t k) {
    if (k == 0) return Constant(a.dtype, 0);
    Sum out = a;
    for (Term& t : out.terms) {
      if (__builtin_mul_overflow(t.coef, k, &t.coef)) return std::nullopt;
    }
    if (__builtin_mul_overflow(out.constant, k, &out.constant)) return std::nullopt;
    return out;
  }

  // a + scale_b * b.
  std::optional<Sum> Combine(const Sum& a, const Sum& b, int64_t scale_b) {
    Sum out = a;
    for (const Term& t : b.terms) {
      int64_t coef;
      if (__builtin_mul_overflow(t.coef, scale_b, &coef)) return std::nullopt;
      out.terms.push_back({t.atoms, coef});
    }
    int64_t c;
    if (__builtin_mul_overflow(b.constant, scale_b, &c)) return std::nullopt;
    if (__builtin_add_overflow(out.constant, c, &out.constant)) return std::nullopt;
    if (!Normalize(&out)) return std::nullopt;
    std::optional<Sum> merged = MergeDivMod(std::move(out));
    if (!merged) return std::nullopt;
    return Distribute(*std::move(merged));
  }

  // r + min(a, b) is min(r + a, r + b) and r - min(a, b) is max(r - a, r - b) (dually for
  // max). Applied only when adding an operand to r leaves fewer terms than r has, so that
  // the result does not depend on the order the sum was built in: n - min(n, 1) is
  // max(n - 1, 0), and min(x, y) - x is min(y - x, 0), whose bound shows it is never
  // positive.
  Sum Distribute(Sum s) {
    // Each step works on smaller sums; the cap only bounds the work on deep nests.
    if (distribute_depth >= 8) return s;
    for (size_t i = 0; i < s.terms.size(); ++i) {
      if (s.terms[i].atoms.size() != 1 || (s.terms[i].coef != 1 && s.terms[i].coef != -1)) continue;
      PrimExpr atom = atoms[s.terms[i].atoms[0]].expr;
      ExprKind kind = atom.kind();
      if (kind != ExprKind::kMin && kind != ExprKind::kMax) continue;
      int64_t sign = s.terms[i].coef;
      Sum rest = s;
      rest.terms.erase(rest.terms.begin() + static_cast<std::ptrdiff_t>(i));
      if (rest.is_const()) continue;  // a constant cancels nothing
      ++distribute_depth;
      const auto* bin = atom.as<BinaryNode>();
      std::vector<Sum> ops;
      CollectOperands(kind, ToSum(bin->a), &ops);
      CollectOperands(kind, ToSum(bin->b), &ops);
      bool shrinks = false;
      for (const Sum& op : ops) shrinks = shrinks || Shrinks(rest, op, sign);
      std::vector<Sum> shifted;
      if (shrinks) {
        for (const Sum& op : ops) {
          std::optional<Sum> r = Combine(rest, op, sign);
          if (!r) break;
          shifted.push_back(*std::move(r));
        }
      }
      std::optional<Sum> out;
      if (shrinks && shifted.size() == ops.size()) {
        ExprKind flipped = kind == ExprKind::kMin ? ExprKind::kMax : ExprKind::kMin;
        std::vector<Sum> flat;
        ExprKind result_kind = sign == 1 ? kind : flipped;
        for (Sum& op : shifted) CollectOperands(result_kind, std::move(op), &flat);
        out = MinMaxOf(result_kind, std::move(flat));
      }
      --distribute_depth;
      if (out) return *std::move(out);
    }
    return s;
  }

  std::optional<Sum> Multiply(const Sum& a, const Sum& b) {
    if (a.is_const()) return Scale(b, a.constant);
    if (b.is_const()) return Scale(a, b.constant);
    // The constant is the term with no atoms.
    auto all_terms = [](const Sum& s) {
      std::vector<Term> terms = s.terms;
      if (s.constant != 0) terms.push_back({{}, s.constant});
      return terms;
    };
    Sum out = Constant(a.dtype, 0);
    for (const Term& x : all_terms(a)) {
      for (const Term& y : all_terms(b)) {
        int64_t coef;
        if (__builtin_mul_overflow(x.coef, y.coef, &coef)) return std::nullopt;
        std::vector<int> mono = x.atoms;
        mono.insert(mono.end(), y.atoms.begin(), y.atoms.end());
        if (mono.empty()) {
          if (__builtin_add_overflow(out.constant, coef, &out.constant)) return std::nullopt;
          continue;
        }
        std::sort(mono.begin(), mono.end(), [this](int p, int q) { return AtomLess(p, q); });
        out.terms.push_back({std::move(mono), coef});
      }
    }
    if (!Normalize(&out)) return std::nullopt;
    std::optional<Sum> merged = MergeDivMod(std::move(out));
    if (!merged) return std::nullopt;
    return Distribute(*std::move(merged));
  }

  // k * floormod(x, c) + k * c * floordiv(x, c) is k * x.
  std::optional<Sum> MergeDivMod(Sum s) {
    for (size_t i = 0; i < s.terms.size(); ++i) {
      if (s.terms[i].atoms.size() != 1) continue;
      int mod_id = s.terms[i].atoms[0];
      if (atoms[mod_id].divisor == 0 || atoms[mod_id].expr.kind() != ExprKind::kFloorMod) continue;
      int64_t k = s.terms[i].coef;
      int64_t kc;
      if (__builtin_mul_overflow(k, atoms[mod_id].divisor, &kc)) continue;
      for (size_t j = 0; j < s.terms.size(); ++j) {
        if (s.terms[j].atoms.size() != 1 || s.terms[j].coef != kc) continue;
        const Atom& div = atoms[s.terms[j].atoms[0]];
        if (div.expr.kind() != ExprKind::kFloorDiv || div.divisor != atoms[mod_id].divisor ||
            div.operand_key != atoms[mod_id].operand_key) {
          continue;
        }
        PrimExpr operand = atoms[mod_id].expr.as<BinaryNode>()->a;
        Sum rest = s;
        rest.terms.erase(rest.terms.begin() + static_cast<std::ptrdiff_t>(std::max(i, j)));
        rest.terms.erase(rest.terms.begin() + static_cast<std::ptrdiff_t>(std::min(i, j)));
        return Combine(rest, ToSum(operand), k);
      }
    }
    return s;
  }

  // ------------------------------------------------------------------ bounds

  IntBound AtomBound(int id) {
    if (atoms[id].bound) return *atoms[id].bound;
    PrimExpr e = atoms[id].expr;
    IntBound b = ComputeConstIntBound(e, bounds);
    // The structural walk cannot see cancellation inside operands; their canonical sums can.
    switch (e.kind()) {
      case ExprKind::kFloorDiv: case ExprKind::kFloorMod: case ExprKind::kMin: case ExprKind::kMax: {
        const auto* bin = e.as<BinaryNode>();
        if (!IsIntScalar(bin->a)) break;
        IntBound x = SumBound(ToSum(bin->a));
        IntBound y = SumBound(ToSum(bin->b));
        IntBound refined;
        if (e.kind() == ExprKind::kFloorDiv) refined = BoundFloorDiv(x, y);
        if (e.kind() == ExprKind::kFloorMod) refined = BoundFloorMod(x, y);
        if (e.kind() == ExprKind::kMin) refined = BoundMin(x, y);
        if (e.kind() == ExprKind::kMax) refined = BoundMax(x, y);
        b = IntersectBounds(b, refined);
        break;
      }
      case ExprKind::kSelect: {
        const auto* s = e.as<SelectNode>();
        if (!IsIntScalar(s->true_value)) break;
        b = IntersectBounds(b, UnionBounds(SumBound(ToSum(s->true_value)), SumBound(ToSum(s->false_value))));
        break;
      }
      default: break;
    }
    atoms[id].bound = b;
    return b;
  }

  IntBound SumBound(const Sum& s) {
    IntBound acc = MakeBound(s.constant, s.constant);
    for (const Term& t : s.terms) {
      IntBound mono = MakeBound(t.coef, t.coef);
      for (int id : t.atoms) mono = BoundMul(mono, AtomBound(id));
      acc = BoundAdd(acc, mono);
    }
    // No overflow (tir/expr.h): the value fits its dtype.
    return IntersectBounds(acc, DTypeBound(s.dtype));
  }

  // ------------------------------------------------------------------ back to expressions

  PrimExpr TermExpr(const Term& term, int64_t coef, DataType t) {
    PrimExpr out;
    if (coef != 1) out = IntImm(t, coef);
    for (int id : term.atoms) out = out.defined() ? Mul(out, atoms[id].expr) : atoms[id].expr;
    return out;
  }

  PrimExpr ToExpr(const Sum& s) {
    DataType t = s.dtype;
    std::vector<const Term*> positive;
    std::vector<const Term*> negative;
    for (const Term& term : s.terms) (term.coef > 0 ? positive : negative).push_back(&term);
    PrimExpr acc;
    bool constant_done = false;
    if (positive.empty() && !negative.empty() && s.constant > 0) {
      acc = IntImm(t, s.constant);  // `5 - n` rather than `-1 * n + 5`
      constant_done = true;
    }
    for (const Term* term : positive) {
      PrimExpr e = TermExpr(*term, term->coef, t);
      acc = acc.defined() ? Add(acc, e) : e;
    }
    for (const Term* term : negative) {
      if (acc.defined() && term->coef != kInt64Min) {
        acc = Sub(acc, TermExpr(*term, -term->coef, t));
      } else {
        PrimExpr e = TermExpr(*term, term->coef, t);
        acc = acc.defined() ? Add(acc, e) : e;
      }
    }
    if (constant_done) return acc;
    int64_t c = s.constant;
    if (!acc.defined()) return IntImm(t, c);
    if (c > 0 || c == kInt64Min) return Add(acc, IntImm(t, c));
    if (c < 0) return Sub(acc, IntImm(t, -c));
    return acc;
  }

  // `kind(a, b)` with operands in a fixed order, for commutative min/max.
  static PrimExpr Ordered(ExprKind kind, PrimExpr a, PrimExpr b) {
    std::string ta = ToString(a);
    std::string tb = ToString(b);
    if (tb < ta || (tb == ta && Key(b) < Key(a))) std::swap(a, b);
    return MakeBinary(kind, std::move(a), std::move(b));
  }

  // ------------------------------------------------------------------ integer sums

  Sum ToSum(const PrimExpr& e) {
    // Shared subexpressions are converted once (shapes are often DAGs).
    auto it = sum_memo.find(e.get());
    if (it != sum_memo.end()) return it->second.second;
    std::optional<Sum> s = TryToSum(e);
    // On coefficient overflow, keep the operation as it is, operands simplified.
    Sum out = s ? *std::move(s) : AtomSum(Rewrite(e));
    sum_memo.emplace(e.get(), std::make_pair(e, out));
    return out;
  }

  // a / b when b is a single term that divides every term of a (n * m / m is n), else
  // nothing.
  std::optional<Sum> DivideExactly(const Sum& a, const Sum& b) {
    if (b.constant != 0 || b.terms.size() != 1 || a.constant != 0) return std::nullopt;
    const Term& divisor = b.terms[0];
    if (divisor.coef == -1) return std::nullopt;  // not worth the overflow corner
    Sum q = Constant(a.dtype, 0);
    for (const Term& t : a.terms) {
      if (t.coef % divisor.coef != 0) return std::nullopt;
      // Multiset difference of two sorted atom lists.
      std::vector<int> rest;
      size_t j = 0;
      for (int id : t.atoms) {
        if (j < divisor.atoms.size() && divisor.atoms[j] == id) {
          ++j;
        } else {
          rest.push_back(id);
        }
      }
      if (j != divisor.atoms.size()) return std::nullopt;
      if (rest.empty()) {
        if (__builtin_add_overflow(q.constant, t.coef / divisor.coef, &q.constant)) return std::nullopt;
      } else {
        q.terms.push_back({std::move(rest), t.coef / divisor.coef});
      }
    }
    if (!Normalize(&q)) return std::nullopt;
    return q;
  }

  std::optional<Sum> TryToSum(const PrimExpr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm: return Constant(e.dtype(), e.as<IntImmNode>()->value);
      case ExprKind::kVar: return AtomSum(e);
      case ExprKind::kAdd: case ExprKind::kSub: {
        // The left spine of a long chain (a + b - c + ...) is walked in a loop, not by
        // recursion, so long sums do not exhaust the stack.
        std::vector<std::pair<PrimExpr, int64_t>> operands;  // right operands, outermost first
        PrimExpr spine = e;
        while ((spine.kind() == ExprKind::kAdd || spine.kind() == ExprKind::kSub) &&
               (spine.same_as(e) || !sum_memo.count(spine.get()))) {
          const auto* bin = spine.as<BinaryNode>();
          operands.emplace_back(bin->b, spine.kind() == ExprKind::kAdd ? 1 : -1);
          spine = bin->a;
        }
        Sum acc = ToSum(spine);
        for (auto it = operands.rbegin(); it != operands.rend(); ++it) {
          std::optional<Sum> next = Combine(acc, ToSum(it->first), it->second);
          if (!next) return std::nullopt;
          acc = *std::move(next);
        }
        return acc;
      }
      case ExprKind::kMul: {
        const auto* bin = e.as<BinaryNode>();
        Sum a = ToSum(bin->a);
        Sum b = ToSum(bin->b);
        if (!a.is_const() && !b.is_const() &&
            (a.terms.size() + 1) * (b.terms.size() + 1) > kMaxProductTerms) {
          return AtomSum(Ordered(ExprKind::kMul, ToExpr(a), ToExpr(b)));
        }
        return Multiply(a, b);
      }
      case ExprKind::kFloorDiv: case ExprKind::kFloorMod: {
        const auto* bin = e.as<BinaryNode>();
        bool is_div = e.kind() == ExprKind::kFloorDiv;
        Sum a = ToSum(bin->a);
        Sum b = ToSum(bin->b);
        if (b.is_const() && b.constant != 0) {
          return is_div ? DivByConst(a, b.constant) : ModByConst(a, b.constant);
        }
        // Division by zero is undefined, so wherever these are defined the divisor is not 0.
        if (a.is_const() && a.constant == 0) return a;
        if (std::optional<Sum> q = DivideExactly(a, b)) return is_div ? *q : Constant(a.dtype, 0);
        return AtomSum(MakeBinary(e.kind(), ToExpr(a), ToExpr(b)));
      }
      case ExprKind::kMin: case ExprKind::kMax: return MinMax(e.kind(), *e.as<BinaryNode>());
      case ExprKind::kSelect: {
        const auto* s = e.as<SelectNode>();
        PrimExpr cond = Simplify(s->condition);
        if (auto v = cond.as_int()) return ToSum(*v != 0 ? s->true_value : s->false_value);
        Sum t = ToSum(s->true_value);
        Sum f = ToSum(s->false_value);
        std::optional<Sum> d = Combine(t, f, -1);
        if (d && d->is_const() && d->constant == 0) return t;
        return AtomSum(Select(cond, ToExpr(t), ToExpr(f)));
      }
      case ExprKind::kCast: {
        const PrimExpr& value = e.as<CastNode>()->value;
        if (value.dtype() == e.dtype()) return ToSum(value);
        return AtomSum(FoldCast(e.dtype(), Simplify(value)));
      }
      default: return AtomSum(Rewrite(e));  // Div, Call, BufferLoad, Let
    }
  }

  static std::optional<Sum> AddConstant(Sum s, int64_t c) {
    if (__builtin_add_overflow(s.constant, c, &s.constant)) return std::nullopt;
    return s;
  }

  // Whether rest + sign * op has fewer terms than rest, counted without building it (terms
  // of both are sorted).
  bool Shrinks(const Sum& rest, const Sum& op, int64_t sign) const {
    int cancelled = 0;
    int added = 0;
    size_t i = 0;
    for (const Term& t : op.terms) {
      while (i < rest.terms.size() && MonoLess(rest.terms[i].atoms, t.atoms)) ++i;
      if (i < rest.terms.size() && rest.terms[i].atoms == t.atoms) {
        int64_t scaled;
        if (!__builtin_mul_overflow(t.coef, sign, &scaled) && scaled == -rest.terms[i].coef) ++cancelled;
      } else {
        ++added;
      }
    }
    return cancelled > added;
  }

  // Operands of a chain of nested `kind` (min or max) nodes; a constant added to a nested
  // chain goes into its operands (min(a, b) + 2 is min(a + 2, b + 2)).
  void CollectOperands(ExprKind kind, Sum s, std::vector<Sum>* out) {
    if (s.terms.size() == 1 && s.terms[0].coef == 1 && s.terms[0].atoms.size() == 1 &&
        atoms[s.terms[0].atoms[0]].expr.kind() == kind) {
      const auto* bin = atoms[s.terms[0].atoms[0]].expr.as<BinaryNode>();
      PrimExpr a = bin->a;
      PrimExpr b = bin->b;
      std::optional<Sum> sa = AddConstant(ToSum(a), s.constant);
      std::optional<Sum> sb = AddConstant(ToSum(b), s.constant);
      if (sa && sb) {
        CollectOperands(kind, *std::move(sa), out);
        CollectOperands(kind, *std::move(sb), out);
        return;
      }
    }
    out->push_back(std::move(s));
  }

  // min/max over a flattened chain: drops every operand that bounds show can never be the
  // result (min(min(x, 5), 3) is min(x, 3); min(n, n + 1) is n), then rebuilds the chain in a
  // fixed order, constants last.
  Sum MinMax(ExprKind kind, const BinaryNode& node) {
    std::vector<Sum> ops;
    CollectOperands(kind, ToSum(node.a), &ops);
    CollectOperands(kind, ToSum(node.b), &ops);
    return MinMaxOf(kind, std::move(ops));
  }

  Sum MinMaxOf(ExprKind kind, std::vector<Sum> ops) {
    bool is_min = kind == ExprKind::kMin;
    std::vector<bool> dropped(ops.size(), false);
    for (size_t i = 0; i < ops.size(); ++i) {
      for (size_t j = 0; j < ops.size() && !dropped[i]; ++j) {
        if (i == j || dropped[j]) continue;
        std::optional<Sum> d = Combine(ops[i], ops[j], -1);
        if (!d) continue;
        IntBound bd = SumBound(*d);
        // For min, ops[i] >= ops[j] everywhere means ops[i] never decides the result.
        if (is_min ? bd.min >= 0 : bd.max <= 0) dropped[i] = true;
      }
    }
    std::vector<size_t> survivors;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!dropped[i]) survivors.push_back(i);
    }
    if (survivors.size() == 1) return ops[survivors[0]];
    // A constant every operand shares moves out: min(n + 2, m + 2) is min(m, n) + 2.
    int64_t shared = ops[survivors[0]].constant;
    for (size_t i : survivors) {
      if (ops[i].is_const() || ops[i].constant != shared) shared = 0;
    }
    for (size_t i : survivors) ops[i].constant -= shared;
    std::vector<std::pair<std::string, PrimExpr>> kept;
    for (size_t i : survivors) {
      PrimExpr e = ToExpr(ops[i]);
      kept.emplace_back(absl::StrCat(ops[i].is_const() ? "1" : "0", ToString(e), Key(e)), e);
    }
    std::sort(kept.begin(), kept.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    PrimExpr chain = kept[0].second;
    for (size_t i = 1; i < kept.size(); ++i) chain = MakeBinary(kind, chain, kept[i].second);
    Sum out = AtomSum(chain);
    out.constant = shared;
    return out;
  }

  // a divided exactly by g (g divides every coefficient and the constant).
  static Sum DivideExact(Sum a, int64_t g) {
    for (Term& t : a.terms) t.coef /= g;
    a.constant /= g;
    return a;
  }

  // gcd of c and every coefficient and the constant of a.
  static uint64_t CommonFactor(const Sum& a, int64_t c) {
    uint64_t g = Magnitude(c);
    for (const Term& t : a.terms) g = Gcd(g, Magnitude(t.coef));
    return Gcd(g, Magnitude(a.constant));
  }

  // The single atom of `s` when s is exactly that atom (coefficient 1, no constant).
  static std::optional<int> SoleAtom(const Sum& s) {
    if (s.constant != 0 || s.terms.size() != 1 || s.terms[0].coef != 1 || s.terms[0].atoms.size() != 1) {
      return std::nullopt;
    }
    return s.terms[0].atoms[0];
  }

  // floordiv(a, c) for a nonzero constant c.
  std::optional<Sum> DivByConst(Sum a, int64_t c) {
    if (c == 1) return a;
    if (c == -1) return Scale(a, -1);
    if (a.is_const()) return Constant(a.dtype, FloorDiv(a.constant, c));
    uint64_t g = CommonFactor(a, c);
    if (g > 1) {
      // floordiv(g * x, g * c) == floordiv(x, c)
      a = DivideExact(std::move(a), static_cast<int64_t>(g));
      c /= static_cast<int64_t>(g);
      if (c == 1) return a;
      if (c == -1) return Scale(a, -1);
    }
    // a = c * q + r, with q every term c divides and the constant split so that r's constant
    // lies between 0 and c; then floordiv(a, c) = q + floordiv(r, c).
    Sum q = Constant(a.dtype, FloorDiv(a.constant, c));
    Sum r = Constant(a.dtype, FloorMod(a.constant, c));
    for (const Term& t : a.terms) {
      if (t.coef % c == 0) {
        q.terms.push_back({t.atoms, t.coef / c});
      } else {
        r.terms.push_back(t);
      }
    }
    if (r.is_const()) return q;
    IntBound rb = SumBound(r);
    if (rb.min != IntBound::kNegInf && rb.max != IntBound::kPosInf) {
      int64_t lo = FloorDiv(rb.min, c);
      if (lo == FloorDiv(rb.max, c)) {
        if (__builtin_add_overflow(q.constant, lo, &q.constant)) return std::nullopt;
        return q;
      }
    }
    if (std::optional<int> id = SoleAtom(r); id && c > 0) {
      // floordiv(floordiv(y, d), c) == floordiv(y, d * c) for positive d, c.
      int64_t d = atoms[*id].divisor;
      int64_t dc;
      if (d > 0 && atoms[*id].expr.kind() == ExprKind::kFloorDiv && !__builtin_mul_overflow(d, c, &dc)) {
        PrimExpr y = atoms[*id].expr.as<BinaryNode>()->a;
        std::optional<Sum> inner = DivByConst(ToSum(y), dc);
        if (inner) return Combine(q, *inner, 1);
      }
    }
    return Combine(q, AtomSum(FloorDiv(ToExpr(r), IntImm(a.dtype, c))), 1);
  }

  // floormod(a, c) for a nonzero constant c; the result has c's sign.
  std::optional<Sum> ModByConst(Sum a, int64_t c) {
    if (c == 1 || c == -1) return Constant(a.dtype, 0);
    if (a.is_const()) return Constant(a.dtype, FloorMod(a.constant, c));
    uint64_t g = CommonFactor(a, c);
    if (g > 1) {
      // floormod(g * x, g * c) == g * floormod(x, c)
      std::optional<Sum> m = ModByConst(DivideExact(std::move(a), static_cast<int64_t>(g)),
                                        c / static_cast<int64_t>(g));
      if (!m) return std::nullopt;
      return Scale(*m, static_cast<int64_t>(g));
    }
    // Multiples of c do not change the remainder.
    Sum r = Constant(a.dtype, FloorMod(a.constant, c));
    for (const Term& t : a.terms) {
      if (t.coef % c != 0) r.terms.push_back(t);
    }
    if (r.is_const()) return r;
    IntBound rb = SumBound(r);
    if (rb.min != IntBound::kNegInf && rb.max != IntBound::kPosInf) {
      // One quotient over r's whole range: the remainder is r shifted.
      int64_t q = FloorDiv(rb.min, c);
      int64_t shift;
      if (q == FloorDiv(rb.max, c) && !__builtin_mul_overflow(q, c, &shift)) {
        if (__builtin_sub_overflow(r.constant, shift, &r.constant)) return std::nullopt;
        return r;
      }
    }
    if (std::optional<int> id = SoleAtom(r); id && c > 0) {
      // floormod(floormod(y, d), c) == floormod(y, c) when c divides d.
      int64_t d = atoms[*id].divisor;
      if (d > 0 && atoms[*id].expr.kind() == ExprKind::kFloorMod && d % c == 0) {
        PrimExpr y = atoms[*id].expr.as<BinaryNode>()->a;
        return ModByConst(ToSum(y), c);
      }
    }
    return AtomSum(FloorMod(ToExpr(r), IntImm(a.dtype, c)));
  }

  // ------------------------------------------------------------------ everything else

  PrimExpr Simplify(const PrimExpr& e) {
    if (!e.defined()) return e;
    if (IsIntScalar(e)) return ToExpr(ToSum(e));
    return Rewrite(e);
  }

  // Simplifies `e`'s operands and folds `e` itself where possible, without bringing `e`
  // into sum form.
  PrimExpr Rewrite(const PrimExpr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm: case ExprKind::kFloatImm: case ExprKind::kVar: return e;
      case ExprKind::kAdd: case ExprKind::kSub: case ExprKind::kMul: case ExprKind::kDiv:
      case ExprKind::kFloorDiv: case ExprKind::kFloorMod: case ExprKind::kMin: case ExprKind::kMax: {
        const auto* bin = e.as<BinaryNode>();
        PrimExpr a = Simplify(bin->a);
        PrimExpr b = Simplify(bin->b);
        if (a.same_as(bin->a) && b.same_as(bin->b)) return e;
        return MakeBinary(e.kind(), a, b);
      }
      case ExprKind::kEQ: case ExprKind::kNE: case ExprKind::kLT:
      case ExprKind::kLE: case ExprKind::kGT: case ExprKind::kGE: {
        const auto* bin = e.as<BinaryNode>();
        return SimplifyCompare(e.kind(), bin->a, bin->b);
      }
      case ExprKind::kAnd: case ExprKind::kOr: {
        const auto* bin = e.as<BinaryNode>();
        PrimExpr a = Simplify(bin->a);
        PrimExpr b = Simplify(bin->b);
        if (e.dtype().is_scalar()) {
          bool is_and = e.kind() == ExprKind::kAnd;
          for (const PrimExpr* side : {&a, &b}) {
            if (!side->as_int()) continue;
            const PrimExpr& other = side == &a ? b : a;
            // true && x is x; false && x is false; dually for ||.
            if (IsTrueImm(*side) == is_and) return other;
            return BoolLike(e, !is_and);
          }
          if (Key(a) == Key(b)) return a;
        }
        return MakeBinary(e.kind(), a, b);
      }
      case ExprKind::kNot: return SimplifyNot(Simplify(e.as<NotNode>()->a));
      case ExprKind::kSelect: {
        const auto* s = e.as<SelectNode>();
        PrimExpr cond = Simplify(s->condition);
        if (cond.dtype().is_scalar() && cond.as_int()) {
          return Simplify(IsTrueImm(cond) ? s->true_value : s->false_value);
        }
        PrimExpr t = Simplify(s->true_value);
        PrimExpr f = Simplify(s->false_value);
        if (Key(t) == Key(f)) return t;
        return Select(cond, t, f);
      }
      case ExprKind::kCast: return FoldCast(e.dtype(), Simplify(e.as<CastNode>()->value));
      case ExprKind::kCall: {
        const auto* call = e.as<CallNode>();
        std::vector<PrimExpr> args;
        for (const PrimExpr& arg : call->args) args.push_back(Simplify(arg));
        return PrimExpr(std::make_shared<CallNode>(call->dtype(), call->op, std::move(args)));
      }
      case ExprKind::kBufferLoad: {
        const auto* load = e.as<BufferLoadNode>();
        std::vector<PrimExpr> indices;
        for (const PrimExpr& index : load->indices) indices.push_back(Simplify(index));
        return PrimExpr(std::make_shared<BufferLoadNode>(load->dtype(), load->buffer, std::move(indices)));
      }
      case ExprKind::kRamp: {
        const auto* r = e.as<RampNode>();
        return Ramp(Simplify(r->base), Simplify(r->stride), r->lanes);
      }
      case ExprKind::kBroadcast: {
        const auto* b = e.as<BroadcastNode>();
        return Broadcast(Simplify(b->value), b->lanes);
      }
      case ExprKind::kLet: return SimplifyLet(*e.as<LetNode>());
      case ExprKind::kBitAnd: case ExprKind::kBitOr: case ExprKind::kBitXor:
      case ExprKind::kShl: case ExprKind::kShr: {
        const auto* bin = e.as<BinaryNode>();
        return SimplifyBitwise(e.kind(), Simplify(bin->a), Simplify(bin->b));
      }
      case ExprKind::kBitNot: {
        PrimExpr a = Simplify(e.as<BitNotNode>()->a);
        if (auto v = a.as_int(); v && a.dtype().is_scalar()) return IntImm(a.dtype(), EvalBitNot(a.dtype(), *v));
        if (const auto* inner = a.as<BitNotNode>()) return inner->a;  // ~~x is x
        return BitNot(a);
      }
      case ExprKind::kReinterpret: {
        PrimExpr value = Simplify(e.as<ReinterpretNode>()->value);
        return Reinterpret(e.dtype(), value);
      }
    }
    return e;
  }

  // Constants fold (with the semantics of tir/expr.h, out-of-range shifts included); an
  // operand that leaves the other unchanged or decides the result is dropped.
  static PrimExpr SimplifyBitwise(ExprKind kind, const PrimExpr& a, const PrimExpr& b) {
    const DataType t = a.dtype();
    std::optional<int64_t> x = t.is_scalar() ? a.as_int() : std::nullopt;
    std::optional<int64_t> y = t.is_scalar() ? b.as_int() : std::nullopt;
    if (x && y) return IntImm(t, EvalBitwise(kind, t, *x, *y));
    const bool shift = kind == ExprKind::kShl || kind == ExprKind::kShr;
    if (y == 0) return kind == ExprKind::kBitAnd ? b : a;      // x & 0 is 0; x | 0, x ^ 0, x << 0, x >> 0 are x
    if (x == 0) return shift || kind == ExprKind::kBitAnd ? a : b;  // 0 & y, 0 << y, 0 >> y are 0; 0 | y, 0 ^ y are y
    return MakeBinary(kind, a, b);
  }

  void ForgetBounds() {
    for (Atom& atom : atoms) atom.bound.reset();
    sum_memo.clear();
  }

  PrimExpr SimplifyLet(const LetNode& let) {
    PrimExpr value = Simplify(let.value);
    const VarNode* var = let.var.get();
    std::optional<IntBound> saved;
    auto it = bounds.find(var);
    if (it != bounds.end()) saved = it->second;
    if (IsIntScalar(value)) {
      IntBound vb = SumBound(ToSum(value));
      bounds[var] = saved ? IntersectBounds(*saved, vb) : vb;
    }
    // Cached bounds and sums may involve the variable: recompute them inside and after.
    ForgetBounds();
    PrimExpr body = Simplify(let.body);
    if (saved) {
      bounds[var] = *saved;
    } else {
      bounds.erase(var);
    }
    ForgetBounds();
    return Let(Var(let.var), value, body);
  }

  PrimExpr SimplifyNot(const PrimExpr& a) {
    if (a.dtype().is_scalar() && a.as_int()) return BoolLike(a, !IsTrueImm(a));
    if (const auto* inner = a.as<NotNode>()) return inner->a;
    if (IsComparison(a.kind())) {
      const auto* bin = a.as<BinaryNode>();
      // Integers are totally ordered, so !(x < y) is x >= y (not so for floats: NaN).
      if (IsIntScalar(bin->a)) return SimplifyCompare(Negate(a.kind()), bin->a, bin->b);
    }
    return Not(a);
  }

  PrimExpr SimplifyCompare(ExprKind kind, const PrimExpr& a_in, const PrimExpr& b_in) {
    if (!IsIntScalar(a_in)) {
      PrimExpr a = Simplify(a_in);
      PrimExpr b = Simplify(b_in);
      const auto* fa = a.as<FloatImmNode>();
      const auto* fb = b.as<FloatImmNode>();
      if (fa && fb) {
        bool v = false;
        switch (kind) {
          case ExprKind::kEQ: v = fa->value == fb->value; break;
          case ExprKind::kNE: v = fa->value != fb->value; break;
          case ExprKind::kLT: v = fa->value < fb->value; break;
          case ExprKind::kLE: v = fa->value <= fb->value; break;
          case ExprKind::kGT: v = fa->value > fb->value; break;
          default: v = fa->value >= fb->value; break;
        }
        return IntImm(DataType::Bool(), v ? 1 : 0);
      }
      if (a.dtype().is_bool() && a.dtype().is_scalar() && a.as_int() && b.as_int() &&
          (kind == ExprKind::kEQ || kind == ExprKind::kNE)) {
        bool same = (*a.as_int() != 0) == (*b.as_int() != 0);
        return IntImm(DataType::Bool(), (same == (kind == ExprKind::kEQ)) ? 1 : 0);
      }
      return MakeBinary(kind, a, b);
    }
    // a > b is b < a: only <, <=, ==, != remain.
    PrimExpr lhs = a_in;
    PrimExpr rhs = b_in;
    if (kind == ExprKind::kGT || kind == ExprKind::kGE) {
      std::swap(lhs, rhs);
      kind = kind == ExprKind::kGT ? ExprKind::kLT : ExprKind::kLE;
    }
    Sum sa = ToSum(lhs);
    Sum sb = ToSum(rhs);
    std::optional<Sum> d = Combine(sa, sb, -1);
    if (!d) return MakeBinary(kind, ToExpr(sa), ToExpr(sb));
    bool is_eq = kind == ExprKind::kEQ || kind == ExprKind::kNE;
    // Distributing can expose a new common factor, hence a few rounds.
    for (int round = 0; round < 4; ++round) {
      uint64_t g = 0;
      for (const Term& t : d->terms) g = Gcd(g, Magnitude(t.coef));
      if (g <= 1 || g > static_cast<uint64_t>(IntBound::kPosInf) || d->constant == kInt64Min) break;
      auto gi = static_cast<int64_t>(g);
      int64_t k = d->constant;
      // g * x + k == 0 has no integer solution unless g divides k.
      if (is_eq && k % gi != 0) return IntImm(DataType::Bool(), kind == ExprKind::kNE ? 1 : 0);
      // Divide out g, so that terms can cancel at coefficient 1. For integer x:
      // g*x + k == 0 is x + k/g == 0; g*x + k < 0 is x + floor(k/g) < 0;
      // g*x + k <= 0 is x + ceil(k/g) <= 0.
      for (Term& t : d->terms) t.coef /= gi;
      if (kind == ExprKind::kLT) {
        d->constant = FloorDiv(k, gi);
      } else if (kind == ExprKind::kLE) {
        d->constant = -FloorDiv(-k, gi);
      } else {
        d->constant = k / gi;
      }
      d = Distribute(*std::move(d));
    }
    IntBound bd = SumBound(*d);
    std::optional<bool> known;
    switch (kind) {
      case ExprKind::kLT:
        if (bd.max < 0) known = true;
        if (bd.min >= 0) known = false;
        break;
      case ExprKind::kLE:
        if (bd.max <= 0) known = true;
        if (bd.min > 0) known = false;
        break;
      default: {  // kEQ, kNE
        std::optional<bool> equal;
        if (bd.min == 0 && bd.max == 0) equal = true;
        if (bd.min > 0 || bd.max < 0) equal = false;
        if (equal) known = (kind == ExprKind::kEQ) == *equal;
        break;
      }
    }
    if (known) return IntImm(DataType::Bool(), *known ? 1 : 0);
    std::optional<PrimExpr> canonical = CanonicalCompare(kind, *std::move(d));
    if (canonical) return *canonical;
    return MakeBinary(kind, ToExpr(sa), ToExpr(sb));
  }

  // `d kind 0` written with positive terms on the left and the rest on the right:
  // `i < 8`, `n < m + 1`, and `n > 3` rather than `3 < n` when there are no positive terms.
  // The caller has divided out common factors (2 * n != 4 is n != 2).
  std::optional<PrimExpr> CanonicalCompare(ExprKind kind, Sum d) {
    if (d.constant == kInt64Min) return std::nullopt;
    if ((kind == ExprKind::kEQ || kind == ExprKind::kNE) && !d.is_const() && d.terms[0].coef < 0) {
      std::optional<Sum> negated = Scale(d, -1);
      if (!negated) return std::nullopt;
      d = *std::move(negated);
    }
    Sum pos = Constant(d.dtype, 0);
    Sum neg = Constant(d.dtype, 0);
    for (const Term& t : d.terms) {
      if (t.coef > 0) {
        pos.terms.push_back(t);
      } else {
        if (t.coef == kInt64Min) return std::nullopt;
        neg.terms.push_back({t.atoms, -t.coef});
      }
    }
    if (pos.is_const()) {
      // -neg + k < 0  is  neg > k (and <= becomes >=)
      ExprKind flipped = kind == ExprKind::kLT ? ExprKind::kGT : ExprKind::kGE;
      return MakeBinary(flipped, ToExpr(neg), IntImm(d.dtype, d.constant));
    }
    neg.constant = -d.constant;  // pos - neg + k < 0  is  pos < neg - k
    return MakeBinary(kind, ToExpr(pos), ToExpr(neg));
  }
};

CanonicalSimplifier::CanonicalSimplifier(const VarBoundMap& bounds) : impl_(std::make_unique<Impl>(bounds)) {}
CanonicalSimplifier::~CanonicalSimplifier() = default;

PrimExpr CanonicalSimplifier::Simplify(const PrimExpr& expr) { return impl_->Simplify(expr); }

IntBound CanonicalSimplifier::CanonicalBound(const PrimExpr& expr) {
  if (!expr.defined() || !IsIntScalar(expr)) return IntBound{};
  return impl_->SumBound(impl_->ToSum(expr));
}

bool CanonicalSimplifier::SameAfterSimplify(const PrimExpr& a, const PrimExpr& b) {
  return Key(impl_->Simplify(a)) == Key(impl_->Simplify(b));
}

}  // namespace kiln::tir
