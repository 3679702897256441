#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "serving/jinja_syntax.h"
#include "support/status_macros.h"

namespace kiln::serving::jinja {

absl::Status Error(const std::string& name, Pos pos, std::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(name, ": line ", pos.line, ", column ", pos.column, ": ", std::string(message)));
}

namespace {

// Operators, longest first so "//" wins over "/".
constexpr const char* kOperators[] = {"**", "//", "==", "!=", "<=", ">=", "(", ")", "[", "]", "{", "}", ",", ":",
                                      ".", "|", "~", "+", "-", "*", "/", "%", "<", ">", "="};

class Splitter {
 public:
  Splitter(std::string_view source, const std::string& name) : source_(source), name_(name) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Pos PosOf(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }

  absl::Status Error(size_t offset, std::string_view message) const { return jinja::Error(name_, PosOf(offset), message); }

  absl::StatusOr<std::vector<Segment>> Split() {
    std::vector<Segment> segments;
    size_t pos = 0;
    while (pos <= source_.size()) {
      size_t at = pos;
      while (at + 1 < source_.size() &&
             !(source_[at] == '{' && (source_[at + 1] == '{' || source_[at + 1] == '%' || source_[at + 1] == '#'))) {
        ++at;
      }
      if (at + 1 >= source_.size()) at = source_.size();
      Segment text;
      text.kind = Segment::kText;
      text.text = std::string(source_.substr(pos, at - pos));
      text.pos = PosOf(pos);
      text.begin = pos;
      segments.push_back(std::move(text));
      if (at == source_.size()) break;

      Segment tag;
      tag.kind = source_[at + 1] == '{' ? Segment::kOutput : source_[at + 1] == '%' ? Segment::kBlock : Segment::kComment;
      tag.pos = PosOf(at);
      size_t p = at + 2;
      if (p < source_.size() && source_[p] == '-') {
        tag.strip_before = true;
        ++p;
      } else if (p < source_.size() && source_[p] == '+') {
        tag.keep_indent = true;
        ++p;
      }
      if (tag.kind == Segment::kComment) {
        size_t end = source_.find("#}", p);
        if (end == std::string_view::npos) return Error(at, "unterminated comment");
        tag.strip_after = end > p && source_[end - 1] == '-';
        p = end + 2;
      } else {
        const char* close = tag.kind == Segment::kOutput ? "}}" : "%}";
        KILN_RETURN_IF_ERROR(LexTag(at, close, &p, &tag));
      }
      // trim_blocks: the first newline after a block tag or comment goes.
      if (tag.kind != Segment::kOutput && p < source_.size() && source_[p] == '\n') ++p;
      segments.push_back(std::move(tag));
      pos = p;
    }
    ApplyWhitespaceControl(&segments);
    return segments;
  }

