// tune_bench: is a tuned dynamic-shape kernel at least as fast as the best single variant
// at every size? (issue 15's acceptance line, docs/tuning.md).
//
// For each kernel of a model that a tuning database tunes at several sizes, the
// dispatching kernel `kiln compile --tuning-db` builds (tir::ScheduleForCpuTuned) and each
// single variant it dispatches between (plus the default schedule) are compiled into one
// shared object, checked against each other and timed in turns (tune/kernel_timer.h) at
// sizes at and between the tuned ones. Printed per kernel and size: each version's time
// and dynamic / best single (1.00 or below: dispatch chose as well as the best fixed
// choice; above: it dispatched to a slower variant there). Ratios are within one run.
//
//   build/benchmarks/tune_bench --tuning-db=tb.jsonl [--model=FILE.kir] [--threads=T]
//       [--libs=none|openblas] [--no-fuse] [--sizes=1,7,16,64,256,300,1024,2048] [--all]
//
// --all also lists kernels whose records chose one knob set for every size (no dispatch).
// The model, --threads, --libs and fusion must be those the database was tuned with
// (workload keys include the target and thread count), as for transformer_bench.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"
#include "tir/schedule_rules/cpu_tuned.h"
#include "tune/kernel_timer.h"
#include "tune/tuning_db.h"
#include "tune/workloads.h"

#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR "."
#endif

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "tune_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(absl::StatusOr<T> value, const std::string& what) {
  if (!value.ok()) Die(what + ": " + std::string(value.status().message()));
  return *std::move(value);
}

constexpr const char* kUsage =
    "usage: tune_bench --tuning-db=FILE [--model=FILE.kir] [--threads=T] [--libs=none|openblas]\n"
    "                  [--no-fuse] [--sizes=N,N,...] [--all]\n";

}  // namespace

