// String builtins: ONNX's operators over STRING tensors (vm/string_tensor.h), run on the host.
// The ONNX importer calls them with R.call_pure_builtin (frontends/onnx/converters/
// string_converters.cc); each follows ONNX's reference implementation (onnx/reference/ops):
//
//   kiln.string.make (shape, tuple of strings) -> a string tensor (constants and bound inputs:
//     the executable's constant pool holds no string tensors).
//   kiln.string.concat (a, b) -> a + b elementwise, numpy broadcasting (StringConcat).
//   kiln.string.equal (a, b) -> bool tensor, broadcasting (Equal on strings).
//   kiln.string.regex_full_match (x, pattern) -> bool tensor: the whole string matches.
//     Patterns are compiled with PCRE2 (UTF mode: . is a character; anchored at both ends;
//     \w \d \s \b ASCII, as RE2's); ONNX specifies RE2 syntax, which PCRE2 reads alike except
//     that it also accepts what RE2 refuses (backreferences, lookaround). ONNX's Python
//     reference uses `re`, whose \w also matches non-ASCII letters: Kiln follows the spec. Debian's libpcre2 is
//     a dependency already (serving's tokenizer); RE2 is not, and std::regex (ECMAScript)
//     differs more. A pattern PCRE2 refuses is an error naming the position.
//   kiln.string.split (x, delimiter, maxsplit) -> (substrings, counts) (StringSplit): Python's
//     str.split: an empty delimiter splits at runs of whitespace (ASCII whitespace and
//     \x1c-\x1f; other Unicode spaces are not separators) and drops empty pieces; maxsplit < 0
//     is unlimited. Substrings are x.shape + [the largest count], padded with "".
//   kiln.string.normalize (x, stopwords, case_sensitive, case_action) (StringNormalizer):
//     x of shape [C] or [1, C]; stopwords dropped (compared lower-cased when not case
//     sensitive), then LOWER / UPPER / NONE applied with the C.UTF-8 locale's Unicode case
//     mapping; nothing left gives one empty string ([1] or [1, 1]).
//   kiln.string.label_encode (x, keys, values, default, out_dtype) (ai.onnx.ml LabelEncoder):
//     keys and values are tuples (strings, ints or doubles), x a string, int64 or float
//     tensor; each element maps to its key's value or the default; the result has
//     out_dtype (string, or an integer or float type of 8 to 64 bits).
//   kiln.string.from_number (x) -> string tensor (Cast to STRING), as numpy's astype(str)
//     writes ONNX's reference output: integers in decimal, bools True / False, float32 and
//     float64 as the shortest text that reads back to the same value, positional for
//     1e-4 <= |x| < 1e16 (with ".0" when integral) and scientific ("1e-05", "1.5e+16")
//     otherwise; "nan", "inf", "-inf".
//   kiln.string.to_number (x, out_dtype) -> tensor (Cast from STRING): surrounding whitespace
//     allowed; floats as strtod reads them (then rounded to float32), integers in decimal with
//     an optional sign; anything else is an error naming the element.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <cwctype>
#include <locale.h>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/builtin_args.h"
#include "builtins/default_builtins.h"
#include "support/status_macros.h"
#include "vm/string_tensor.h"

