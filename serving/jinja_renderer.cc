#include <algorithm>
#include <cctype>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "serving/jinja_syntax.h"
#include "support/int_math.h"
#include "support/status_macros.h"

namespace kiln::serving::jinja {
namespace {


// Limits that keep a hostile template from hanging or exhausting memory: evaluation steps
// (expressions evaluated and loop iterations), and the length of any string it builds.
constexpr int64_t kMaxRange = 1 << 20;
constexpr int64_t kMaxSteps = 2'000'000;
constexpr size_t kMaxString = 16u << 20;
// Lists are bounded like strings: `ns.x = ns.x + ns.x` doubles a list every step.
constexpr size_t kMaxListItems = 1u << 20;

// Python's integers never overflow; a template's arithmetic runs on int64, so a result that
// does not fit is an error rather than a wrapped (undefined) value.
bool CheckedIntOp(const std::string& op, int64_t i, int64_t j, int64_t* out) {
  if (op == "+") return !__builtin_add_overflow(i, j, out);
  if (op == "-") return !__builtin_sub_overflow(i, j, out);
  if (op == "*") return !__builtin_mul_overflow(i, j, out);
  if (op == "**") {  // j >= 0: by squaring, every product checked
    int64_t result = 1, base = i;
    for (int64_t e = j; e > 0; e >>= 1) {
      if ((e & 1) && __builtin_mul_overflow(result, base, &result)) return false;
      if (e > 1 && __builtin_mul_overflow(base, base, &base)) return false;
    }
    *out = result;
    return true;
  }
  if (i == INT64_MIN && j == -1) return false;  // `//` and `%` (j != 0 checked by the caller)
  *out = op == "//" ? support::FloorDiv(i, j) : support::FloorMod(i, j);
  return true;
}

// A float as an integer, as Python's int() truncates; NaN and values beyond int64 fail.
bool FloatToInt(double x, int64_t* out) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return false;
  *out = static_cast<int64_t>(x);
  return true;
}

size_t CodePointCount(const std::string& text) {
  size_t count = 0;
  for (char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

std::string AsciiCase(std::string text, bool upper) {
  for (char& c : text) c = upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                                 : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string Title(const std::string& text) {
  std::string out = text;
  bool start = true;
  for (char& c : out) {
    const bool alpha = std::isalpha(static_cast<unsigned char>(c));
    c = alpha ? static_cast<char>(start ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c))) : c;
    start = !alpha;
  }
  return out;
}

std::string Strip(const std::string& text, bool left, bool right, const std::string& chars = " \t\n\r\f\v") {
  size_t b = 0, e = text.size();
  if (left) {
    while (b < e && chars.find(text[b]) != std::string::npos) ++b;
  }
  if (right) {
    while (e > b && chars.find(text[e - 1]) != std::string::npos) --e;
  }
  return text.substr(b, e - b);
}

class Renderer {
 public:
  Renderer(const std::string& name, const std::map<std::string, JinjaValue>& variables) : name_(name) {
    scopes_.emplace_back(variables.begin(), variables.end());
  }

  absl::Status Render(const std::vector<NodeP>& body, std::string* out) {
    for (const NodeP& node : body) KILN_RETURN_IF_ERROR(RenderNode(*node, out));
    return absl::OkStatus();
  }

 private:
  absl::Status Error(Pos pos, std::string_view message) const { return jinja::Error(name_, pos, message); }

  absl::Status RenderNode(const Node& node, std::string* out) {
    switch (node.kind) {
      case Node::kBody: return Render(node.body, out);
      case Node::kText:
      case Node::kOutput: {
        if (node.kind == Node::kText) {
          *out += node.text;
        } else {
          KILN_ASSIGN_OR_RETURN(JinjaValue value, Eval(*node.expr));
          *out += value.ToString();
        }
        if (out->size() > kMaxString) {
          return Error(node.pos, absl::StrCat("the output is longer than ", kMaxString, " bytes"));
        }
        return absl::OkStatus();
      }
      case Node::kIf: {
        for (const auto& [cond, branch] : node.branches) {
          KILN_ASSIGN_OR_RETURN(JinjaValue value, Eval(*cond));
          if (value.Truthy()) return Render(branch, out);
        }
        return Render(node.else_body, out);
      }
      case Node::kSet: {
        KILN_ASSIGN_OR_RETURN(JinjaValue value, Eval(*node.expr));
        if (node.targets.size() == 1) {
          scopes_.back()[node.targets[0]] = std::move(value);
          return absl::OkStatus();
        }
        JinjaValue target = Lookup(node.targets[0]);
        if (!target.is_namespace()) {
          return Error(node.pos, absl::StrCat("cannot set attribute '", node.targets[1], "' of ",
                                              std::string(target.TypeName()), " '", node.targets[0],
                                              "' (only a namespace's)"));
        }
        target.SetAttribute(node.targets[1], std::move(value));
        return absl::OkStatus();
      }
      case Node::kFor: return RenderFor(node, out);
    }
    return absl::OkStatus();
  }

  absl::Status Bind(const Node& node, const JinjaValue& item, std::map<std::string, JinjaValue>* scope) {
    if (node.targets.size() == 1) {
      (*scope)[node.targets[0]] = item;
      return absl::OkStatus();
    }
    if (item.kind() != JinjaValue::Kind::kList || item.AsList().size() != node.targets.size()) {
      return Error(node.pos, absl::StrCat("cannot unpack ", std::string(item.TypeName()), " into ",
                                          node.targets.size(), " loop variables"));
    }
    for (size_t k = 0; k < node.targets.size(); ++k) (*scope)[node.targets[k]] = item.AsList()[k];
    return absl::OkStatus();
  }

  absl::Status RenderFor(const Node& node, std::string* out) {
    KILN_ASSIGN_OR_RETURN(JinjaValue iterable, Eval(*node.expr));
    KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> items, Iterate(iterable, node.pos));
    if (node.filter) {
      std::vector<JinjaValue> kept;
      for (const JinjaValue& item : items) {
        scopes_.emplace_back();
        absl::Status bound = Bind(node, item, &scopes_.back());
        absl::StatusOr<JinjaValue> keep = bound.ok() ? Eval(*node.filter) : absl::StatusOr<JinjaValue>(bound);
        scopes_.pop_back();
        if (!keep.ok()) return keep.status();
        if (keep->Truthy()) kept.push_back(item);
      }
      items.swap(kept);
    }
    if (items.empty()) return Render(node.else_body, out);
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      KILN_RETURN_IF_ERROR(Step(node.pos));
      scopes_.emplace_back();
      KILN_RETURN_IF_ERROR(Bind(node, items[static_cast<size_t>(i)], &scopes_.back()));
      scopes_.back()["loop"] = JinjaValue::MakeDict({
          {"index", JinjaValue::Int(i + 1)},
          {"index0", JinjaValue::Int(i)},
          {"revindex", JinjaValue::Int(n - i)},
          {"revindex0", JinjaValue::Int(n - i - 1)},
          {"first", JinjaValue::Bool(i == 0)},
          {"last", JinjaValue::Bool(i == n - 1)},
          {"length", JinjaValue::Int(n)},
          {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : JinjaValue()},
          {"nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : JinjaValue()},
      });
      absl::Status status = Render(node.body, out);
      scopes_.pop_back();
      KILN_RETURN_IF_ERROR(status);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<JinjaValue>> Iterate(const JinjaValue& value, Pos pos) {
    std::vector<JinjaValue> items;
    switch (value.kind()) {
      case JinjaValue::Kind::kUndefined: return items;
      case JinjaValue::Kind::kList: return value.AsList();
      case JinjaValue::Kind::kDict:
        for (const auto& [key, v] : value.AsDict()) items.push_back(JinjaValue::String(key));
        return items;
      case JinjaValue::Kind::kString: {
        const std::string& text = value.AsString();
        for (size_t i = 0; i < text.size();) {
          size_t n = 1;
          while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80) ++n;
          items.push_back(JinjaValue::String(text.substr(i, n)));
          i += n;
        }
        return items;
      }
      default: return Error(pos, absl::StrCat("cannot iterate over ", std::string(value.TypeName())));
    }
  }

  JinjaValue Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return JinjaValue();
  }

  absl::StatusOr<JinjaValue> Item(const JinjaValue& object, const JinjaValue& key, Pos pos, const std::string& what) {
    switch (object.kind()) {
      case JinjaValue::Kind::kUndefined:
        return Error(pos, absl::StrCat("cannot read ", what, " of an undefined value"));
      case JinjaValue::Kind::kDict: {
        if (key.kind() != JinjaValue::Kind::kString) return JinjaValue();
        const JinjaValue* v = object.Find(key.AsString());
        return v != nullptr ? *v : JinjaValue();
      }
      case JinjaValue::Kind::kList:
      case JinjaValue::Kind::kString: {
        if (key.kind() != JinjaValue::Kind::kInt) return JinjaValue();
        KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> items, Iterate(object, pos));
        int64_t i = key.AsInt();
        const auto n = static_cast<int64_t>(items.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return JinjaValue();
        return items[static_cast<size_t>(i)];
      }
      default: return JinjaValue();
    }
  }

  absl::Status Step(Pos pos) {
    if (++steps_ > kMaxSteps) return Error(pos, absl::StrCat("the template takes more than ", kMaxSteps, " steps"));
    return absl::OkStatus();
  }

  absl::StatusOr<JinjaValue> Text(std::string text, Pos pos) {
    if (text.size() > kMaxString) return Error(pos, absl::StrCat("a string longer than ", kMaxString, " bytes"));
    return JinjaValue::String(std::move(text));
  }

  absl::StatusOr<JinjaValue> Eval(const Expr& e) {
    KILN_RETURN_IF_ERROR(Step(e.pos));
    switch (e.kind) {
      case Expr::kLiteral: return e.literal;
      case Expr::kName: return Lookup(e.name);
      case Expr::kList: {
        JinjaValue::List items;
        for (const ExprP& item : e.args) {
          KILN_ASSIGN_OR_RETURN(JinjaValue v, Eval(*item));
          items.push_back(std::move(v));
        }
        return JinjaValue::MakeList(std::move(items));
      }
      case Expr::kDict: {
        JinjaValue::Dict items;
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          KILN_ASSIGN_OR_RETURN(JinjaValue key, Eval(*e.args[k]));
          KILN_ASSIGN_OR_RETURN(JinjaValue value, Eval(*e.args[k + 1]));
          if (key.kind() != JinjaValue::Kind::kString) return Error(e.args[k]->pos, "dictionary keys must be strings");
          items.emplace_back(key.AsString(), std::move(value));
        }
        return JinjaValue::MakeDict(std::move(items));
      }
      case Expr::kAttr: {
        KILN_ASSIGN_OR_RETURN(JinjaValue object, Eval(*e.args[0]));
        return Item(object, JinjaValue::String(e.name), e.pos, absl::StrCat("attribute '", e.name, "'"));
      }
      case Expr::kIndex: {
        KILN_ASSIGN_OR_RETURN(JinjaValue object, Eval(*e.args[0]));
        KILN_ASSIGN_OR_RETURN(JinjaValue key, Eval(*e.args[1]));
        return Item(object, key, e.pos, absl::StrCat("item ", key.Repr()));
      }
      case Expr::kSlice: return EvalSlice(e);
      case Expr::kNeg: {
        KILN_ASSIGN_OR_RETURN(JinjaValue v, Eval(*e.args[0]));
        if (v.kind() == JinjaValue::Kind::kFloat) return JinjaValue::Float(-v.AsFloat());
        if (v.is_number()) {
          if (v.AsInt() == INT64_MIN) return Error(e.pos, "integer overflow in unary '-'");
          return JinjaValue::Int(-v.AsInt());
        }
        return Error(e.pos, absl::StrCat("cannot negate ", std::string(v.TypeName())));
      }
      case Expr::kNot: {
        KILN_ASSIGN_OR_RETURN(JinjaValue v, Eval(*e.args[0]));
        return JinjaValue::Bool(!v.Truthy());
      }
      case Expr::kAnd: {
        KILN_ASSIGN_OR_RETURN(JinjaValue a, Eval(*e.args[0]));
        if (!a.Truthy()) return a;
        return Eval(*e.args[1]);
      }
      case Expr::kOr: {
        KILN_ASSIGN_OR_RETURN(JinjaValue a, Eval(*e.args[0]));
        if (a.Truthy()) return a;
        return Eval(*e.args[1]);
      }
      case Expr::kCond: {
        KILN_ASSIGN_OR_RETURN(JinjaValue cond, Eval(*e.args[0]));
        return Eval(*e.args[cond.Truthy() ? 1 : 2]);
      }
      case Expr::kBinary: return EvalBinary(e);
      case Expr::kFilter: return EvalFilter(e);
      case Expr::kTest: return EvalTest(e);
      case Expr::kCall: return EvalCall(e);
    }
    return JinjaValue();
  }

