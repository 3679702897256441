// A few library kernels, written against the kernel ABI exactly as generated kernels are:
// they show that library functions and generated code are interchangeable, and tests and
// the dispatch benchmark use them.
#include <cstring>

#include "builtins/default_builtins.h"
#include "vm/dtype.h"

namespace kiln::builtins {
namespace {

bool IsF32(const DLTensor* t) { return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1; }

int64_t Numel(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

float* F32(const DLTensor* t) { return reinterpret_cast<float*>(static_cast<char*>(t->data) + t->byte_offset); }

int32_t Fail(KilnCallContext* ctx, const char* message) {
  ctx->set_error(ctx, message);
  return 1;
}

struct AddJob {
  const float* a;
  const float* b;
  float* out;
  int64_t n;
  int64_t chunk;
};

int32_t AddChunk(int64_t task, int64_t, void* closure) {
  auto* job = static_cast<AddJob*>(closure);
  int64_t begin = task * job->chunk;
  int64_t end = begin + job->chunk < job->n ? begin + job->chunk : job->n;
  for (int64_t i = begin; i < end; ++i) job->out[i] = job->a[i] + job->b[i];
  return 0;
}

// add_f32(a, b, out): out = a + b, elementwise, same shapes, in parallel chunks.
int32_t AddF32(const KilnArg* args, int32_t num_args, KilnCallContext* ctx) {
  if (num_args != 3) return Fail(ctx, "add_f32 takes (a, b, out)");
  const DLTensor* a = args[0].value.tensor;
  const DLTensor* b = args[1].value.tensor;
  const DLTensor* out = args[2].value.tensor;
  if (!IsF32(a) || !IsF32(b) || !IsF32(out)) return Fail(ctx, "add_f32 needs float32 tensors");
  int64_t n = Numel(out);
  if (Numel(a) != n || Numel(b) != n) return Fail(ctx, "add_f32: operand sizes differ");
  constexpr int64_t kChunk = 1 << 14;
  AddJob job{F32(a), F32(b), F32(out), n, kChunk};
  return ctx->parallel_for(ctx, (n + kChunk - 1) / kChunk, AddChunk, &job);
}

// fill_f32(out, value): every element of out = value (a float argument).
int32_t FillF32(const KilnArg* args, int32_t num_args, KilnCallContext* ctx) {
  if (num_args != 2 || !IsF32(args[0].value.tensor)) return Fail(ctx, "fill_f32 takes (float32 out, value)");
  float* out = F32(args[0].value.tensor);
  float value = static_cast<float>(args[1].value.f64);
  for (int64_t i = 0, n = Numel(args[0].value.tensor); i < n; ++i) out[i] = value;
  return 0;
}

}  // namespace

void RegisterTensorKernels(vm::BuiltinRegistry& r) {
  r.RegisterKernel("kiln.add_f32", "ttt", AddF32);
  r.RegisterKernel("kiln.fill_f32", "tf", FillF32);
}

}  // namespace kiln::builtins
