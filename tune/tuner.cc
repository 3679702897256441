// Tune: tasks, candidates, the cost model's ranking and the records.
#include "tune/tuner.h"

#include <chrono>
#include <cmath>
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
};

// The most measurements that confirm a would-be best (until two were quiet).
constexpr int kConfirmTries = 3;

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

// The values each knob takes in the search (see cpu_knobs.h for their meaning).
tir::CpuScheduleKnobs RandomKnobs(std::mt19937& rng) {
  auto pick = [&](std::initializer_list<int> values) {
    std::vector<int> v(values);
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  tir::CpuScheduleKnobs k;
  // Row tiles up to 12: with 2 vectors of columns that is 24 accumulators, within
  // AVX-512's 32 registers (AVX2's 16 spill, which the measurement then shows). Wide tiles
  // (few rows) take row_tile as their height, so 16 and 32 are wide-tile heights.
  k.matmul.row_tile = pick({0, 1, 2, 3, 4, 6, 8, 12, 16, 32});
  k.matmul.col_vectors = pick({1, 2, 3, 4});
  k.matmul.pack = pick({-1, 0, 1});
  k.matmul.unroll_rows = pick({0, 1});
  k.matmul.parallel = pick({0, 1});
  k.matmul.few_rows = pick({0, 1});
  k.matmul.rows_outer = pick({0, 1});
  k.matmul.k_unroll = pick({1, 2, 4, 8});
  // The wide tiles' own shape (0: the rule's): k blocks of the weight, rows per register
  // step, sub-tiles per tile, packing each k block; and the row count from which register
  // tiles take over (the MLP's up projection, 64 -> 256 columns, is wide below 64 rows).
  k.matmul.wide_k_block = pick({0, 8, 32, 64});
  k.matmul.wide_step_rows = pick({0, 1, 2, 4, 8});
  k.matmul.wide_subtiles = pick({0, 1, 2, 4, 8});
  k.matmul.wide_pack = pick({0, 1});
  k.matmul.many_rows = pick({0, 8, 16, 32, 128, 256});
  // Lanes beyond the vector width are several vectors of partial results (or of
  // elements): independent chains, so the adds or exps of one do not wait on the other.
  k.reduction.lanes = pick({0, 1, 4, 8, 16, 32, 64});
  k.reduction.parallel = pick({0, 1});
  k.injective.lanes = pick({0, 1, 4, 8, 16, 32, 64});
  k.injective.parallel = pick({0, 1});
  return k;
}

// The knobs' values in their text form's fixed order (cpu_knobs.h): every knob, so a knob
// added there is mutated and seen by the cost model without a change here.
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

// `from` with one or two knobs taken from a random knob set.
tir::CpuScheduleKnobs Mutate(const tir::CpuScheduleKnobs& from, std::mt19937& rng) {
  std::vector<std::pair<std::string, int>> k = KnobValues(from), r = KnobValues(RandomKnobs(rng));
  int changes = std::uniform_int_distribution<int>(1, 2)(rng);
  for (int c = 0; c < changes; ++c) {
    size_t i = std::uniform_int_distribution<size_t>(0, k.size() - 1)(rng);
    k[i].second = r[i].second;
  }
  std::vector<std::string> text;
  for (const auto& [name, value] : k) text.push_back(absl::StrCat(name, "=", value));
  absl::StatusOr<tir::CpuScheduleKnobs> mutated = tir::CpuScheduleKnobs::Parse(absl::StrJoin(text, " "));
  KILN_CHECK(mutated.ok()) << mutated.status();  // values of two valid sets
  return *mutated;
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

  // One trial of `task`: its default knobs first, then the candidate the cost model ranks
  // best. False when the task had no schedule left to measure.
  auto trial = [&](Task& task) -> absl::StatusOr<bool> {
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
    if (candidates.empty()) return false;
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
      // The least of the default's times so far: the load only ever adds to a time.
      task.default_seconds = task.default_seconds < 0 ? result.baseline_seconds
                                                      : std::min(task.default_seconds, result.baseline_seconds);
      // Credited as replay credits it (TrustedRatio): a baseline slowed by the load while
      // the candidate ran normally is no win.
      auto record_of = [](const MeasureResult& r) {
        TuningRecord record;
        record.seconds = r.seconds;
        record.baseline_seconds = r.baseline_seconds;
        return record;
      };
      auto trusted = [&](const MeasureResult& r) { return TrustedRatio(record_of(r), task.default_seconds); };
      auto quiet = [&](const MeasureResult& r) { return MeasuredQuietly(record_of(r), task.default_seconds); };
      double ratio = trusted(result);
      model.Add(Features(task, knobs), result.seconds);
      model.Fit();
      // A new best that replay would take over the default is measured again, and counts
      // with its worst ratio over the quiet measurements (as BestTable counts repeated
      // records): one lucky batch on a noisy machine must not replace the default, and
      // one measurement in a contended time slice (both kernels several times slower,
      // their ratio the load's) must not hide a real win. Measured again until two
      // measurements were quiet, at most kConfirmTries times.
      if (ratio < task.best_ratio && ratio < 1.0 / kMinSpeedup && !out_of(search_trials, search_budget)) {
        progress(w, size, absl::StrCat(Micros(result.seconds), ", ", Speedup(ratio), ": measuring again"), result);
        double worst = ratio, worst_quiet = quiet(result) ? ratio : 0;
        int quiet_count = quiet(result) ? 1 : 0;
        for (int tries = 0; tries < kConfirmTries && quiet_count < 2 && worst < 1e30; ++tries) {
          if (tries > 0 && out_of(search_trials, search_budget)) break;
          KILN_ASSIGN_OR_RETURN(MeasureResult again, measure(w, size, w.bindings[task.size_index], knobs));
          if (!again.ok) {
            worst = worst_quiet = 1e30;
            break;
          }
          task.default_seconds = std::min(task.default_seconds, again.baseline_seconds);
          worst = std::max(worst, trusted(again));
          if (quiet(again)) {
            worst_quiet = std::max(worst_quiet, trusted(again));
            ++quiet_count;
          }
          result = again;
        }
        ratio = quiet_count > 0 ? worst_quiet : worst;
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