 private:
  absl::Status LexTag(size_t tag_start, const char* close, size_t* p, Segment* tag) {
    const std::string_view end(close, 2);
    while (true) {
      while (*p < source_.size() && std::isspace(static_cast<unsigned char>(source_[*p]))) ++*p;
      if (*p >= source_.size()) {
        return Error(tag_start, absl::StrCat("unterminated ", tag->kind == Segment::kOutput ? "{{" : "{%"));
      }
      std::string_view rest = source_.substr(*p);
      if (rest.substr(0, 2) == end) {
        *p += 2;
        break;
      }
      if (rest.size() >= 3 && rest[0] == '-' && rest.substr(1, 2) == end) {
        tag->strip_after = true;
        *p += 3;
        break;
      }
      Token token;
      token.pos = PosOf(*p);
      const char c = rest[0];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t n = 1;
        while (n < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_')) ++n;
        token.kind = Tok::kName;
        token.text = std::string(rest.substr(0, n));
        *p += n;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t n = 0;
        while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
        bool is_float = false;
        if (n + 1 < rest.size() && rest[n] == '.' && std::isdigit(static_cast<unsigned char>(rest[n + 1]))) {
          is_float = true;
          ++n;
          while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
        }
        if (n < rest.size() && (rest[n] == 'e' || rest[n] == 'E')) {
          size_t m = n + 1;
          if (m < rest.size() && (rest[m] == '+' || rest[m] == '-')) ++m;
          if (m < rest.size() && std::isdigit(static_cast<unsigned char>(rest[m]))) {
            is_float = true;
            n = m;
            while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
          }
        }
        std::string number(rest.substr(0, n));
        if (is_float) {
          token.kind = Tok::kFloat;
          token.float_value = std::strtod(number.c_str(), nullptr);
        } else {
          token.kind = Tok::kInt;
          errno = 0;
          token.int_value = std::strtoll(number.c_str(), nullptr, 10);
          if (errno == ERANGE) return Error(*p, absl::StrCat("integer ", number, " is too large"));
        }
        *p += n;
      } else if (c == '\'' || c == '"') {
        size_t n = 1;
        std::string value;
        while (true) {
          if (n >= rest.size()) return Error(*p, "unterminated string");
          char d = rest[n];
          if (d == c) break;
          if (d == '\\' && n + 1 < rest.size()) {
            char e = rest[n + 1];
            switch (e) {
              case 'n': value += '\n'; break;
              case 't': value += '\t'; break;
              case 'r': value += '\r'; break;
              case '\\': value += '\\'; break;
              case '\'': value += '\''; break;
              case '"': value += '"'; break;
              default: value += '\\'; value += e; break;  // Python keeps unknown escapes
            }
            n += 2;
            continue;
          }
          value += d;
          ++n;
        }
        token.kind = Tok::kString;
        token.text = std::move(value);
        *p += n + 1;
      } else {
        bool found = false;
        for (const char* op : kOperators) {
          const size_t len = std::strlen(op);
          if (rest.substr(0, len) == op) {
            token.kind = Tok::kOp;
            token.text = op;
            *p += len;
            found = true;
            break;
          }
        }
        if (!found) return Error(*p, absl::StrCat("unexpected character '", std::string(1, c), "'"));
      }
      tag->tokens.push_back(std::move(token));
    }
    Token end_token;
    end_token.pos = PosOf(*p - 2);
    tag->tokens.push_back(end_token);
    return absl::OkStatus();
  }

  // "-" strips all whitespace on its side; lstrip_blocks strips the spaces and tabs between
  // the start of a line and a block tag or comment.
  void ApplyWhitespaceControl(std::vector<Segment>* segments) const {
    for (size_t i = 0; i < segments->size(); ++i) {
      Segment& s = (*segments)[i];
      if (s.kind != Segment::kText) continue;
      if (i > 0 && (*segments)[i - 1].strip_after) {
        size_t k = 0;
        while (k < s.text.size() && std::isspace(static_cast<unsigned char>(s.text[k]))) ++k;
        s.text.erase(0, k);
      }
      if (i + 1 >= segments->size()) continue;
      const Segment& next = (*segments)[i + 1];
      if (next.strip_before) {
        while (!s.text.empty() && std::isspace(static_cast<unsigned char>(s.text.back()))) s.text.pop_back();
      } else if (next.kind != Segment::kOutput && !next.keep_indent) {
        const size_t line_start = s.text.rfind('\n') == std::string::npos ? 0 : s.text.rfind('\n') + 1;
        const bool at_line_start = line_start > 0 || s.begin == 0 || source_[s.begin - 1] == '\n';
        if (at_line_start && s.text.find_first_not_of(" \t", line_start) == std::string::npos) {
          s.text.erase(line_start);
        }
      }
    }
  }

  std::string_view source_;
  const std::string& name_;
  std::vector<size_t> line_starts_;
};

}  // namespace

absl::StatusOr<std::vector<Segment>> SplitTemplate(std::string_view source, const std::string& name) {
  return Splitter(source, name).Split();
}

}  // namespace kiln::serving::jinja
