// CpuScheduleKnobs: the parameters of the CPU schedule rules that the auto-tuner searches
// (tune/, docs/tuning.md), one struct per rule kind. The defaults are the rules' own
// choices, so a default-constructed set schedules exactly as an untuned build does.
//
// A knob set has a text form, `matmul.row_tile=8 matmul.col_vectors=2 ...` (every knob,
// in a fixed order), which the tuning records store; Parse reads it back (unknown names and
// out-of-range values are errors) and ToString(Parse(t)) == t for any t ToString made. A
// knob the text does not name keeps its default, so records written before a knob existed
// still load and replay as they were measured (new knobs default to the old behaviour).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace kiln::tir {

// The matmul rule (cpu_matmul.cc).
struct MatmulKnobs {
  int row_tile = 0;       // rows of the register tile (or of a wide tile); 0: the rule's
  int col_vectors = 0;    // columns of the register tile, in vectors (at most 64 wide); 0: the rule's
  int pack = -1;          // pack the right operand's column panel: -1 when it pays, 0 never, 1 always
  bool unroll_rows = true;  // unroll the tile's rows (k, rows unrolled, columns vectorized)
  bool parallel = true;     // run the tile loops on the thread pool
  bool few_rows = true;     // version a symbolic matmul for few rows (wide tiles, BranchOn)
  // Row tiles outermost instead of column tiles: each row strip of the left operand is read
  // once (it stays in L1 across the column tiles) and the right operand's panels are re-read
  // per row strip. Pays when the left operand is the big one (attention's probs . v: n x n
  // against n x 64). The right operand is then never packed (a pack per row strip would copy
  // all of it).
  bool rows_outer = false;
  // The k loop of a register tile split by this and the inner part unrolled, when k is a
  // constant it divides (more loads in flight between the FMAs); 1: not split.
  int k_unroll = 1;
  // The wide tiles of few rows (cpu_matmul.cc; their row count is row_tile). 0: the rule's.
  // Rows of the weight in each k block (the rule's 16). A block larger than 16 wants
  // wide_pack: the block's rows lie 16 KiB apart in a 4096-wide weight and collide in L1.
  int wide_k_block = 0;
  int wide_step_rows = 0;   // rows of each register-sized step (the rule's: 8 AVX-512, 4 AVX2)
  int wide_subtiles = 0;    // most 8-vector-pair sub-tiles in one tile (the rule's 16)
  // Copy each k block of the weight's sub-tile into a contiguous buffer before the row
  // steps read it (read in long runs; no L1 set conflicts between its rows).
  bool wide_pack = false;
  // The symbolic row count from which a matmul takes register tiles instead of wide tiles
  // (the rule's 64; 65 where the packed wide tiles of 64 rows apply).
  int many_rows = 0;
  // Weight rows per pass of the one-row version of a wide tile's row edge (the GEMV, and
  // any row count one more than a multiple of the tile's rows), split off the edge's other
  // row counts by a branch on the edge alone; a divisor of the wide k block. 0: no such
  // version (every row count takes the edge's 8 weight rows per pass).
  int gemv_rows_per_pass = 0;
  // The least row count that takes the packed wide tiles (cpu_matmul.cc,
  // PackedWideApplies) instead of the unpacked ones. 0: the rule's (16 on AVX2, 32 on AVX-512).
  int packed_least_rows = 0;
  // Vectors of columns in each register step of the packed wide tiles (the rule's: 3 on
  // AVX2, 4 x 3 steps, 12 accumulators; a vector pair on AVX-512, 8 x 2). The unpacked
  // wide tiles keep their pairs.
  int wide_step_vectors = 0;
  // The packed wide tiles prefetch the next k block's panel while the register steps
  // run on this one (cpu_matmul.cc, PrefetchPanels); 0: the copy waits on memory.
  bool wide_prefetch = true;
  // The row edge of the unpacked wide tiles (the GEMV's loop) prefetches each weight row it
  // streams this many elements ahead (cpu_matmul.cc, PrefetchEdgeStream). -1: the rule's
  // (256), 0: none (the hardware's prefetcher alone).
  int stream_prefetch = -1;
  // The register tiles' row edge in steps of two rows outside k (cpu_matmul.cc,
  // StepRegisterEdgeRows); 0: every row of the tile inside k under its own condition.
  bool edge_steps = true;
  // Rows of the left operand per block of packed register tiles: each block walks every
  // column panel (packing it again) before the next starts (cpu_matmul.cc, LeftBlockRows).
  // -1: the rule's (8 MiB of the left operand, for a constant k), 0: no blocks.
  int left_block_rows = -1;
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
