#include "vm/builtin_signature.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::vm {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  absl::StatusOr<BuiltinSignature> Signature() {
    BuiltinSignature sig;
    if (!Eat('(')) return Error("expected '('");
    if (!Peek(')')) {
      while (true) {
        absl::StatusOr<BuiltinType> t = Type();
        if (!t.ok()) return t.status();
        sig.params.push_back(*t);
        if (EatWord("...")) {
          sig.variadic = true;
          if (!Peek(')')) return Error("'...' must follow the last parameter");
          break;
        }
        if (!Eat(',')) break;
      }
    }
    if (!Eat(')')) return Error("expected ',' or ')'");
    if (!EatWord("->")) return Error("expected '->'");
    absl::StatusOr<BuiltinType> result = Type();
    if (!result.ok()) return result.status();
    sig.result = *result;
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the result type");
    return sig;
  }

 private:
  absl::StatusOr<BuiltinType> Type() {
    std::string_view word = Word();
    if (word.empty()) return Error("expected a type");
    static constexpr struct {
      const char* name;
      Value::Kind kind;
    } kKinds[] = {{"none", Value::Kind::kNone},     {"int", Value::Kind::kInt},       {"double", Value::Kind::kDouble},
                  {"bool", Value::Kind::kBool},     {"shape", Value::Kind::kShape},   {"tensor", Value::Kind::kTensor},
                  {"tuple", Value::Kind::kTuple},   {"string", Value::Kind::kString}, {"closure", Value::Kind::kClosure}};
    if (word == "any") return BuiltinType::Any();
    for (const auto& k : kKinds) {
      if (word == k.name) return BuiltinType::Of(k.kind);
    }
    if (word != "object") return Error(absl::StrCat("unknown type '", std::string(word), "'"));
    if (!Eat(':')) return BuiltinType::Of(Value::Kind::kObject);
    std::string_view name = Word();
    if (name.empty()) return Error("expected an object type name after 'object:'");
    return BuiltinType::ObjectOf(name);
  }

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool Eat(char c) {
    if (!Peek(c)) return false;
    ++pos_;
    return true;
  }
  bool EatWord(std::string_view w) {
    SkipSpace();
    if (text_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  // An identifier: letters, digits, '_' and '.' (object type names may be dotted).
  std::string_view Word() {
    SkipSpace();
    size_t begin = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
            (text_[pos_] == '.' && text_.substr(pos_, 3) != "..."))) {
      ++pos_;
    }
    return text_.substr(begin, pos_ - begin);
  }
  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("bad builtin signature \"", std::string(text_), "\" at column ", pos_ + 1, ": ", what));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

bool BuiltinType::Overlaps(const BuiltinType& other) const {
  if (any || other.any) return true;
  if (kind != other.kind) return false;
  return object_type == 0 || other.object_type == 0 || object_type == other.object_type;
}

BuiltinType BuiltinType::Meet(const BuiltinType& other) const {
  if (any) return other;
  if (other.any) return *this;
  return object_type != 0 ? *this : other;
}

std::string BuiltinType::ToString() const {
  if (any) return "any";
  if (kind == Value::Kind::kObject && object_type != 0) return absl::StrCat("object:", ObjectTypeName(object_type));
  return Value::KindName(kind);
}

absl::StatusOr<BuiltinSignature> BuiltinSignature::Parse(std::string_view text) { return Parser(text).Signature(); }

std::string BuiltinSignature::ToString() const {
  std::vector<std::string> parts;
  for (const BuiltinType& t : params) parts.push_back(t.ToString());
  return absl::StrCat("(", absl::StrJoin(parts, ", "), variadic ? "..." : "", ") -> ", result.ToString());
}

bool BuiltinSignature::AcceptsArity(int num_args) const {
  int fixed = static_cast<int>(params.size());
  return variadic ? num_args >= fixed - 1 : num_args == fixed;
}

absl::Status BuiltinSignature::CheckArgs(const Value* const* args, int num_args) const {
  if (!AcceptsArity(num_args)) {
    int fixed = static_cast<int>(params.size());
    return absl::InvalidArgumentError(absl::StrCat("takes ", variadic ? "at least " : "", variadic ? fixed - 1 : fixed,
                                                   " arguments ", ToString(), ", got ", num_args));
  }
  for (int i = 0; i < num_args; ++i) {
    const BuiltinType& t = Param(i);
    if (!t.Accepts(*args[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", i, ": expected ", t.ToString(), ", got ", args[i]->Describe(), " (signature ", ToString(), ")"));
    }
  }
  return absl::OkStatus();
}

bool Compatible(const BuiltinSignature& registered, const BuiltinSignature& recorded) {
  if (!registered.result.Overlaps(recorded.result)) return false;
  const int n = static_cast<int>(recorded.params.size());
  if (recorded.variadic) {
    // Every arity from n - 1 up: the registered one must be variadic and accept n - 1.
    if (!registered.variadic || !registered.AcceptsArity(n - 1)) return false;
    const int m = std::max(n, static_cast<int>(registered.params.size()));
    for (int i = 0; i < m; ++i) {
      if (!registered.Param(i).Overlaps(recorded.Param(i))) return false;
    }
    return true;
  }
  if (!registered.AcceptsArity(n)) return false;
  for (int i = 0; i < n; ++i) {
    if (!registered.Param(i).Overlaps(recorded.params[i])) return false;
  }
  return true;
}

BuiltinSignature Meet(const BuiltinSignature& registered, const BuiltinSignature& recorded) {
  BuiltinSignature out;
  out.variadic = registered.variadic && recorded.variadic;
  const int n = out.variadic ? static_cast<int>(std::max(registered.params.size(), recorded.params.size()))
                             : static_cast<int>(recorded.params.size());
  for (int i = 0; i < n; ++i) out.params.push_back(registered.Param(i).Meet(recorded.Param(i)));
  out.result = registered.result.Meet(recorded.result);
  return out;
}

}  // namespace kiln::vm
