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
#include "tir/schedule/schedule_utils.h"
#include "tir/text_parser.h"

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

// Splits take a loop and factors; fuse and reorder a list of loops; compute_inline a name
// or a list of them; the others names.
bool TakesList(const Instruction& inst) {
  return inst.kind == "fuse" || inst.kind == "reorder" || (inst.kind == "compute_inline" && inst.inputs.size() != 1);
}

}  // namespace

std::string Instruction::ToString() const {
  std::string args = TakesList(*this) ? absl::StrCat("[", Quoted(inputs), "]") : Quoted(inputs);
  if (kind == "split") absl::StrAppend(&args, ", [", absl::StrJoin(ints, ", "), "]");
  if (kind == "rfactor" || kind == "prefetch_next" || kind == "prefetch_ahead") {
    for (int64_t v : ints) absl::StrAppend(&args, ", ", v);
  }
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
  bool Peek(char c) {
    Skip();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool PeekString() { return Peek('"'); }
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
  if (inst.kind == "fuse" || inst.kind == "reorder" || (inst.kind == "compute_inline" && p.Peek('['))) {
    KILN_ASSIGN_OR_RETURN(inst.inputs, p.StringList());
  } else if (!p.Peek(')')) {
    // rfactor: two names, then the lane count (and the tail lanes); prefetch_next: three
    // names, then maybe the cycle; prefetch_ahead: three names (below).
    const size_t names = inst.kind == "split"                                          ? 1
                         : inst.kind == "rfactor"                                      ? 2
                         : inst.kind == "prefetch_next" || inst.kind == "prefetch_ahead" ? 3
                                                                                       : SIZE_MAX;
    do {
      KILN_ASSIGN_OR_RETURN(std::string name, p.String());
      inst.inputs.push_back(std::move(name));
    } while (inst.inputs.size() < names && p.Eat(","));
    // prefetch_ahead: three names, maybe a fourth (first_of), then the distance.
    if (inst.kind == "prefetch_ahead") {
      if (!p.Eat(",")) return p.Error("',' and a loop or the distance");
      if (p.PeekString()) {
        KILN_ASSIGN_OR_RETURN(std::string first_of, p.String());
        inst.inputs.push_back(std::move(first_of));
        if (!p.Eat(",")) return p.Error("',' and the distance");
      }
      KILN_ASSIGN_OR_RETURN(int64_t distance, p.Int());
      inst.ints.push_back(distance);
    }
    if (inst.kind == "prefetch_next" && p.Eat(",")) {
      KILN_ASSIGN_OR_RETURN(int64_t cycle, p.Int());
      inst.ints.push_back(cycle);
    }
    if (inst.kind == "split") {
      if (!p.Eat(",")) return p.Error("',' and the factors");
      KILN_ASSIGN_OR_RETURN(inst.ints, p.IntList());
    } else if (inst.kind == "rfactor") {
      if (!p.Eat(",")) return p.Error("',' and the lane count");
      KILN_ASSIGN_OR_RETURN(int64_t lanes, p.Int());
      inst.ints.push_back(lanes);
      if (p.Eat(",")) {  // the tail lanes
        KILN_ASSIGN_OR_RETURN(int64_t tail_lanes, p.Int());
        inst.ints.push_back(tail_lanes);
      }
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
    auto arity = [&](size_t names, size_t ints, const char* what) -> absl::Status {
      if (inst.inputs.size() == names && inst.ints.size() == ints) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat("instruction ", i, ": ", inst.kind, " takes ", what));
    };
    auto one = [&]() { return arity(1, 0, "one name"); };
    // Primitives returning one name report it as a one-element list.
    auto single = [](const absl::StatusOr<std::string>& r) -> absl::StatusOr<std::vector<std::string>> {
      if (!r.ok()) return r.status();
      return std::vector<std::string>{*r};
    };
    auto none = [](const absl::Status& st) -> absl::StatusOr<std::vector<std::string>> {
      if (!st.ok()) return st;
      return std::vector<std::string>{};
    };
    const std::vector<std::string>& in = inst.inputs;
    absl::StatusOr<std::vector<std::string>> outputs;
    if (inst.kind == "get_block") {
      KILN_RETURN_IF_ERROR(one());
      outputs = single(s->GetBlock(in[0]));
    } else if (inst.kind == "get_loops") {
      KILN_RETURN_IF_ERROR(one());
      outputs = s->GetLoops(in[0]);
    } else if (inst.kind == "split") {
      if (in.size() != 1) return arity(1, 0, "a loop and factors");
      outputs = s->Split(in[0], inst.ints);
    } else if (inst.kind == "fuse") {
      outputs = single(s->Fuse(in));
    } else if (inst.kind == "reorder") {
      outputs = none(s->Reorder(in));
    } else if (inst.kind == "parallel" || inst.kind == "vectorize" || inst.kind == "unroll") {
      KILN_RETURN_IF_ERROR(one());
      outputs = none(inst.kind == "parallel"    ? s->Parallel(in[0])
                     : inst.kind == "vectorize" ? s->Vectorize(in[0])
                                                : s->Unroll(in[0]));
    } else if (inst.kind == "bind") {
      KILN_RETURN_IF_ERROR(arity(2, 0, "a loop and a thread index"));
      outputs = none(s->Bind(in[0], in[1]));
    } else if (inst.kind == "decompose_reduction") {
      KILN_RETURN_IF_ERROR(arity(2, 0, "a block and a loop"));
      outputs = single(s->DecomposeReduction(in[0], in[1]));
    } else if (inst.kind == "compute_inline") {
      outputs = none(s->ComputeInline(in));
    } else if (inst.kind == "cache_write") {
      KILN_RETURN_IF_ERROR(one());
      outputs = single(s->CacheWrite(in[0]));
    } else if (inst.kind == "cache_read") {
      KILN_RETURN_IF_ERROR(arity(3, 0, "a block, a buffer and a loop"));
      outputs = single(s->CacheRead(in[0], in[1], in[2]));
    } else if (inst.kind == "cache_read_shared") {
      KILN_RETURN_IF_ERROR(arity(3, 0, "a block, a buffer and a loop"));
      outputs = single(s->CacheReadShared(in[0], in[1], in[2]));
    } else if (inst.kind == "reverse_compute_at") {
      KILN_RETURN_IF_ERROR(arity(2, 0, "a block and a loop"));
      outputs = none(s->ReverseComputeAt(in[0], in[1]));
    } else if (inst.kind == "reverse_compute_inline") {
      KILN_RETURN_IF_ERROR(one());
      outputs = none(s->ReverseComputeInline(in[0]));
    } else if (inst.kind == "fuse_siblings") {
      KILN_RETURN_IF_ERROR(arity(2, 0, "two loops"));
      outputs = none(s->FuseSiblings(in[0], in[1]));
    } else if (inst.kind == "rfactor") {
      KILN_RETURN_IF_ERROR(arity(2, inst.ints.size() == 2 ? 2 : 1, "a block, a loop, a lane count and maybe tail lanes"));
      outputs = s->RFactor(in[0], in[1], inst.ints[0], inst.ints.size() == 2 ? inst.ints[1] : 0);
    } else if (inst.kind == "branch_on") {
      if (in.size() != 2 || !inst.ints.empty()) KILN_RETURN_IF_ERROR(arity(1, 0, "a condition and maybe a loop"));
      absl::StatusOr<PrimExpr> condition = ParsePrimExpr(in[0], schedule_internal::FunctionVars(s->func()), "branch_on");
      if (!condition.ok()) return where(condition.status());
      outputs = s->BranchOn(*condition, in.size() == 2 ? in[1] : "");
    } else if (inst.kind == "guard_vectorized_tails") {
      KILN_RETURN_IF_ERROR(arity(0, 0, "no arguments"));
      outputs = none(s->GuardVectorizedTails());
    } else if (inst.kind == "address_steps_per_term") {
      KILN_RETURN_IF_ERROR(arity(0, 0, "no arguments"));
      s->AddressStepsPerTerm();
      outputs = none(absl::OkStatus());
    } else if (inst.kind == "guard_steps") {
      KILN_RETURN_IF_ERROR(one());
      outputs = none(s->GuardSteps(in[0]));
    } else if (inst.kind == "prefetch_next") {
      KILN_RETURN_IF_ERROR(arity(3, inst.ints.size() == 1 ? 1 : 0, "a block, two loops and maybe a cycle"));
      outputs = none(s->PrefetchNext(in[0], in[1], in[2], inst.ints.empty() ? 0 : inst.ints[0]));
    } else if (inst.kind == "prefetch_ahead") {
      if (in.size() != 4 || inst.ints.size() != 1) {
        KILN_RETURN_IF_ERROR(arity(3, 1, "a block, a loop, a buffer, maybe a loop, and a distance"));
      }
      outputs = none(s->PrefetchAhead(in[0], in[1], in[2], inst.ints[0], in.size() == 4 ? in[3] : ""));
    } else {
      return absl::InvalidArgumentError(absl::StrCat("instruction ", i, ": unknown primitive '", inst.kind, "'"));
    }
    if (!outputs.ok()) return where(outputs.status());
    if (*outputs != inst.outputs) {
      return absl::InternalError(absl::StrCat("replaying instruction ", i, " (", inst.ToString(), "): got [",
                                              Quoted(*outputs), "]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::tir
