/*
 * Kiln kernel ABI: the one calling convention for generated kernels and library
 * functions. Plain C, self-contained: a kernel author needs only this header and dlpack.h.
 *
 * A kernel is a C function
 *
 *     int32_t my_kernel(const KilnArg* args, int32_t num_args, KilnCallContext* ctx);
 *
 * exported with default visibility from a shared object carried in the executable file
 * (generated kernels), or registered natively by the runtime (library functions such as
 * BLAS). The VM cannot tell the two apart.
 *
 * Arguments: in destination-passing style, inputs first, then outputs. Each argument is a
 * tagged value: a tensor (a DLTensor the kernel may read, or write if it is an output), a
 * 64-bit integer (e.g. a symbolic dimension), a double, or an opaque handle. The caller owns
 * every tensor; a kernel must not keep pointers past its return. Tensors are on the device
 * the kernel was compiled for; their `data` is 64-byte aligned plus `byte_offset`.
 *
 * Return 0 on success. On failure call ctx->set_error(ctx, "message") and return nonzero;
 * the VM turns it into an error naming the kernel.
 *
 * Parallelism: a kernel never creates threads. It calls ctx->parallel_for, which runs
 * body(task, num_tasks, closure) for task in [0, num_tasks) on the runtime's thread pool
 * and returns when all are done (0, or the first nonzero a body returned). Scratch memory
 * comes from ctx->workspace_alloc / workspace_free (64-byte aligned, on ctx->device). No
 * symbol of the host process is needed, so kernel objects link against nothing.
 *
 * Devices (version 2): ctx->device names the device the call's tensors live on and its work
 * runs on; ctx->stream is that device's stream or queue for the call (NULL on the CPU). A
 * function compiled for a GPU is a host function (CPU code with this same signature) that
 * checks its arguments, computes the launch dimensions from them and calls ctx->launch for
 * each device kernel it runs; the device kernels themselves are carried in the executable
 * per target (PTX/cubin, SPIR-V) and named by their index in that target's table. So a CPU
 * kernel, a GPU function and a library function (cuBLAS on ctx->stream) are called alike.
 *
 * Layout: fields are only ever appended, so code built against version 1 reads the same
 * offsets; the version a file was built with is recorded in the executable.
 */
#ifndef KILN_VM_KERNEL_ABI_H_
#define KILN_VM_KERNEL_ABI_H_

#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_KERNEL_ABI_VERSION 2

typedef enum {
  kKilnArgTensor = 0,
  kKilnArgInt = 1,
  kKilnArgFloat = 2,
  kKilnArgHandle = 3,
} KilnArgTypeCode;

typedef struct {
  union {
    DLTensor* tensor;
    int64_t i64;
    double f64;
    void* handle;
  } value;
  int32_t type_code; /* a KilnArgTypeCode */
} KilnArg;

typedef struct KilnCallContext KilnCallContext;

/* One task of a parallel loop. Returns 0 on success. */
typedef int32_t (*KilnParallelBody)(int64_t task, int64_t num_tasks, void* closure);

/* The launch dimensions of one device kernel: CUDA grid and block, Vulkan workgroup
 * counts and workgroup size. */
typedef struct {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dynamic_shared_bytes;
} KilnLaunchDims;

struct KilnCallContext {
  void* runtime; /* opaque to kernels */
  int32_t (*parallel_for)(KilnCallContext* ctx, int64_t num_tasks, KilnParallelBody body,
                          void* closure);
  void* (*workspace_alloc)(KilnCallContext* ctx, uint64_t bytes);
  void (*workspace_free)(KilnCallContext* ctx, void* ptr);
  void (*set_error)(KilnCallContext* ctx, const char* message);
  int32_t num_threads; /* the pool's size; a hint for splitting work */
  /* --- version 2 --- */
  DLDevice device; /* where the call's tensors live and its work runs */
  void* stream;    /* the device's stream or queue for this call; NULL on the CPU */
  /* Runs device kernel `device_kernel` (its index in the executable's kernel table for
   * ctx->device's target) with `dims` over `args` on ctx->stream; 0 on success, else
   * nonzero after set_error. NULL where the device runs no device kernels (the CPU). */
  int32_t (*launch)(KilnCallContext* ctx, int32_t device_kernel, const KilnLaunchDims* dims,
                    const KilnArg* args, int32_t num_args);
};

typedef int32_t (*KilnKernelFn)(const KilnArg* args, int32_t num_args, KilnCallContext* ctx);

#ifdef __cplusplus
}
#endif

#endif /* KILN_VM_KERNEL_ABI_H_ */
