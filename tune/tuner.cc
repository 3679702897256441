// Tune: tasks, candidates, the cost model's ranking and the records.
#include "tune/tuner.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "tir/structural_hash.h"
#include "tune/cost_model.h"
#include "tune/crossover.h"
#include "tune/search_space.h"
#include "tune/tuning_db.h"

namespace kiln::tune {

namespace {

using Clock = std::chrono::steady_clock;

struct Task {
  const Workload* workload = nullptr;
  size_t size_index = 0;
  std::set<uint64_t> measured;  // structural hashes of the scheduled functions tried
  tir::CpuScheduleKnobs best;
  double best_seconds = -1;
  double best_ratio = 1;  // best_seconds / the default's, measured side by side
  double default_seconds = -1;  // the default knobs' least time per call over the trials so far
  int trials = 0;
  int empty_draws = 0;     // draws in a row that found no new schedule
  bool exhausted = false;  // no new schedule left (as far as random draws find)
  // The default's one-knob neighbours (OneKnobNeighbours) not yet measured or found to
  // schedule like one measured; listed at the task's second trial.
  std::vector<tir::CpuScheduleKnobs> neighbours;
  bool neighbours_listed = false;
};

// The most measurements that confirm a would-be best (until two were quiet, or three for
// a win below kMinSpeedup: tuning_db.h MeasuredKnobs::ReplayRatio).
constexpr int kConfirmTries = 4;

// Draws in a row without a new schedule after which a task is given up.
constexpr int kEmptyDrawsToGiveUp = 3;

// The least weight of a task (its share of its size's time is added to it): a kernel with
// a small share still gets some trials (its share may be wrong: it was measured alone).
constexpr double kMinTaskWeight = 0.05;

// Each task's weight in the search: its kernel's share of the model's time at the task's
// size (the default knobs' time per call x calls per run, over the sum of the same for
// every kernel tuned at that size) plus kMinTaskWeight. Every size has about the same
// weight in all, as the sizes are each a workload the model is run at. A task whose
// default was not measured (it failed) gets the least weight.
std::vector<double> TaskWeights(const std::vector<Task>& tasks) {
  auto time_of = [](const Task& t) {
    return t.default_seconds > 0 ? t.default_seconds * static_cast<double>(t.workload->calls) : 0.0;
  };
  std::map<int64_t, double> size_total;
  for (const Task& t : tasks) size_total[t.workload->sizes[t.size_index]] += time_of(t);
  std::vector<double> weights;
  for (const Task& t : tasks) {
    double total = size_total[t.workload->sizes[t.size_index]];
    weights.push_back(kMinTaskWeight + (total > 0 ? time_of(t) / total : 0.0));
  }
  return weights;
}

// The cost model's view of a candidate: its knobs and the kernel's size (log2 of the
// symbolic size and of each of the first four parameters' element counts).
std::vector<float> Features(const Task& task, const tir::CpuScheduleKnobs& k) {
  std::vector<float> f;
  for (const auto& [name, value] : KnobValues(k)) f.push_back(static_cast<float>(value));
  const Workload& w = *task.workload;
  f.push_back(std::log2(1.0f + static_cast<float>(w.sizes[task.size_index])));
  const auto& binding = w.bindings[task.size_index];
  for (size_t p = 0; p < 4; ++p) {
    double elements = 0;
    if (p < w.func->params.size() && w.func->params[p].is_buffer()) {
      elements = 1;
      for (const tir::PrimExpr& d : w.func->params[p].buffer->shape) {
        if (std::optional<int64_t> c = d.as_int()) {
          elements *= static_cast<double>(*c);
        } else if (const auto* v = d.as<tir::VarNode>(); v && binding.count(v->name)) {
          elements *= static_cast<double>(binding.at(v->name));
        }
      }
    }
    f.push_back(static_cast<float>(std::log2(1.0 + elements)));
  }
  return f;
}

std::string Speedup(double ratio) { return absl::StrCat(std::llround(100 / ratio) / 100.0, "x the default"); }

std::string Micros(double seconds) { return seconds > 0 ? absl::StrCat(std::llround(seconds * 1e7) / 10.0, " us") : "-"; }

}  // namespace

absl::StatusOr<TuneSummary> Tune(const std::vector<Workload>& workloads, const TuneOptions& options) {
  // Records are appended to the database: a file there must already be one (kiln tune m.kir
  // --db m.kx, or --db m.kir, appended JSON lines to the executable or the model).
  if (std::error_code error; !options.db_path.empty() && std::filesystem::exists(options.db_path, error) &&
                             !std::filesystem::is_directory(options.db_path, error)) {
    if (absl::StatusOr<std::vector<TuningRecord>> existing = ReadTuningDb(options.db_path); !existing.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(existing.status().message(),
                                                     "; the records database is appended to, and this file is not one "
                                                     "(nothing was written to it)"));
    }
  }
  std::vector<Task> tasks;
  for (const Workload& w : workloads) {
    for (size_t i = 0; i < w.sizes.size(); ++i) {
      Task task;
      task.workload = &w;
      task.size_index = i;
      tasks.push_back(std::move(task));
    }
  }
  TuneSummary summary;
  if (tasks.empty()) return summary;
  std::mt19937 rng(options.seed);
  CostModel model;
  summary.used_cost_model = CostModel::available();
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  // The search gets the first (1 - kCrossoverShare) of the trials and of the time; the
  // crossover phase the rest (and whatever the search leaves unused).
  const bool limited_trials = options.trials != kUnlimitedTrials;
  const int search_trials =
      limited_trials ? std::max(1, static_cast<int>(std::lround(options.trials * (1 - kCrossoverShare)))) : options.trials;
  const double search_budget = options.time_budget_s * (1 - kCrossoverShare);
  auto out_of = [&](int trials, double budget) {
    return summary.trials >= trials || (options.time_budget_s > 0 && elapsed() > budget);
  };
  std::vector<TuningRecord> run_records;  // this run's successful records (the crossover phase reads them)