  absl::StatusOr<JinjaValue> EvalSlice(const Expr& e) {
    KILN_ASSIGN_OR_RETURN(JinjaValue object, Eval(*e.args[0]));
    KILN_ASSIGN_OR_RETURN(JinjaValue start_value, Eval(*e.args[1]));
    KILN_ASSIGN_OR_RETURN(JinjaValue stop_value, Eval(*e.args[2]));
    if (object.kind() != JinjaValue::Kind::kList && object.kind() != JinjaValue::Kind::kString) {
      return Error(e.pos, absl::StrCat("cannot slice ", std::string(object.TypeName())));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> items, Iterate(object, e.pos));
    const auto n = static_cast<int64_t>(items.size());
    auto clamp = [&](const JinjaValue& v, int64_t fallback) {
      if (!v.is_number()) return fallback;
      int64_t i = v.AsInt();
      if (i < 0) i += n;
      return std::clamp<int64_t>(i, 0, n);
    };
    const int64_t start = clamp(start_value, 0), stop = clamp(stop_value, n);
    if (object.kind() == JinjaValue::Kind::kString) {
      std::string text;
      for (int64_t i = start; i < stop; ++i) text += items[static_cast<size_t>(i)].AsString();
      return JinjaValue::String(text);
    }
    return JinjaValue::MakeList(stop > start ? JinjaValue::List(items.begin() + start, items.begin() + stop)
                                             : JinjaValue::List());
  }

