#include "tir/transform/pipeline.h"

#include "support/status_macros.h"
#include "tir/transform/flatten_buffers.h"
#include "tir/transform/insert_division_checks.h"
#include "tir/transform/insert_index_checks.h"
#include "tir/transform/lower_blocks.h"
#include "tir/transform/lower_cooperative_copies.h"
#include "tir/transform/lower_cross_thread_reduction.h"
#include "tir/transform/lower_intrinsics.h"
#include "tir/transform/make_kernel_abi.h"
#include "tir/transform/narrow_gpu_indices.h"
#include "tir/transform/split_host_device.h"
#include "tir/transform/split_loops_at_guards.h"
#include "tir/transform/spread_block_grid.h"
#include "tir/transform/vectorize_loops.h"

namespace kiln::tir::transform {
namespace {

// Errors are returned as the pass wrote them: they name the argument, loop or buffer, and
// the emitter adds the kernel's name.
absl::Status InPass(const char*, const absl::Status& status) { return status; }

}  // namespace

std::vector<std::string> TirPassNames() {
  return {"lower_cross_thread_reduction", "lower_cooperative_copies", "lower_blocks",     "split_loops_at_guards", "insert_division_checks",
          "insert_index_checks",          "vectorize_loops",          "make_kernel_abi",  "flatten_buffers",
          "spread_block_grid",            "split_host_device",        "narrow_gpu_indices", "lower_intrinsics"};
}

absl::StatusOr<LoweredFunc> LowerPrimFunc(const PrimFunc& func, const Target& target, const LowerOptions& options) {
  auto after = [&](const char* pass, const PrimFunc& f) {
    if (options.after_pass) options.after_pass(pass, f);
  };
  KILN_ASSIGN_OR_RETURN(std::optional<Target> own, TargetOf(func));
  PrimFunc f = own ? func : WithTarget(func, target);
  absl::StatusOr<PrimFunc> combined = LowerCrossThreadReductions(f);
  if (!combined.ok()) return InPass("lower_cross_thread_reduction", combined.status());
  f = *combined;
  after("lower_cross_thread_reduction", f);
  absl::StatusOr<PrimFunc> cooperative = LowerCooperativeCopies(f);
  if (!cooperative.ok()) return InPass("lower_cooperative_copies", cooperative.status());
  f = *cooperative;
  after("lower_cooperative_copies", f);
  f = LowerBlocks(f);
  after("lower_blocks", f);
  f = SplitLoopsAtGuards(f);
  after("split_loops_at_guards", f);
  f = InsertDivisionChecks(f);
  after("insert_division_checks", f);
  f = InsertIndexChecks(f);
  after("insert_index_checks", f);
  f = VectorizeLoops(f);
  after("vectorize_loops", f);
  absl::StatusOr<PrimFunc> abi = MakeKernelAbi(f);
  if (!abi.ok()) return InPass("make_kernel_abi", abi.status());
  f = FlattenBuffers(*abi);
  after("make_kernel_abi", *abi);
  after("flatten_buffers", f);
  f = SpreadBlockGrid(f, own ? *own : target);  // a cpu function comes back as it was
  after("spread_block_grid", f);
  absl::StatusOr<SplitResult> split = SplitHostDevice(f);
  if (!split.ok()) return InPass("split_host_device", split.status());
  after("split_host_device", split->host);
  NarrowSplitIndices(&*split);  // nothing to do for a cpu function
  after("narrow_gpu_indices", split->host);
  LoweredFunc lowered;
  absl::StatusOr<PrimFunc> host = LowerIntrinsics(split->host);
  if (!host.ok()) return InPass("lower_intrinsics", host.status());
  lowered.host = *host;
  for (const PrimFunc& device : split->device_kernels) {
    absl::StatusOr<PrimFunc> d = LowerIntrinsics(device);
    if (!d.ok()) return InPass("lower_intrinsics", d.status());
    lowered.device_kernels.push_back(*d);
  }
  after("lower_intrinsics", lowered.host);
  return lowered;
}

}  // namespace kiln::tir::transform
