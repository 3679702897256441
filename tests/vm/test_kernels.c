/* CPU kernels written in C against vm/kernel_abi.h, compiled into a shared object that the
 * VM tests carry inside hand-built executables. */
#include "vm/kernel_abi.h"

static float* f32(const DLTensor* t) { return (float*)((char*)t->data + t->byte_offset); }

static int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

/* axpy(x, y, out, alpha): out = alpha * x + y, float32, equal sizes. */
int32_t axpy(const KilnArg* args, int32_t num_args, KilnCallContext* ctx) {
  if (num_args != 4 || args[0].type_code != kKilnArgTensor || args[1].type_code != kKilnArgTensor ||
      args[2].type_code != kKilnArgTensor || args[3].type_code != kKilnArgInt) {
    ctx->set_error(ctx, "axpy takes (x, y, out, alpha)");
    return 1;
  }
  const DLTensor* x = args[0].value.tensor;
  const DLTensor* y = args[1].value.tensor;
  const DLTensor* out = args[2].value.tensor;
  int64_t n = numel(out);
  if (numel(x) != n || numel(y) != n) {
    ctx->set_error(ctx, "axpy: sizes differ");
    return 2;
  }
  float alpha = (float)args[3].value.i64;
  for (int64_t i = 0; i < n; ++i) f32(out)[i] = alpha * f32(x)[i] + f32(y)[i];
  return 0;
}

/* row_sum(x, out): out[i] = sum_j x[i, j], using the runtime's parallel_for. */
struct RowSum {
  const DLTensor* x;
  const DLTensor* out;
};

static int32_t row_sum_task(int64_t row, int64_t num_rows, void* closure) {
  (void)num_rows;
  const struct RowSum* job = (const struct RowSum*)closure;
  int64_t cols = job->x->shape[1];
  float sum = 0;
  for (int64_t j = 0; j < cols; ++j) sum += f32(job->x)[row * cols + j];
  f32(job->out)[row] = sum;
  return 0;
}

int32_t row_sum(const KilnArg* args, int32_t num_args, KilnCallContext* ctx) {
  if (num_args != 2 || args[0].type_code != kKilnArgTensor || args[1].type_code != kKilnArgTensor ||
      args[0].value.tensor->ndim != 2 || numel(args[1].value.tensor) != args[0].value.tensor->shape[0]) {
    ctx->set_error(ctx, "row_sum takes (x[m, n], out[m])");
    return 1;
  }
  struct RowSum job = {args[0].value.tensor, args[1].value.tensor};
  return ctx->parallel_for(ctx, job.x->shape[0], row_sum_task, &job);
}

/* nop(x): does nothing; the dispatch benchmark's trivial kernel. */
int32_t nop(const KilnArg* args, int32_t num_args, KilnCallContext* ctx) {
  (void)args;
  (void)num_args;
  (void)ctx;
  return 0;
}