  absl::StatusOr<JinjaValue> EvalBinary(const Expr& e) {
    KILN_ASSIGN_OR_RETURN(JinjaValue a, Eval(*e.args[0]));
    KILN_ASSIGN_OR_RETURN(JinjaValue b, Eval(*e.args[1]));
    const std::string& op = e.name;
    using K = JinjaValue::Kind;
    auto mismatch = [&]() {
      return Error(e.pos, absl::StrCat("cannot apply '", op, "' to ", std::string(a.TypeName()), " and ",
                                       std::string(b.TypeName())));
    };
    if (op == "==") return JinjaValue::Bool(a.Equals(b));
    if (op == "!=") return JinjaValue::Bool(!a.Equals(b));
    if (op == "~") return Text(a.ToString() + b.ToString(), e.pos);
    if (op == "in" || op == "not in") {
      bool found = false;
      if (b.kind() == K::kString) {
        if (a.kind() != K::kString) return mismatch();
        found = b.AsString().find(a.AsString()) != std::string::npos;
      } else if (b.kind() == K::kList) {
        for (const JinjaValue& item : b.AsList()) found = found || item.Equals(a);
      } else if (b.kind() == K::kDict) {
        found = a.kind() == K::kString && b.Find(a.AsString()) != nullptr;
      } else {
        return mismatch();
      }
      return JinjaValue::Bool(op == "in" ? found : !found);
    }
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int order;
      if (a.is_number() && b.is_number()) {
        order = a.AsFloat() < b.AsFloat() ? -1 : a.AsFloat() > b.AsFloat() ? 1 : 0;
      } else if (a.kind() == K::kString && b.kind() == K::kString) {
        order = a.AsString().compare(b.AsString());
      } else {
        return mismatch();
      }
      return JinjaValue::Bool(op == "<" ? order < 0 : op == "<=" ? order <= 0 : op == ">" ? order > 0 : order >= 0);
    }
    if (op == "+") {
      if (a.kind() == K::kString && b.kind() == K::kString) return Text(a.AsString() + b.AsString(), e.pos);
      if (a.kind() == K::kList && b.kind() == K::kList) {
        if (a.AsList().size() + b.AsList().size() > kMaxListItems) {
          return Error(e.pos, absl::StrCat("a list longer than ", kMaxListItems, " items"));
        }
        JinjaValue::List items = a.AsList();
        items.insert(items.end(), b.AsList().begin(), b.AsList().end());
        return JinjaValue::MakeList(std::move(items));
      }
    }
    if (op == "*" && a.kind() == K::kString && (b.kind() == K::kInt)) {
      // An empty string repeats to itself however large the count: no loop of that length.
      if (a.AsString().empty() || b.AsInt() <= 0) return JinjaValue::String("");
      if (static_cast<uint64_t>(b.AsInt()) > kMaxString / a.AsString().size()) {
        return Error(e.pos, absl::StrCat("a string longer than ", kMaxString, " bytes"));
      }
      std::string text;
      for (int64_t i = 0; i < b.AsInt(); ++i) text += a.AsString();
      return JinjaValue::String(text);
    }
    if (!a.is_number() || !b.is_number()) return mismatch();
    const bool floats = a.kind() == K::kFloat || b.kind() == K::kFloat;
    const double x = a.AsFloat(), y = b.AsFloat();
    const int64_t i = a.AsInt(), j = b.AsInt();
    if (op != "+" && op != "-" && op != "*" && op != "**" && op != "/" && op != "//" && op != "%") return mismatch();
    if (floats || (op == "**" && j < 0)) {
      if (op == "+") return JinjaValue::Float(x + y);
      if (op == "-") return JinjaValue::Float(x - y);
      if (op == "*") return JinjaValue::Float(x * y);
      if (op == "**") return JinjaValue::Float(std::pow(x, y));
    }
    if ((op == "/" || op == "//" || op == "%") && y == 0) return Error(e.pos, "division by zero");
    if (op == "/") return JinjaValue::Float(x / y);
    if (floats && op == "//") return JinjaValue::Float(std::floor(x / y));
    if (floats && op == "%") return JinjaValue::Float(x - y * std::floor(x / y));
    int64_t result;
    if (!CheckedIntOp(op, i, j, &result)) {
      return Error(e.pos, absl::StrCat("integer overflow in ", i, " ", op, " ", j, " (integers are 64-bit)"));
    }
    return JinjaValue::Int(result);
  }

  absl::StatusOr<std::vector<JinjaValue>> EvalArgs(const Expr& e, size_t from) {
    std::vector<JinjaValue> args;
    for (size_t k = from; k < e.args.size(); ++k) {
      KILN_ASSIGN_OR_RETURN(JinjaValue v, Eval(*e.args[k]));
      args.push_back(std::move(v));
    }
    return args;
  }

  absl::Status Arity(const Expr& e, const std::vector<JinjaValue>& args, size_t lo, size_t hi) {
    if (args.size() < lo || args.size() > hi) {
      return Error(e.pos, absl::StrCat("'", e.name, "' takes ", lo == hi ? absl::StrCat(lo) : absl::StrCat(lo, " to ", hi),
                                       " argument", hi == 1 ? "" : "s", ", got ", args.size()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<JinjaValue> EvalFilter(const Expr& e) {
    KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> all, EvalArgs(e, 0));
    const JinjaValue v = all[0];
    std::vector<JinjaValue> args(all.begin() + 1, all.end());
    const std::string& f = e.name;
    using K = JinjaValue::Kind;
    auto needs = [&](K kind) -> absl::Status {
      if (v.kind() != kind) {
        return Error(e.pos, absl::StrCat("filter '", f, "' cannot take ", std::string(v.TypeName())));
      }
      return absl::OkStatus();
    };
    if (f == "default" || f == "d") {
      KILN_RETURN_IF_ERROR(Arity(e, args, 0, 2));
      const bool boolean = args.size() > 1 && args[1].Truthy();
      if (v.is_undefined() || (boolean && !v.Truthy())) return args.empty() ? JinjaValue::String("") : args[0];
      return v;
    }
    if (f == "safe") return v;
    if (f == "string") return JinjaValue::String(v.ToString());
    if (f == "tojson") return JinjaValue::String(v.ToJson());
    if (f == "length" || f == "count") {
      if (v.kind() == K::kString) return JinjaValue::Int(static_cast<int64_t>(CodePointCount(v.AsString())));
      if (v.kind() == K::kList) return JinjaValue::Int(static_cast<int64_t>(v.AsList().size()));
      if (v.kind() == K::kDict) return JinjaValue::Int(static_cast<int64_t>(v.AsDict().size()));
      return Error(e.pos, absl::StrCat("filter '", f, "' cannot take ", std::string(v.TypeName())));
    }
    if (f == "int") {
      if (v.kind() == K::kFloat) {
        int64_t i;
        if (!FloatToInt(v.AsFloat(), &i)) return Error(e.pos, absl::StrCat("cannot convert ", v.ToString(), " to a 64-bit integer"));
        return JinjaValue::Int(i);
      }
      if (v.is_number()) return JinjaValue::Int(v.AsInt());
      if (v.kind() == K::kString) return JinjaValue::Int(std::strtoll(v.AsString().c_str(), nullptr, 10));
      return JinjaValue::Int(0);
    }
    if (f == "float") {
      if (v.is_number()) return JinjaValue::Float(v.AsFloat());
      if (v.kind() == K::kString) return JinjaValue::Float(std::strtod(v.AsString().c_str(), nullptr));
      return JinjaValue::Float(0);
    }
    if (f == "items") {
      KILN_RETURN_IF_ERROR(needs(K::kDict));
      return Items(v);
    }
    if (f == "first" || f == "last" || f == "list" || f == "reverse" || f == "join") {
      KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> items, Iterate(v, e.pos));
      if (f == "first") return items.empty() ? JinjaValue() : items.front();
      if (f == "last") return items.empty() ? JinjaValue() : items.back();
      if (f == "list") return JinjaValue::MakeList(std::move(items));
      if (f == "reverse") {
        std::reverse(items.begin(), items.end());
        if (v.kind() != K::kString) return JinjaValue::MakeList(std::move(items));
        std::string text;
        for (const JinjaValue& c : items) text += c.AsString();
        return JinjaValue::String(text);
      }
      KILN_RETURN_IF_ERROR(Arity(e, args, 0, 1));
      const std::string sep = args.empty() ? "" : args[0].ToString();
      std::string text;
      for (size_t k = 0; k < items.size() && text.size() <= kMaxString; ++k) {
        absl::StrAppend(&text, k ? sep : "", items[k].ToString());
      }
      return Text(std::move(text), e.pos);
    }
    KILN_RETURN_IF_ERROR(needs(K::kString));
    const std::string& s = v.AsString();
    if (f == "trim") return JinjaValue::String(Strip(s, true, true));
    if (f == "upper") return JinjaValue::String(AsciiCase(s, true));
    if (f == "lower") return JinjaValue::String(AsciiCase(s, false));
    if (f == "title") return JinjaValue::String(Title(s));
    if (f == "capitalize") {
      std::string out = AsciiCase(s, false);
      if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
      return JinjaValue::String(out);
    }
    return Error(e.pos, absl::StrCat("unsupported filter '", f, "'"));
  }

  static JinjaValue Items(const JinjaValue& dict) {
    JinjaValue::List items;
    for (const auto& [key, value] : dict.AsDict()) items.push_back(JinjaValue::MakeList({JinjaValue::String(key), value}));
    return JinjaValue::MakeList(std::move(items));
  }

  absl::StatusOr<JinjaValue> EvalTest(const Expr& e) {
    KILN_ASSIGN_OR_RETURN(JinjaValue v, Eval(*e.args[0]));
    using K = JinjaValue::Kind;
    const std::string& t = e.name;
    bool result = false;
    if (t == "defined") result = !v.is_undefined();
    else if (t == "undefined") result = v.is_undefined();
    else if (t == "none") result = v.kind() == K::kNone;
    else if (t == "string") result = v.kind() == K::kString;
    else if (t == "number") result = v.is_number();
    else if (t == "integer") result = v.kind() == K::kInt;
    else if (t == "float") result = v.kind() == K::kFloat;
    else if (t == "boolean") result = v.kind() == K::kBool;
    else if (t == "true") result = v.kind() == K::kBool && v.AsBool();
    else if (t == "false") result = v.kind() == K::kBool && !v.AsBool();
    else if (t == "mapping") result = v.kind() == K::kDict;
    else if (t == "sequence" || t == "iterable") result = v.kind() == K::kList || v.kind() == K::kString || v.kind() == K::kDict;
    else if (t == "even" || t == "odd") {
      if (v.kind() != K::kInt) return Error(e.pos, absl::StrCat("test '", t, "' needs an integer"));
      result = (v.AsInt() % 2 == 0) == (t == "even");
    }
    return JinjaValue::Bool(e.negate ? !result : result);
  }

  absl::StatusOr<JinjaValue> EvalCall(const Expr& e) {
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::kName) {
      KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> args, EvalArgs(e, 1));
      if (e.name == "raise_exception") {
        return Error(e.pos, absl::StrCat("the template raised an error: ", args.empty() ? "" : args[0].ToString()));
      }
      if (e.name == "namespace") {
        if (args.size() != e.kwargs.size()) return Error(e.pos, "namespace() takes keyword arguments only");
        JinjaValue::Dict items;
        for (size_t k = 0; k < args.size(); ++k) items.emplace_back(e.kwargs[k], args[k]);
        return JinjaValue::MakeNamespace(std::move(items));
      }
      // range(stop) or range(start, stop)
      KILN_RETURN_IF_ERROR(Arity(e, args, 1, 2));
      for (const JinjaValue& a : args) {
        if (a.kind() != JinjaValue::Kind::kInt) return Error(e.pos, "range() takes integers");
      }
      const int64_t start = args.size() == 2 ? args[0].AsInt() : 0;
      const int64_t stop = args.back().AsInt();
      if (stop > start && static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) > kMaxRange) return Error(e.pos, absl::StrCat("range() of more than ", kMaxRange, " numbers"));
      JinjaValue::List items;
      for (int64_t i = start; i < stop; ++i) items.push_back(JinjaValue::Int(i));
      return JinjaValue::MakeList(std::move(items));
    }
    // A method: callee is x.name.
    KILN_ASSIGN_OR_RETURN(JinjaValue object, Eval(*callee.args[0]));
    KILN_ASSIGN_OR_RETURN(std::vector<JinjaValue> args, EvalArgs(e, 1));
    const std::string& m = e.name;
    using K = JinjaValue::Kind;
    if (object.kind() == K::kDict) {
      if (m == "items") return Items(object);
      if (m == "keys" || m == "values") {
        JinjaValue::List items;
        for (const auto& [key, value] : object.AsDict()) items.push_back(m == "keys" ? JinjaValue::String(key) : value);
        return JinjaValue::MakeList(std::move(items));
      }
      if (m == "get") {
        KILN_RETURN_IF_ERROR(Arity(e, args, 1, 2));
        const JinjaValue* found = args[0].kind() == K::kString ? object.Find(args[0].AsString()) : nullptr;
        if (found != nullptr) return *found;
        return args.size() > 1 ? args[1] : JinjaValue::None();
      }
    }
    if (object.kind() == K::kString) {
      const std::string& s = object.AsString();
      auto string_arg = [&](size_t k) { return args.size() > k && args[k].kind() == K::kString; };
      if (m == "strip" || m == "lstrip" || m == "rstrip") {
        KILN_RETURN_IF_ERROR(Arity(e, args, 0, 1));
        const std::string chars = string_arg(0) ? args[0].AsString() : " \t\n\r\f\v";
        return JinjaValue::String(Strip(s, m != "rstrip", m != "lstrip", chars));
      }
      if (m == "upper" || m == "lower") return JinjaValue::String(AsciiCase(s, m == "upper"));
      if (m == "title") return JinjaValue::String(Title(s));
      if (m == "startswith" || m == "endswith") {
        KILN_RETURN_IF_ERROR(Arity(e, args, 1, 1));
        if (!string_arg(0)) return Error(e.pos, absl::StrCat("'", m, "' takes a string"));
        const std::string& x = args[0].AsString();
        const bool hit = x.size() <= s.size() &&
                         (m == "startswith" ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0);
        return JinjaValue::Bool(hit);
      }
      if (m == "split") {
        KILN_RETURN_IF_ERROR(Arity(e, args, 0, 1));
        JinjaValue::List parts;
        if (!string_arg(0)) {  // on runs of whitespace
          size_t i = 0;
          while (i < s.size()) {
            while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
            size_t j = i;
            while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
            if (j > i) parts.push_back(JinjaValue::String(s.substr(i, j - i)));
            i = j;
          }
        } else {
          const std::string& sep = args[0].AsString();
          if (sep.empty()) return Error(e.pos, "split() with an empty separator");
          size_t i = 0, j;
          while ((j = s.find(sep, i)) != std::string::npos) {
            parts.push_back(JinjaValue::String(s.substr(i, j - i)));
            i = j + sep.size();
          }
          parts.push_back(JinjaValue::String(s.substr(i)));
        }
        return JinjaValue::MakeList(std::move(parts));
      }
      if (m == "replace") {
        KILN_RETURN_IF_ERROR(Arity(e, args, 2, 2));
        if (!string_arg(0) || !string_arg(1)) return Error(e.pos, "replace() takes strings");
        const std::string& from = args[0].AsString();
        const std::string& to = args[1].AsString();
        if (from.empty()) return JinjaValue::String(s);
        std::string out;
        size_t i = 0, j;
        while ((j = s.find(from, i)) != std::string::npos) {
          out += s.substr(i, j - i) + to;
          if (out.size() > kMaxString) return Error(e.pos, absl::StrCat("a string longer than ", kMaxString, " bytes"));
          i = j + from.size();
        }
        return Text(out + s.substr(i), e.pos);
      }
    }
    return Error(e.pos, absl::StrCat(std::string(object.TypeName()), " has no method '", m, "'"));
  }

  const std::string& name_;
  std::vector<std::map<std::string, JinjaValue>> scopes_;
  int64_t steps_ = 0;
};

}  // namespace

absl::StatusOr<std::string> RenderTemplate(const Node& root, const std::string& name,
                                           const std::map<std::string, JinjaValue>& variables) {
  Renderer renderer(name, variables);
  std::string out;
  KILN_RETURN_IF_ERROR(renderer.Render(root.body, &out));
  return out;
}

}  // namespace kiln::serving::jinja
