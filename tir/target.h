// Target: what a PrimFunc is compiled for, as plain data (no LLVM, no driver).
//
// A target is a kind (cpu, cuda, vulkan) and the attributes the passes and emitters need:
//  - cpu: `mcpu` (an LLVM x86 CPU name such as "znver3", or "host" until the code generator
//    resolves it), `features` (explicit "+avx512f" / "-avx512f" changes to what that CPU
//    implies), `vector_bits` (the widest SIMD register, 128 / 256 / 512; 0 = not yet known)
//    and `num_threads` (how many threads the schedule plans parallel loops for; 1 makes
//    none; kernels still split work by the runtime's pool size at run time);
//  - cuda / vulkan: `arch` (e.g. "sm_90"; empty = not given), `max_threads_per_block`,
//    `max_shared_memory_per_block` (bytes) and `warp_size` (the warp or subgroup size).
//
// The text form is the kind, then `-name=value` attributes in any order:
//     cpu -mcpu=znver3 -mattr=+avx512f,-avx512vl -vector-bits=512 -num-threads=4
//     cuda -arch=sm_90 -max-threads-per-block=1024 -max-shared-memory-per-block=49152 -warp-size=32
//     vulkan -max-threads-per-block=256 -warp-size=32
// Parse reads it (an unknown kind or attribute, an attribute of another kind, a repeated
// or malformed value is an InvalidArgument error naming the field); ToString prints every
// attribute in a fixed order, so Parse(ToString(t)) == t and equal targets print equally.
// Attributes not given take the kind's defaults (Cpu(), Cuda(), Vulkan()).
//
// A PrimFunc carries its target as the string attribute "target" (kTargetAttr) in this
// text form; passes and emitters read it with TargetOf. Host detection needs LLVM and lives
// in codegen/cpu_target.h (HostTarget, ResolveCpuTarget).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/stmt.h"

namespace kiln::tir {

enum class TargetKind : uint8_t { kCpu, kCuda, kVulkan };
// "cpu", "cuda", "vulkan".
const char* TargetKindName(TargetKind kind);

struct Target {
  TargetKind kind = TargetKind::kCpu;

  // --- cpu
  std::string mcpu = "host";
  std::vector<std::string> features;  // each "+name" or "-name"
  int vector_bits = 0;                // 0: not yet known (the code generator fills it in)
  int num_threads = 2;

  // --- cuda, vulkan
  std::string arch;
  int max_threads_per_block = 0;
  int max_shared_memory_per_block = 0;
  int warp_size = 0;

  // The kinds with their defaults: a CPU of unknown width planning for 2 threads; CUDA
  // with 1024 threads and 48 KiB of shared memory per block and warps of 32; Vulkan with
  // 256 invocations and 16 KiB per workgroup and subgroups of 32 (what every conformant
  // device offers).
  static Target Cpu(std::string mcpu = "host", int vector_bits = 0, int num_threads = 2);
  static Target Cuda(std::string arch = "");
  static Target Vulkan();

  static absl::StatusOr<Target> Parse(std::string_view text);
  std::string ToString() const;

  // The most blocks (CUDA) or workgroups (Vulkan) a launch may have along grid axis 0, 1
  // or 2: CUDA's 2^31 - 1 along x and 65535 along y and z; Vulkan's guaranteed minimum of
  // maxComputeWorkGroupCount, 65535 on every axis (lavapipe offers exactly that). 0 on a CPU.
  int64_t MaxGridSize(int axis) const;

  bool is_cpu() const { return kind == TargetKind::kCpu; }
  bool is_gpu() const { return kind == TargetKind::kCuda || kind == TargetKind::kVulkan; }
  // float32 lanes of the widest SIMD register (vector_bits / 32), or `unknown` when the
  // width is not known.
  int Float32Lanes(int unknown = 8) const { return vector_bits > 0 ? vector_bits / 32 : unknown; }

  bool operator==(const Target& other) const = default;
};

// The PrimFunc attribute that holds a function's target (Target::ToString).
inline constexpr char kTargetAttr[] = "target";

// The function's target: nullopt when it has no "target" attribute, an error when the
// attribute does not parse (the message names the attribute).
absl::StatusOr<std::optional<Target>> TargetOf(const PrimFunc& func);
// The same function with its "target" attribute set to `target`.
PrimFunc WithTarget(const PrimFunc& func, const Target& target);

}  // namespace kiln::tir