namespace kiln::builtins {
namespace {

using vm::BuiltinContext;
using vm::Tensor;
using vm::Value;

absl::StatusOr<Tensor> StringArg(const Value& v, int index, const char* builtin) {
  const Tensor& t = v.as_tensor();
  if (!vm::IsStringTensor(t)) {
    return absl::InvalidArgumentError(
        absl::StrCat(builtin, ": argument ", index, " must be a string tensor, got ", t.Describe()));
  }
  if (!t.is_contiguous()) return absl::InvalidArgumentError(absl::StrCat(builtin, ": argument ", index, " is not compact"));
  return t;
}

// numpy broadcasting of two shapes; for each output element the flat index into a and b.
struct Broadcast {
  std::vector<int64_t> shape;
  std::vector<int64_t> a_index, b_index;
};

absl::StatusOr<Broadcast> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                          const char* builtin) {
  Broadcast out;
  const size_t rank = std::max(a.size(), b.size());
  out.shape.resize(rank);
  std::vector<int64_t> da(rank, 1), db(rank, 1);
  for (size_t i = 0; i < a.size(); ++i) da[rank - a.size() + i] = a[i];
  for (size_t i = 0; i < b.size(); ++i) db[rank - b.size() + i] = b[i];
  for (size_t i = 0; i < rank; ++i) {
    if (da[i] != db[i] && da[i] != 1 && db[i] != 1) {
      return absl::InvalidArgumentError(absl::StrCat(builtin, ": shapes ", vm::ShapeToString(a), " and ",
                                                     vm::ShapeToString(b), " do not broadcast"));
    }
    out.shape[i] = da[i] == 1 ? db[i] : da[i];
  }
  KILN_ASSIGN_OR_RETURN(int64_t numel, vm::ShapeNumel(out.shape));
  out.a_index.resize(numel);
  out.b_index.resize(numel);
  std::vector<int64_t> index(rank, 0);
  for (int64_t flat = 0; flat < numel; ++flat) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      ia = ia * da[d] + (da[d] == 1 ? 0 : index[d]);
      ib = ib * db[d] + (db[d] == 1 ? 0 : index[d]);
    }
    out.a_index[flat] = ia;
    out.b_index[flat] = ib;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// (shape, tuple) -> tensor
absl::Status Make(BuiltinContext&, const Value* const* args, int, Value* out) {
  std::vector<std::string> strings;
  for (const Value& v : args[1]->as_tuple()) {
    if (v.kind() != Value::Kind::kString) {
      return absl::InvalidArgumentError(absl::StrCat("kiln.string.make: a field is ", v.Describe(), ", not a string"));
    }
    strings.push_back(v.as_string());
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, vm::MakeStringTensor(args[0]->as_shape(), strings));
  *out = Value(std::move(t));
  return absl::OkStatus();
}

// (tensor, tensor) -> tensor
absl::Status Concat(BuiltinContext&, const Value* const* args, int, Value* out) {
  KILN_ASSIGN_OR_RETURN(Tensor a, StringArg(*args[0], 0, "kiln.string.concat"));
  KILN_ASSIGN_OR_RETURN(Tensor b, StringArg(*args[1], 1, "kiln.string.concat"));
  KILN_ASSIGN_OR_RETURN(Broadcast bc, BroadcastShapes(a.shape(), b.shape(), "kiln.string.concat"));
  std::vector<std::string> result(bc.a_index.size());
  for (size_t i = 0; i < result.size(); ++i) {
    const std::string_view x = vm::StringAt(a, bc.a_index[i]), y = vm::StringAt(b, bc.b_index[i]);
    result[i].reserve(x.size() + y.size());
    result[i].append(x).append(y);
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, vm::MakeStringTensor(bc.shape, result));
  *out = Value(std::move(t));
  return absl::OkStatus();
}

// (tensor, tensor) -> tensor
absl::Status Equal(BuiltinContext& ctx, const Value* const* args, int, Value* out) {
  KILN_ASSIGN_OR_RETURN(Tensor a, StringArg(*args[0], 0, "kiln.string.equal"));
  KILN_ASSIGN_OR_RETURN(Tensor b, StringArg(*args[1], 1, "kiln.string.equal"));
  KILN_ASSIGN_OR_RETURN(Broadcast bc, BroadcastShapes(a.shape(), b.shape(), "kiln.string.equal"));
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(bc.shape, DLDataType{vm::kDTypeBool, 8, 1}, ctx.device));
  for (size_t i = 0; i < bc.a_index.size(); ++i) {
    t.data_as<uint8_t>()[i] = vm::StringAt(a, bc.a_index[i]) == vm::StringAt(b, bc.b_index[i]);
  }
  *out = Value(std::move(t));
  return absl::OkStatus();
}

// (tensor, string) -> tensor
absl::Status RegexFullMatch(BuiltinContext& ctx, const Value* const* args, int, Value* out) {
  KILN_ASSIGN_OR_RETURN(Tensor x, StringArg(*args[0], 0, "kiln.string.regex_full_match"));
  const std::string& pattern = args[1]->as_string();
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  std::unique_ptr<pcre2_code, decltype(&pcre2_code_free)> code(
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED, &error, &error_offset, nullptr),
      pcre2_code_free);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return absl::InvalidArgumentError(absl::StrCat("kiln.string.regex_full_match: pattern '", pattern,
                                                   "' at offset ", error_offset, ": ",
                                                   reinterpret_cast<const char*>(message)));
  }
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(code.get(), nullptr), pcre2_match_data_free);
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(x.shape(), DLDataType{vm::kDTypeBool, 8, 1}, ctx.device));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::string_view s = vm::StringAt(x, i);
    const int rc = pcre2_match(code.get(), reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, match.get(), nullptr);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      return absl::InvalidArgumentError(absl::StrCat("kiln.string.regex_full_match: element ", i, ": ",
                                                     reinterpret_cast<const char*>(message)));
    }
    t.data_as<uint8_t>()[i] = rc >= 0;
  }
  *out = Value(std::move(t));
  return absl::OkStatus();
}

