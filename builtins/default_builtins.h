// The standard builtins and library kernels every Kiln runtime provides. Executables
// compiled by Kiln name them in their builtin and kernel tables; Load resolves those names
// against this registry.
//
//   auto exe = kiln::vm::Executable::LoadFile(path, kiln::builtins::DefaultRegistry());
#pragma once

#include "vm/builtin_registry.h"

namespace kiln::builtins {

// The registry with every builtin below; built on first use, immutable afterwards.
const vm::BuiltinRegistry& DefaultRegistry();

// The families, for a program that composes its own registry.
void RegisterMemoryBuiltins(vm::BuiltinRegistry& registry);     // memory_builtins.cc
void RegisterStructureBuiltins(vm::BuiltinRegistry& registry);  // structure_builtins.cc
void RegisterStringBuiltins(vm::BuiltinRegistry& registry);     // string_builtins.cc
void RegisterTreeEnsembleBuiltins(vm::BuiltinRegistry& registry);  // tree_ensemble_builtins.cc
void RegisterImageDecoderBuiltins(vm::BuiltinRegistry& registry);  // image_decoder_builtins.cc
void RegisterTensorKernels(vm::BuiltinRegistry& registry);      // tensor_kernels.cc
void RegisterOpenBlasKernels(vm::BuiltinRegistry& registry);    // openblas_kernels.cc
void RegisterCublasKernels(vm::BuiltinRegistry& registry);      // cublas_kernels.cc

}  // namespace kiln::builtins
