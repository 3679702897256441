// CpuScheduleKnobs: the parameters of the CPU schedule rules that the auto-tuner searches
// (tune/, docs/tuning.md), one struct per rule kind. The defaults are the rules' own
// choices, so a default-constructed set schedules exactly as an untuned build does.
//
// A knob set has a text form, `matmul.row_tile=8 matmul.col_vectors=2 ...` (every knob,
// in a fixed order), which the tuning records store; Parse reads it back (unknown names and
// out-of-range values are errors) and ToString(Parse(t)) == t for any t ToString made.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace kiln::tir {

// The matmul rule (cpu_matmul.cc).
struct MatmulKnobs {
  int row_tile = 0;       // rows of the register tile; 0: the rule's (8 for 16 lanes, 4 otherwise)
  int col_vectors = 2;    // columns of the register tile, in vectors (the tile is at most 64 wide)
  int pack = -1;          // pack the right operand's column panel: -1 when it pays, 0 never, 1 always
  bool unroll_rows = true;  // unroll the tile's rows (k, rows unrolled, columns vectorized)
  bool parallel = true;     // run the tile loops on the thread pool
  bool few_rows = true;     // version a symbolic matmul for few rows (wide tiles, BranchOn)
  bool operator==(const MatmulKnobs&) const = default;
};

// The row-reduction rule (cpu_row_reduction.cc).
struct RowReductionKnobs {
  int lanes = 0;          // partial results per row (RFactor); 0: the vector width, 1: none
  bool parallel = true;   // rows on the thread pool
  bool operator==(const RowReductionKnobs&) const = default;
};

// The injective rule (cpu_injective.cc).
struct InjectiveKnobs {
  int lanes = 0;          // vector width of the innermost loop; 0: the target's, 1: scalar
  bool parallel = true;   // outer loops on the thread pool
  bool operator==(const InjectiveKnobs&) const = default;
};

struct CpuScheduleKnobs {
  MatmulKnobs matmul{};
  RowReductionKnobs reduction{};
  InjectiveKnobs injective{};
  bool operator==(const CpuScheduleKnobs&) const = default;

  std::string ToString() const;
  static absl::StatusOr<CpuScheduleKnobs> Parse(const std::string& text);
};

}  // namespace kiln::tir
