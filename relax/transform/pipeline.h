// The Relax compilation pipeline: THE list of graph passes a module goes through between
// the parser and VM code generation (codegen/build_executable.h), in order, by name.
//
//   PipelineOptions options;
//   options.dump_after = {"lower_call_tir"};
//   absl::StatusOr<IRModule> lowered = RunPipeline(parsed.module, options, &parsed.locations);
//
// Options:
//  - dump_after / dump_all print the module text (relax/text_printer.h) after the named /
//    every pass to `dump_to`, headed `// after pass <name>`. An unknown name in dump_after is
//    an error listing the valid ones (ValidatePassNames checks up front).
//  - time_passes prints each pass's wall time to `dump_to`.
//  - check_well_formed runs relax/well_formed.h after every pass (tests and debugging);
//    a failure names the pass that broke the module.
// Each pass is a function IRModule -> StatusOr<IRModule>; a failing pass's error is
// returned prefixed with `pass '<name>': `, except normalize, whose errors already point at
// the source (file:line:col) and are returned as they are.
#pragma once

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "relax/text_parser.h"
#include "relax/transform/dispatch_libraries.h"
#include "tir/schedule_rules/cpu_tuned.h"
#include "tir/target.h"

namespace kiln::relax {

struct PipelineOptions {
  std::set<std::string> dump_after;
  bool dump_all = false;
  bool time_passes = false;
  bool check_well_formed = false;
  std::FILE* dump_to = stderr;
  // What the PrimFuncs are compiled for (pass `bind_target` puts it on every PrimFunc that
  // names none; pass `schedule` takes the vector width and the planned thread count from
  // each function's target). The default is a CPU of 256-bit vectors (8 float32 lanes)
  // planning for 2 threads; `kiln compile` resolves the host's (codegen/cpu_target.h).
  tir::Target target = tir::Target::Cpu("host", 256, 2);
  // Which operator calls pass `dispatch_libraries` hands to vendor libraries (OpenBLAS for
  // large float32 matmuls, on by default); with every library off the pass changes nothing.
  LibraryOptions libraries;
  // Operator fusion (passes annotate_patterns, fuse_ops, fuse_tir): elementwise and broadcast
  // epilogues join their producer's kernel (matmul + bias + gelu as one kernel). Off: one
  // kernel per operator, as legalized (`kiln compile --no-fuse`; benchmarks compare both).
  // Off, the three passes stay in the list (same names for dump_after) and change nothing.
  bool fuse = true;
  // Memory planning (pass plan_memory, relax/transform/plan_memory.h): tensors whose
  // lifetimes do not overlap share storage. Off: every intermediate is its own allocation
  // (`kiln compile --no-plan-memory`).
  bool plan_memory = true;
  // Tuned schedules (`kiln compile --tuning-db`, docs/tuning.md): pass `schedule` replays
  // the table's knobs for the kernels it names; null or empty: the default rules only.
  std::shared_ptr<const tir::TuningTable> tuning;
  // Stop after this pass and return the module as it is then ("" runs every pass); the
  // tuner takes the kernels as pass `schedule` receives them ("bind_target").
  std::string stop_after;
};

// The pass names, in pipeline order.
std::vector<std::string> PipelinePassNames();

// OK, or InvalidArgument naming the first unknown name and listing the valid ones.
absl::Status ValidatePassNames(const std::set<std::string>& names);

// Runs every pass. `locations` (may be null) lets normalize point errors at the source.
absl::StatusOr<IRModule> RunPipeline(const IRModule& module, const PipelineOptions& options,
                                     const SourceMap* locations = nullptr);

}  // namespace kiln::relax
