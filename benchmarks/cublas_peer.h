// cuBLAS as the peer of Kiln's generated cuda matmul (matmul_bench --cublas), measured in
// the same run on the same GPU.
//
// The peer is the runtime's own kiln.cublas.gemm_nn library kernel (builtins/
// cublas_kernels.cc: cublasGemmStridedBatchedEx, float32 summed in float32, no TF32), called
// through the kernel ABI on the device's stream: exactly what dispatch_libraries gives a cuda
// function's large matmuls. Kiln's side is the whole pipeline for --target cuda with library
// dispatch off (--libs none): the GPU schedule's generated kernel, run through the VM.
// Both are timed to completion (the stream synchronized after each call), median of runs.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "builtins/cublas_library.h"
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

class CublasPeer {
 public:
  // The CUDA device with cuBLAS, or why not (no driver, no GPU, no libcublas), one line.
  static absl::StatusOr<CublasPeer> Open() {
    KILN_ASSIGN_OR_RETURN(vm::Device * device, vm::GetDevice("cuda:0"));
    KILN_ASSIGN_OR_RETURN(const builtins::CublasLibrary* lib, builtins::LoadCublas());
    (void)lib;
    const vm::BuiltinRegistry::LibraryKernel* kernel = builtins::DefaultRegistry().FindKernel("kiln.cublas.gemm_nn");
    if (kernel == nullptr) return absl::NotFoundError("the runtime has no kiln.cublas.gemm_nn");
    return CublasPeer(device, kernel->fn);
  }

  vm::Device* device() const { return device_; }

  // c = a @ w with cuBLAS; every tensor on the device. Returns once the GPU has finished.
  absl::Status Matmul(const vm::Tensor& a, const vm::Tensor& w, const vm::Tensor& c) {
    KILN_RETURN_IF_ERROR(Enqueue(a, w, c));
    return device_->Synchronize();
  }

  // The same, returning once the GEMM is queued on the device's stream (a run of calls
  // timed to one final Synchronize, as a model's step queues its kernels).
  absl::Status Enqueue(const vm::Tensor& a, const vm::Tensor& w, const vm::Tensor& c) {
    KilnArg args[3] = {};
    const vm::Tensor* tensors[3] = {&a, &w, &c};
    for (int i = 0; i < 3; ++i) {
      args[i].type_code = kKilnArgTensor;
      args[i].value.tensor = tensors[i]->dl_tensor();
    }
    std::string error;
    KilnCallContext ctx{};
    ctx.runtime = &error;
    ctx.set_error = [](KilnCallContext* c, const char* message) { *static_cast<std::string*>(c->runtime) = message; };
    ctx.device = device_->dl_device();
    ctx.stream = device_->stream();
    if (gemm_(args, 3, &ctx) != 0) return absl::InternalError(error);
    return absl::OkStatus();
  }

 private:
  CublasPeer(vm::Device* device, KilnKernelFn gemm) : device_(device), gemm_(gemm) {}
  vm::Device* device_;
  KilnKernelFn gemm_;
};

// Kiln's generated float32 matmul y[m, n] = x[m, k] @ w[k, n] for --target cuda (m symbolic,
// k and n constant, as in a model), without library dispatch, loaded on `device`.
inline absl::StatusOr<std::unique_ptr<vm::VirtualMachine>> GeneratedCudaMatmul(int64_t k, int64_t n,
                                                                                vm::Device* device) {
  const std::string text = absl::StrCat("module {\n  func @main(x: Tensor((m, ", k, "), float32), w: Tensor((", k, ", ",
                                        n, "), float32)) -> Tensor((m, ", n,
                                        "), float32) {\n    y = R.matmul(x, w)\n    return y\n  }\n}");
  KILN_ASSIGN_OR_RETURN(relax::ParsedModule parsed, relax::ParseModule(text));
  relax::PipelineOptions options;
  options.target = tir::Target::Cuda();
  options.libraries.openblas = false;
  options.libraries.quantized = false;
  options.libraries.cublas = false;
  KILN_ASSIGN_OR_RETURN(relax::IRModule lowered, relax::RunPipeline(parsed.module, options, &parsed.locations));
  KILN_ASSIGN_OR_RETURN(tir::Target host, codegen::ResolveCpuTarget(tir::Target::Cpu("x86-64")));
  KILN_ASSIGN_OR_RETURN(codegen::CpuTarget cpu, codegen::ToCpuTarget(host));
  KILN_ASSIGN_OR_RETURN(std::string bytes, codegen::BuildExecutable(lowered, cpu));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const vm::Executable> exe,
                        vm::Executable::Load(bytes, builtins::DefaultRegistry()));
  return vm::VirtualMachine::Create(exe, device);
}

}  // namespace kiln::bench
