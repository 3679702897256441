// Trace: the record of the primitives a Schedule applied, with their arguments by name.
//
// What it promises:
//  - Every successful primitive call on a Schedule appends one Instruction (failed calls
//    append nothing). Loops and blocks are named by their handles (loop variable names,
//    block names), which are deterministic, so the same trace replayed on a fresh Schedule
//    of the same PrimFunc makes the same calls and gives a structurally equal function.
//  - ToString prints one instruction per line (names quoted; quotes and backslashes
//    escaped), and Parse reads it back, e.g.
//      split("i", [-1, 16]) -> ["i_0", "i_1"]
//      parallel("i_0")
//      compute_inline(["t0", "t1"])
//      branch_on("n >= 64 || m < 256") -> ["C_else", "C_write_back_else"]
//      branch_on("floormod(m, 16) == 1", "r_0_edge") -> "C_edge_else"
//      guard_vectorized_tails()
//      prefetch_next("B_cache_1_edge", "r_0_edge", "j_1_0_edge", 64)
//      prefetch_ahead("C_edge", "j_1_1_0_edge", "B", "r_1_1_edge", 256)
//    An expression argument (branch_on's condition) is its tir::ToString text, quoted; it
//    is read (tir::ParsePrimExpr) against the function's variables when replayed.
//  - Replay stops at the first instruction that fails, or whose results differ from the
//    recorded ones, and says which.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::tir {

class Schedule;

struct Instruction {
  std::string kind;                 // "get_block", "split", "fuse", ...
  std::vector<std::string> inputs;  // loop / block names (branch_on: the condition's text, then its loop if any)
  std::vector<int64_t> ints;        // split factors
  std::vector<std::string> outputs; // names of the loops / blocks it made or found
  std::string ToString() const;
};

class Trace {
 public:
  void Append(Instruction inst) { instructions_.push_back(std::move(inst)); }
  const std::vector<Instruction>& instructions() const { return instructions_; }
  std::string ToString() const;
  // Reads what ToString prints (blank lines are skipped); errors give the line and column.
  static absl::StatusOr<Trace> Parse(std::string_view text);
  // Applies every instruction to `schedule` in order.
  absl::Status Replay(Schedule* schedule) const;

 private:
  std::vector<Instruction> instructions_;
};

}  // namespace kiln::tir
