#include "tir/text_lexer.h"

#include <cctype>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::tir {

namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool IsIdentifier(std::string_view name) {
  if (name.empty() || !IsIdentStart(name[0])) return false;
  for (char c : name) {
    if (!IsIdentChar(c)) return false;
  }
  return true;
}

std::string DescribeToken(const Token& token) {
  switch (token.kind) {
    case TokenKind::kIdent: return absl::StrCat("identifier '", token.text, "'");
    case TokenKind::kGlobal: return absl::StrCat("'@", token.text, "'");
    case TokenKind::kDataflow: return absl::StrCat("'%", token.text, "'");
    case TokenKind::kInt: return absl::StrCat("integer ", token.text);
    case TokenKind::kFloat: return absl::StrCat("number ", token.text);
    case TokenKind::kString: return absl::StrCat("string ", QuoteString(token.text));
    case TokenKind::kPunct: return absl::StrCat("'", token.text, "'");
    case TokenKind::kEnd: return "end of input";
  }
  return "?";
}

std::string QuoteString(std::string_view value) {
  std::string out = "\"";
  for (char c : value) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u >= 0x7f) {
      out += absl::StrFormat("\\x%02x", u);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

absl::StatusOr<std::vector<Token>> Lex(std::string_view text, const std::string& file_name) {
  std::vector<Token> tokens;
  size_t pos = 0;
  int line = 1;
  int column = 1;
  auto error = [&](int l, int c, std::string_view message) {
    return absl::InvalidArgumentError(
        absl::StrCat(file_name, ":", l, ":", c, ": error: ", absl::string_view(message.data(), message.size())));
  };
  auto advance = [&](size_t n) {
    for (size_t i = 0; i < n && pos < text.size(); ++i) {
      if (text[pos] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
      ++pos;
    }
  };
  auto peek = [&](size_t offset) -> char {
    return pos + offset < text.size() ? text[pos + offset] : '\0';
  };
  // A UTF-8 byte order mark, which Windows editors put first, is not part of the text.
  if (text.substr(0, 3) == "\xef\xbb\xbf") pos = 3;
  while (true) {
    // Whitespace and '#' comments.
    while (pos < text.size()) {
      char c = text[pos];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        advance(1);
      } else if (c == '#') {
        while (pos < text.size() && text[pos] != '\n') advance(1);
      } else {
        break;
      }
    }
    Token token;
    token.line = line;
    token.column = column;
    if (pos >= text.size()) {
      token.kind = TokenKind::kEnd;
      tokens.push_back(std::move(token));
      return tokens;
    }
    char c = text[pos];
    if (IsIdentStart(c)) {
      size_t start = pos;
      while (pos < text.size() && IsIdentChar(text[pos])) advance(1);
      token.kind = TokenKind::kIdent;
      token.text = std::string(text.substr(start, pos - start));
    } else if ((c == '@' || c == '%') && IsIdentStart(peek(1))) {
      advance(1);
      size_t start = pos;
      while (pos < text.size() && IsIdentChar(text[pos])) advance(1);
      token.kind = c == '@' ? TokenKind::kGlobal : TokenKind::kDataflow;
      token.text = std::string(text.substr(start, pos - start));
    } else if (IsDigit(c) || (c == '.' && IsDigit(peek(1)))) {
      // `1.` and `.5` are numbers, as in C and Python: '.' as punctuation is always followed
      // by a name (`R.add`), never by a digit, and never ends a number.
      size_t start = pos;
      if (c == '0' && (peek(1) == 'x' || peek(1) == 'X') && HexValue(peek(2)) >= 0) {
        advance(2);
        while (pos < text.size() && HexValue(text[pos]) >= 0) advance(1);
        token.kind = TokenKind::kInt;
      } else {
        token.kind = TokenKind::kInt;
        while (pos < text.size() && IsDigit(text[pos])) advance(1);
        if (peek(0) == '.' && peek(1) != '.') {
          token.kind = TokenKind::kFloat;
          advance(1);
          while (pos < text.size() && IsDigit(text[pos])) advance(1);
        }
        if ((peek(0) == 'e' || peek(0) == 'E') &&
            (IsDigit(peek(1)) || ((peek(1) == '-' || peek(1) == '+') && IsDigit(peek(2))))) {
          token.kind = TokenKind::kFloat;
          advance(2);
          while (pos < text.size() && IsDigit(text[pos])) advance(1);
        }
      }
      if (pos < text.size() && IsIdentChar(text[pos])) {
        return error(line, column, absl::StrCat("unexpected character '", std::string(1, text[pos]),
                                                "' after a number"));
      }
      token.text = std::string(text.substr(start, pos - start));
    } else if (c == '"') {
      advance(1);
      token.kind = TokenKind::kString;
      while (true) {
        if (pos >= text.size() || text[pos] == '\n') {
          return error(token.line, token.column, "unterminated string literal");
        }
        char s = text[pos];
        if (s == '"') {
          advance(1);
          break;
        }
        if (s != '\\') {
          token.text.push_back(s);
          advance(1);
          continue;
        }
        char e = peek(1);
        if (e == '"' || e == '\\') {
          token.text.push_back(e);
          advance(2);
        } else if (e == 'n') {
          token.text.push_back('\n');
          advance(2);
        } else if (e == 't') {
          token.text.push_back('\t');
          advance(2);
        } else if (e == 'x' && HexValue(peek(2)) >= 0 && HexValue(peek(3)) >= 0) {
          token.text.push_back(static_cast<char>(HexValue(peek(2)) * 16 + HexValue(peek(3))));
          advance(4);
        } else {
          return error(line, column, "invalid escape in string literal (expected \\\", \\\\, \\n, \\t or \\xHH)");
        }
      }
    } else {
      // Longest first where one is a prefix of another ("<<" before "<").
      static constexpr std::string_view kPuncts[] = {
          "...", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "[", "]", "{", "}", ",",
          ":",   "=",  ".",  "+",  "-",  "*",  "/",  "<",  ">",  "!",  "&", "|", "^", "~"};
      bool found = false;
      for (std::string_view p : kPuncts) {
        if (text.substr(pos, p.size()) == p) {
          token.kind = TokenKind::kPunct;
          token.text = std::string(p);
          advance(p.size());
          found = true;
          break;
        }
      }
      if (!found) {
        unsigned char u = static_cast<unsigned char>(c);
        std::string shown = (u >= 0x20 && u < 0x7f) ? absl::StrCat("'", std::string(1, c), "'")
                                                    : absl::StrFormat("byte 0x%02x", u);
        const char* why = "";
        if (c == ';') {
          why = " (statements end at the end of a binding; no ';' is needed)";
        } else if (u >= 0x80) {
          why = " (outside strings and comments the text is ASCII: names are letters, digits and '_')";
        }
        return error(line, column, absl::StrCat("unexpected character ", shown, why));
      }
    }
    tokens.push_back(std::move(token));
  }
}

bool ParseUnsignedLiteral(const std::string& text, uint64_t* out) {
  uint64_t value = 0;
  int base = 10;
  size_t i = 0;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    i = 2;
  }
  if (i >= text.size()) return false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return false;
    if (value > (std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(d)) / base) return false;
    value = value * base + static_cast<uint64_t>(d);
  }
  *out = value;
  return true;
}

}  // namespace kiln::tir