bool IsSplitSpace(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

// Python's s.split(delimiter or None, maxsplit).
std::vector<std::string> SplitOne(std::string_view s, const std::string& delimiter, int64_t maxsplit) {
  std::vector<std::string> pieces;
  if (!delimiter.empty()) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(pieces.size()) < maxsplit) {
      const size_t at = s.find(delimiter, start);
      if (at == std::string_view::npos) break;
      pieces.emplace_back(s.substr(start, at - start));
      start = at + delimiter.size();
    }
    pieces.emplace_back(s.substr(start));
    return pieces;
  }
  size_t i = 0;
  const size_t n = s.size();
  while (i < n && IsSplitSpace(s[i])) ++i;
  while (i < n) {
    if (maxsplit >= 0 && static_cast<int64_t>(pieces.size()) == maxsplit) {
      pieces.emplace_back(s.substr(i));  // the rest as it is, trailing whitespace included
      break;
    }
    size_t j = i;
    while (j < n && !IsSplitSpace(s[j])) ++j;
    pieces.emplace_back(s.substr(i, j - i));
    i = j;
    while (i < n && IsSplitSpace(s[i])) ++i;
  }
  return pieces;
}

// (tensor, string delimiter, int maxsplit) -> tuple(substrings, counts)
absl::Status Split(BuiltinContext& ctx, const Value* const* args, int, Value* out) {
  KILN_ASSIGN_OR_RETURN(Tensor x, StringArg(*args[0], 0, "kiln.string.split"));
  const std::string& delimiter = args[1]->as_string();
  const int64_t maxsplit = args[2]->as_int();
  std::vector<std::vector<std::string>> pieces(static_cast<size_t>(x.numel()));
  size_t widest = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    pieces[i] = SplitOne(vm::StringAt(x, i), delimiter, maxsplit);
    widest = std::max(widest, pieces[i].size());
  }
  std::vector<std::string> flat;
  flat.reserve(pieces.size() * widest);
  KILN_ASSIGN_OR_RETURN(Tensor counts, Tensor::Empty(x.shape(), vm::DTypeInt64(), ctx.device));
  for (size_t i = 0; i < pieces.size(); ++i) {
    counts.data_as<int64_t>()[i] = static_cast<int64_t>(pieces[i].size());
    pieces[i].resize(widest);
    for (std::string& p : pieces[i]) flat.push_back(std::move(p));
  }
  std::vector<int64_t> shape = x.shape();
  shape.push_back(static_cast<int64_t>(widest));
  KILN_ASSIGN_OR_RETURN(Tensor substrings, vm::MakeStringTensor(shape, flat));
  *out = Value::FromTuple({Value(std::move(substrings)), Value(std::move(counts))});
  return absl::OkStatus();
}