  // Measures `knobs` for workload `w` at `size` (`binding`: every symbolic size), appends
  // the record, prints the progress line (`what`: the task and its best so far).
  auto measure = [&](const Workload& w, int64_t size, const std::map<std::string, int64_t>& binding,
                     const tir::CpuScheduleKnobs& knobs) -> absl::StatusOr<MeasureResult> {
    MeasureRequest request;
    request.func = w.func;
    request.options = tir::CpuScheduleOptions{.vector_lanes = w.target.Float32Lanes(), .num_threads = options.threads};
    request.options.knobs = knobs;
    request.cpu = options.cpu;
    request.sizes = binding;
    request.timeout_seconds = options.timeout_s;
    if (summary.trials == 0) request.fault = options.fault_first_trial;
    MeasureResult result = MeasureInChild(request);
    ++summary.trials;
    TuningRecord record;
    record.workload = w.key;
    record.target = w.target.ToString();
    record.knobs = knobs.ToString();
    record.dispatch_var = w.dispatch_var;
    record.size = size;
    if (result.ok) {
      record.seconds = result.seconds;
      record.baseline_seconds = result.baseline_seconds;
      run_records.push_back(record);
    } else {
      ++summary.failed;
      record.error = result.error;
    }
    if (!options.db_path.empty()) KILN_RETURN_IF_ERROR(AppendTuningRecords(options.db_path, {record}));
    return result;
  };
  auto progress = [&](const Workload& w, int64_t size, const std::string& what, const MeasureResult& result) {
    if (!options.progress) return;
    std::string left = options.time_budget_s > 0
                           ? absl::StrCat(std::max<int64_t>(0, std::llround(options.time_budget_s - elapsed())), " s left")
                           : absl::StrCat(std::llround(elapsed()), " s");
    std::string at = w.dispatch_var.empty() ? "" : absl::StrCat(" ", w.dispatch_var, "=", size);
    std::string total = limited_trials ? absl::StrCat("/", options.trials) : "";
    std::fprintf(options.progress, "[tune] trial %d%s (%d failed) | %s%s: %s %s| %s\n", summary.trials, total.c_str(),
                 summary.failed, w.name.c_str(), at.c_str(), what.c_str(),
                 result.ok ? "" : absl::StrCat("| failed: ", result.error.substr(0, 80), " ").c_str(), left.c_str());
    std::fflush(options.progress);
  };

