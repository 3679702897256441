// Embedding Kiln in a C++ program: load a compiled executable, create a VM, call a
// function with tensors, read the results. Links only the runtime libraries (kiln_vm,
// kiln_builtins): no compiler, no LLVM.
//
//   kiln_embedding_example model.kx
//
// It calls `main` with two float32 [n, 4] tensors (n = 3), as the sample executable the
// tests build expects; adapt the inputs to your own function's signature.
#include <cstdio>
#include <vector>

#include "builtins/default_builtins.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FILE.kx\n", argv[0]);
    return 2;
  }
  // 1. Load once. The executable is immutable and may be shared by many threads.
  auto executable = kiln::vm::Executable::LoadFile(argv[1], kiln::builtins::DefaultRegistry());
  if (!executable.ok()) {
    std::fprintf(stderr, "load failed: %s\n", std::string(executable.status().message()).c_str());
    return 1;
  }
  // 2. One VM per thread. Create maps the devices the executable uses (the CPU is always
  //    there) and says so if one is unavailable on this machine.
  auto machine = kiln::vm::VirtualMachine::Create(*executable);
  if (!machine.ok()) {
    std::fprintf(stderr, "%s\n", std::string(machine.status().message()).c_str());
    return 1;
  }
  kiln::vm::VirtualMachine& vm = **machine;

  // 3. Look the function up once; call it by index in a hot loop.
  int32_t main_fn = (*executable)->FindFunction("main");
  if (main_fn < 0) {
    std::fprintf(stderr, "the executable has no function 'main'\n");
    return 1;
  }

  // 4. Inputs are Tensors (or DLPack tensors adopted with Tensor::FromDLPack, no copy).
  const int64_t n = 3;
  auto x = kiln::vm::Tensor::Empty({n, 4}, kiln::vm::DTypeFloat32());
  auto y = kiln::vm::Tensor::Empty({n, 4}, kiln::vm::DTypeFloat32());
  if (!x.ok() || !y.ok()) return 1;
  for (int64_t i = 0; i < n * 4; ++i) {
    x->data_as<float>()[i] = static_cast<float>(i);
    y->data_as<float>()[i] = 1.0f;
  }
  std::vector<kiln::vm::Value> args = {kiln::vm::Value(*x), kiln::vm::Value(*y)};
  auto result = vm.Invoke(main_fn, args.data(), args.size());
  if (!result.ok()) {
    // Wrong shapes or dtypes come back here, naming the function, parameter and dimension.
    std::fprintf(stderr, "call failed: %s\n", std::string(result.status().message()).c_str());
    return 1;
  }

  // 5. Outputs are Values. The checked accessors (GetTensor, GetInt, GetObject<T>, ...)
  //    return an error when the value is of another kind; a tensor can leave as DLPack
  //    without a copy.
  absl::StatusOr<kiln::vm::Tensor> output = result->GetTensor();
  if (!output.ok()) {
    std::fprintf(stderr, "unexpected result: %s\n", std::string(output.status().message()).c_str());
    return 1;
  }
  const kiln::vm::Tensor& out = *output;
  std::printf("output %s:", out.Describe().c_str());
  for (int64_t i = 0; i < out.numel(); ++i) std::printf(" %g", out.data_as<float>()[i]);
  std::printf("\n");
  DLManagedTensor* exported = out.ToDLPack();
  exported->deleter(exported);
  return 0;
}