// UTF-8 text with each character lower- or upper-cased (towlower_l / towupper_l in C.UTF-8);
// bytes that are not valid UTF-8 are kept as they are.
std::string MapCase(std::string_view s, bool upper) {
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80 || utf8 == static_cast<locale_t>(nullptr)) {  // ASCII (or no UTF-8 locale): fast path
      out.push_back(static_cast<char>(upper ? (c >= 'a' && c <= 'z' ? c - 32 : c) : (c >= 'A' && c <= 'Z' ? c + 32 : c)));
      ++i;
      continue;
    }
    // Decode one UTF-8 sequence by hand (mbrtowc depends on the global locale).
    int len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    if (len == 1 || i + len > s.size()) {
      out.push_back(s[i++]);
      continue;
    }
    uint32_t cp = c & (0x7f >> len);
    bool valid = true;
    for (int k = 1; k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) valid = false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (!valid) {
      out.push_back(s[i++]);
      continue;
    }
    const uint32_t mapped = static_cast<uint32_t>(upper ? towupper_l(static_cast<wint_t>(cp), utf8)
                                                        : towlower_l(static_cast<wint_t>(cp), utf8));
    // Encode back.
    if (mapped < 0x80) {
      out.push_back(static_cast<char>(mapped));
    } else if (mapped < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (mapped >> 6)));
      out.push_back(static_cast<char>(0x80 | (mapped & 0x3f)));
    } else if (mapped < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (mapped >> 12)));
      out.push_back(static_cast<char>(0x80 | ((mapped >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (mapped & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (mapped >> 18)));
      out.push_back(static_cast<char>(0x80 | ((mapped >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((mapped >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (mapped & 0x3f)));
    }
    i += len;
  }
  return out;
}

// (tensor, tuple stopwords, int case_sensitive, string case_action) -> tensor
absl::Status Normalize(BuiltinContext&, const Value* const* args, int, Value* out) {
  KILN_ASSIGN_OR_RETURN(Tensor x, StringArg(*args[0], 0, "kiln.string.normalize"));
  const bool case_sensitive = args[2]->as_int() != 0;
  const std::string& action = args[3]->as_string();
  if (action != "LOWER" && action != "UPPER" && action != "NONE") {
    return absl::InvalidArgumentError(absl::StrCat("kiln.string.normalize: case_change_action '", action,
                                                   "' is not LOWER, UPPER or NONE"));
  }
  const bool two_d = x.ndim() == 2;
  if (!(x.ndim() == 1 || (two_d && x.shape()[0] == 1))) {
    return absl::InvalidArgumentError(
        absl::StrCat("kiln.string.normalize: input must have shape [C] or [1, C], got ", x.Describe()));
  }
  std::vector<std::string> stopwords;
  for (const Value& w : args[1]->as_tuple()) {
    if (w.kind() != Value::Kind::kString) return absl::InvalidArgumentError("kiln.string.normalize: stopwords must be strings");
    stopwords.push_back(case_sensitive ? w.as_string() : MapCase(w.as_string(), false));
  }
  std::vector<std::string> kept;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::string_view s = vm::StringAt(x, i);
    const std::string key = case_sensitive ? std::string(s) : MapCase(s, false);
    if (std::find(stopwords.begin(), stopwords.end(), key) != stopwords.end()) continue;
    kept.push_back(action == "NONE" ? std::string(s) : MapCase(s, action == "UPPER"));
  }
  if (kept.empty()) kept.emplace_back();
  const int64_t c = static_cast<int64_t>(kept.size());
  KILN_ASSIGN_OR_RETURN(Tensor t, vm::MakeStringTensor(two_d ? std::vector<int64_t>{1, c} : std::vector<int64_t>{c}, kept));
  *out = Value(std::move(t));
  return absl::OkStatus();
}

// A LabelEncoder key or value.
struct Label {
  Value::Kind kind = Value::Kind::kNone;
  std::string s;
  int64_t i = 0;
  double d = 0;
  bool operator<(const Label& o) const {
    if (kind != o.kind) return kind < o.kind;
    if (kind == Value::Kind::kString) return s < o.s;
    if (kind == Value::Kind::kInt) return i < o.i;
    // NaN keys match NaN (ONNX's LabelEncoder): NaN orders after every number, equal to NaN.
    if (std::isnan(d) || std::isnan(o.d)) return !std::isnan(d) && std::isnan(o.d);
    return d < o.d;
  }
};

absl::StatusOr<Label> LabelOf(const Value& v) {
  Label l;
  l.kind = v.kind();
  switch (v.kind()) {
    case Value::Kind::kString: l.s = v.as_string(); return l;
    case Value::Kind::kInt: l.i = v.as_int(); return l;
    case Value::Kind::kDouble: l.d = v.as_double(); return l;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("kiln.string.label_encode: a key or value must be a string, int or double, got ", v.Describe()));
  }
}

// (tensor x, tuple keys, tuple values, any default, int out_dtype) -> tensor
absl::Status LabelEncode(BuiltinContext& ctx, const Value* const* args, int, Value* out) {
  const Tensor& x = args[0]->as_tensor();
  if (!x.is_contiguous()) return absl::InvalidArgumentError("kiln.string.label_encode: the input is not compact");
  const vm::TupleFields& keys = args[1]->as_tuple();
  const vm::TupleFields& values = args[2]->as_tuple();
  if (keys.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrCat("kiln.string.label_encode: ", keys.size(), " keys but ",
                                                   values.size(), " values"));
  }
  const DLDataType out_dtype = vm::UnpackDType(args[4]->as_int());
  std::map<Label, Label> table;
  for (size_t k = 0; k < keys.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(Label key, LabelOf(keys[k]));
    KILN_ASSIGN_OR_RETURN(Label value, LabelOf(values[k]));
    table.emplace(std::move(key), std::move(value));
  }
  KILN_ASSIGN_OR_RETURN(Label fallback, LabelOf(*args[3]));
  // The key of element i, as the keys are held: strings, int64, or doubles for float input.
  const bool string_input = vm::IsStringTensor(x);
  const bool int_input = x.dtype().code == kDLInt;
  if (!string_input && !int_input && x.dtype().code != kDLFloat) {
    return absl::InvalidArgumentError(absl::StrCat("kiln.string.label_encode: input ", x.Describe(),
                                                   " is not a string, integer or float tensor"));
  }
  std::vector<const Label*> mapped(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    Label key;
    if (string_input) {
      key.kind = Value::Kind::kString;
      key.s = std::string(vm::StringAt(x, i));
    } else if (int_input) {
      key.kind = Value::Kind::kInt;
      key.i = x.dtype().bits == 64 ? x.data_as<int64_t>()[i] : static_cast<int64_t>(vm::LoadElementAsDouble(x.data(), x.dtype(), i));
    } else {
      key.kind = Value::Kind::kDouble;
      key.d = vm::LoadElementAsDouble(x.data(), x.dtype(), i);
    }
    auto it = table.find(key);
    mapped[i] = it == table.end() ? &fallback : &it->second;
  }
  if (vm::operator==(out_dtype, vm::DTypeString())) {
    std::vector<std::string> strings;
    for (const Label* l : mapped) {
      if (l->kind != Value::Kind::kString) return absl::InvalidArgumentError("kiln.string.label_encode: string output needs string values");
      strings.push_back(l->s);
    }
    KILN_ASSIGN_OR_RETURN(Tensor t, vm::MakeStringTensor(x.shape(), strings));
    *out = Value(std::move(t));
    return absl::OkStatus();
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(x.shape(), out_dtype, ctx.device));
  for (size_t i = 0; i < mapped.size(); ++i) {
    const Label& l = *mapped[i];
    if (l.kind == Value::Kind::kString) return absl::InvalidArgumentError("kiln.string.label_encode: numeric output needs numeric values");
    if (vm::operator==(out_dtype, vm::DTypeInt64())) {
      t.data_as<int64_t>()[i] = l.kind == Value::Kind::kInt ? l.i : static_cast<int64_t>(l.d);
    } else if (!vm::StoreElementFromDouble(t.data(), out_dtype, static_cast<int64_t>(i),
                                           l.kind == Value::Kind::kInt ? static_cast<double>(l.i) : l.d)) {
      return absl::InvalidArgumentError(absl::StrCat("kiln.string.label_encode: output dtype ",
                                                     vm::DTypeToString(out_dtype), " is not supported"));
    }
  }
  *out = Value(std::move(t));
  return absl::OkStatus();
}

// numpy's str() of a float32 / float64 value (see the header comment).
template <typename F>
std::string FormatFloat(F v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  // numpy compares the value, widened to double, with the double bounds: float32 1e-4 is
  // 9.99999975e-05 and prints as "1e-04".
  const double magnitude = std::fabs(static_cast<double>(v));
  const bool positional = magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e16);
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v,
                                 positional ? std::chars_format::fixed : std::chars_format::scientific);
  std::string text(buf, ec == std::errc() ? end : buf);
  if (positional && text.find('.') == std::string::npos) text += ".0";
  return text;
}

