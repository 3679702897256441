#include "builtins/default_builtins.h"

#include "builtins/ggml_layer_ops.h"
#include "builtins/kquant_matmul_kernels.h"
#include "builtins/paged_attention.h"
#include "builtins/quantized_matmul_kernels.h"

namespace kiln::builtins {

const vm::BuiltinRegistry& DefaultRegistry() {
  static const vm::BuiltinRegistry* registry = [] {
    auto* r = new vm::BuiltinRegistry();
    RegisterMemoryBuiltins(*r);
    RegisterStructureBuiltins(*r);
    RegisterStringBuiltins(*r);
    RegisterTreeEnsembleBuiltins(*r);
    RegisterImageDecoderBuiltins(*r);
    RegisterTensorKernels(*r);
    RegisterOpenBlasKernels(*r);
    RegisterCublasKernels(*r);
    RegisterKvCacheBuiltins(*r);
    RegisterQuantizedMatmulKernels(*r);
    RegisterKQuantMatmulKernels(*r);
    RegisterGgmlLayerOps(*r);
    return r;
  }();
  return *registry;
}

}  // namespace kiln::builtins
