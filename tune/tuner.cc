// Tune: tasks, candidates, the cost model's ranking and the records.
#include "tune/tuner.h"

#include <chrono>
#include <cmath>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/structural_hash.h"
#include "tune/cost_model.h"
#include "tune/crossover.h"
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
  int trials = 0;
};

// The values each knob takes in the search (see cpu_knobs.h for their meaning).
tir::CpuScheduleKnobs RandomKnobs(std::mt19937& rng) {
  auto pick = [&](std::initializer_list<int> values) {
    std::vector<int> v(values);
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  tir::CpuScheduleKnobs k;
  // Row tiles up to 12: with 2 vectors of columns that is 24 accumulators, within
  // AVX-512's 32 registers (AVX2's 16 spill, which the measurement then shows).
  k.matmul.row_tile = pick({0, 1, 2, 3, 4, 6, 8, 12});
  k.matmul.col_vectors = pick({1, 2, 3, 4});
  k.matmul.pack = pick({-1, 0, 1});
  k.matmul.unroll_rows = pick({0, 1});
  k.matmul.parallel = pick({0, 1});
  k.matmul.few_rows = pick({0, 1});
  k.matmul.rows_outer = pick({0, 1});
  k.matmul.k_unroll = pick({1, 2, 4, 8});
  // Lanes beyond the vector width are several vectors of partial results (or of
  // elements): independent chains, so the adds or exps of one do not wait on the other.
  k.reduction.lanes = pick({0, 1, 4, 8, 16, 32, 64});
  k.reduction.parallel = pick({0, 1});
  k.injective.lanes = pick({0, 1, 4, 8, 16, 32, 64});
  k.injective.parallel = pick({0, 1});
  return k;
}

// `from` with one or two knobs taken from a random knob set.
tir::CpuScheduleKnobs Mutate(const tir::CpuScheduleKnobs& from, std::mt19937& rng) {
  tir::CpuScheduleKnobs k = from, r = RandomKnobs(rng);
  int changes = std::uniform_int_distribution<int>(1, 2)(rng);
  for (int c = 0; c < changes; ++c) {
    switch (std::uniform_int_distribution<int>(0, 11)(rng)) {
      case 0: k.matmul.row_tile = r.matmul.row_tile; break;
      case 1: k.matmul.col_vectors = r.matmul.col_vectors; break;
      case 2: k.matmul.pack = r.matmul.pack; break;
      case 3: k.matmul.unroll_rows = r.matmul.unroll_rows; break;
      case 4: k.matmul.parallel = r.matmul.parallel; break;
      case 5: k.matmul.few_rows = r.matmul.few_rows; break;
      case 6: k.reduction.lanes = r.reduction.lanes; break;
      case 7: k.reduction.parallel = r.reduction.parallel; break;
      case 8: k.injective.lanes = r.injective.lanes; break;
      case 9: k.matmul.rows_outer = r.matmul.rows_outer; break;
      case 10: k.matmul.k_unroll = r.matmul.k_unroll; break;
      default: k.injective.parallel = r.injective.parallel; break;
    }
  }
  return k;
}

// The cost model's view of a candidate: its knobs and the kernel's size (log2 of the
// symbolic size and of each of the first four parameters' element counts).
std::vector<float> Features(const Task& task, const tir::CpuScheduleKnobs& k) {
  std::vector<float> f = {
      static_cast<float>(k.matmul.row_tile), static_cast<float>(k.matmul.col_vectors),
      static_cast<float>(k.matmul.pack),     static_cast<float>(k.matmul.unroll_rows),
      static_cast<float>(k.matmul.parallel), static_cast<float>(k.matmul.few_rows),
      static_cast<float>(k.reduction.lanes), static_cast<float>(k.reduction.parallel),
      static_cast<float>(k.injective.lanes), static_cast<float>(k.injective.parallel),
      static_cast<float>(k.matmul.rows_outer), static_cast<float>(k.matmul.k_unroll)};
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

  // Phase 1: the search, round-robin over the tasks.
  int stale_rounds = 0;  // rounds in which no task had a new candidate
  while (!out_of(search_trials, search_budget)) {
    bool any = false;
    for (Task& task : tasks) {
      if (out_of(search_trials, search_budget)) break;
      const Workload& w = *task.workload;
      tir::CpuScheduleOptions schedule_options{.vector_lanes = w.target.Float32Lanes(), .num_threads = options.threads};
      // Candidates whose schedule is new for this task.
      std::vector<tir::CpuScheduleKnobs> candidates;
      std::vector<uint64_t> hashes;
      const int wanted = task.trials == 0 ? 1 : 24;
      for (int attempt = 0; attempt < 4 * wanted && static_cast<int>(candidates.size()) < wanted; ++attempt) {
        tir::CpuScheduleKnobs k = task.trials == 0       ? tir::CpuScheduleKnobs()
                                  : attempt % 2 == 0 && task.best_seconds > 0 ? Mutate(task.best, rng)
                                                                             : RandomKnobs(rng);
        schedule_options.knobs = k;
        absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForCpu(w.func, schedule_options);
        if (!scheduled.ok()) continue;
        uint64_t h = tir::StructuralHash(*scheduled);
        if (task.measured.count(h) || std::find(hashes.begin(), hashes.end(), h) != hashes.end()) continue;
        candidates.push_back(k);
        hashes.push_back(h);
      }
      // The winners of the same kernel at its other sizes come first: a dispatching kernel
      // is only as good as its variants at the sizes between, and a variant found at one
      // size is often the best at its neighbours too (the search there may not find it).
      bool seeded = false;
      if (task.trials > 0) {
        for (const Task& sibling : tasks) {
          if (sibling.workload != task.workload || &sibling == &task || sibling.best_ratio >= 1.0 / kMinSpeedup) continue;
          schedule_options.knobs = sibling.best;
          absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForCpu(w.func, schedule_options);
          if (!scheduled.ok() || task.measured.count(tir::StructuralHash(*scheduled))) continue;
          candidates = {sibling.best};
          hashes = {tir::StructuralHash(*scheduled)};
          seeded = true;
          break;
        }
      }
      if (candidates.empty()) continue;
      any = true;
      size_t chosen = std::uniform_int_distribution<size_t>(0, candidates.size() - 1)(rng);
      if (!seeded && model.trained() && std::uniform_int_distribution<int>(0, 3)(rng) != 0) {
        std::vector<std::vector<float>> rows;
        for (const auto& k : candidates) rows.push_back(Features(task, k));
        std::vector<float> predicted = model.Predict(rows);
        chosen = static_cast<size_t>(std::min_element(predicted.begin(), predicted.end()) - predicted.begin());
      }
      const tir::CpuScheduleKnobs& knobs = candidates[chosen];
      task.measured.insert(hashes[chosen]);
      const int64_t size = w.sizes[task.size_index];
      KILN_ASSIGN_OR_RETURN(MeasureResult result, measure(w, size, w.bindings[task.size_index], knobs));
      ++task.trials;
      if (result.ok) {
        double ratio = result.seconds / result.baseline_seconds;
        model.Add(Features(task, knobs), result.seconds);
        model.Fit();
        // A new best that replay would take over the default is measured once more, and
        // counts with the worse of its two ratios (as BestTable counts repeated records):
        // one lucky batch on a noisy machine must not replace the default.
        if (ratio < task.best_ratio && ratio < 1.0 / kMinSpeedup && !out_of(search_trials, search_budget)) {
          progress(w, size, absl::StrCat(Micros(result.seconds), ", ", Speedup(ratio), ": measuring again"), result);
          KILN_ASSIGN_OR_RETURN(MeasureResult again, measure(w, size, w.bindings[task.size_index], knobs));
          ratio = again.ok ? std::max(ratio, again.seconds / again.baseline_seconds) : 1e30;
          if (again.ok) result = again;
        }
        if (task.best_seconds < 0 || ratio < task.best_ratio) {
          task.best_seconds = result.seconds;
          task.best_ratio = ratio;
          task.best = knobs;
        }
      }
      progress(w, size, absl::StrCat("best ", Micros(task.best_seconds), " (", Speedup(task.best_ratio), ")"), result);
    }
    if (out_of(search_trials, search_budget)) break;
    stale_rounds = any ? 0 : stale_rounds + 1;
    if (stale_rounds >= 2) break;  // every task has run out of new schedules
  }

  // Phase 2: the dispatch thresholds (crossover.h). Each round measures, for every
  // symbolic workload, both neighbouring variants at the threshold between adjacent tuned
  // sizes whose bests differ; the probe becomes a tuned size, and the next round bisects
  // the interval whose ends still differ.
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
        KILN_ASSIGN_OR_RETURN(MeasureResult below, confirmed(c.below));
        if (out_of(options.trials, options.time_budget_s)) break;
        KILN_ASSIGN_OR_RETURN(MeasureResult above, confirmed(c.above));
        auto ratio = [](const MeasureResult& r) { return r.ok ? Speedup(r.seconds / r.baseline_seconds) : "failed"; };
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
