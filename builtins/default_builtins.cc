#include "builtins/default_builtins.h"

#include "builtins/paged_attention.h"

namespace kiln::builtins {

const vm::BuiltinRegistry& DefaultRegistry() {
  static const vm::BuiltinRegistry* registry = [] {
    auto* r = new vm::BuiltinRegistry();
    RegisterMemoryBuiltins(*r);
    RegisterStructureBuiltins(*r);
    RegisterTensorKernels(*r);
    RegisterOpenBlasKernels(*r);
    RegisterKvCacheBuiltins(*r);
    return r;
  }();
  return *registry;
}

}  // namespace kiln::builtins