// (tensor) -> tensor
absl::Status FromNumber(BuiltinContext&, const Value* const* args, int, Value* out) {
  const Tensor& x = args[0]->as_tensor();
  if (!x.is_contiguous()) return absl::InvalidArgumentError("kiln.string.from_number: the input is not compact");
  const DLDataType t = x.dtype();
  std::vector<std::string> text(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (t.code == kDLFloat && t.bits == 32) {
      text[i] = FormatFloat(x.data_as<float>()[i]);
    } else if (t.code == kDLFloat && t.bits == 64) {
      text[i] = FormatFloat(x.data_as<double>()[i]);
    } else if (t.code == vm::kDTypeBool) {
      text[i] = x.data_as<uint8_t>()[i] != 0 ? "True" : "False";
    } else if (t.code == kDLInt && t.bits == 64) {
      text[i] = std::to_string(x.data_as<int64_t>()[i]);
    } else if (t.code == kDLUInt && t.bits == 64) {
      text[i] = std::to_string(x.data_as<uint64_t>()[i]);
    } else if ((t.code == kDLInt || t.code == kDLUInt) && t.bits <= 32 && t.bits >= 8) {
      text[i] = std::to_string(static_cast<int64_t>(vm::LoadElementAsDouble(x.data(), t, i)));
    } else {
      return absl::InvalidArgumentError(absl::StrCat("kiln.string.from_number: ", x.Describe(),
                                                     " cannot be written as strings"));
    }
  }
  KILN_ASSIGN_OR_RETURN(Tensor t_out, vm::MakeStringTensor(x.shape(), text));
  *out = Value(std::move(t_out));
  return absl::OkStatus();
}

