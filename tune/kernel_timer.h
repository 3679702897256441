// KernelTimer: several scheduled versions of one kernel, compiled with LLVM into one shared
// object, checked against each other and timed in turns at given sizes. The tuner's
// measuring child times a candidate against the default schedule with it (measure.h);
// benchmarks/tune_bench times a dispatching kernel against each of its single variants.
//
// Timing in turns: the versions run batch after batch in rotation (every other round in
// reverse order, so no version always follows the same one), each keeping the least
// per-call time over its batches, so a change of the machine's load falls on all of them
// alike and their ratios stay comparable on a shared machine (the absolute times do not).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/cpu_target.h"
#include "tir/stmt.h"
#include "vm/kernel_abi.h"
#include "vm/kernel_object.h"
#include "vm/standalone_call_context.h"
#include "vm/thread_pool.h"

namespace kiln::tune {

struct TimingOptions {
  double min_batch_seconds = 2e-3;  // calls per batch grow until one batch takes this long
  int min_rounds = 5;               // rounds of every version at least ...
  int max_rounds = 40;              // ... and at most, ...
  double round_seconds = 0.3;       // ... going on past min_rounds until this much time passed
};

class KernelTimer {
 public:
  // `scheduled` are schedules of `unscheduled` (the same parameters); `num_threads` the
  // pool their parallel loops run on.
  static absl::StatusOr<std::unique_ptr<KernelTimer>> Build(const tir::PrimFunc& unscheduled,
                                                            const std::vector<tir::PrimFunc>& scheduled,
                                                            const codegen::CpuTarget& cpu, int num_threads);

  // Runs every version once on the same random inputs at `sizes` (each symbolic size by
  // name) and checks that every output agrees with version 0's (1e-3 relative: schedules
  // may reassociate float sums); an error names the version, parameter and element.
  absl::Status Check(const std::map<std::string, int64_t>& sizes);

  // Each version's time per call at `sizes`, timed in turns.
  absl::StatusOr<std::vector<double>> Time(const std::map<std::string, int64_t>& sizes,
                                           const TimingOptions& options = {});

 private:
  KernelTimer() = default;
  tir::PrimFunc unscheduled_;
  std::shared_ptr<vm::KernelObject> object_;
  std::vector<KilnKernelFn> versions_;
  std::unique_ptr<vm::ThreadPool> pool_;
  std::unique_ptr<vm::StandaloneCallContext> context_;
};

}  // namespace kiln::tune
