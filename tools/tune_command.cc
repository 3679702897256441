// kiln tune: the auto-tuner (tune/, docs/tuning.md). The model's kernels as pass `schedule`
// receives them, each tuned at its representative sizes, every measurement appended to the
// records database that `kiln compile --tuning-db` replays.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "codegen/cpu_target.h"
#include "relax/transform/pipeline.h"
#include "tir/target.h"
#include "tools/commands.h"
#include "tools/model_source.h"
#include "tools/option_value.h"
#include "tools/usage_error.h"
#include "tune/cost_model.h"
#include "tune/tuner.h"

namespace kiln::tools {
namespace {

constexpr const char* kUsage =
    "usage: kiln tune MODEL --target cpu [--trials N] [--time-budget S] [--db FILE] [--threads T]\n"
    "\n"
    "Tunes the CPU schedule of every kernel of MODEL (.kir or .onnx, as 'kiln compile'\n"
    "takes them): each distinct kernel (a structural hash of the unscheduled function and\n"
    "the target) at representative values of its symbolic sizes ({1, 16, 256, 2048}\n"
    "or --sizes, clipped to their bounds). Candidate knob sets of the schedule rules (register tile,\n"
    "packing, unrolling, vector widths, parallel loops, few-rows versioning) are measured\n"
    "one by one in a child process, checked against the default schedule's results, and\n"
    "every measurement is appended to the records database. 'kiln compile --tuning-db FILE'\n"
    "then replays the best knobs per kernel and size (docs/tuning.md).\n"
    "\n"
    "  --target TARGET     the target, as for 'kiln compile' (default: cpu)\n"
    "  --mcpu NAME         the CPU to generate code for (default: host)\n"
    "  --threads T         the thread count the kernels are scheduled and measured for\n"
    "                      (sets the target's num-threads; compile with the same target; default 1,\n"
    "                      or the target's -num-threads, which --threads must then equal)\n"
    "  --trials N          measurements at most (default 200): three quarters for the search,\n"
    "                      the rest for the dispatch thresholds between sizes whose best\n"
    "                      knobs differ (fewer when none differ or no schedule is left)\n"
    "  --time-budget S     stop after S seconds (default 0: no limit)\n"
    "  --db FILE           the records database to append to (default: MODEL with .tuning.jsonl)\n"
    "  --timeout S         a measurement that runs longer is killed and recorded failed (default 30)\n"
    "  --libs openblas|none  as for 'kiln compile' (default openblas)\n"
    "  --no-fuse           as for 'kiln compile'\n"
    "  --seed N            the search's random seed (default 1)\n"
    "  --sizes N,N,...     the values symbolic sizes are tuned at, instead of 1,16,256,2048\n"
    "                      (e.g. the sequence lengths a deployment serves); each clipped to\n"
    "                      the size's bounds, the compiled kernels dispatch between them\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "kiln tune: %s\n", message.c_str());
  return 1;
}

int Usage(const std::string& message) { return UsageError("tune", message); }

}  // namespace