  // One trial of `task`: its default knobs first, then the default's one-knob neighbours
  // (the cost model's pick among those left, or the first in the knob order while it has
  // no data), then the candidate the cost model ranks best among mutations and random
  // sets. False when the task had no schedule left to measure.
  auto trial = [&](Task& task) -> absl::StatusOr<bool> {
    const Workload& w = *task.workload;
    tir::CpuScheduleOptions schedule_options{.vector_lanes = w.target.Float32Lanes(), .num_threads = options.threads};
    // Candidates whose schedule is new for this task.
    std::vector<tir::CpuScheduleKnobs> candidates;
    std::vector<uint64_t> hashes;
    auto add_if_new = [&](const tir::CpuScheduleKnobs& k) {
      schedule_options.knobs = k;
      absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForCpu(w.func, schedule_options);
      if (!scheduled.ok()) return;
      uint64_t h = tir::StructuralHash(*scheduled);
      if (task.measured.count(h) || std::find(hashes.begin(), hashes.end(), h) != hashes.end()) return;
      candidates.push_back(k);
      hashes.push_back(h);
    };
    // A one-knob change of the default is the likeliest win and the cheapest to confirm
    // (the scores kernel at n = 300 wins 0.935x with col_vectors=1 alone, and random knob
    // sets with 3-6 trials per task never drew it). Many knobs do not touch a given kernel:
    // their neighbours schedule like the default and are dropped here.
    if (task.trials > 0 && !task.neighbours_listed) {
      task.neighbours = OneKnobNeighbours(tir::CpuScheduleKnobs());
      task.neighbours_listed = true;
    }
    bool neighbours = false;
    if (task.trials == 0) {
      add_if_new(tir::CpuScheduleKnobs());
    } else if (!task.neighbours.empty()) {
      for (const tir::CpuScheduleKnobs& k : task.neighbours) add_if_new(k);
      task.neighbours = candidates;  // the rest of them after this trial (less the one measured)
      neighbours = !candidates.empty();
    }
    if (task.trials > 0 && !neighbours) {
      constexpr int kWanted = 24;
      for (int attempt = 0; attempt < 4 * kWanted && static_cast<int>(candidates.size()) < kWanted; ++attempt) {
        add_if_new(attempt % 2 == 0 && task.best_seconds > 0 ? Mutate(task.best, rng) : RandomKnobs(rng));
      }
    }
    // The winners of the same kernel at its other sizes come first: a dispatching kernel
    // is only as good as its variants at the sizes between, and a variant found at one
    // size is often the best at its neighbours too (the search there may not find it).
    bool seeded = false;
    if (task.trials > 0) {
      for (const Task& sibling : tasks) {
        if (sibling.workload != task.workload || &sibling == &task || sibling.best_ratio >= 1.0 / kConfirmedMinSpeedup) continue;
        schedule_options.knobs = sibling.best;
        absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForCpu(w.func, schedule_options);
        if (!scheduled.ok() || task.measured.count(tir::StructuralHash(*scheduled))) continue;
        candidates = {sibling.best};
        hashes = {tir::StructuralHash(*scheduled)};
        seeded = true;
        break;
      }
    }
    if (candidates.empty()) return false;
    size_t chosen = 0;
    if (!seeded && !neighbours) chosen = std::uniform_int_distribution<size_t>(0, candidates.size() - 1)(rng);
    if (!seeded && model.trained() && (neighbours || std::uniform_int_distribution<int>(0, 3)(rng) != 0)) {
      std::vector<std::vector<float>> rows;
      for (const auto& k : candidates) rows.push_back(Features(task, k));
      std::vector<float> predicted = model.Predict(rows);
      chosen = static_cast<size_t>(std::min_element(predicted.begin(), predicted.end()) - predicted.begin());
    }
    const tir::CpuScheduleKnobs knobs = candidates[chosen];
    task.measured.insert(hashes[chosen]);
    if (neighbours && !seeded) task.neighbours.erase(task.neighbours.begin() + static_cast<std::ptrdiff_t>(chosen));
    const int64_t size = w.sizes[task.size_index];
    KILN_ASSIGN_OR_RETURN(MeasureResult result, measure(w, size, w.bindings[task.size_index], knobs));
    ++task.trials;
    if (result.ok) {
      // The least of the default's times so far: the load only ever adds to a time.
      task.default_seconds = task.default_seconds < 0 ? result.baseline_seconds
                                                      : std::min(task.default_seconds, result.baseline_seconds);
      // Credited as replay credits it (MeasuredKnobs, TrustedRatio): a baseline slowed by
      // the load while the candidate ran normally is no win.
      auto record_of = [](const MeasureResult& r) {
        TuningRecord record;
        record.seconds = r.seconds;
        record.baseline_seconds = r.baseline_seconds;
        return record;
      };
      MeasuredKnobs m;
      m.Add(record_of(result), task.default_seconds);
      double ratio = m.Ratio();
      // The least it could be credited with: a quiet one's side-by-side ratio may count
      // once confirmed (MeasuredKnobs::ReplayRatio).
      const double hoped = m.quiet > 0 ? m.worst_quiet_side_by_side : ratio;
      model.Add(Features(task, knobs), result.seconds);
      model.Fit();
      // A new best that replay would take over the default is measured again, and counts
      // as BestTable counts repeated records (MeasuredKnobs): one lucky batch on a noisy
      // machine must not replace the default, and one measurement in a contended time
      // slice (both kernels several times slower, their ratio the load's) must not hide a
      // real win. Measured again until replay takes it (two quiet wins by kMinSpeedup, or
      // three by kConfirmedMinSpeedup: a 2-5 % win at n = 1024 is real only if it holds
      // every time) or a quiet measurement rules it out, at most kConfirmTries times.
      if (hoped < task.best_ratio && hoped < 1.0 / kConfirmedMinSpeedup && !out_of(search_trials, search_budget)) {
        progress(w, size, absl::StrCat(Micros(result.seconds), ", ", Speedup(hoped), ": measuring again"), result);
        auto settled = [&] {
          return m.quiet >= kConfirmedQuietMeasurements || (m.quiet >= 2 && m.worst_quiet_trusted <= 1.0 / kMinSpeedup) ||
                 (m.quiet > 0 && m.worst_quiet_side_by_side > 1.0 / kConfirmedMinSpeedup);
        };
        bool failed = false;
        for (int tries = 0; tries < kConfirmTries && !settled(); ++tries) {
          if (tries > 0 && out_of(search_trials, search_budget)) break;
          KILN_ASSIGN_OR_RETURN(MeasureResult again, measure(w, size, w.bindings[task.size_index], knobs));
          if (!again.ok) {
            failed = true;
            break;
          }
          task.default_seconds = std::min(task.default_seconds, again.baseline_seconds);
          m.Add(record_of(again), task.default_seconds);
          result = again;
        }
        // Not a win replay takes: the task's best only as what it measured, so a later
        // candidate that replay would take is still measured again.
        ratio = failed ? 1e30 : m.ReplayRatio().value_or(std::max(m.Ratio(), 1.0 / kConfirmedMinSpeedup));
      }
      if (task.best_seconds < 0 || ratio < task.best_ratio) {
        task.best_seconds = result.seconds;
        task.best_ratio = ratio;
        task.best = knobs;
      }
    }
    progress(w, size, absl::StrCat("best ", Micros(task.best_seconds), " (", Speedup(task.best_ratio), ")"), result);
    return true;
  };

