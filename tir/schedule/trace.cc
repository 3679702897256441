#include "tir/schedule/trace.h"

#include <cctype>
#include <cstdint>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"

namespace kiln::tir {

namespace {

// Names may hold any character; quotes and backslashes are escaped.
std::string Quote(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Quoted(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const std::string& n : names) q.push_back(Quote(n));
  return absl::StrJoin(q, ", ");
}

// Splits take a loop and factors; fuse and reorder a list of loops; the others names.
bool TakesList(const std::string& kind) { return kind == "fuse" || kind == "reorder"; }

}  // namespace

std::string Instruction::ToString() const {
  std::string args = TakesList(kind) ? absl::StrCat("[", Quoted(inputs), "]") : Quoted(inputs);
  if (kind == "split") absl::StrAppend(&args, ", [", absl::StrJoin(ints, ", "), "]");
  if (kind == "rfactor") absl::StrAppend(&args, ", ", absl::StrJoin(ints, ", "));
  std::string out = absl::StrCat(kind, "(", args, ")");
  if (outputs.size() == 1 && kind != "get_loops") {
    absl::StrAppend(&out, " -> ", Quote(outputs[0]));
  } else if (!outputs.empty() || kind == "get_loops") {
    absl::StrAppend(&out, " -> [", Quoted(outputs), "]");
  }
  return out;
}


namespace {

// A cursor over one line of a printed trace.
class LineParser {
 public:
  LineParser(std::string_view line, int line_no) : s_(line), line_no_(line_no) {}

  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("trace line ", line_no_, " column ", pos_ + 1, ": expected ", what));
  }
  void Skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool Eat(std::string_view token) {
    Skip();
    if (s_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  bool AtEnd() {
    Skip();
    return pos_ == s_.size();
  }
  bool PeekString() {
    Skip();
    return pos_ < s_.size() && s_[pos_] == '"';
  }
  absl::StatusOr<std::string> Identifier() {
    Skip();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (start == pos_) return Error("a primitive name");
    return std::string(s_.substr(start, pos_ - start));
  }
  absl::StatusOr<std::string> String() {
    if (!PeekString()) return Error("a quoted name");
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (pos_ == s_.size()) return Error("a closing quote");
    ++pos_;
    return out;
  }
  absl::StatusOr<int64_t> Int() {
    Skip();
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    int64_t v = 0;
    if (!absl::SimpleAtoi(absl::string_view(s_.data() + start, pos_ - start), &v)) return Error("an integer");
    return v;
  }
  absl::StatusOr<std::vector<std::string>> StringList() {
    if (!Eat("[")) return Error("'['");
    std::vector<std::string> out;
    if (Eat("]")) return out;
    do {
      KILN_ASSIGN_OR_RETURN(std::string v, String());
      out.push_back(std::move(v));
    } while (Eat(","));
    if (!Eat("]")) return Error("',' or ']'");
    return out;
  }
  absl::StatusOr<std::vector<int64_t>> IntList() {
    if (!Eat("[")) return Error("'['");
    std::vector<int64_t> out;
    if (Eat("]")) return out;
    do {
      KILN_ASSIGN_OR_RETURN(int64_t v, Int());
      out.push_back(v);
    } while (Eat(","));
    if (!Eat("]")) return Error("',' or ']'");
    return out;
  }

 private:
  std::string_view s_;
  int line_no_;
  size_t pos_ = 0;
};

absl::StatusOr<Instruction> ParseInstruction(std::string_view line, int line_no) {
  LineParser p(line, line_no);
  Instruction inst;
  KILN_ASSIGN_OR_RETURN(inst.kind, p.Identifier());
  if (!p.Eat("(")) return p.Error("'('");
  if (TakesList(inst.kind)) {
    KILN_ASSIGN_OR_RETURN(inst.inputs, p.StringList());
  } else {
    // rfactor: two names, then the lane count.
    const size_t names = inst.kind == "split" ? 1 : inst.kind == "rfactor" ? 2 : SIZE_MAX;
    do {
      KILN_ASSIGN_OR_RETURN(std::string name, p.String());
      inst.inputs.push_back(std::move(name));
    } while (inst.inputs.size() < names && p.Eat(","));
    if (inst.kind == "split") {
      if (!p.Eat(",")) return p.Error("',' and the factors");
      KILN_ASSIGN_OR_RETURN(inst.ints, p.IntList());
    } else if (inst.kind == "rfactor") {
      if (!p.Eat(",")) return p.Error("',' and the lane count");
      KILN_ASSIGN_OR_RETURN(int64_t lanes, p.Int());
      inst.ints.push_back(lanes);
    }
  }
  if (!p.Eat(")")) return p.Error("')'");
  if (p.Eat("->")) {
    if (p.PeekString()) {
      KILN_ASSIGN_OR_RETURN(std::string out, p.String());
      inst.outputs.push_back(std::move(out));
    } else {
      KILN_ASSIGN_OR_RETURN(inst.outputs, p.StringList());
    }
  }
  if (!p.AtEnd()) return p.Error("the end of the line");
  return inst;
}

}  // namespace

absl::StatusOr<Trace> Trace::Parse(std::string_view text) {
  Trace trace;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_no;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    KILN_ASSIGN_OR_RETURN(Instruction inst, ParseInstruction(std::string_view(line.data(), line.size()), line_no));
    trace.Append(std::move(inst));
  }
  return trace;
}
std::string Trace::ToString() const {
  std::string out;
  for (const Instruction& inst : instructions_) absl::StrAppend(&out, inst.ToString(), "\n");
  return out;
}

