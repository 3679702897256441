// Measuring one candidate schedule of one kernel, in a child process.
//
// MeasureInChild forks; the child schedules the kernel with the candidate's knobs and with
// the default ones, compiles both with LLVM into one shared object (as `kiln compile`
// does), runs both on the same random inputs at the requested sizes, checks that every
// buffer agrees (1e-3 relative, a schedule may reassociate float sums) and times the
// candidate and the default schedule in turns (each the least over several batches), so
// the ratio of the two is measured under the same load. The answer comes back over a pipe.
// A child that crashes, fails, disagrees with the default schedule or outlives the time
// limit (then it is killed) gives a failed result with the reason; the parent goes on.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "codegen/cpu_target.h"
#include "tir/schedule_rules/cpu_schedule.h"
#include "tir/stmt.h"

namespace kiln::tune {

// Test-only: what the child does instead of measuring (`kiln tune --inject-fault`).
enum class InjectedFault { kNone, kCrash, kHang };

struct MeasureRequest {
  tir::PrimFunc func;                  // unscheduled
  tir::CpuScheduleOptions options;     // vector width, thread count and the candidate's knobs
  codegen::CpuTarget cpu;              // what LLVM compiles for
  std::map<std::string, int64_t> sizes;  // each symbolic size of the kernel, by name
  double timeout_seconds = 60;
  InjectedFault fault = InjectedFault::kNone;
};

struct MeasureResult {
  bool ok = false;
  double seconds = 0;           // per call, when ok
  double baseline_seconds = 0;  // the default schedule's, measured in turn with it
  std::string error;   // why not, when !ok
};

MeasureResult MeasureInChild(const MeasureRequest& request);

// The value of every symbolic size in `func` at `sizes`; an error names a size not given.
// (Exposed for the tuner, which sizes each kernel before measuring it.)
absl::StatusOr<std::map<std::string, int64_t>> CheckSizes(const tir::PrimFunc& func,
                                                          const std::map<std::string, int64_t>& sizes);

}  // namespace kiln::tune