  // Phase 1: the search. Every task's default knobs first (the baseline times), then the
  // trials go where the model's time is: to the task whose weight per trial so far is the
  // largest (TaskWeights), so a kernel with a third of the time at its size gets about a
  // third of that size's trials, and the layer norms do not take as many as the matmuls.
  for (Task& task : tasks) {
    if (out_of(search_trials, search_budget)) break;
    KILN_ASSIGN_OR_RETURN(bool measured, trial(task));
    (void)measured;
  }
  while (!out_of(search_trials, search_budget)) {
    std::vector<double> weights = TaskWeights(tasks);
    Task* next = nullptr;
    double next_priority = 0;
    for (size_t t = 0; t < tasks.size(); ++t) {
      if (tasks[t].exhausted) continue;
      double priority = weights[t] / std::max(1, tasks[t].trials);
      if (next == nullptr || priority > next_priority) {
        next = &tasks[t];
        next_priority = priority;
      }
    }
    if (next == nullptr) break;  // every task has run out of new schedules
    KILN_ASSIGN_OR_RETURN(bool measured, trial(*next));
    // Candidates are drawn at random: a kernel with few distinct schedules (a layer norm has
    // two knobs) is out of them only after several empty draws in a row.
    next->empty_draws = measured ? 0 : next->empty_draws + 1;
    next->exhausted = next->empty_draws >= kEmptyDrawsToGiveUp;
  }