int TuneCommand(int argc, char** argv) {
  std::string path, target_text = "cpu", mcpu, libs = "openblas", db, fault;
  // trials_text empty: not given (a time budget alone then runs until it is spent).
  std::string trials_text, budget_text = "0", threads_text = "1", timeout_text = "30", seed_text = "1", sizes_text;
  bool sizes_given = false, mcpu_given = false, threads_given = false;
  relax::PipelineOptions pipeline;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag, std::string* out) { return OptionValue(argc, argv, &i, flag, out); };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::fputs(tune::CostModel::available()
                     ? "\nCost model: XGBoost (gradient-boosted trees on the measurements so far).\n"
                     : "\nCost model: none (built without libxgboost-dev): candidates are picked at random.\n",
                 stdout);
      return 0;
    } else if (value("--sizes", &sizes_text)) {
      sizes_given = true;
    } else if (value("--mcpu", &mcpu)) {
      mcpu_given = true;
    } else if (value("--threads", &threads_text)) {
      threads_given = true;
    } else if (value("--target", &target_text) ||
               value("--trials", &trials_text) || value("--time-budget", &budget_text) ||
               value("--timeout", &timeout_text) || value("--libs", &libs) || value("--seed", &seed_text) ||
               value("--inject-fault", &fault)) {  // --inject-fault crash|hang: tests only, the first trial
    } else if (value("--db", &db)) {
      // `--db "$DB"` with DB unset would otherwise append to MODEL.tuning.jsonl.
      if (db.empty()) return Usage("--db needs a file name, got ''");
    } else if (arg == "--no-fuse") {
      pipeline.fuse = false;
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage(UnknownOptionMessage(arg, kUsage));
    } else if (path.empty()) {
      path = arg;
    } else {
      return Usage("one model at a time ('" + path + "' and '" + arg + "')");
    }
  }
  if (path.empty()) return Usage("no model");
  // The target's -num-threads and -mcpu are the thread count and CPU, as for kiln compile;
  // --threads and --mcpu say the same, so both given must agree (a target's -num-threads=4
  // was silently replaced by --threads' default 1, and its records then matched no compile
  // for 4 threads).
  const std::string target_threads = TargetAttribute(target_text, "num-threads");
  if (!target_threads.empty()) {
    if (threads_given && threads_text != target_threads) {
      return Usage("--threads " + threads_text + " and --target's -num-threads=" + target_threads +
                   " disagree; give the thread count once");
    }
    threads_text = target_threads;
  }
  if (mcpu_given && mcpu.empty()) return Usage("--mcpu needs a CPU name, got ''");
  if (const std::string in_target = TargetAttribute(target_text, "mcpu");
      mcpu_given && !in_target.empty() && in_target != mcpu) {
    return Usage("--mcpu " + mcpu + " and --target's -mcpu=" + in_target + " disagree; give the CPU once");
  }
  tune::TuneOptions options;
  int threads = 0;
  uint32_t seed = 0;
  if (!trials_text.empty() && (!absl::SimpleAtoi(trials_text, &options.trials) || options.trials < 1)) {
    return Usage("--trials needs a positive integer");
  }
  if (!absl::SimpleAtod(budget_text, &options.time_budget_s) || !(options.time_budget_s >= 0)) {  // NaN too
    return Usage("--time-budget needs a non-negative number of seconds");
  }
  if (!absl::SimpleAtoi(threads_text, &threads) || threads < 1) return Usage("--threads needs a positive integer");
  if (!absl::SimpleAtod(timeout_text, &options.timeout_s) || !(options.timeout_s > 0)) {  // NaN too: it never times out
    return Usage("--timeout needs a positive number of seconds");
  }
  if (!absl::SimpleAtoi(seed_text, &seed)) return Usage("--seed needs a non-negative integer");
  options.seed = seed;
  std::vector<int64_t> sizes;
  if (sizes_given) {
    // Every piece must be a size: "1,,2" or "" is a mistake, not a shorter list.
    for (absl::string_view part : absl::StrSplit(sizes_text, ',')) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(part, &n) || n < 1 || (!sizes.empty() && n <= sizes.back())) {
        return Usage("--sizes needs increasing positive integers separated by commas, got '" + sizes_text + "'");
      }
      sizes.push_back(n);
    }
  }
  if (fault == "crash") {
    options.fault_first_trial = tune::InjectedFault::kCrash;
  } else if (fault == "hang") {
    options.fault_first_trial = tune::InjectedFault::kHang;
  } else if (!fault.empty()) {
    return Usage("--inject-fault takes crash or hang");
  }
  // A time budget without a trial count runs until the budget is spent.
  if (options.time_budget_s > 0 && trials_text.empty()) options.trials = tune::kUnlimitedTrials;
  if (libs != "openblas" && libs != "none") return Usage("unknown --libs '" + libs + "' (openblas or none)");
  pipeline.libraries.openblas = libs == "openblas";
  pipeline.libraries.quantized = libs == "openblas";
  absl::StatusOr<tir::Target> target = tir::Target::Parse(target_text);
  if (!target.ok()) return Usage(std::string(target.status().message()));
  if (!target->is_cpu()) return Usage("kiln tune tunes CPU targets only");
  if (!mcpu.empty()) target->mcpu = mcpu;
  target->num_threads = threads;
  absl::StatusOr<tir::Target> resolved = codegen::ResolveCpuTarget(*target);
  if (!resolved.ok()) return Fail(std::string(resolved.status().message()));
  absl::StatusOr<codegen::CpuTarget> cpu = codegen::ToCpuTarget(*resolved);
  if (!cpu.ok()) return Fail(std::string(cpu.status().message()));
  options.cpu = *cpu;
  options.threads = threads;
  options.db_path = db.empty() ? path + ".tuning.jsonl" : db;
  pipeline.target = *resolved;
  pipeline.stop_after = "bind_target";

  frontends::onnx::ImportOptions onnx_options;
  absl::StatusOr<relax::ParsedModule> parsed = LoadModelSource(path, onnx_options);
  if (!parsed.ok()) return Fail(std::string(parsed.status().message()));
  absl::StatusOr<relax::IRModule> module = relax::RunPipeline(parsed->module, pipeline, &parsed->locations);
  if (!module.ok()) return Fail(std::string(module.status().message()));
  absl::StatusOr<std::vector<tune::Workload>> workloads = tune::ExtractWorkloads(*module, *resolved, sizes);
  if (!workloads.ok()) return Fail(std::string(workloads.status().message()));
  size_t tasks = 0;
  for (const tune::Workload& w : *workloads) tasks += w.sizes.size();
  std::fprintf(stderr, "[tune] %zu kernels, %zu (kernel, size) tasks, target '%s', cost model: %s, records: %s\n",
               workloads->size(), tasks, resolved->ToString().c_str(),
               tune::CostModel::available() ? "XGBoost" : "none (random search)", options.db_path.c_str());
  absl::StatusOr<tune::TuneSummary> summary = tune::Tune(*workloads, options);
  if (!summary.ok()) return Fail(std::string(summary.status().message()));
  std::printf("%d trials (%d failed); records in %s\n", summary->trials, summary->failed, options.db_path.c_str());
  return 0;
}

}  // namespace kiln::tools
