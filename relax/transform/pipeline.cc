#include "relax/transform/pipeline.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "relax/block_builder.h"
#include "relax/text_printer.h"
#include "relax/transform/annotate_patterns.h"
#include "relax/transform/bind_target.h"
#include "relax/transform/dead_code_elimination.h"
#include "relax/transform/deduplicate_prim_funcs.h"
#include "relax/transform/dispatch_libraries.h"
#include "relax/transform/fold_constants.h"
#include "relax/transform/fuse_attention.h"
#include "relax/transform/fuse_ops.h"
#include "relax/transform/fuse_tir.h"
#include "relax/transform/insert_shape_checks.h"
#include "relax/transform/legalize_ops.h"
#include "relax/transform/lower_call_tir.h"
#include "relax/transform/plan_memory.h"
#include "relax/transform/schedule_prim_funcs.h"
#include "relax/well_formed.h"
#include "support/status_macros.h"

namespace kiln::relax {
namespace {

struct Pass {
  std::string name;
  std::function<absl::StatusOr<IRModule>(const IRModule&, const SourceMap*)> run;
};

// THE pipeline. Passes that do not exist yet go where the comments say; only passes that
// exist are listed.
std::vector<Pass> Passes(const PipelineOptions& options) {
  const tir::Target target = options.target;
  const LibraryOptions libraries = options.libraries;
  const bool plan_memory = options.plan_memory;
  // With fusion off the fusion passes keep their place (so pass names, --dump-after and
  // --time-passes are the same either way) and return the module unchanged.
  const bool fuse = options.fuse;
  auto if_fusing = [fuse](absl::StatusOr<IRModule> (*pass)(const IRModule&)) {
    return [fuse, pass](const IRModule& m, const SourceMap*) -> absl::StatusOr<IRModule> {
      if (!fuse) return m;
      return pass(m);
    };
  };
  return {
      {"normalize", [](const IRModule& m, const SourceMap* loc) { return NormalizeModule(m, loc); }},
      // Right after normalize, while every operator call is still there to re-infer: what
      // inference assumed about symbolic dims is checked before the first kernel runs.
      {"insert_shape_checks", [](const IRModule& m, const SourceMap*) { return InsertShapeChecks(m); }},
      {"fold_constants", [](const IRModule& m, const SourceMap*) { return FoldConstants(m); }},
      // Before legalize, so that what a library does is never lowered to a generated kernel.
      {"dispatch_libraries",
       [libraries, target](const IRModule& m, const SourceMap*) { return DispatchLibraries(m, libraries, target); }},
      // Attention written as operators (matmul, scale, softmax, matmul) into one CPU kernel
      // over row blocks, while the operators are still there to match; after
      // dispatch_libraries, so that matmuls sent to a library stay there.
      {"fuse_attention",
       [fuse, target](const IRModule& m, const SourceMap*) -> absl::StatusOr<IRModule> {
         if (!fuse) return m;
         return FuseAttention(m, target);
       }},
      {"legalize", [](const IRModule& m, const SourceMap*) { return LegalizeOps(m); }},
      // Operator fusion: chains of kernels (matmul + bias + gelu) into one PrimFunc each.
      // fuse_tir also drops the kernels only the fused chains called.
      {"annotate_patterns", if_fusing(&AnnotatePatterns)},
      // On CPUs a transposed matmul operand joins the matmul (its rule packs it transposed).
      {"fuse_ops",
       [fuse, target](const IRModule& m, const SourceMap*) -> absl::StatusOr<IRModule> {
         if (!fuse) return m;
         return FuseOps(m, FuseOpsOptions{/*transposed_operands=*/target.kind == tir::TargetKind::kCpu});
       }},
      {"fuse_tir", if_fusing(&FuseTir)},
      {"dead_code_elimination", [](const IRModule& m, const SourceMap*) { return DeadCodeElimination(m); }},
      // Before scheduling, so that each distinct kernel is scheduled and compiled once (the
      // layers of a model make identical fused kernels).
      {"deduplicate_prim_funcs", [](const IRModule& m, const SourceMap*) { return DeduplicatePrimFuncs(m); }},
      // Every PrimFunc names its target; the passes and code generators after read it there.
      {"bind_target", [target](const IRModule& m, const SourceMap*) { return BindTarget(m, target); }},
      {"schedule",
       [target, tuning = options.tuning](const IRModule& m, const SourceMap*) {
         return SchedulePrimFuncs(m, target, tuning.get());
       }},
      {"lower_call_tir", [](const IRModule& m, const SourceMap*) { return LowerCallTir(m); }},
      // Storage shared between tensors whose lifetimes do not overlap (alloc_tensor ->
      // alloc_storage + storage_tensor); a no-op with PipelineOptions::plan_memory off.
      {"plan_memory",
       [plan_memory](const IRModule& m, const SourceMap*) -> absl::StatusOr<IRModule> {
         if (!plan_memory) return m;
         return PlanMemory(m);
       }},
      // Releasing registers after their last use is done by VM codegen
      // (codegen/vm_codegen.h), which knows the registers.
  };
}

}  // namespace

std::vector<std::string> PipelinePassNames() {
  std::vector<std::string> names;
  for (const Pass& p : Passes(PipelineOptions())) names.push_back(p.name);
  return names;
}

absl::Status ValidatePassNames(const std::set<std::string>& names) {
  std::vector<std::string> valid = PipelinePassNames();
  for (const std::string& name : names) {
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("a pass name is empty; the passes are: ", absl::StrJoin(valid, ", ")));
    }
    if (std::find(valid.begin(), valid.end(), name) == valid.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown pass '", name, "'; the passes are: ", absl::StrJoin(valid, ", ")));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<IRModule> RunPipeline(const IRModule& module, const PipelineOptions& options,
                                     const SourceMap* locations) {
  KILN_RETURN_IF_ERROR(ValidatePassNames(options.dump_after));
  if (!options.stop_after.empty()) KILN_RETURN_IF_ERROR(ValidatePassNames({options.stop_after}));
  IRModule current = module;
  for (const Pass& pass : Passes(options)) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<IRModule> next = pass.run(current, locations);
    auto end = std::chrono::steady_clock::now();
    if (!next.ok()) {
      if (pass.name == "normalize") return next.status();
      return absl::Status(next.status().code(), absl::StrCat("pass '", pass.name, "': ", next.status().message()));
    }
    current = *std::move(next);
    if (options.time_passes) {
      double ms = std::chrono::duration<double, std::milli>(end - start).count();
      std::fprintf(options.dump_to, "pass %-22s %9.3f ms\n", pass.name.c_str(), ms);
    }
    if (options.check_well_formed) {
      if (absl::Status wf = CheckWellFormed(current); !wf.ok()) {
        return absl::InternalError(
            absl::StrCat("the module is not well formed after pass '", pass.name, "':\n", wf.message()));
      }
    }
    if (options.dump_all || options.dump_after.count(pass.name) > 0) {
      std::fprintf(options.dump_to, "// after pass %s\n%s", pass.name.c_str(), PrintModule(current).c_str());
      std::fflush(options.dump_to);
    }
    if (pass.name == options.stop_after) break;
  }
  return current;
}

}  // namespace kiln::relax
