// Compiling a Relax module for a GPU target as `kiln compile --target cuda|vulkan` does, for
// the tests that check or run the result (the op harnesses, the example models).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/status_macros.h"

namespace kiln::op_cases {

// Errors that mean "not supported on that target yet" (documented gaps), as opposed to bugs;
// `generator` names the code generator in its messages ("CUDA", "SPIR-V").
inline bool IsUnsupportedOnGpu(const absl::Status& s, const std::string& generator) {
  const std::string m(s.message());
  return absl::StrContains(m, "not supported by the " + generator + " code generator yet") ||
         absl::StrContains(m, "needs device workspace") || absl::StrContains(m, "not inside a loop bound to GPU threads");
}

// The executable's bytes; `fuse` as kiln compile's --no-fuse leaves it.
inline absl::StatusOr<std::string> CompileForGpu(const std::string& text, const tir::Target& target, bool fuse = true) {
  KILN_ASSIGN_OR_RETURN(relax::ParsedModule parsed, relax::ParseModule(text));
  relax::PipelineOptions options;
  options.check_well_formed = true;
  options.fuse = fuse;
  options.libraries.openblas = false;
  options.libraries.quantized = false;
  options.target = target;
  KILN_ASSIGN_OR_RETURN(relax::IRModule lowered, relax::RunPipeline(parsed.module, options, &parsed.locations));
  // The host parts for a baseline CPU, as `kiln compile` does for a GPU target.
  KILN_ASSIGN_OR_RETURN(tir::Target host, codegen::ResolveCpuTarget(tir::Target::Cpu("x86-64")));
  KILN_ASSIGN_OR_RETURN(codegen::CpuTarget cpu, codegen::ToCpuTarget(host));
  return codegen::BuildExecutable(lowered, cpu);
}

}  // namespace kiln::op_cases

