// Compiling op-harness cases for a GPU target (the cuda and vulkan harnesses): the whole
// pipeline as `kiln compile --target cuda|vulkan` runs it, host parts for a baseline CPU, and
// each case compiled once per process and target.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/status_macros.h"
#include "tests/codegen/op_cases.h"
#include "tir/target.h"
#include "vm/executable.h"

namespace kiln::op_cases {

// Errors that mean "not supported on that target yet" (documented gaps), as opposed to bugs;
// `generator` names the code generator in its messages ("CUDA", "SPIR-V").
inline bool IsUnsupportedOnGpu(const absl::Status& s, const std::string& generator) {
  const std::string m(s.message());
  return absl::StrContains(m, "not supported by the " + generator + " code generator yet") ||
         absl::StrContains(m, "not inside a loop bound to GPU threads") ||
         absl::StrContains(m, "host code cannot read device memory");
}

// The executable's bytes; `fuse` as kiln compile's --no-fuse leaves it; `cublas` off (the
// harnesses test generated kernels) unless asked for.
inline absl::StatusOr<std::string> CompileForGpu(const std::string& text, const tir::Target& target, bool fuse = true,
                                                 bool cublas = false) {
  KILN_ASSIGN_OR_RETURN(relax::ParsedModule parsed, relax::ParseModule(text));
  relax::PipelineOptions options;
  options.check_well_formed = true;
  options.fuse = fuse;
  options.libraries.openblas = false;
  options.libraries.quantized = false;
  options.libraries.cublas = cublas;
  options.target = target;
  KILN_ASSIGN_OR_RETURN(relax::IRModule lowered, relax::RunPipeline(parsed.module, options, &parsed.locations));
  KILN_ASSIGN_OR_RETURN(tir::Target host, codegen::ResolveCpuTarget(tir::Target::Cpu("x86-64")));
  KILN_ASSIGN_OR_RETURN(codegen::CpuTarget cpu, codegen::ToCpuTarget(host));
  return codegen::BuildExecutable(lowered, cpu);
}

// The same for the host CPU (tests that run a kernel on the CPU and on a GPU alike), the
// quantized matmuls generated or, with `quantized_library`, the library kernels.
inline absl::StatusOr<std::shared_ptr<const vm::Executable>> CompileForHostCpu(const std::string& text,
                                                                               bool quantized_library = false) {
  KILN_ASSIGN_OR_RETURN(relax::ParsedModule parsed, relax::ParseModule(text));
  relax::PipelineOptions options;
  options.check_well_formed = true;
  options.libraries.openblas = false;
  options.libraries.quantized = quantized_library;
  KILN_ASSIGN_OR_RETURN(tir::Target host, codegen::ResolveCpuTarget(tir::Target::Cpu()));
  options.target = host;
  KILN_ASSIGN_OR_RETURN(relax::IRModule lowered, relax::RunPipeline(parsed.module, options, &parsed.locations));
  KILN_ASSIGN_OR_RETURN(codegen::CpuTarget cpu, codegen::ToCpuTarget(host));
  KILN_ASSIGN_OR_RETURN(std::string bytes, codegen::BuildExecutable(lowered, cpu));
  return vm::Executable::Load(bytes, builtins::DefaultRegistry());
}

struct GpuCompiled {
  absl::Status status;  // ok, or why the case does not compile
  std::string bytes;
  std::shared_ptr<const vm::Executable> exe;
};

inline const GpuCompiled& CompiledForGpu(const Case& c, const tir::Target& target) {
  static auto* cache = new std::map<std::pair<std::string, std::string>, GpuCompiled>();
  const auto key = std::make_pair(target.ToString(), c.name);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  GpuCompiled out;
  absl::StatusOr<std::string> bytes = CompileForGpu(ModuleText(c), target);
  if (!bytes.ok()) {
    out.status = bytes.status();
  } else {
    out.bytes = *bytes;
    absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
    if (exe.ok()) {
      out.exe = *exe;
    } else {
      out.status = exe.status();
    }
  }
  return (*cache)[key] = std::move(out);
}

}  // namespace kiln::op_cases
