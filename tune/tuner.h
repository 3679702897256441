// The search: for each workload and each of its representative sizes (a "task"), knob sets
// are proposed, ranked by the cost model and measured in a child process (measure.h); every
// measurement is appended to the records database as it arrives.
//
// Per task, the first trial is the default knobs (the untuned schedule, the baseline the
// records are compared with). The next are the default's one-knob neighbours
// (search_space.h OneKnobNeighbours), those whose scheduled function differs from every one
// measured for the task, the one the cost model predicts fastest first (the first in the
// knob order while it is untrained). After them each trial draws candidates — mutations of
// the task's best knobs so far (one or two knobs changed) and fresh random knob sets —
// drops those whose scheduled function is one already measured for the task (many knobs
// do not touch a given kernel), and measures the one the cost model predicts fastest (a
// random one while the model is untrained, and one trial in four at random to keep
// exploring). A kernel's winner at another size is measured before either. After every
// task's default is measured, each trial goes to the task with the most weight per trial
// so far, its weight being its kernel's share of the model's time at its size (default
// time x calls per run) plus a floor: the kernels that dominate the model's time at a
// size get most of that size's trials. The search stops when (1 - kCrossoverShare) of
// the trial count or of the time budget is spent. A would-be best that beats the default
// by the replay margin is measured again until two measurements were quiet (three for a
// win of 2-5 %; at most four more; tuning_db.h MeasuredQuietly, MeasuredKnobs) and counts
// with the worst quiet ratio. The rest places
// the dispatch thresholds of symbolic kernels by measuring neighbouring variants between
// their tuned sizes (crossover.h).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "codegen/cpu_target.h"
#include "tune/measure.h"
#include "tune/workloads.h"

namespace kiln::tune {

// The share of the trials and of the time budget kept for placing dispatch thresholds
// (crossover.h) after the search, and the most bisection rounds it takes.
inline constexpr double kCrossoverShare = 0.25;
inline constexpr int kCrossoverRounds = 5;

// A trial count that only the time budget ends (the progress line then shows no total).
inline constexpr int kUnlimitedTrials = 1 << 30;

struct TuneOptions {
  codegen::CpuTarget cpu;
  int trials = 200;             // in all, over every task
  double time_budget_s = 0;     // 0: no limit
  int threads = 1;              // the thread count kernels are scheduled and measured for
  double timeout_s = 30;        // per measurement
  std::string db_path;          // records are appended here
  uint32_t seed = 1;
  InjectedFault fault_first_trial = InjectedFault::kNone;  // test-only
  std::FILE* progress = stderr;  // the progress line; nullptr for none
};

struct TuneSummary {
  int trials = 0;
  int failed = 0;
  bool used_cost_model = false;
};

absl::StatusOr<TuneSummary> Tune(const std::vector<Workload>& workloads, const TuneOptions& options);

}  // namespace kiln::tune
