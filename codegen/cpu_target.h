// CpuTarget: which x86-64 CPU the generated kernels are compiled for.
//
// A target is an LLVM CPU name plus a feature string ("+avx2,-avx512f,..."). Host() is the
// machine the compiler runs on, with its exact features; Named("haswell") is a CPU family
// with the features that name implies, so kernels can be built for a machine other than
// the one compiling. An unknown CPU name is an error that says how to list the valid ones.
//
// tir::Target (tir/target.h) describes a target without LLVM; the functions at the end map
// a cpu tir::Target to and from this LLVM view: the host, resolving a name, and the width.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/target.h"

namespace llvm {
class TargetMachine;
}  // namespace llvm

namespace kiln::codegen {

struct CpuTarget {
  std::string mcpu;      // LLVM's CPU name, e.g. "skylake-avx512"
  std::string features;  // LLVM's comma-separated "+feature,-feature" list; may be empty

  // The CPU this process runs on.
  static CpuTarget Host();
  // "host" or an LLVM x86 CPU name ("haswell", "skylake-avx512", "znver3", "x86-64-v3").
  static absl::StatusOr<CpuTarget> Named(const std::string& mcpu);
  // The value of a `--mcpu=NAME` command-line flag, with or without the "--mcpu=" prefix.
  static absl::StatusOr<CpuTarget> FromFlag(const std::string& flag);

  std::string ToString() const;
};

// The target triple of generated code: the host's x86-64 Linux triple.
std::string CpuTargetTriple();

// An LLVM target machine for `target`: position-independent code (kernels live in a
// shared object), aggressive optimization. Errors if the triple or CPU is unsupported.
absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> CreateTargetMachine(const CpuTarget& target);

// The names among `candidates` (LLVM feature names, e.g. vm::KnownCpuFeatures()) that code
// generated for `target` may use: those its CPU name implies plus its explicit "+f" list,
// minus its "-f" list. Recorded in the executable so the loader can refuse a host lacking one.
absl::StatusOr<std::vector<std::string>> EnabledCpuFeatures(const CpuTarget& target,
                                                            const std::vector<std::string>& candidates);

// How many float32 lanes the target's widest SIMD registers hold: 16 with AVX-512, 8 with
// AVX/AVX2, otherwise 4 (SSE). The schedule rules split vectorized loops by this.
absl::StatusOr<int> Float32VectorLanes(const CpuTarget& target);

// The machine the compiler runs on as a tir::Target: its LLVM CPU name, `features` the
// differences between what the machine has and what that name implies (usually none),
// its SIMD width, and `num_threads` planned parallelism.
tir::Target HostTarget(int num_threads = 2);
// A cpu target made concrete: mcpu "host" (or "native") becomes HostTarget's name and
// features plus the target's own -mattr changes; another name must be a CPU LLVM knows;
// vector_bits, when 0, comes from the CPU's features (512 with AVX-512, 256 with AVX, else
// 128). Errors: not a cpu target, an unknown CPU or feature.
absl::StatusOr<tir::Target> ResolveCpuTarget(const tir::Target& target);
// The LLVM view of a resolved cpu target: its name and "+f,-g" feature string.
absl::StatusOr<CpuTarget> ToCpuTarget(const tir::Target& target);

}  // namespace kiln::codegen
