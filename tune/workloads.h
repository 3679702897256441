// The kernels a model's compilation schedules, as the tuner sees them: each distinct
// (unscheduled PrimFunc, target) once, keyed by tir::WorkloadKey, with the sizes it is
// tuned at.
//
// Representative sizes: a kernel with symbolic sizes is tuned at n in {1, 16, 256, 2048}
// clipped to each size's bounds (`where n <= 1024` in the model: {1, 16, 256, 1024}), a
// factor of 16 apart (8 from the last), so the variants cover one token, small batches,
// prompts and long contexts, each within a factor of 4 of a dispatch threshold (the
// geometric means 4, 64, 724). A kernel with several symbolic sizes sets them all to the
// same value (each clipped to its bounds) and dispatches on the first.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "tir/stmt.h"
#include "tir/target.h"

namespace kiln::tune {

struct Workload {
  std::string key;           // tir::WorkloadKey
  std::string name;          // the first PrimFunc of the module with this key
  tir::PrimFunc func;        // unscheduled
  tir::Target target;
  std::string dispatch_var;  // "" for a kernel with static sizes
  // How many times one run of the model calls the kernel (every call site of every
  // PrimFunc with this key; at least 1): the tuner weighs the kernel's share of the model's
  // time with it (q, k and v of attention are one kernel called three times).
  int calls = 1;
  // The representative values of dispatch_var ({0} for a static kernel) and, for each,
  // every symbolic size's value.
  std::vector<int64_t> sizes;
  std::vector<std::map<std::string, int64_t>> bindings;
};

// The default sizes clipped to [lower, upper]; `chosen` (sorted, positive) replaces the
// default {1, 16, 256, 2048}: `kiln tune --sizes` tunes at the sizes a deployment runs.
std::vector<int64_t> RepresentativeSizes(int64_t lower, int64_t upper, const std::vector<int64_t>& chosen = {});

// Every symbolic size of `func` set to n, each clipped to its bounds (unbounded: [1, 2048]).
std::map<std::string, int64_t> SizesAt(const tir::PrimFunc& func, int64_t n);

// The CPU kernels of a module as pass `schedule` receives it (RunPipeline with
// stop_after = "bind_target"), in module order, each workload once.
// `sizes`: as RepresentativeSizes' `chosen` (empty: the default sizes).
absl::StatusOr<std::vector<Workload>> ExtractWorkloads(const relax::IRModule& module, const tir::Target& target,
                                                       const std::vector<int64_t>& sizes = {});

}  // namespace kiln::tune
