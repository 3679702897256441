// The call context of a kernel called directly, outside a VirtualMachine (benchmarks, the
// tuner's measuring child): parallel loops on a given pool, workspace from the heap, the
// kernel's error message kept. CPU only: no device, stream or launch callback.
#pragma once

#include <string>

#include "vm/kernel_abi.h"
#include "vm/thread_pool.h"

namespace kiln::vm {

struct StandaloneCallContext {
  KilnCallContext ctx;  // first member: the callbacks cast the context pointer back
  ThreadPool* pool = nullptr;
  std::string error;  // the last message the kernel reported
};

// A context whose parallel loops run on `pool` (which must outlive it).
StandaloneCallContext MakeStandaloneCallContext(ThreadPool* pool);

}  // namespace kiln::vm