absl::Status Trace::Replay(Schedule* s) const {
  for (size_t i = 0; i < instructions_.size(); ++i) {
    const Instruction& inst = instructions_[i];
    auto where = [&](const absl::Status& st) {
      return absl::Status(st.code(), absl::StrCat("replaying instruction ", i, " (", inst.ToString(), "): ",
                                                  st.message()));
    };
    auto one = [&]() -> const std::string& { return inst.inputs.at(0); };
    absl::StatusOr<std::vector<std::string>> outputs = std::vector<std::string>{};
    absl::Status status;
    if (inst.inputs.empty()) return absl::InvalidArgumentError(absl::StrCat("instruction ", i, " has no inputs"));
    if (inst.kind == "get_block") {
      absl::StatusOr<std::string> r = s->GetBlock(one());
      if (r.ok()) outputs = std::vector<std::string>{*r};
      status = r.status();
    } else if (inst.kind == "get_loops") {
      outputs = s->GetLoops(one());
      status = outputs.status();
    } else if (inst.kind == "split") {
      outputs = s->Split(one(), inst.ints);
      status = outputs.status();
    } else if (inst.kind == "fuse") {
      absl::StatusOr<std::string> r = s->Fuse(inst.inputs);
      if (r.ok()) outputs = std::vector<std::string>{*r};
      status = r.status();
    } else if (inst.kind == "reorder") {
      status = s->Reorder(inst.inputs);
    } else if (inst.kind == "parallel") {
      status = s->Parallel(one());
    } else if (inst.kind == "vectorize") {
      status = s->Vectorize(one());
    } else if (inst.kind == "unroll") {
      status = s->Unroll(one());
    } else if (inst.kind == "decompose_reduction") {
      if (inst.inputs.size() != 2) return absl::InvalidArgumentError("decompose_reduction takes a block and a loop");
      absl::StatusOr<std::string> r = s->DecomposeReduction(inst.inputs[0], inst.inputs[1]);
      if (r.ok()) outputs = std::vector<std::string>{*r};
      status = r.status();
    } else if (inst.kind == "compute_inline") {
      status = s->ComputeInline(one());
    } else if (inst.kind == "cache_write") {
      absl::StatusOr<std::string> r = s->CacheWrite(one());
      if (r.ok()) outputs = std::vector<std::string>{*r};
      status = r.status();
    } else if (inst.kind == "cache_read") {
      if (inst.inputs.size() != 3) return absl::InvalidArgumentError("cache_read takes a block, a buffer and a loop");
      absl::StatusOr<std::string> r = s->CacheRead(inst.inputs[0], inst.inputs[1], inst.inputs[2]);
      if (r.ok()) outputs = std::vector<std::string>{*r};
      status = r.status();
    } else if (inst.kind == "reverse_compute_at") {
      if (inst.inputs.size() != 2) return absl::InvalidArgumentError("reverse_compute_at takes a block and a loop");
      status = s->ReverseComputeAt(inst.inputs[0], inst.inputs[1]);
    } else if (inst.kind == "fuse_siblings") {
      if (inst.inputs.size() != 2) return absl::InvalidArgumentError("fuse_siblings takes two loops");
      status = s->FuseSiblings(inst.inputs[0], inst.inputs[1]);
    } else if (inst.kind == "rfactor") {
      if (inst.inputs.size() != 2 || inst.ints.size() != 1) {
        return absl::InvalidArgumentError("rfactor takes a block, a loop and a lane count");
      }
      outputs = s->RFactor(inst.inputs[0], inst.inputs[1], inst.ints[0]);
      status = outputs.status();
    } else if (inst.kind == "reverse_compute_inline") {
      status = s->ReverseComputeInline(one());
    } else {
      return absl::InvalidArgumentError(absl::StrCat("instruction ", i, ": unknown primitive '", inst.kind, "'"));
    }
    if (!status.ok()) return where(status);
    if (*outputs != inst.outputs) {
      return absl::InternalError(absl::StrCat("replaying instruction ", i, " (", inst.ToString(), "): got [",
                                              Quoted(*outputs), "]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::tir