int main(int argc, char** argv) {
  std::string model = std::string(KILN_SOURCE_DIR) + "/examples/models/transformer_block.kir";
  std::string db, libs = "none", sizes_text = "1,7,16,64,256,300,1024,2048";
  int threads = 1;
  bool fuse = true, all = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> const char* {
      size_t n = std::string(flag).size();
      return arg.compare(0, n + 1, std::string(flag) + "=") == 0 ? argv[i] + n + 1 : nullptr;
    };
    if (const char* v = value("--tuning-db")) {
      db = v;
    } else if (const char* v = value("--model")) {
      model = v;
    } else if (const char* v = value("--threads")) {
      if (!absl::SimpleAtoi(v, &threads) || threads < 1) Die("--threads needs a positive integer");
    } else if (const char* v = value("--libs")) {
      libs = v;
      if (libs != "none" && libs != "openblas") Die("--libs takes none or openblas");
    } else if (const char* v = value("--sizes")) {
      sizes_text = v;
    } else if (arg == "--no-fuse") {
      fuse = false;
    } else if (arg == "--all") {
      all = true;
    } else {
      std::fputs(kUsage, stderr);
      return arg == "--help" ? 0 : 2;
    }
  }
  if (db.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::vector<int64_t> sizes;
  for (absl::string_view s : absl::StrSplit(sizes_text, ',')) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(s, &n) || n < 1) Die("--sizes takes positive integers separated by commas");
    sizes.push_back(n);
  }

  const kiln::tir::TuningTable table = kiln::tune::BestTable(OrDie(kiln::tune::ReadTuningDb(db), "tuning db"));
  const std::string text = OrDie(kiln::support::ReadFile(model), "read model");
  kiln::relax::ParsedModule parsed = OrDie(kiln::relax::ParseModule(text, model), "parse");
  kiln::relax::PipelineOptions options;
  options.fuse = fuse;
  options.libraries.openblas = libs == "openblas";
  options.target = kiln::codegen::HostTarget(threads);
  options.stop_after = "bind_target";
  kiln::relax::IRModule module = OrDie(kiln::relax::RunPipeline(parsed.module, options, &parsed.locations), "pipeline");
  std::vector<kiln::tune::Workload> workloads = OrDie(kiln::tune::ExtractWorkloads(module, options.target), "workloads");
  const kiln::codegen::CpuTarget cpu = kiln::codegen::CpuTarget::Host();

  std::printf("tune_bench: %s, %d thread(s), records %s; dynamic / best single per size (<= 1: dispatch as good)\n",
              model.c_str(), threads, db.c_str());
  // Many short batches: on a loaded machine the least of many short batches is the one
  // that ran undisturbed (a long batch rarely is).
  const kiln::tune::TimingOptions timing{.min_batch_seconds = 5e-4, .min_rounds = 15, .max_rounds = 400, .round_seconds = 1.0};
  double worst = 0, log_sum = 0;
  int tuned = 0, measured = 0, slower = 0;
  for (const kiln::tune::Workload& w : workloads) {
    auto it = table.find(w.key);
    if (it == table.end() || w.dispatch_var.empty()) continue;
    const kiln::tir::TunedWorkload& t = it->second;
    // The single variants: the default schedule and each distinct best knob set.
    std::vector<kiln::tir::CpuScheduleKnobs> singles = {kiln::tir::CpuScheduleKnobs()};
    std::vector<std::string> labels = {"default"};
    for (const auto& [size, knobs] : t.best_by_size) {
      if (std::find(singles.begin(), singles.end(), knobs) != singles.end()) continue;
      singles.push_back(knobs);
      labels.push_back(absl::StrCat("best@", size));
    }
    // One best knob set at every size (the default's or another): nothing dispatches.
    const bool dispatches = std::any_of(t.best_by_size.begin(), t.best_by_size.end(),
                                        [&](const auto& b) { return !(b.second == t.best_by_size.front().second); });
    if (!dispatches && !all) continue;
    ++tuned;
    kiln::tir::CpuScheduleOptions schedule{.vector_lanes = w.target.Float32Lanes(), .num_threads = threads};
    std::vector<kiln::tir::PrimFunc> versions = {
        OrDie(kiln::tir::ScheduleForCpuTuned(w.func, schedule, t), "schedule dynamic")};
    for (const kiln::tir::CpuScheduleKnobs& k : singles) {
      schedule.knobs = k;
      versions.push_back(OrDie(kiln::tir::ScheduleForCpu(w.func, schedule), "schedule variant"));
    }
    auto timer = OrDie(kiln::tune::KernelTimer::Build(w.func, versions, cpu, threads), "build");
    std::printf("\n%s (%s; tuned at", w.name.c_str(), w.key.substr(0, 16).c_str());
    for (const auto& [size, knobs] : t.best_by_size) std::printf(" %lld", static_cast<long long>(size));
    std::printf(")\n");
    for (size_t i = 1; i < singles.size(); ++i) std::printf("  %-10s %s\n", labels[i].c_str(), singles[i].ToString().c_str());
    std::printf("  %6s %10s", w.dispatch_var.c_str(), "dynamic");
    for (const std::string& l : labels) std::printf(" %10s", l.c_str());
    std::printf(" %9s\n", "dyn/best");
    for (int64_t n : sizes) {
      std::map<std::string, int64_t> at = kiln::tune::SizesAt(w.func, n);
      if (at.at(w.dispatch_var) != n) continue;  // outside the size's bounds
      if (absl::Status s = timer->Check(at); !s.ok()) Die(absl::StrCat(w.name, " n=", n, ": ", s.message()));
      std::vector<double> seconds = OrDie(timer->Time(at, timing), "time");
      double best_single = *std::min_element(seconds.begin() + 1, seconds.end());
      double ratio = seconds[0] / best_single;
      worst = std::max(worst, ratio);
      log_sum += std::log(ratio);
      ++measured;
      slower += ratio > 1.05;
      std::printf("  %6lld", static_cast<long long>(n));
      for (double s : seconds) std::printf(" %9.2fu", s * 1e6);
      std::printf(" %9.3f\n", ratio);
    }
  }
  std::printf("\n%d kernel(s), %d (kernel, size) points: dynamic / best single geometric mean %.3f, worst %.3f, "
              "%d point(s) more than 5 %% slower\n",
              tuned, measured, measured ? std::exp(log_sum / measured) : 1.0, worst, slower);
  return 0;
}
