#include "vm/standalone_call_context.h"

#include <cstdlib>

namespace kiln::vm {

namespace {

StandaloneCallContext* Of(KilnCallContext* ctx) { return reinterpret_cast<StandaloneCallContext*>(ctx); }

int32_t ParallelFor(KilnCallContext* ctx, int64_t num_tasks, KilnParallelBody body, void* closure) {
  return Of(ctx)->pool->ParallelFor(num_tasks, body, closure);
}
// 64-byte aligned like the VM's workspace; aligned_alloc wants a size that is a multiple of
// the alignment (and a non-zero one).
void* WorkspaceAlloc(KilnCallContext*, uint64_t bytes) { return std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64 * (bytes == 0)); }
void WorkspaceFree(KilnCallContext*, void* ptr) { std::free(ptr); }
void SetError(KilnCallContext* ctx, const char* message) { Of(ctx)->error = message; }

}  // namespace

StandaloneCallContext MakeStandaloneCallContext(ThreadPool* pool) {
  StandaloneCallContext context{};
  context.ctx.runtime = nullptr;
  context.ctx.parallel_for = ParallelFor;
  context.ctx.workspace_alloc = WorkspaceAlloc;
  context.ctx.workspace_free = WorkspaceFree;
  context.ctx.set_error = SetError;
  context.ctx.num_threads = pool->num_threads();
  context.ctx.device = DLDevice{kDLCPU, 0};
  context.pool = pool;
  return context;
}

}  // namespace kiln::vm
