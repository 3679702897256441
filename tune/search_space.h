// The knob values the tuner searches (tuner.h) and the ways it draws candidates from them:
// random knob sets, mutations of a task's best (one or two knobs changed), and the one-knob
// neighbours of a knob set (each knob moved one step either way along its values, or to
// each of its values when it has few), which every task measures first after the default.
#pragma once

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tir/schedule_rules/cpu_knobs.h"

namespace kiln::tune {

// One knob (its name in the text form, cpu_knobs.h) and the values the search gives it, in
// increasing order.
struct KnobRange {
  std::string name;
  std::vector<int> values;
};

// Every searched knob, in the text form's order.
const std::vector<KnobRange>& SearchSpace();

// A knob with at most this many values is moved to each of them as a neighbour; one with
// more only one step either way (row tiles 0 -> 1, not 0 -> 32).
inline constexpr size_t kFewKnobValues = 4;

// The knobs' values in their text form's fixed order (cpu_knobs.h): every knob, so a knob
// added there is mutated and seen by the cost model without a change here.
std::vector<std::pair<std::string, int>> KnobValues(const tir::CpuScheduleKnobs& k);

// A knob set with each knob drawn from its values (SearchSpace).
tir::CpuScheduleKnobs RandomKnobs(std::mt19937& rng);

// `from` with one or two knobs taken from a random knob set.
tir::CpuScheduleKnobs Mutate(const tir::CpuScheduleKnobs& from, std::mt19937& rng);

// The knob sets that differ from `from` in exactly one knob, moved to its neighbouring
// values in SearchSpace (kFewKnobValues), in the text form's knob order and each knob's
// values in increasing order. A value of `from` outside the knob's values has the nearest
// value below and above it as neighbours.
std::vector<tir::CpuScheduleKnobs> OneKnobNeighbours(const tir::CpuScheduleKnobs& from);

}  // namespace kiln::tune
