// The tuner's knob values and its candidate draws (random, mutations, one-knob neighbours).
#include "tune/search_space.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "support/check.h"

namespace kiln::tune {

namespace {

// The knob set of the text form of `values` (every value from a valid set or SearchSpace).
tir::CpuScheduleKnobs FromValues(const std::vector<std::pair<std::string, int>>& values) {
  std::vector<std::string> text;
  for (const auto& [name, value] : values) text.push_back(absl::StrCat(name, "=", value));
  absl::StatusOr<tir::CpuScheduleKnobs> knobs = tir::CpuScheduleKnobs::Parse(absl::StrJoin(text, " "));
  KILN_CHECK(knobs.ok()) << knobs.status();
  return *knobs;
}

}  // namespace

const std::vector<KnobRange>& SearchSpace() {
  static const std::vector<KnobRange> space = {
      // Row tiles up to 12: with 2 vectors of columns that is 24 accumulators, within
      // AVX-512's 32 registers (AVX2's 16 spill, which the measurement then shows). Wide
      // tiles (few rows) take row_tile as their height, so 16 and 32 are wide-tile heights.
      {"matmul.row_tile", {0, 1, 2, 3, 4, 6, 8, 12, 16, 32}},
      // The register tile's width (the default 0 is the rule's 2 or 3, RegisterTileVectors
      // in cpu_matmul.cc: the default's neighbours are all four widths).
      {"matmul.col_vectors", {1, 2, 3, 4}},
      {"matmul.pack", {-1, 0, 1}},
      {"matmul.unroll_rows", {0, 1}},
      {"matmul.parallel", {0, 1}},
      {"matmul.few_rows", {0, 1}},
      {"matmul.rows_outer", {0, 1}},
      {"matmul.k_unroll", {1, 2, 4, 8}},
      // The wide tiles' own shape (0: the rule's): k blocks of the weight, rows per register
      // step, sub-tiles per tile, packing each k block; and the row count from which register
      // tiles take over (the MLP's up projection, 64 -> 256 columns, is wide below 64 rows).
      {"matmul.wide_k_block", {0, 8, 32, 64}},
      {"matmul.wide_step_rows", {0, 1, 2, 4, 8}},
      {"matmul.wide_subtiles", {0, 1, 2, 4, 8}},
      {"matmul.wide_pack", {0, 1}},
      {"matmul.many_rows", {0, 8, 16, 32, 128, 256}},
      {"matmul.gemv_rows_per_pass", {0, 8, 16}},
      // Where the packed wide tiles start (0: the rule's, 16 rows on AVX2 and 32 on AVX-512;
      // only matmuls over a constant weight with k a multiple of the k block above it take
      // them). mm21's quiet A/B saw AVX2's 24-28 rows lose packed by 3-5 % and 32 win by
      // 8-10 %; after the packed tiles' later changes 16-28 won by 2-56 % (cpu_matmul.cc). The
      // threshold depends on the cache sizes and the weight, so the search tries others.
      {"matmul.packed_least_rows", {0, 24, 40, 48}},
      // The register step of AVX2's packed wide tiles: 0 the rule's 4 x 3, 2 the vector pairs
      // (4 x 2), which measured within a few percent of it on 1 thread (schedule.md, stop 33).
      {"matmul.wide_step_vectors", {0, 2}},
      // Prefetching the next k block's panel during the register steps (1, the rule's) or
      // not: a win of 6-12 % on AVX2 code where measured (schedule.md, stop 35), but it
      // competes with the steps' own reads for the memory system.
      {"matmul.wide_prefetch", {0, 1}},
      // How far ahead the GEMV's row edge prefetches the weight rows it streams (-1: the
      // rule's 256 floats; 0: the hardware prefetcher alone). 128-512 measured alike on the
      // 4096^2 GEMV (schedule.md, stop 38); the best distance follows the memory's latency.
      {"matmul.stream_prefetch", {-1, 0, 128, 512}},
      // The register tiles' row edge in steps of two rows outside k (1, the rule's) or each
      // row under its condition inside k (0, as before stop 44).
      {"matmul.edge_steps", {0, 1}},
      // Lanes beyond the vector width are several vectors of partial results (or of
      // elements): independent chains, so the adds or exps of one do not wait on the other.
      {"reduction.lanes", {0, 1, 4, 8, 16, 32, 64}},
      {"reduction.parallel", {0, 1}},
      {"injective.lanes", {0, 1, 4, 8, 16, 32, 64}},
      {"injective.parallel", {0, 1}},
  };
  return space;
}

std::vector<std::pair<std::string, int>> KnobValues(const tir::CpuScheduleKnobs& k) {
  std::vector<std::pair<std::string, int>> values;
  for (absl::string_view pair : absl::StrSplit(k.ToString(), ' ', absl::SkipEmpty())) {
    std::vector<std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    int value = 0;
    KILN_CHECK(kv.size() == 2 && absl::SimpleAtoi(kv[1], &value)) << "knob text '" << pair << "'";
    values.emplace_back(kv[0], value);
  }
  return values;
}

tir::CpuScheduleKnobs RandomKnobs(std::mt19937& rng) {
  std::vector<std::pair<std::string, int>> values;
  for (const KnobRange& knob : SearchSpace()) {
    values.emplace_back(knob.name,
                        knob.values[std::uniform_int_distribution<size_t>(0, knob.values.size() - 1)(rng)]);
  }
  return FromValues(values);
}

tir::CpuScheduleKnobs Mutate(const tir::CpuScheduleKnobs& from, std::mt19937& rng) {
  std::vector<std::pair<std::string, int>> k = KnobValues(from), r = KnobValues(RandomKnobs(rng));
  int changes = std::uniform_int_distribution<int>(1, 2)(rng);
  for (int c = 0; c < changes; ++c) {
    size_t i = std::uniform_int_distribution<size_t>(0, k.size() - 1)(rng);
    k[i].second = r[i].second;
  }
  return FromValues(k);
}

std::vector<tir::CpuScheduleKnobs> OneKnobNeighbours(const tir::CpuScheduleKnobs& from) {
  const std::vector<std::pair<std::string, int>> base = KnobValues(from);
  std::vector<tir::CpuScheduleKnobs> neighbours;
  for (size_t i = 0; i < base.size(); ++i) {
    auto range = std::find_if(SearchSpace().begin(), SearchSpace().end(),
                              [&](const KnobRange& r) { return r.name == base[i].first; });
    if (range == SearchSpace().end()) continue;  // a knob the search does not move
    const std::vector<int>& values = range->values;
    const int current = base[i].second;
    std::vector<int> moves;
    if (values.size() <= kFewKnobValues) {
      for (int v : values) {
        if (v != current) moves.push_back(v);
      }
    } else {
      // The nearest value below and above the current one.
      auto above = std::upper_bound(values.begin(), values.end(), current);
      auto below = std::lower_bound(values.begin(), values.end(), current);
      if (below != values.begin()) moves.push_back(*std::prev(below));
      if (above != values.end()) moves.push_back(*above);
    }
    for (int v : moves) {
      std::vector<std::pair<std::string, int>> moved = base;
      moved[i].second = v;
      neighbours.push_back(FromValues(moved));
    }
  }
  return neighbours;
}

}  // namespace kiln::tune
