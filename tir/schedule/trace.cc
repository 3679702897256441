#include "tir/schedule/trace.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"

namespace kiln::tir {

namespace {

std::string Quoted(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const std::string& n : names) q.push_back(absl::StrCat("\"", n, "\""));
  return absl::StrJoin(q, ", ");
}

// Splits take a loop and factors; fuse and reorder a list of loops; the others names.
bool TakesList(const std::string& kind) { return kind == "fuse" || kind == "reorder"; }

}  // namespace

std::string Instruction::ToString() const {
  std::string args = TakesList(kind) ? absl::StrCat("[", Quoted(inputs), "]") : Quoted(inputs);
  if (kind == "split") absl::StrAppend(&args, ", [", absl::StrJoin(ints, ", "), "]");
  std::string out = absl::StrCat(kind, "(", args, ")");
  if (outputs.size() == 1 && kind != "get_loops") {
    absl::StrAppend(&out, " -> \"", outputs[0], "\"");
  } else if (!outputs.empty() || kind == "get_loops") {
    absl::StrAppend(&out, " -> [", Quoted(outputs), "]");
  }
  return out;
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
