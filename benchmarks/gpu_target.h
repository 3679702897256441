// `--target vulkan|cuda` for the benchmarks: a Relax module compiled for the GPU target the
// way `kiln compile --target ...` does it (generated kernels only: no library dispatch),
// loaded in a VM on that device, and called with a wait for the device, so a timed call
// covers the device's work.
//
// On a machine without the device, OpenBenchDevice returns the one line to print; the
// benchmarks print it and exit 0 for that target (a run on a CPU-only machine is not an error).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/status_macros.h"
#include "tir/target.h"
#include "vm/device.h"
#include "vm/executable.h"
#include "vm/tensor.h"
#include "vm/virtual_machine.h"

namespace kiln::bench {

// "vulkan" or "cuda" -> the default target of that kind; anything else: nullopt.
inline std::optional<tir::Target> GpuTargetNamed(const std::string& name) {
  if (name == "vulkan") return tir::Target::Vulkan();
  if (name == "cuda") return tir::Target::Cuda();
  return std::nullopt;
}

// The target's first device, or why there is none here (one line).
inline absl::StatusOr<vm::Device*> OpenBenchDevice(const tir::Target& target) {
  const std::string name = target.kind == tir::TargetKind::kVulkan ? "vulkan:0" : "cuda:0";
  absl::StatusOr<vm::Device*> device = vm::GetDevice(name);
  if (!device.ok()) {
    return absl::UnavailableError(absl::StrCat("no ", name, " device here (", device.status().message(), ")"));
  }
  return device;
}

// `text` through the whole pipeline for `target` (host parts for this CPU), in a VM on `device`.
inline absl::StatusOr<std::unique_ptr<vm::VirtualMachine>> CompileForDevice(const std::string& text,
                                                                           const tir::Target& target, bool fuse,
                                                                           vm::Device* device) {
  KILN_ASSIGN_OR_RETURN(relax::ParsedModule parsed, relax::ParseModule(text));
  relax::PipelineOptions options;
  options.fuse = fuse;
  options.libraries.openblas = false;
  options.libraries.quantized = false;
  options.libraries.cublas = false;  // generated kernels only: matmul_bench --cublas compares against cuBLAS
  options.target = target;
  KILN_ASSIGN_OR_RETURN(relax::IRModule lowered, relax::RunPipeline(parsed.module, options, &parsed.locations));
  KILN_ASSIGN_OR_RETURN(std::string bytes, codegen::BuildExecutable(lowered, codegen::CpuTarget::Host()));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const vm::Executable> exe,
                        vm::Executable::Load(bytes, builtins::DefaultRegistry()));
  return vm::VirtualMachine::Create(exe, device);
}

// Host tensors copied to `device`, in order.
inline absl::StatusOr<std::vector<vm::Value>> ToDevice(const std::vector<vm::Tensor>& host, vm::Device* device) {
  std::vector<vm::Value> out;
  for (const vm::Tensor& t : host) {
    KILN_ASSIGN_OR_RETURN(vm::Tensor d, t.CopyTo(device));
    out.emplace_back(std::move(d));
  }
  return out;
}

// One call of `function`, then a wait for the device: what a timed call measures.
inline absl::StatusOr<vm::Value> CallAndWait(vm::VirtualMachine& machine, vm::Device* device,
                                             const std::vector<vm::Value>& args, const std::string& function = "main") {
  KILN_ASSIGN_OR_RETURN(vm::Value out, machine.Invoke(function, args));
  KILN_RETURN_IF_ERROR(device->Synchronize());
  return out;
}

}  // namespace kiln::bench