  // Phase 2: the dispatch thresholds (crossover.h). Each round measures, for every
  // symbolic workload, both neighbouring variants at the threshold between adjacent tuned
  // sizes whose bests differ, and a variant that spans two tuned sizes at the most aligned
  // size between them; the probe becomes a tuned size, and the next round bisects the
  // interval whose ends still differ.
  for (int round = 0; round < kCrossoverRounds; ++round) {
    tir::TuningTable table = BestTable(run_records);
    bool any = false;
    for (const Workload& w : workloads) {
      auto it = table.find(w.key);
      if (it == table.end()) continue;
      for (const Crossover& c : CrossoversToProbe(it->second)) {
        if (out_of(options.trials, options.time_budget_s)) break;
        any = true;
        std::map<std::string, int64_t> binding = SizesAt(w.func, c.probe);
        // A probe that would put a variant in place of the default at this size is measured
        // once more, as a new best is in the search (the records then count its worse
        // ratio): a single lucky batch at a probe size otherwise moves a threshold, and the
        // variant then runs where it loses (a scores kernel's variant measured 0.38x once
        // at n = 1579 on a loaded machine and ran 1.29x the default at 1024).
        auto confirmed = [&](const tir::CpuScheduleKnobs& knobs) -> absl::StatusOr<MeasureResult> {
          KILN_ASSIGN_OR_RETURN(MeasureResult first, measure(w, c.probe, binding, knobs));
          if (!first.ok || first.seconds / first.baseline_seconds >= 1.0 / kMinSpeedup ||
              out_of(options.trials, options.time_budget_s)) {
            return first;
          }
          KILN_ASSIGN_OR_RETURN(MeasureResult again, measure(w, c.probe, binding, knobs));
          return again.ok && again.seconds / again.baseline_seconds > first.seconds / first.baseline_seconds ? again
                                                                                                          : first;
        };
        auto ratio = [](const MeasureResult& r) { return r.ok ? Speedup(r.seconds / r.baseline_seconds) : "failed"; };
        KILN_ASSIGN_OR_RETURN(MeasureResult below, confirmed(c.below));
        if (c.below == c.above) {  // a span of one variant, checked at its most aligned size
          progress(w, c.probe,
                   absl::StrCat("aligned size between ", c.lower, " and ", c.upper, ": their best ", ratio(below)),
                   below);
          continue;
        }
        if (out_of(options.trials, options.time_budget_s)) break;
        KILN_ASSIGN_OR_RETURN(MeasureResult above, confirmed(c.above));
        progress(w, c.probe,
                 absl::StrCat("crossover between ", c.lower, " and ", c.upper, ": the best of ", c.lower, " ",
                              ratio(below), ", of ", c.upper, " ", ratio(above)),
                 above.ok ? below : above);
      }
    }
    if (!any) break;
  }
  return summary;
}

}  // namespace kiln::tune