// (tensor, int out_dtype) -> tensor
absl::Status ToNumber(BuiltinContext& ctx, const Value* const* args, int, Value* out) {
  KILN_ASSIGN_OR_RETURN(Tensor x, StringArg(*args[0], 0, "kiln.string.to_number"));
  const DLDataType t = vm::UnpackDType(args[1]->as_int());
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Empty(x.shape(), t, ctx.device));
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::string s(vm::StringAt(x, i));
    size_t begin = 0, end = s.size();
    while (begin < end && IsSplitSpace(s[begin])) ++begin;
    while (end > begin && IsSplitSpace(s[end - 1])) --end;
    const std::string text = s.substr(begin, end - begin);
    auto bad = [&]() {
      return absl::InvalidArgumentError(absl::StrCat("kiln.string.to_number: element ", i, " '", s,
                                                     "' is not a ", vm::DTypeToString(t)));
    };
    if (text.empty()) return bad();
    if (t.code == kDLFloat) {
      char* stop = nullptr;
      const double v = std::strtod(text.c_str(), &stop);
      if (stop != text.c_str() + text.size()) return bad();
      if (!vm::StoreElementFromDouble(y.data(), t, i, v)) return bad();
    } else if (t.code == kDLInt || t.code == kDLUInt) {
      const char* first = text.c_str() + (text[0] == '+' ? 1 : 0);
      if (t.code == kDLUInt && t.bits == 64) {
        uint64_t u = 0;
        auto [stop, ec] = std::from_chars(first, text.c_str() + text.size(), u);
        if (ec != std::errc() || stop != text.c_str() + text.size()) return bad();
        y.data_as<uint64_t>()[i] = u;
        continue;
      }
      int64_t v = 0;
      auto [stop, ec] = std::from_chars(first, text.c_str() + text.size(), v);
      if (ec != std::errc() || stop != text.c_str() + text.size()) return bad();
      if (t.bits == 64) {
        y.data_as<int64_t>()[i] = v;
      } else {
        const int64_t lo = t.code == kDLInt ? -(int64_t{1} << (t.bits - 1)) : 0;
        const int64_t hi = t.code == kDLInt ? (int64_t{1} << (t.bits - 1)) - 1 : (int64_t{1} << t.bits) - 1;
        if (v < lo || v > hi) return bad();
        vm::StoreElementFromDouble(y.data(), t, i, static_cast<double>(v));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("kiln.string.to_number: cannot read strings as ",
                                                     vm::DTypeToString(t)));
    }
  }
  *out = Value(std::move(y));
  return absl::OkStatus();
}

}  // namespace

void RegisterStringBuiltins(vm::BuiltinRegistry& r) {
  r.RegisterBuiltin("kiln.string.make", "(shape, tuple) -> tensor", Make);
  r.RegisterBuiltin("kiln.string.concat", "(tensor, tensor) -> tensor", Concat);
  r.RegisterBuiltin("kiln.string.equal", "(tensor, tensor) -> tensor", Equal);
  r.RegisterBuiltin("kiln.string.regex_full_match", "(tensor, string) -> tensor", RegexFullMatch);
  r.RegisterBuiltin("kiln.string.split", "(tensor, string, int) -> tuple", Split);
  r.RegisterBuiltin("kiln.string.normalize", "(tensor, tuple, int, string) -> tensor", Normalize);
  r.RegisterBuiltin("kiln.string.from_number", "(tensor) -> tensor", FromNumber);
  r.RegisterBuiltin("kiln.string.to_number", "(tensor, int) -> tensor", ToNumber);
  r.RegisterBuiltin("kiln.string.label_encode", "(tensor, tuple, tuple, any, int) -> tensor", LabelEncode);
}

}  // namespace kiln::builtins
