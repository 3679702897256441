// The CPU backend end to end: PrimFuncs built by hand are compiled to a shared object,
// loaded with the runtime's KernelObject and called through the kernel ABI; results are
// compared with plain C++ loops written here.
#include "codegen/llvm_codegen.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cpu_shared_object.h"
#include "codegen/cpu_target.h"
#include "codegen/parallel_work.h"
#include "support/check.h"
#include "support/float16.h"
#include "support/status_macros.h"
#include "tests/tir/bit_kernels.h"
#include "tests/tir/q4_0.h"
#include "tir/buffer.h"
#include "tir/expr.h"
#include "tir/stmt.h"
#include "tir/target.h"
#include "tir/transform/pipeline.h"
#include "tir/text_parser.h"
#include "vm/kernel_abi.h"
#include "vm/kernel_object.h"
#include "vm/tensor.h"
#include "vm/thread_pool.h"

namespace kiln::codegen {
namespace {

using namespace kiln::tir;  // NOLINT: IR construction reads better unqualified
using ::testing::HasSubstr;
using ::testing::Not;

// ---------------------------------------------------------------- harness

// A call context backed by a runtime thread pool; counts workspace blocks so tests can see
// that every allocation is freed.
struct TestContext {
  KilnCallContext ctx;  // first member: callbacks cast the context pointer back
  vm::ThreadPool* pool;
  std::string error;
  // Updated from pool threads, hence atomic.
  std::atomic<int64_t> live_workspaces{0};
  std::atomic<int64_t> workspace_allocations{0};
  std::atomic<int64_t> parallel_calls{0};
  std::atomic<int64_t> most_tasks{0};  // the largest num_tasks a parallel loop asked for
  // workspace_alloc returns NULL, as when memory runs out, once this many blocks were given.
  int64_t fail_after = -1;
};

int32_t TestParallelFor(KilnCallContext* ctx, int64_t num_tasks, KilnParallelBody body, void* closure) {
  auto* test = reinterpret_cast<TestContext*>(ctx);
  ++test->parallel_calls;
  for (int64_t seen = test->most_tasks.load(); num_tasks > seen && !test->most_tasks.compare_exchange_weak(seen, num_tasks);) {
  }
  return test->pool->ParallelFor(num_tasks, body, closure);
}

void* TestWorkspaceAlloc(KilnCallContext* ctx, uint64_t bytes) {
  auto* test = reinterpret_cast<TestContext*>(ctx);
  if (test->fail_after >= 0 && test->workspace_allocations.fetch_add(1) >= test->fail_after) {
    --test->workspace_allocations;
    return nullptr;
  }
  if (test->fail_after < 0) ++test->workspace_allocations;
  ++test->live_workspaces;
  return std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
}

void TestWorkspaceFree(KilnCallContext* ctx, void* ptr) {
  --reinterpret_cast<TestContext*>(ctx)->live_workspaces;
  std::free(ptr);
}

// Tasks of a parallel loop may fail at the same time, so reporting is serialized.
void TestSetError(KilnCallContext* ctx, const char* message) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  reinterpret_cast<TestContext*>(ctx)->error = message;
}

std::unique_ptr<TestContext> MakeContext(vm::ThreadPool* pool) {
  auto test = std::make_unique<TestContext>();
  test->ctx.runtime = nullptr;
  test->ctx.parallel_for = TestParallelFor;
  test->ctx.workspace_alloc = TestWorkspaceAlloc;
  test->ctx.workspace_free = TestWorkspaceFree;
  test->ctx.set_error = TestSetError;
  test->ctx.num_threads = pool->num_threads();
  test->pool = pool;
  return test;
}

vm::ThreadPool& FourThreads() {
  static auto* pool = new vm::ThreadPool(4);
  return *pool;
}

KilnArg TensorArg(const vm::Tensor& t) {
  KilnArg a{};
  a.value.tensor = t.dl_tensor();
  a.type_code = kKilnArgTensor;
  return a;
}
KilnArg IntArg(int64_t v) {
  KilnArg a{};
  a.value.i64 = v;
  a.type_code = kKilnArgInt;
  return a;
}
KilnArg FloatArg(double v) {
  KilnArg a{};
  a.value.f64 = v;
  a.type_code = kKilnArgFloat;
  return a;
}

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF64{kDLFloat, 64, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};

vm::Tensor MakeTensor(const std::vector<int64_t>& shape, DLDataType dtype) {
  absl::StatusOr<vm::Tensor> t = vm::Tensor::Empty(shape, dtype);
  KILN_CHECK(t.ok()) << t.status();
  std::memset(t->data(), 0, static_cast<size_t>(t->nbytes()));
  return *t;
}

vm::Tensor RandomF32(const std::vector<int64_t>& shape, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  vm::Tensor t = MakeTensor(shape, kF32);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

// A compiled shared object, loaded.
class Kernels {
 public:
  explicit Kernels(const NamedPrimFuncs& funcs, const CpuTarget& target = CpuTarget::Host()) {
    absl::StatusOr<std::string> so = BuildCpuSharedObject(funcs, target);
    KILN_CHECK(so.ok()) << so.status();
    absl::StatusOr<std::shared_ptr<vm::KernelObject>> object = vm::KernelObject::Load(*so);
    KILN_CHECK(object.ok()) << object.status();
    object_ = *object;
  }
  KilnKernelFn Get(const std::string& name) const {
    absl::StatusOr<KilnKernelFn> fn = object_->Find(name);
    KILN_CHECK(fn.ok()) << fn.status();
    return *fn;
  }

 private:
  std::shared_ptr<vm::KernelObject> object_;
};

int32_t Invoke(KilnKernelFn fn, TestContext* ctx, const std::vector<KilnArg>& args) {
  ctx->error.clear();
  return fn(args.data(), static_cast<int32_t>(args.size()), &ctx->ctx);
}

PrimFuncParam P(const Buffer& b) { return PrimFuncParam{b, Var()}; }
PrimFuncParam P(const Var& v) { return PrimFuncParam{Buffer(), v}; }

Stmt Serial(const Var& i, PrimExpr min, PrimExpr extent, Stmt body) {
  return For(i, std::move(min), std::move(extent), ForKind::kSerial, std::move(body));
}

PrimExpr F32(double v) { return FloatImm(DataType::Float32(), v); }

// C[i] = A[i] + B[i] over a symbolic n.
PrimFunc AddFunc() {
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {n});
  Buffer b("B", DataType::Float32(), {n});
  Buffer c("C", DataType::Float32(), {n});
  Var i("i");
  return PrimFunc({P(a), P(b), P(c)}, Serial(i, 0, n, BufferStore(c, a.Load({i}) + b.Load({i}), {i})));
}

// ---------------------------------------------------------------- tests

TEST(LlvmCodegenTest, ElementwiseAddOverSymbolicSize) {
  Kernels k({{"add", AddFunc()}});
  auto ctx = MakeContext(&FourThreads());
  for (int64_t n : {1, 7, 1000}) {
    vm::Tensor a = RandomF32({n}, 1), b = RandomF32({n}, 2), c = MakeTensor({n}, kF32);
    ASSERT_EQ(Invoke(k.Get("add"), ctx.get(), {TensorArg(a), TensorArg(b), TensorArg(c)}), 0) << ctx->error;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(c.data_as<float>()[i], a.data_as<float>()[i] + b.data_as<float>()[i]) << "n=" << n << " i=" << i;
    }
  }
}

TEST(LlvmCodegenTest, SeveralKernelObjectsLoadedAtOnce) {
  // Each object is its own library, even when an earlier one's scratch file was closed.
  std::vector<std::unique_ptr<Kernels>> objects;
  for (int v = 0; v < 3; ++v) {
    Buffer out("out", DataType::Int64(), {1});
    Var i("i");
    PrimFunc func({P(out)}, Serial(i, 0, 1, BufferStore(out, PrimExpr(int64_t{100 + v}), {i})));
    objects.push_back(std::make_unique<Kernels>(NamedPrimFuncs{{"k" + std::to_string(v), func}}));
  }
  auto ctx = MakeContext(&FourThreads());
  for (int v = 0; v < 3; ++v) {
    vm::Tensor t = MakeTensor({1}, kI64);
    ASSERT_EQ(Invoke(objects[v]->Get("k" + std::to_string(v)), ctx.get(), {TensorArg(t)}), 0) << ctx->error;
    EXPECT_EQ(t.data_as<int64_t>()[0], 100 + v);
  }
}

TEST(LlvmCodegenTest, ByteOffsetIsHonoured) {
  Kernels k({{"add", AddFunc()}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor whole = RandomF32({10}, 3);
  absl::StatusOr<vm::Tensor> tail = whole.Slice(4, 10);
  ASSERT_TRUE(tail.ok());
  ASSERT_NE(tail->dl_tensor()->byte_offset, 0u);
  vm::Tensor c = MakeTensor({6}, kF32);
  ASSERT_EQ(Invoke(k.Get("add"), ctx.get(), {TensorArg(*tail), TensorArg(*tail), TensorArg(c)}), 0) << ctx->error;
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c.data_as<float>()[i], 2 * whole.data_as<float>()[4 + i]);
}

TEST(LlvmCodegenTest, ParallelLoopSplitsAcrossThePool) {
  // C[i, j] = A[i, j] * 2 + i, rows in parallel.
  Var m = Var::Shape("m");
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {m, n});
  Buffer c("C", DataType::Float32(), {m, n});
  Var i("i"), j("j");
  Stmt body = For(i, 0, m, ForKind::kParallel,
                  Serial(j, 0, n, BufferStore(c, a.Load({i, j}) * F32(2) + Cast(DataType::Float32(), i), {i, j})));
  Kernels k({{"scale_rows", PrimFunc({P(a), P(c)}, body)}});
  vm::ThreadPool single(1);
  for (vm::ThreadPool* pool : {&FourThreads(), &single}) {
    auto ctx = MakeContext(pool);
    for (int64_t rows : {0, 1, 3, 37, 100}) {
      vm::Tensor in = RandomF32({rows, 5}, 4), out = MakeTensor({rows, 5}, kF32);
      ASSERT_EQ(Invoke(k.Get("scale_rows"), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t col = 0; col < 5; ++col) {
          ASSERT_EQ(out.data_as<float>()[r * 5 + col], in.data_as<float>()[r * 5 + col] * 2.0f + static_cast<float>(r))
              << "rows=" << rows << " r=" << r;
        }
      }
    }
    EXPECT_EQ(ctx->parallel_calls.load(), 4) << "an empty range skips parallel_for";
    EXPECT_EQ(ctx->most_tasks.load(), 1) << "at most 500 stores: too little work to share";
    // 20 * kMinTaskWork stores: 20 tasks' worth, capped at kTasksPerThread per thread
    // (4 threads: 16 tasks of 16384 rows); every row computed once.
    const int64_t rows = 20 * codegen::kMinTaskWork / 5;
    vm::Tensor in = RandomF32({rows, 5}, 5), out = MakeTensor({rows, 5}, kF32);
    ASSERT_EQ(Invoke(k.Get("scale_rows"), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(out.data_as<float>()[r * 5 + 4], in.data_as<float>()[r * 5 + 4] * 2.0f + static_cast<float>(r)) << r;
    }
    EXPECT_EQ(ctx->most_tasks.load(), pool->num_threads() == 1 ? 1 : 16);
  }
}

TEST(LlvmCodegenTest, ParallelLoopWorkCountsInnerLoopsAndBranches) {
  // The serial/parallel decision weighs the whole nest: 16 rows of n x (1 + 2) stores are
  // little work for n = 100 (4800 < kMinParallelWork = 1 << 18) and enough for n = 10000
  // (480000: 7 tasks by kMinTaskWork = 1 << 16, rounded up to 8, a multiple of the 4
  // threads: chunks of 2 rows).
  Var n = Var::Shape("n");
  Buffer c("C", DataType::Float32(), {16, n});
  Var i("i"), j("j"), k("k");
  Stmt inner = SeqStmt({BufferStore(c, F32(1), {i, j}),
                        IfThenElse(LT(j, PrimExpr(int64_t{3})), Serial(k, 0, 2, BufferStore(c, F32(2), {i, j})))});
  Stmt body = For(i, 0, 16, ForKind::kParallel, Serial(j, 0, n, inner));
  Kernels kernels({{"fill_rows", PrimFunc({P(c)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor small = MakeTensor({16, 100}, kF32);
  ASSERT_EQ(Invoke(kernels.Get("fill_rows"), ctx.get(), {TensorArg(small)}), 0) << ctx->error;
  EXPECT_EQ(ctx->most_tasks.load(), 1);
  vm::Tensor large = MakeTensor({16, 10000}, kF32);
  ASSERT_EQ(Invoke(kernels.Get("fill_rows"), ctx.get(), {TensorArg(large)}), 0) << ctx->error;
  EXPECT_EQ(ctx->most_tasks.load(), 8);
  for (int64_t r = 0; r < 16; ++r) ASSERT_EQ(large.data_as<float>()[r * 10000 + 9999], 1.0f) << r;
  EXPECT_EQ(large.data_as<float>()[0], 2.0f);
}

TEST(LlvmCodegenTest, HeavyIterationsAreTasksOfTheirOwn) {
  // 22 rows of kMinTaskWork stores each on 4 threads: each row is a task's worth, so each is
  // a task (22, past kTasksPerThread's 16), where chunks of 2 left some thread 6 rows and
  // another 4; rows of a quarter of that are chunked as before (22 rows: 6 tasks' worth,
  // rounded up to 8, chunks of 3: 8 tasks).
  Var m = Var::Shape("m");
  Var n = Var::Shape("n");
  Buffer c("C", DataType::Float32(), {m, n});
  Var i("i"), j("j");
  Stmt body = For(i, 0, m, ForKind::kParallel, Serial(j, 0, n, BufferStore(c, Cast(DataType::Float32(), i), {i, j})));
  Kernels kernels({{"fill_rows", PrimFunc({P(c)}, body)}});
  for (auto [columns, tasks] : {std::pair<int64_t, int64_t>{codegen::kMinTaskWork, 22}, {codegen::kMinTaskWork / 4, 8}}) {
    auto ctx = MakeContext(&FourThreads());
    vm::Tensor out = MakeTensor({22, columns}, kF32);
    ASSERT_EQ(Invoke(kernels.Get("fill_rows"), ctx.get(), {TensorArg(out)}), 0) << ctx->error;
    EXPECT_EQ(ctx->most_tasks.load(), tasks) << columns << " columns";
    for (int64_t r = 0; r < 22; ++r) ASSERT_EQ(out.data_as<float>()[r * columns + columns - 1], r) << r;
  }
}

TEST(LlvmCodegenTest, ParallelLoopWorkCountsVectorLanes) {
  // vectorize_loops makes one 16-lane store of the inner loop; the work is still 16 units per
  // row. 2^15 rows x 16 lanes = 2^19 units: 8 tasks by kMinTaskWork = 2^16 (counted as one
  // statement per row it was 2^15 units, below kMinParallelWork, and ran on one thread).
  Var m = Var::Shape("m");
  Buffer c("C", DataType::Float32(), {m, 16});
  Var i("i"), j("j");
  Stmt body = For(i, 0, m, ForKind::kParallel,
                  For(j, 0, 16, ForKind::kVectorized, BufferStore(c, Cast(DataType::Float32(), i + j), {i, j})));
  Kernels kernels({{"fill_rows", PrimFunc({P(c)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  const int64_t rows = int64_t{1} << 15;
  vm::Tensor t = MakeTensor({rows, 16}, kF32);
  ASSERT_EQ(Invoke(kernels.Get("fill_rows"), ctx.get(), {TensorArg(t)}), 0) << ctx->error;
  EXPECT_EQ(ctx->most_tasks.load(), 8);
  for (int64_t r = 0; r < rows; r += 997) {
    for (int64_t col = 0; col < 16; ++col) ASSERT_EQ(t.data_as<float>()[r * 16 + col], static_cast<float>(r + col)) << r;
  }
}

TEST(LlvmCodegenTest, FusedParallelLoopIndexesLikeTheTwoLoops) {
  // for f in parallel(0, 2 * m): out[f div m, f mod m] = 1000 * (f div m) + (f mod m), the
  // row's last element only under a condition on f mod m (an edge tile's predicate). The code
  // generator computes the divisions once per iteration (codegen/hoist_index_divisions.h);
  // tasks start mid-row when the loop is split.
  Var m = Var::Shape("m");
  Buffer out("out", DataType::Int64(), {2, m});
  Var f("f");
  PrimExpr col = FloorDiv(f, m), row = FloorMod(f, m);
  Stmt body = For(f, 0, 2 * m, ForKind::kParallel,
                  IfThenElse(LT(row, m - 1), BufferStore(out, 1000 * col + row, {col, row}),
                             BufferStore(out, PrimExpr(int64_t{-1}) - col, {col, row})));
  Kernels k({{"fused", PrimFunc({P(out)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  for (int64_t cols : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{1} << 18}) {
    vm::Tensor t = MakeTensor({2, cols}, kI64);
    ASSERT_EQ(Invoke(k.Get("fused"), ctx.get(), {TensorArg(t)}), 0) << ctx->error;
    for (int64_t c = 0; c < 2; ++c) {
      for (int64_t r = 0; r < cols; ++r) {
        ASSERT_EQ(t.data_as<int64_t>()[c * cols + r], r < cols - 1 ? 1000 * c + r : -1 - c) << cols << " " << c << " " << r;
      }
    }
  }
  EXPECT_GT(ctx->most_tasks.load(), 1) << "the large case is split";
}

TEST(LlvmCodegenTest, NestedParallelLoopsAndParallelOffset) {
  // out[i, j] = i * 100 + j for i in [2, 2 + m), both loops parallel.
  Var m = Var::Shape("m");
  Buffer out("out", DataType::Int64(), {m + 2, 9});
  Var i("i"), j("j");
  Stmt body = For(i, 2, m, ForKind::kParallel,
                  For(j, 0, 9, ForKind::kParallel, BufferStore(out, i * 100 + j, {i, j})));
  // m is defined by a scalar argument; the buffer's first dimension checks against m + 2.
  Kernels k({{"fill", PrimFunc({P(m), P(out)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor t = MakeTensor({13, 9}, kI64);
  ASSERT_EQ(Invoke(k.Get("fill"), ctx.get(), {IntArg(11), TensorArg(t)}), 0) << ctx->error;
  for (int64_t r = 0; r < 13; ++r) {
    for (int64_t col = 0; col < 9; ++col) {
      EXPECT_EQ(t.data_as<int64_t>()[r * 9 + col], r < 2 ? 0 : r * 100 + col);
    }
  }
  // The scalar after the tensor: the shape is still checked against it.
  Kernels k2({{"fill_late", PrimFunc({P(out), P(m)}, body)}});
  ASSERT_EQ(Invoke(k2.Get("fill_late"), ctx.get(), {TensorArg(t), IntArg(11)}), 0) << ctx->error;
  EXPECT_NE(Invoke(k2.Get("fill_late"), ctx.get(), {TensorArg(t), IntArg(10)}), 0);
  EXPECT_EQ(ctx->error, "kernel fill_late: argument 0 (out) dimension 0: expected 12 (m + 2), got 13");
  vm::Tensor wrong = MakeTensor({12, 9}, kI64);
  EXPECT_NE(Invoke(k.Get("fill"), ctx.get(), {IntArg(11), TensorArg(wrong)}), 0);
  EXPECT_EQ(ctx->error, "kernel fill: argument 1 (out) dimension 0: expected 13 (m + 2), got 12");
}

PrimFunc MatmulFunc(ForKind outer) {
  Var m = Var::Shape("M");
  Buffer a("A", DataType::Float32(), {m, 16});
  Buffer b("B", DataType::Float32(), {16, 8});
  Buffer c("C", DataType::Float32(), {m, 8});
  Var i("i"), j("j"), kk("k");
  Var vi("vi"), vj("vj"), vk("vk");
  Stmt block = Block("C",
                     {IterVar{vi, m, IterType::kSpatial, i}, IterVar{vj, 8, IterType::kSpatial, j},
                      IterVar{vk, 16, IterType::kReduction, kk}},
                     BufferStore(c, c.Load({vi, vj}) + a.Load({vi, vk}) * b.Load({vk, vj}), {vi, vj}),
                     /*init=*/BufferStore(c, F32(0), {vi, vj}));
  Stmt loops = For(i, 0, m, outer, Serial(j, 0, 8, Serial(kk, 0, 16, block)));
  return PrimFunc({P(a), P(b), P(c)}, loops);
}

TEST(LlvmCodegenTest, MatmulBlockReductionRunsInitOnce) {
  Kernels k({{"matmul", MatmulFunc(ForKind::kSerial)}, {"matmul_par", MatmulFunc(ForKind::kParallel)}});
  auto ctx = MakeContext(&FourThreads());
  for (const char* name : {"matmul", "matmul_par"}) {
    for (int64_t rows : {1, 5, 64}) {
      vm::Tensor a = RandomF32({rows, 16}, 5), b = RandomF32({16, 8}, 6);
      // Garbage in C: init must overwrite it.
      vm::Tensor c = RandomF32({rows, 8}, 7, 100, 200);
      ASSERT_EQ(Invoke(k.Get(name), ctx.get(), {TensorArg(a), TensorArg(b), TensorArg(c)}), 0) << ctx->error;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t col = 0; col < 8; ++col) {
          double expected = 0;
          for (int64_t x = 0; x < 16; ++x) {
            expected += static_cast<double>(a.data_as<float>()[r * 16 + x]) * b.data_as<float>()[x * 8 + col];
          }
          ASSERT_NEAR(c.data_as<float>()[r * 8 + col], expected, 1e-4) << name << " rows=" << rows;
        }
      }
    }
  }
}

TEST(LlvmCodegenTest, BlockPredicateGuardsASplitLoop) {
  // A split by 4 that does not divide n: the predicate keeps the block inside [0, n).
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {n});
  Buffer b("B", DataType::Float32(), {n});
  Var io("io"), ii("ii"), v("v");
  PrimExpr index = io * 4 + ii;
  Stmt block = Block("B", {IterVar{v, n, IterType::kSpatial, index}}, BufferStore(b, a.Load({v}) + F32(1), {v}),
                     Stmt(), LT(index, PrimExpr(n)));
  Stmt loops = Serial(io, 0, FloorDiv(n + 3, 4), Serial(ii, 0, 4, block));
  Kernels k({{"inc", PrimFunc({P(a), P(b)}, loops)}});
  auto ctx = MakeContext(&FourThreads());
  for (int64_t size : {1, 4, 10}) {
    vm::Tensor in = RandomF32({size}, 8);
    // One slot past the end, to see that nothing is written there.
    vm::Tensor out_storage = MakeTensor({size + 1}, kF32);
    out_storage.data_as<float>()[size] = 42.0f;
    absl::StatusOr<vm::Tensor> out = out_storage.Slice(0, size);
    ASSERT_TRUE(out.ok());
    ASSERT_EQ(Invoke(k.Get("inc"), ctx.get(), {TensorArg(in), TensorArg(*out)}), 0) << ctx->error;
    for (int64_t x = 0; x < size; ++x) EXPECT_EQ(out->data_as<float>()[x], in.data_as<float>()[x] + 1.0f);
    EXPECT_EQ(out_storage.data_as<float>()[size], 42.0f);
  }
}

TEST(LlvmCodegenTest, VectorizedLoopsWithTails) {
  // vec_hint: a loop marked vectorized; vec_ramp: explicit 8-lane ramps plus a scalar tail.
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {n});
  Buffer b("B", DataType::Float32(), {n});
  Var i("i");
  Stmt hinted = For(i, 0, n, ForKind::kVectorized, BufferStore(b, a.Load({i}) * F32(3) + F32(1), {i}));

  Var io("io"), t("t");
  PrimExpr full = FloorDiv(PrimExpr(n), PrimExpr(8));
  PrimExpr lanes = Ramp(io * 8, 1, 8);
  Stmt vector_part = Serial(io, 0, full,
                            BufferStore(b, a.Load({lanes}) * Broadcast(F32(3), 8) + Broadcast(F32(1), 8), {lanes}));
  Stmt tail = Serial(t, full * 8, n - full * 8, BufferStore(b, a.Load({t}) * F32(3) + F32(1), {t}));
  Kernels k({{"vec_hint", PrimFunc({P(a), P(b)}, hinted)},
             {"vec_ramp", PrimFunc({P(a), P(b)}, SeqStmt({vector_part, tail}))}});
  auto ctx = MakeContext(&FourThreads());
  for (const char* name : {"vec_hint", "vec_ramp"}) {
    for (int64_t size : {1, 5, 8, 21, 1003}) {
      vm::Tensor in = RandomF32({size}, 9), out = MakeTensor({size}, kF32);
      ASSERT_EQ(Invoke(k.Get(name), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
      for (int64_t x = 0; x < size; ++x) {
        ASSERT_FLOAT_EQ(out.data_as<float>()[x], in.data_as<float>()[x] * 3.0f + 1.0f) << name << " size=" << size;
      }
    }
  }
}

// C = A x B with the output columns as 8 SIMD lanes: C[i, j] = 0, then
// C[i, j] += A[i, k] * B[k, j] for j vectorized (an in-place vector update).
PrimFunc VectorMatmulFunc() {
  Var m = Var::Shape("M");
  Buffer a("A", DataType::Float32(), {m, 16});
  Buffer b("B", DataType::Float32(), {16, 8});
  Buffer c("C", DataType::Float32(), {m, 8});
  Var i("i"), j0("j0"), k("k"), j("j");
  Stmt zero = For(j0, 0, 8, ForKind::kVectorized, BufferStore(c, F32(0), {i, j0}));
  Stmt update = Serial(k, 0, 16,
                       For(j, 0, 8, ForKind::kVectorized,
                           BufferStore(c, c.Load({i, j}) + a.Load({i, k}) * b.Load({k, j}), {i, j})));
  return PrimFunc({P(a), P(b), P(c)}, Serial(i, 0, m, SeqStmt({zero, update})));
}

TEST(LlvmCodegenTest, ConstantExtentVectorizedLoopsBecomeSimdCode) {
  // The unoptimized IR already has the vectors: they come from the code generator.
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"vmatmul", VectorMatmulFunc()}}, CpuTarget::Host(), false);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_THAT(*ir, HasSubstr("load <8 x float>"));
  EXPECT_THAT(*ir, HasSubstr("store <8 x float>"));

  // Split loop with a vectorized inner part, math on lanes, and a scalar tail.
  Var n = Var::Shape("n");
  Buffer x("X", DataType::Float32(), {n});
  Buffer y("Y", DataType::Float32(), {n});
  Var io("io"), ii("ii"), t("t"), e("e", DataType::Float32());
  PrimExpr idx = io * 8 + ii;
  PrimExpr full = FloorDiv(PrimExpr(n), PrimExpr(8));
  Stmt lanes = For(ii, 0, 8, ForKind::kVectorized,
                   LetStmt(e, Call("exp", {x.Load({idx})}),
                           BufferStore(y, Select(GT(x.Load({idx}), F32(0)), e * F32(2), Cast(DataType::Float32(), ii)),
                                       {idx})));
  Stmt tail = Serial(t, full * 8, n - full * 8,
                     BufferStore(y, Select(GT(x.Load({t}), F32(0)), Call("exp", {x.Load({t})}) * F32(2),
                                           Cast(DataType::Float32(), FloorMod(PrimExpr(t), PrimExpr(8)))),
                                 {t}));
  PrimFunc vsplit({P(x), P(y)}, SeqStmt({Serial(io, 0, full, lanes), tail}));
  // io * 8 + ii stays a ramp with stride 1, so X and Y are accessed as whole vectors.
  ir = DumpCpuLlvmIr({{"vsplit", vsplit}}, CpuTarget::Host(), false);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_THAT(*ir, HasSubstr("load <8 x float>"));
  EXPECT_THAT(*ir, HasSubstr("store <8 x float>"));
  Kernels k({{"vmatmul", VectorMatmulFunc()}, {"vsplit", vsplit}});
  auto ctx = MakeContext(&FourThreads());
  for (int64_t rows : {1, 7}) {
    vm::Tensor av = RandomF32({rows, 16}, 20), bv = RandomF32({16, 8}, 21), cv = RandomF32({rows, 8}, 22, 50, 60);
    ASSERT_EQ(Invoke(k.Get("vmatmul"), ctx.get(), {TensorArg(av), TensorArg(bv), TensorArg(cv)}), 0) << ctx->error;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t col = 0; col < 8; ++col) {
        float expected = 0;
        for (int64_t z = 0; z < 16; ++z) expected += av.data_as<float>()[r * 16 + z] * bv.data_as<float>()[z * 8 + col];
        ASSERT_NEAR(cv.data_as<float>()[r * 8 + col], expected, 1e-4);
      }
    }
  }
  for (int64_t size : {5, 8, 21}) {
    vm::Tensor in = RandomF32({size}, 23), out = MakeTensor({size}, kF32);
    ASSERT_EQ(Invoke(k.Get("vsplit"), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
    for (int64_t z = 0; z < size; ++z) {
      float v = in.data_as<float>()[z];
      float expected = v > 0 ? std::exp(v) * 2.0f : static_cast<float>(z % 8);
      ASSERT_NEAR(out.data_as<float>()[z], expected, 1e-5 * std::max(1.0f, std::fabs(expected))) << "size=" << size;
    }
  }
}

TEST(LlvmCodegenTest, VectorizedLoopAroundAReductionBlock) {
  // TensorIR-style matmul with the j loop vectorized around the block: the block dissolves,
  // init runs when k == 0, and the lanes are the 8 columns.
  Var m = Var::Shape("M");
  Buffer a("A", DataType::Float32(), {m, 16});
  Buffer b("B", DataType::Float32(), {16, 8});
  Buffer c("C", DataType::Float32(), {m, 8});
  Var i("i"), j("j"), kk("k");
  Var vi("vi"), vj("vj"), vk("vk");
  Stmt block = Block("C",
                     {IterVar{vi, m, IterType::kSpatial, i}, IterVar{vj, 8, IterType::kSpatial, j},
                      IterVar{vk, 16, IterType::kReduction, kk}},
                     BufferStore(c, c.Load({vi, vj}) + a.Load({vi, vk}) * b.Load({vk, vj}), {vi, vj}),
                     /*init=*/BufferStore(c, F32(0), {vi, vj}));
  PrimFunc func({P(a), P(b), P(c)}, Serial(i, 0, m, Serial(kk, 0, 16, For(j, 0, 8, ForKind::kVectorized, block))));
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"bmatmul", func}}, CpuTarget::Host(), false);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_THAT(*ir, HasSubstr("store <8 x float>"));
  Kernels k({{"bmatmul", func}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor av = RandomF32({5, 16}, 24), bv = RandomF32({16, 8}, 25), cv = RandomF32({5, 8}, 26, 50, 60);
  ASSERT_EQ(Invoke(k.Get("bmatmul"), ctx.get(), {TensorArg(av), TensorArg(bv), TensorArg(cv)}), 0) << ctx->error;
  for (int64_t r = 0; r < 5; ++r) {
    for (int64_t col = 0; col < 8; ++col) {
      float expected = 0;
      for (int64_t z = 0; z < 16; ++z) expected += av.data_as<float>()[r * 16 + z] * bv.data_as<float>()[z * 8 + col];
      ASSERT_NEAR(cv.data_as<float>()[r * 8 + col], expected, 1e-4);
    }
  }
}

TEST(LlvmCodegenTest, VectorizedLoopsThatCannotBeLanesKeepSequentialMeaning) {
  // B[v] = B[v + 1] reads another iteration's element, and the `if` condition differs per
  // lane: both stay loops (with the vectorize hint) and give the sequential result.
  Buffer b("B", DataType::Float32(), {9});
  Var v("v"), w("w");
  Stmt shift = For(v, 0, 8, ForKind::kVectorized, BufferStore(b, b.Load({v + 1}), {v}));
  Stmt guarded = For(w, 0, 8, ForKind::kVectorized,
                     IfThenElse(LT(PrimExpr(w), PrimExpr(4)), BufferStore(b, b.Load({w}) * F32(10), {w})));
  Kernels k({{"shift", PrimFunc({P(b)}, SeqStmt({shift, guarded}))}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor t = MakeTensor({9}, kF32);
  for (int z = 0; z < 9; ++z) t.data_as<float>()[z] = static_cast<float>(z);
  ASSERT_EQ(Invoke(k.Get("shift"), ctx.get(), {TensorArg(t)}), 0) << ctx->error;
  for (int z = 0; z < 8; ++z) EXPECT_EQ(t.data_as<float>()[z], static_cast<float>(z + 1) * (z < 4 ? 10 : 1));
  EXPECT_EQ(t.data_as<float>()[8], 8.0f);
}

TEST(LlvmCodegenTest, BroadcastPlusRampIsAContiguousAccess) {
  // Hand-written vector IR in the unnormalized form broadcast(8 * io) + ramp(0, 1, 8).
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {n});
  Buffer b("B", DataType::Float32(), {n});
  Var io("io");
  PrimExpr lanes = Broadcast(io * 8, 8) + Ramp(PrimExpr(0), 1, 8);
  PrimFunc func({P(a), P(b)}, Serial(io, 0, FloorDiv(PrimExpr(n), PrimExpr(8)),
                                     BufferStore(b, a.Load({lanes}) + a.Load({lanes}), {lanes})));
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"twice", func}}, CpuTarget::Host(), false);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_THAT(*ir, HasSubstr("load <8 x float>"));
  EXPECT_THAT(*ir, HasSubstr("store <8 x float>"));
  Kernels k({{"twice", func}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor in = RandomF32({16}, 30), out = MakeTensor({16}, kF32);
  ASSERT_EQ(Invoke(k.Get("twice"), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
  for (int e = 0; e < 16; ++e) EXPECT_EQ(out.data_as<float>()[e], 2 * in.data_as<float>()[e]);
}

TEST(LlvmCodegenTest, StridedVectorAccessGathersAndScatters) {
  // B[ramp(2 * io, 1, 2)] for a row-major [n, 2] view: B[io, 0..1] = A[0..1, io] (a transpose
  // through lanes whose first index is a vector).
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {2, n});
  Buffer b("B", DataType::Float32(), {n, 2});
  Var io("io");
  Stmt body = Serial(io, 0, n,
                     BufferStore(b, a.Load({Ramp(PrimExpr(0), 1, 2), Broadcast(io, 2)}), {Broadcast(io, 2), Ramp(PrimExpr(0), 1, 2)}));
  Kernels k({{"transpose", PrimFunc({P(a), P(b)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor in = RandomF32({2, 5}, 10), out = MakeTensor({5, 2}, kF32);
  ASSERT_EQ(Invoke(k.Get("transpose"), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
  for (int r = 0; r < 5; ++r) {
    for (int col = 0; col < 2; ++col) EXPECT_EQ(out.data_as<float>()[r * 2 + col], in.data_as<float>()[col * 5 + r]);
  }
}

TEST(LlvmCodegenTest, MathIntrinsicsMatchLibm) {
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {n});
  const std::vector<std::string> ops = {"exp", "tanh", "erf", "sigmoid", "log", "sqrt", "rsqrt", "fabs",
                                        "floor", "ceil", "round", "sin", "cos", "pow"};
  NamedPrimFuncs funcs;
  for (const std::string& op : ops) {
    Buffer out("out", DataType::Float32(), {n});
    Var i("i");
    PrimExpr x = a.Load({i});
    PrimExpr arg = (op == "log" || op == "sqrt" || op == "rsqrt" || op == "pow") ? Call("fabs", {x}) + F32(0.25) : x;
    PrimExpr value = op == "pow" ? Call("pow", {arg, F32(1.5)}) : Call(op, {arg});
    funcs.push_back({"f_" + op, PrimFunc({P(a), P(out)}, Serial(i, 0, n, BufferStore(out, value, {i})))});
  }
  // tanh and erf on 4-lane vectors (one libm call per lane).
  {
    Buffer out("out", DataType::Float32(), {n});
    Var io("io");
    PrimExpr lanes = Ramp(io * 4, 1, 4);
    PrimExpr x = a.Load({lanes});
    funcs.push_back({"vec_tanh_erf",
                     PrimFunc({P(a), P(out)}, Serial(io, 0, FloorDiv(PrimExpr(n), PrimExpr(4)),
                                                     BufferStore(out, Call("tanh", {x}) + Call("erf", {x}), {lanes})))});
  }
  Kernels k(funcs);
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor in = RandomF32({64}, 11, -3, 3);
  in.data_as<float>()[0] = 0.5f;  // a tie for round: half to even
  in.data_as<float>()[1] = -2.5f;
  auto reference = [](const std::string& op, double x) -> double {
    double pos = std::fabs(x) + 0.25;
    if (op == "exp") return std::exp(x);
    if (op == "tanh") return std::tanh(x);
    if (op == "erf") return std::erf(x);
    if (op == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (op == "log") return std::log(pos);
    if (op == "sqrt") return std::sqrt(pos);
    if (op == "rsqrt") return 1.0 / std::sqrt(pos);
    if (op == "fabs") return std::fabs(x);
    if (op == "floor") return std::floor(x);
    if (op == "ceil") return std::ceil(x);
    if (op == "round") return std::nearbyint(x);
    if (op == "sin") return std::sin(x);
    if (op == "cos") return std::cos(x);
    if (op == "pow") return std::pow(pos, 1.5);
    return NAN;
  };
  for (const std::string& op : ops) {
    vm::Tensor out = MakeTensor({64}, kF32);
    ASSERT_EQ(Invoke(k.Get("f_" + op), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
    for (int x = 0; x < 64; ++x) {
      double expected = reference(op, in.data_as<float>()[x]);
      ASSERT_NEAR(out.data_as<float>()[x], expected, 2e-6 * std::max(1.0, std::fabs(expected)))
          << op << "(" << in.data_as<float>()[x] << ")";
    }
  }
  vm::Tensor out = MakeTensor({64}, kF32);
  ASSERT_EQ(Invoke(k.Get("vec_tanh_erf"), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
  for (int x = 0; x < 64; ++x) {
    double v = in.data_as<float>()[x];
    ASSERT_NEAR(out.data_as<float>()[x], std::tanh(v) + std::erf(v), 4e-6);
  }
}

TEST(LlvmCodegenTest, FloorDivAndFloorModRoundTowardMinusInfinity) {
  NamedPrimFuncs funcs;
  for (DataType t : {DataType::Int32(), DataType::Int64()}) {
    Var n = Var::Shape("n");
    Buffer a("A", t, {n}), b("B", t, {n}), q("Q", t, {n}), r("R", t, {n});
    Var i("i");
    Stmt body = Serial(i, 0, n,
                       SeqStmt({BufferStore(q, FloorDiv(a.Load({i}), b.Load({i})), {i}),
                                BufferStore(r, FloorMod(a.Load({i}), b.Load({i})), {i})}));
    funcs.push_back({"divmod_" + t.ToString(), PrimFunc({P(a), P(b), P(q), P(r)}, body)});
  }
  Kernels k(funcs);
  auto ctx = MakeContext(&FourThreads());
  std::vector<std::pair<int64_t, int64_t>> cases;
  for (int64_t x : {-9, -7, -6, -1, 0, 1, 5, 6, 7, 100}) {
    for (int64_t y : {-7, -3, -1, 1, 2, 3, 7}) cases.push_back({x, y});
  }
  const int64_t count = static_cast<int64_t>(cases.size());
  for (bool wide : {false, true}) {
    DLDataType dt = wide ? kI64 : kI32;
    vm::Tensor a = MakeTensor({count}, dt), b = MakeTensor({count}, dt), q = MakeTensor({count}, dt),
               r = MakeTensor({count}, dt);
    for (int64_t c = 0; c < count; ++c) {
      if (wide) {
        a.data_as<int64_t>()[c] = cases[c].first;
        b.data_as<int64_t>()[c] = cases[c].second;
      } else {
        a.data_as<int32_t>()[c] = static_cast<int32_t>(cases[c].first);
        b.data_as<int32_t>()[c] = static_cast<int32_t>(cases[c].second);
      }
    }
    std::string name = wide ? "divmod_int64" : "divmod_int32";
    ASSERT_EQ(Invoke(k.Get(name), ctx.get(), {TensorArg(a), TensorArg(b), TensorArg(q), TensorArg(r)}), 0) << ctx->error;
    for (int64_t c = 0; c < count; ++c) {
      auto [x, y] = cases[c];
      int64_t expected_q = static_cast<int64_t>(std::floor(static_cast<double>(x) / static_cast<double>(y)));
      int64_t expected_r = x - expected_q * y;
      int64_t got_q = wide ? q.data_as<int64_t>()[c] : q.data_as<int32_t>()[c];
      int64_t got_r = wide ? r.data_as<int64_t>()[c] : r.data_as<int32_t>()[c];
      EXPECT_EQ(got_q, expected_q) << "floordiv(" << x << ", " << y << ")";
      EXPECT_EQ(got_r, expected_r) << "floormod(" << x << ", " << y << ")";
    }
  }
}

TEST(LlvmCodegenTest, LetStmtAndAllocationsOnStackAndWorkspace) {
  // T = workspace[n]: T[i] = A[i] + 1; S = stack[4]: S[j] = j * 0.5;
  // B[i] = let x = T[n - 1 - i] in x * x + S[i mod 4] (+ a let expression).
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {n});
  Buffer b("B", DataType::Float32(), {n});
  Buffer tmp("T", DataType::Float32(), {n});
  Buffer small("S", DataType::Float32(), {4}, {}, "local");
  Var i("i"), j("j"), i2("i2"), x("x", DataType::Float32()), y("y", DataType::Float32());
  Stmt fill_t = Serial(i, 0, n, BufferStore(tmp, a.Load({i}) + F32(1), {i}));
  Stmt fill_s = Serial(j, 0, 4, BufferStore(small, Cast(DataType::Float32(), j) * F32(0.5), {j}));
  Stmt use = Serial(i2, 0, n,
                    LetStmt(x, tmp.Load({n - 1 - i2}),
                            BufferStore(b, Let(y, x * x, y + small.Load({FloorMod(PrimExpr(i2), PrimExpr(4))})), {i2})));
  Stmt body = Allocate(tmp, Allocate(small, SeqStmt({fill_t, fill_s, use})));
  Kernels k({{"let_alloc", PrimFunc({P(a), P(b)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  for (int64_t size : {1, 6, 300}) {
    vm::Tensor in = RandomF32({size}, 12), out = MakeTensor({size}, kF32);
    int64_t before = ctx->workspace_allocations;
    ASSERT_EQ(Invoke(k.Get("let_alloc"), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
    EXPECT_EQ(ctx->workspace_allocations.load() - before, 1) << "T has a symbolic size; S is on the stack";
    EXPECT_EQ(ctx->live_workspaces.load(), 0);
    for (int64_t e = 0; e < size; ++e) {
      float t = in.data_as<float>()[size - 1 - e] + 1.0f;
      EXPECT_FLOAT_EQ(out.data_as<float>()[e], t * t + static_cast<float>(e % 4) * 0.5f);
    }
  }
}

TEST(LlvmCodegenTest, FreeingAWorkspaceNeverCapturesIt) {
  // T and U are workspace blocks (symbolic sizes), U inside T's scope: when U's allocation
  // fails, the error path frees T. Every free, that one included, says it does not capture
  // the pointer; otherwise T counts as escaped and LLVM may no longer assume the kernel's
  // arguments do not alias it (a matmul kept its accumulator tile in memory).
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {n});
  Buffer b("B", DataType::Float32(), {n});
  Buffer outer("T", DataType::Float32(), {n});
  Buffer inner("U", DataType::Float32(), {n});
  Var i("i"), j("j");
  Stmt fill = Serial(i, 0, n, BufferStore(outer, a.Load({i}) + F32(1), {i}));
  Stmt copy = Serial(j, 0, n, BufferStore(inner, outer.Load({j}) * F32(2), {j}));
  Stmt use = Serial(i, 0, n, BufferStore(b, inner.Load({i}), {i}));
  Stmt body = Allocate(outer, SeqStmt({fill, Allocate(inner, SeqStmt({copy, use}))}));
  PrimFunc func({P(a), P(b)}, body);
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"nested", func}}, CpuTarget::Host(), /*optimize=*/false);
  ASSERT_TRUE(ir.ok()) << ir.status();
  int frees = 0;
  for (size_t at = ir->find("call void %workspace_free"); at != std::string::npos;
       at = ir->find("call void %workspace_free", at + 1)) {
    ++frees;
    std::string line = ir->substr(at, ir->find('\n', at) - at);
    EXPECT_NE(line.find("nocapture"), std::string::npos) << line;
  }
  EXPECT_GE(frees, 3) << "T and U on the normal path, T on U's error path\n" << *ir;
  // And it still runs: B = 2 * (A + 1).
  Kernels k({{"nested", func}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor in = RandomF32({37}, 14), out = MakeTensor({37}, kF32);
  ASSERT_EQ(Invoke(k.Get("nested"), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
  EXPECT_EQ(ctx->live_workspaces.load(), 0);
  for (int e = 0; e < 37; ++e) EXPECT_FLOAT_EQ(out.data_as<float>()[e], 2.0f * (in.data_as<float>()[e] + 1.0f));
}

TEST(LlvmCodegenTest, ScalarParametersBoolBuffersSelectAndCasts) {
  // mask[i] = A[i] > threshold; out[i] = select(mask[i], A[i] * alpha, cast(float32, k)), and
  // idx[i] = cast(int32, max(A[i], 0) * 10) clamped by min(., 7).
  Var n = Var::Shape("n");
  Var alpha("alpha", DataType::Float(64));
  Var kvar("k", DataType::Int32());
  Var threshold("threshold", DataType::Float32());
  Buffer a("A", DataType::Float32(), {n});
  Buffer mask("mask", DataType::Bool(), {n});
  Buffer out("out", DataType::Float32(), {n});
  Buffer idx("idx", DataType::Int32(), {n});
  Var i("i");
  PrimExpr x = a.Load({i});
  Stmt body = Serial(
      i, 0, n,
      SeqStmt({BufferStore(mask, GT(x, PrimExpr(threshold)), {i}),
               BufferStore(out,
                           Select(mask.Load({i}), Cast(DataType::Float32(), Cast(DataType::Float(64), x) * alpha),
                                  Cast(DataType::Float32(), kvar)),
                           {i}),
               BufferStore(idx, Min(Cast(DataType::Int32(), Max(x, F32(0)) * F32(10)), IntImm(DataType::Int32(), 7)),
                           {i})}));
  Kernels k({{"mixed", PrimFunc({P(a), P(alpha), P(kvar), P(threshold), P(mask), P(out), P(idx)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor in = RandomF32({50}, 13);
  vm::Tensor m = MakeTensor({50}, DLDataType{6 /* bool */, 8, 1});
  vm::Tensor o = MakeTensor({50}, kF32);
  vm::Tensor ix = MakeTensor({50}, kI32);
  ASSERT_EQ(Invoke(k.Get("mixed"), ctx.get(),
                 {TensorArg(in), FloatArg(1.5), IntArg(-3), FloatArg(0.25), TensorArg(m), TensorArg(o), TensorArg(ix)}),
            0)
      << ctx->error;
  for (int e = 0; e < 50; ++e) {
    float v = in.data_as<float>()[e];
    bool above = v > 0.25f;
    EXPECT_EQ(m.data_as<uint8_t>()[e], above ? 1 : 0);
    EXPECT_FLOAT_EQ(o.data_as<float>()[e], above ? static_cast<float>(static_cast<double>(v) * 1.5) : -3.0f);
    EXPECT_EQ(ix.data_as<int32_t>()[e], std::min(static_cast<int32_t>(std::max(v, 0.0f) * 10.0f), 7));
  }
}

TEST(LlvmCodegenTest, UnrolledLoopAndIfThenElse) {
  Buffer a("A", DataType::Float(64), {8});
  Var i("i");
  Stmt body = For(i, 0, 8, ForKind::kUnrolled,
                  SeqStmt({Evaluate(Cast(DataType::Float(64), i)), IfThenElse(EQ(FloorMod(PrimExpr(i), PrimExpr(2)), PrimExpr(0)),
                             BufferStore(a, FloatImm(DataType::Float(64), 1.0), {i}),
                             BufferStore(a, Cast(DataType::Float(64), i), {i}))}));
  Kernels k({{"unrolled", PrimFunc({P(a)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor t = MakeTensor({8}, kF64);
  ASSERT_EQ(Invoke(k.Get("unrolled"), ctx.get(), {TensorArg(t)}), 0) << ctx->error;
  for (int e = 0; e < 8; ++e) EXPECT_EQ(t.data_as<double>()[e], e % 2 == 0 ? 1.0 : e);
}

// if (n < 8) { S0[16 s] } else if (n < 64) { S1[32 s], W[n] with a check } else { S2[4 s] },
// each side filling its buffer and writing B[i] = A[i] * (side + 1) + buffer[i mod size]:
// the dispatch of a tuned kernel, or BranchOn's versions (s = 64: 13 KiB of stack buffers in
// all, 9 KiB in the inner branch). In a loop: the same branches, inline.
PrimFunc DispatchFunc(bool in_a_loop = false, int64_t scale = 64) {
  Var n = Var::Shape("n", 4096);
  Buffer a("A", DataType::Float32(), {n});
  Buffer b("B", DataType::Float32(), {n});
  std::vector<Stmt> sides;
  const std::vector<int64_t> sizes = {16 * scale, 32 * scale, 4 * scale};
  for (size_t side = 0; side < sizes.size(); ++side) {
    Buffer local(absl::StrCat("S", side), DataType::Float32(), {sizes[side]}, {}, "local");
    Var j(absl::StrCat("j", side)), i(absl::StrCat("i", side));
    Stmt fill = Serial(j, 0, sizes[side], BufferStore(local, Cast(DataType::Float32(), j), {j}));
    PrimExpr value = a.Load({i}) * F32(static_cast<double>(side + 1)) +
                     local.Load({FloorMod(PrimExpr(i), PrimExpr(sizes[side]))});
    Stmt write = Serial(i, 0, n, BufferStore(b, value, {i}));
    Stmt body = Allocate(local, SeqStmt({fill, write}));
    if (side == 1) {  // a workspace and a check that fails on A[0] > 100
      Buffer work("W", DataType::Float32(), {n});
      PrimExpr first = a.Load({IntImm(DataType::Int64(), 0)});
      body = Allocate(work, SeqStmt({Assert(LE(first, F32(100)), "A[0] = {} is above 100", {Cast(DataType::Int64(), first)}),
                                     body}));
    }
    sides.push_back(body);
  }
  // In the loop the conditions test n + r (r = 0, 1), so they cannot move out of it; the
  // last iteration's side writes B.
  Var r("r");
  PrimExpr tested = in_a_loop ? n + r : PrimExpr(n);
  Stmt body = IfThenElse(LT(tested, IntImm(DataType::Int64(), 8)), sides[0],
                         IfThenElse(LT(tested, IntImm(DataType::Int64(), 64)), sides[1], sides[2]));
  if (in_a_loop) body = Serial(r, 0, 2, body);
  return PrimFunc({P(a), P(b)}, body);
}

TEST(LlvmCodegenTest, BranchesThatAllocateAreFunctionsOfTheirOwn) {
  // Each side of the dispatch is its own function (so one call's frame holds one side's
  // buffers), assuming what held where it is called: its branch conditions and n's
  // declared bounds.
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"dispatch", DispatchFunc()}}, CpuTarget::Host(), /*optimize=*/false);
  ASSERT_TRUE(ir.ok()) << ir.status();
  for (const char* side : {"branch0", "branch1", "branch2"}) {
    EXPECT_THAT(*ir, HasSubstr(absl::StrCat("define internal i32 @\"dispatch$", side, "\"(")));
  }
  EXPECT_THAT(*ir, Not(HasSubstr("dispatch$branch3"))) << "the chain's inner branch stays inline";
  EXPECT_THAT(*ir, HasSubstr("@llvm.assume"));
  absl::StatusOr<std::string> optimized = DumpCpuLlvmIr({{"dispatch", DispatchFunc()}}, CpuTarget::Host(), true);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_THAT(*optimized, HasSubstr("@\"dispatch$branch2\"(")) << "not inlined back";
  // Inside a loop a branch runs many times, and small buffers cost nothing side by side
  // (the call would): both stay inline.
  absl::StatusOr<std::string> looped = DumpCpuLlvmIr({{"looped", DispatchFunc(true)}}, CpuTarget::Host(), false);
  ASSERT_TRUE(looped.ok()) << looped.status();
  EXPECT_THAT(*looped, Not(HasSubstr("looped$branch")));
  absl::StatusOr<std::string> small = DumpCpuLlvmIr({{"small", DispatchFunc(false, 1)}}, CpuTarget::Host(), false);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_THAT(*small, Not(HasSubstr("small$branch")));

  Kernels k({{"dispatch", DispatchFunc()}, {"looped", DispatchFunc(true)}, {"small", DispatchFunc(false, 1)}});
  auto ctx = MakeContext(&FourThreads());
  for (const char* name : {"dispatch", "looped", "small"}) {
    for (int64_t size : {1, 7, 8, 63, 64, 300}) {
      vm::Tensor in = RandomF32({size}, 21), out = MakeTensor({size}, kF32);
      ASSERT_EQ(Invoke(k.Get(name), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
      const int64_t tested = std::string(name) == "looped" ? size + 1 : size;
      const int64_t scale = std::string(name) == "small" ? 1 : 64;
      const int64_t side = tested < 8 ? 0 : tested < 64 ? 1 : 2;
      const int64_t local = (side == 0 ? 16 : side == 1 ? 32 : 4) * scale;
      for (int64_t e = 0; e < size; ++e) {
        // (LLVM may contract the multiply-add into one FMA: one rounding fewer.)
        const float expected = in.data_as<float>()[e] * static_cast<float>(side + 1) + static_cast<float>(e % local);
        EXPECT_NEAR(out.data_as<float>()[e], expected, 1e-6f * (1.0f + std::abs(expected)))
            << name << " n = " << size << " at " << e;
      }
    }
    // A failed check inside a side: reported, its workspace freed, the code passed on.
    vm::Tensor in = RandomF32({10}, 22), out = MakeTensor({10}, kF32);
    in.data_as<float>()[0] = 1000.0f;
    EXPECT_EQ(Invoke(k.Get(name), ctx.get(), {TensorArg(in), TensorArg(out)}), 1);
    EXPECT_EQ(ctx->error, absl::StrCat("kernel ", name, ": A[0] = 1000 is above 100"));
    EXPECT_EQ(ctx->live_workspaces.load(), 0);
  }
}

// Per row, in parallel: copy the row into a workspace buffer (symbolic size), accumulate
// into a stack buffer, write out[i, j] = sum_k A[i, k] * (j + 1).
// With `outer`, the parallel loop itself sits inside a workspace allocation U[n] (filled
// with ones and multiplied in), so an inner failure has an outer block to free.
PrimFunc RowWorkFunc(bool outer = false) {
  Var m = Var::Shape("m"), n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {m, n});
  Buffer out("out", DataType::Float32(), {m, 4});
  Buffer row("row", DataType::Float32(), {n}, {}, "local");
  Buffer acc("acc", DataType::Float32(), {4}, {}, "local");
  Var i("i"), j("j"), k("k"), j2("j2"), k2("k2"), j3("j3");
  Buffer ones("U", DataType::Float32(), {n});
  Stmt copy = Serial(k, 0, n, BufferStore(row, outer ? a.Load({i, k}) * ones.Load({k}) : a.Load({i, k}), {k}));
  Stmt accumulate = Serial(
      j, 0, 4,
      SeqStmt({BufferStore(acc, F32(0), {j}),
               Serial(k2, 0, n,
                      BufferStore(acc, acc.Load({j}) + row.Load({k2}) * Cast(DataType::Float32(), j + 1), {j}))}));
  Stmt write = Serial(j3, 0, 4, BufferStore(out, acc.Load({j3}), {i, j3}));
  Stmt body = For(i, 0, m, ForKind::kParallel, Allocate(row, Allocate(acc, SeqStmt({copy, accumulate, write}))));
  if (outer) {
    Var u("u");
    body = Allocate(ones, SeqStmt({Serial(u, 0, n, BufferStore(ones, F32(1), {u})), body}));
  }
  return PrimFunc({P(a), P(out)}, body);
}

TEST(LlvmCodegenTest, AllocationsInsideAParallelLoop) {
  Kernels k({{"row_work", RowWorkFunc()}});
  auto ctx = MakeContext(&FourThreads());
  for (int64_t rows : {1, 9}) {
    vm::Tensor a = RandomF32({rows, 13}, 14), out = MakeTensor({rows, 4}, kF32);
    int64_t before = ctx->workspace_allocations;
    ASSERT_EQ(Invoke(k.Get("row_work"), ctx.get(), {TensorArg(a), TensorArg(out)}), 0) << ctx->error;
    EXPECT_EQ(ctx->workspace_allocations.load() - before, rows);
    EXPECT_EQ(ctx->live_workspaces.load(), 0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int c = 0; c < 4; ++c) {
        float sum = 0;
        for (int x = 0; x < 13; ++x) sum += a.data_as<float>()[r * 13 + x] * static_cast<float>(c + 1);
        EXPECT_NEAR(out.data_as<float>()[r * 4 + c], sum, 1e-4);
      }
    }
  }
}

// A softmax's shape: rows in parallel, M[i] = the max of row i (M a workspace of m floats
// allocated outside the loop), then B[i, j] = A[i, j] - M[i].
PrimFunc RowMinusMaxFunc() {
  Var m = Var::Shape("m"), n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {m, n});
  Buffer b("B", DataType::Float32(), {m, n});
  Buffer max("M", DataType::Float32(), {m});
  Var i("i"), j("j"), k("k");
  Stmt reduce = SeqStmt({BufferStore(max, a.Load({i, IntImm(DataType::Int64(), 0)}), {i}),
                         Serial(k, 1, n - 1, BufferStore(max, Max(max.Load({i}), a.Load({i, k})), {i}))});
  Stmt subtract = Serial(j, 0, n, BufferStore(b, a.Load({i, j}) - max.Load({i}), {i, j}));
  return PrimFunc({P(a), P(b)}, Allocate(max, For(i, 0, m, ForKind::kParallel, SeqStmt({reduce, subtract}))));
}

TEST(LlvmCodegenTest, AParallelBodyKnowsItsWorkspacesAreFresh) {
  // Loaded from the closure, the workspace M is a pointer any store to B may alias, and the
  // body reloaded M[i] after every element it stored. The body is lowered in a function
  // that takes M as a `noalias` parameter; once inlined, its accesses carry alias scopes.
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"rows", RowMinusMaxFunc()}}, CpuTarget::Host(), /*optimize=*/false);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_THAT(*ir, HasSubstr("noalias %M)"));
  absl::StatusOr<std::string> optimized = DumpCpuLlvmIr({{"rows", RowMinusMaxFunc()}}, CpuTarget::Host(), true);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_THAT(*optimized, HasSubstr("!alias.scope"));
  EXPECT_THAT(*optimized, Not(HasSubstr("$body\"("))) << "the body function is inlined into the parallel one";

  Kernels k({{"rows", RowMinusMaxFunc()}});
  auto ctx = MakeContext(&FourThreads());
  for (int64_t rows : {1, 5, 33}) {
    for (int64_t cols : {1, 7, 100}) {
      vm::Tensor a = RandomF32({rows, cols}, 15), b = MakeTensor({rows, cols}, kF32);
      ASSERT_EQ(Invoke(k.Get("rows"), ctx.get(), {TensorArg(a), TensorArg(b)}), 0) << ctx->error;
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = a.data_as<float>() + r * cols;
        const float max = *std::max_element(row, row + cols);
        for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(b.data_as<float>()[r * cols + c], row[c] - max) << r << ", " << c;
      }
    }
  }
}

TEST(LlvmCodegenTest, WorkspaceFailureInsideAParallelLoopIsReported) {
  Kernels k({{"row_work", RowWorkFunc()}, {"row_work_outer", RowWorkFunc(/*outer=*/true)}});
  auto ctx = MakeContext(&FourThreads());
  ctx->fail_after = 0;
  vm::Tensor a = RandomF32({3, 5}, 15), out = MakeTensor({3, 4}, kF32);
  EXPECT_NE(Invoke(k.Get("row_work"), ctx.get(), {TensorArg(a), TensorArg(out)}), 0);
  EXPECT_EQ(ctx->error, "kernel row_work: cannot allocate 20 bytes of workspace for buffer row");
  EXPECT_EQ(ctx->live_workspaces.load(), 0);

  // U is allocated, every row's buffer fails: the kernel still frees U before returning.
  auto outer_ctx = MakeContext(&FourThreads());
  outer_ctx->fail_after = 1;
  EXPECT_NE(Invoke(k.Get("row_work_outer"), outer_ctx.get(), {TensorArg(a), TensorArg(out)}), 0);
  EXPECT_EQ(outer_ctx->error, "kernel row_work_outer: cannot allocate 20 bytes of workspace for buffer row");
  EXPECT_EQ(outer_ctx->workspace_allocations.load(), 1);
  EXPECT_EQ(outer_ctx->live_workspaces.load(), 0);

  // And it computes the same as without U when memory suffices.
  auto fine = MakeContext(&FourThreads());
  vm::Tensor expected = MakeTensor({3, 4}, kF32);
  ASSERT_EQ(Invoke(k.Get("row_work"), fine.get(), {TensorArg(a), TensorArg(expected)}), 0) << fine->error;
  ASSERT_EQ(Invoke(k.Get("row_work_outer"), fine.get(), {TensorArg(a), TensorArg(out)}), 0) << fine->error;
  for (int e = 0; e < 12; ++e) EXPECT_EQ(out.data_as<float>()[e], expected.data_as<float>()[e]);
  EXPECT_EQ(fine->live_workspaces.load(), 0);
}

TEST(LlvmCodegenTest, FailedAssertReportsItsMessageAndFreesWorkspace) {
  // B[i] = A[I[i]] with the index checked, inside a workspace allocation the failing path
  // must free; the message's {} take the index (int32, sign-extended) and the position.
  Var n = Var::Shape("n"), m = Var::Shape("m");
  Buffer a("A", DataType::Float32(), {m});
  Buffer idx("I", DataType::Int32(), {n});
  Buffer b("B", DataType::Float32(), {n});
  Buffer scratch("scratch", DataType::Float32(), {n});
  Var i("i");
  PrimExpr index = idx.Load({i});
  PrimExpr in_range = And(GE(index, IntImm(DataType::Int32(), 0)), LT(Cast(DataType::Int64(), index), m));
  Stmt body = Serial(i, 0, n,
                     SeqStmt({Assert(in_range, "index {} at {} is outside [0, {}) 100%", {index, i, m}),
                              BufferStore(scratch, a.Load({Cast(DataType::Int64(), index)}), {i}),
                              BufferStore(b, scratch.Load({i}), {i})}));
  Kernels k({{"take_checked", PrimFunc({P(a), P(idx), P(b)}, Allocate(scratch, body))}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor values = RandomF32({5}, 3), indices = MakeTensor({3}, kI32), out = MakeTensor({3}, kF32);
  indices.data_as<int32_t>()[0] = 4;
  indices.data_as<int32_t>()[1] = -2;
  EXPECT_NE(Invoke(k.Get("take_checked"), ctx.get(), {TensorArg(values), TensorArg(indices), TensorArg(out)}), 0);
  EXPECT_EQ(ctx->error, "kernel take_checked: index -2 at 1 is outside [0, 5) 100%");
  indices.data_as<int32_t>()[1] = 2;
  ASSERT_EQ(Invoke(k.Get("take_checked"), ctx.get(), {TensorArg(values), TensorArg(indices), TensorArg(out)}), 0)
      << ctx->error;
  EXPECT_EQ(out.data_as<float>()[1], values.data_as<float>()[2]);
}

TEST(LlvmCodegenTest, ExplicitStridesAreBoundFromTheTensor) {
  // A is a [n, 4] view with a symbolic row stride s; B is compact.
  Var n = Var::Shape("n"), s = Var::Shape("s");
  Buffer a("A", DataType::Float32(), {n, 4}, {s, 1});
  Buffer b("B", DataType::Float32(), {n, 4});
  Var i("i"), j("j");
  Stmt body = Serial(i, 0, n, Serial(j, 0, 4, BufferStore(b, a.Load({i, j}), {i, j})));
  Kernels k({{"copy_view", PrimFunc({P(a), P(b)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor storage = RandomF32({3, 6}, 16);
  DLTensor view = *storage.dl_tensor();
  int64_t shape[2] = {3, 4};
  int64_t strides[2] = {6, 1};
  view.shape = shape;
  view.strides = strides;
  KilnArg view_arg{};
  view_arg.value.tensor = &view;
  view_arg.type_code = kKilnArgTensor;
  vm::Tensor out = MakeTensor({3, 4}, kF32);
  ASSERT_EQ(Invoke(k.Get("copy_view"), ctx.get(), {view_arg, TensorArg(out)}), 0) << ctx->error;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) EXPECT_EQ(out.data_as<float>()[r * 4 + c], storage.data_as<float>()[r * 6 + c]);
  }
  // Without strides the tensor is compact: s = 4.
  vm::Tensor compact = RandomF32({3, 4}, 17);
  ASSERT_EQ(Invoke(k.Get("copy_view"), ctx.get(), {TensorArg(compact), TensorArg(out)}), 0) << ctx->error;
  for (int e = 0; e < 12; ++e) EXPECT_EQ(out.data_as<float>()[e], compact.data_as<float>()[e]);
  // A constant stride is checked.
  strides[1] = 2;
  EXPECT_NE(Invoke(k.Get("copy_view"), ctx.get(), {view_arg, TensorArg(out)}), 0);
  EXPECT_EQ(ctx->error, "kernel copy_view: argument 0 (A) stride 1: expected 1, got 2");
}

TEST(LlvmCodegenTest, HalfPrecisionLoadsStoresAndArithmetic) {
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float(16), {n});
  Buffer twice("twice", DataType::Float(16), {n});
  Buffer wide("wide", DataType::Float32(), {n});
  Var i("i");
  Stmt body = Serial(i, 0, n,
                     SeqStmt({BufferStore(twice, a.Load({i}) + a.Load({i}), {i}),
                              BufferStore(wide, Cast(DataType::Float32(), a.Load({i})), {i})}));
  Kernels k({{"half", PrimFunc({P(a), P(twice), P(wide)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  // IEEE half bit patterns: 1.0, 2.5, -0.5 and their doubles 2.0, 5.0, -1.0.
  const uint16_t in_bits[3] = {0x3C00, 0x4100, 0xB800};
  const uint16_t twice_bits[3] = {0x4000, 0x4500, 0xBC00};
  const float values[3] = {1.0f, 2.5f, -0.5f};
  DLDataType f16{kDLFloat, 16, 1};
  vm::Tensor in = MakeTensor({3}, f16), t = MakeTensor({3}, f16), w = MakeTensor({3}, kF32);
  std::memcpy(in.data(), in_bits, sizeof(in_bits));
  ASSERT_EQ(Invoke(k.Get("half"), ctx.get(), {TensorArg(in), TensorArg(t), TensorArg(w)}), 0) << ctx->error;
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(t.data_as<uint16_t>()[e], twice_bits[e]);
    EXPECT_EQ(w.data_as<float>()[e], values[e]);
  }
}

// double -> half, rounded once to nearest even. The reference rounds in double: x over the
// half's quantum at x's binade (a power of two, so exact) to an integer, times the quantum.
uint16_t DoubleToHalfReference(double x) {
  if (std::isnan(x)) return 0x7E00;
  if (x == 0 || std::isinf(x)) return support::FloatToHalf(static_cast<float>(x));
  int exponent = 0;
  std::frexp(x, &exponent);  // |x| = m 2^exponent, m in [0.5, 1)
  double quantum = std::ldexp(1.0, std::max(exponent - 11, -24));
  double rounded = std::nearbyint(x / quantum) * quantum;
  if (std::fabs(rounded) > 65504) rounded = std::copysign(INFINITY, x);
  return support::FloatToHalf(static_cast<float>(rounded));  // exact: rounded is a half
}

TEST(LlvmCodegenTest, DoubleToHalfRoundsOnce) {
  // LLVM 14's own double -> half returned garbage (a libcall's result read from the wrong
  // register); rounding through float rounds twice. Scalar and vector code, ties included.
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float(64), {n});
  Buffer h("H", DataType::Float(16), {n});
  Var i("i");
  NamedPrimFuncs funcs = {
      {"scalar", PrimFunc({P(a), P(h)}, Serial(i, 0, n, BufferStore(h, Cast(DataType::Float(16), a.Load({i})), {i})))},
      {"vector", PrimFunc({P(a), P(h)}, For(i, 0, n, ForKind::kVectorized,
                                            BufferStore(h, Cast(DataType::Float(16), a.Load({i})), {i})))}};
  // This CPU, and the x86-64 baseline (no F16C: its float -> half is codegen/half_libcalls.h).
  absl::StatusOr<CpuTarget> baseline = CpuTarget::Named("x86-64");
  ASSERT_TRUE(baseline.ok()) << baseline.status();
  Kernels host(funcs), without_f16c(funcs, *baseline);
  std::vector<double> values = {
      0.0, -0.0, 1.0, 0.1, -2.5, 3.14159, 65504.0, 65519.99, 65520.0, -65520.0, 1e300, -1e300, 1e-300,
      std::ldexp(1.0, -24), std::ldexp(1.0, -25), std::ldexp(1.0, -25) * 1.0000001, std::ldexp(1.0, -14) * 0.75,
      1 + std::ldexp(1.0, -11),                      // a tie: to even, 1
      1 + 3 * std::ldexp(1.0, -11),                  // a tie: to even, up
      1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40),  // just above a tie: up (through float: a tie, down)
      1 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40),  // just below: down
      -(1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), INFINITY, -INFINITY, NAN};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-28, 17);
  while (values.size() < 301) values.push_back(std::ldexp(mantissa(rng), exponent(rng)));
  const int64_t count = static_cast<int64_t>(values.size());
  vm::Tensor in = MakeTensor({count}, kF64);
  std::memcpy(in.data(), values.data(), values.size() * sizeof(double));
  auto ctx = MakeContext(&FourThreads());
  for (const Kernels* k : {&host, &without_f16c}) {
    for (const char* name : {"scalar", "vector"}) {
      vm::Tensor out = MakeTensor({count}, DLDataType{kDLFloat, 16, 1});
      ASSERT_EQ(Invoke(k->Get(name), ctx.get(), {TensorArg(in), TensorArg(out)}), 0) << ctx->error;
      for (int64_t e = 0; e < count; ++e) {
        EXPECT_EQ(out.data_as<uint16_t>()[e], DoubleToHalfReference(values[e]))
            << name << (k == &host ? " host " : " x86-64 ") << values[e];
      }
    }
  }
  // The host's own double -> half (SPIR-V constants, tensor fills): the same two steps.
  for (double v : values) EXPECT_EQ(support::DoubleToHalf(v), DoubleToHalfReference(v)) << "support " << v;
}

// Half <-> float for a CPU without F16C (`--mcpu x86-64`): LLVM calls __gnu_h2f_ieee /
// __gnu_f2h_ieee there, which the kernel module defines itself (codegen/half_libcalls.h).
// Every half widened, a sweep of floats narrowed (ties, subnormals, overflow, NaN payloads),
// float16 arithmetic, scalar and vector code; checked against support/float16.h and, where
// this machine has F16C, against the hardware's own conversions bit for bit.
__attribute__((target("f16c"))) float HardwareHalfToFloat(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t HardwareFloatToHalf(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

uint32_t ExpectedWideBits(uint16_t h) {
  if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) {  // NaN: payload kept, made quiet
    return (static_cast<uint32_t>(h & 0x8000) << 16) | 0x7fc00000 | (static_cast<uint32_t>(h & 0x3ff) << 13);
  }
  return std::bit_cast<uint32_t>(support::HalfToFloat(h));
}

uint16_t ExpectedNarrowBits(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>(((bits >> 16) & 0x8000) | 0x7e00 | ((bits >> 13) & 0x3ff));
  return support::FloatToHalf(f);
}

TEST(LlvmCodegenTest, HalfConversionsWithoutF16C) {
  Var n = Var::Shape("n");
  Buffer h("H", DataType::Float(16), {n}), h2("H2", DataType::Float(16), {n}), f("F", DataType::Float32(), {n});
  Var i("i");
  auto loop = [&](ForKind kind, Stmt body) { return For(i, 0, n, kind, std::move(body)); };
  NamedPrimFuncs funcs;
  for (auto [suffix, kind] : {std::pair{"scalar", ForKind::kSerial}, std::pair{"vector", ForKind::kVectorized}}) {
    funcs.emplace_back(absl::StrCat("widen_", suffix),
                       PrimFunc({P(h), P(f)}, loop(kind, BufferStore(f, Cast(DataType::Float32(), h.Load({i})), {i}))));
    funcs.emplace_back(absl::StrCat("narrow_", suffix),
                       PrimFunc({P(f), P(h)}, loop(kind, BufferStore(h, Cast(DataType::Float(16), f.Load({i})), {i}))));
    funcs.emplace_back(absl::StrCat("add_", suffix),
                       PrimFunc({P(h), P(h2)}, loop(kind, BufferStore(h2, h.Load({i}) + h2.Load({i}), {i}))));
  }
  absl::StatusOr<CpuTarget> baseline = CpuTarget::Named("x86-64");
  ASSERT_TRUE(baseline.ok()) << baseline.status();
  Kernels k(funcs, *baseline);
  const bool hardware = __builtin_cpu_supports("f16c");
  auto ctx = MakeContext(&FourThreads());
  const DLDataType f16{kDLFloat, 16, 1};

  const int64_t halves = 65536;
  vm::Tensor every_half = MakeTensor({halves}, f16);
  for (int64_t v = 0; v < halves; ++v) every_half.data_as<uint16_t>()[v] = static_cast<uint16_t>(v);

  // Floats: every half's value and its neighbours one float ulp away, the midpoints between
  // consecutive halves (ties) and theirs, float subnormals, NaNs with payloads, and a
  // stride through all 2^32 bit patterns.
  std::vector<uint32_t> float_bits;
  for (uint32_t v = 0; v < 0x7c00; ++v) {
    const uint32_t at = std::bit_cast<uint32_t>(support::HalfToFloat(static_cast<uint16_t>(v)));
    const uint32_t tie = std::bit_cast<uint32_t>(
        (support::HalfToFloat(static_cast<uint16_t>(v)) + support::HalfToFloat(static_cast<uint16_t>(v + 1))) / 2);
    for (uint32_t sign : {0u, 0x80000000u}) {
      for (uint32_t b : {at, tie}) {
        for (uint32_t near : {b - 1, b, b + 1}) float_bits.push_back(sign | (near & 0x7fffffff));
      }
    }
  }
  for (uint32_t b : {0x00000001u, 0x007fffffu, 0x33000000u, 0x33000001u, 0x477fefffu, 0x477ff000u, 0x7f7fffffu,
                     0x7f800000u, 0x7f800001u, 0x7fa00000u, 0x7fc00000u, 0x7fffe000u, 0x7fffffffu, 0xffc02000u}) {
    float_bits.push_back(b);
  }
  for (uint64_t b = 0; b < (1ull << 32); b += 4099) float_bits.push_back(static_cast<uint32_t>(b));
  const int64_t count = static_cast<int64_t>(float_bits.size());
  vm::Tensor floats = MakeTensor({count}, kF32);
  std::memcpy(floats.data(), float_bits.data(), float_bits.size() * 4);

  for (const char* suffix : {"scalar", "vector"}) {
    vm::Tensor wide = MakeTensor({halves}, kF32);
    ASSERT_EQ(Invoke(k.Get(absl::StrCat("widen_", suffix)), ctx.get(), {TensorArg(every_half), TensorArg(wide)}), 0)
        << ctx->error;
    int wrong = 0;
    for (int64_t v = 0; v < halves && wrong < 10; ++v) {
      const uint32_t got = wide.data_as<uint32_t>()[v];
      const uint16_t half = static_cast<uint16_t>(v);
      if (got != ExpectedWideBits(half) ||
          (hardware && got != std::bit_cast<uint32_t>(HardwareHalfToFloat(half)))) {
        ADD_FAILURE() << suffix << " widen 0x" << std::hex << v << ": got 0x" << got;
        ++wrong;
      }
    }
    vm::Tensor narrow = MakeTensor({count}, f16);
    ASSERT_EQ(Invoke(k.Get(absl::StrCat("narrow_", suffix)), ctx.get(), {TensorArg(floats), TensorArg(narrow)}), 0)
        << ctx->error;
    wrong = 0;
    for (int64_t e = 0; e < count && wrong < 10; ++e) {
      const uint16_t got = narrow.data_as<uint16_t>()[e];
      const float value = std::bit_cast<float>(float_bits[e]);
      if (got != ExpectedNarrowBits(value) || (hardware && got != HardwareFloatToHalf(value))) {
        ADD_FAILURE() << suffix << " narrow 0x" << std::hex << float_bits[e] << ": got 0x" << got;
        ++wrong;
      }
    }
    // Arithmetic: each half plus another, added in float and rounded to half (LLVM widens
    // float16 arithmetic to float), so the libcalls serve arithmetic as well as casts.
    vm::Tensor sum = MakeTensor({halves}, f16);
    for (int64_t v = 0; v < halves; ++v) sum.data_as<uint16_t>()[v] = static_cast<uint16_t>(v * 40503 + 7);
    std::vector<uint16_t> addend(sum.data_as<uint16_t>(), sum.data_as<uint16_t>() + halves);
    ASSERT_EQ(Invoke(k.Get(absl::StrCat("add_", suffix)), ctx.get(), {TensorArg(every_half), TensorArg(sum)}), 0)
        << ctx->error;
    wrong = 0;
    for (int64_t v = 0; v < halves && wrong < 10; ++v) {
      const float exact = support::HalfToFloat(static_cast<uint16_t>(v)) + support::HalfToFloat(addend[v]);
      const uint16_t got = sum.data_as<uint16_t>()[v];
      const bool both_nan = std::isnan(exact) && std::isnan(support::HalfToFloat(got));
      if (!both_nan && got != support::FloatToHalf(exact)) {
        ADD_FAILURE() << suffix << " 0x" << std::hex << v << " + 0x" << addend[v] << ": got 0x" << got;
        ++wrong;
      }
    }
  }
}

TEST(LlvmCodegenTest, PrologueReportsArgumentErrors) {
  Kernels k({{"add", AddFunc()}});
  KilnKernelFn add = k.Get("add");
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor a7 = RandomF32({7}, 1), b7 = RandomF32({7}, 2), c7 = MakeTensor({7}, kF32);
  vm::Tensor b8 = RandomF32({8}, 2);
  vm::Tensor b2d = RandomF32({7, 1}, 2);
  vm::Tensor b_f64 = MakeTensor({7}, kF64);

  EXPECT_NE(Invoke(add, ctx.get(), {TensorArg(a7), TensorArg(b8), TensorArg(c7)}), 0);
  EXPECT_EQ(ctx->error, "kernel add: argument 1 (B) dimension 0: expected 7 (n), got 8");

  EXPECT_NE(Invoke(add, ctx.get(), {TensorArg(a7), TensorArg(b2d), TensorArg(c7)}), 0);
  EXPECT_EQ(ctx->error, "kernel add: argument 1 (B): expected 1 dimensions, got 2");

  EXPECT_NE(Invoke(add, ctx.get(), {TensorArg(a7), TensorArg(b_f64), TensorArg(c7)}), 0);
  EXPECT_EQ(ctx->error,
            "kernel add: argument 1 (B): expected dtype float32 (code 2 bits 32 lanes 1), got code 2 bits 64 lanes 1");

  EXPECT_NE(Invoke(add, ctx.get(), {TensorArg(a7), TensorArg(b7)}), 0);
  EXPECT_EQ(ctx->error, "kernel add: expected 3 arguments, got 2");

  EXPECT_NE(Invoke(add, ctx.get(), {TensorArg(a7), IntArg(3), TensorArg(c7)}), 0);
  EXPECT_THAT(ctx->error, HasSubstr("kernel add: argument 1 (B): expected a tensor, got argument type code 1"));

  // Strided (non-compact) tensors are refused; a tensor with explicit compact strides is fine.
  DLTensor strided = *b7.dl_tensor();
  int64_t shape[1] = {3};
  int64_t bad_strides[1] = {2};
  strided.shape = shape;
  strided.strides = bad_strides;
  vm::Tensor a3 = RandomF32({3}, 1), c3 = MakeTensor({3}, kF32);
  KilnArg strided_arg{};
  strided_arg.value.tensor = &strided;
  strided_arg.type_code = kKilnArgTensor;
  EXPECT_NE(Invoke(add, ctx.get(), {TensorArg(a3), strided_arg, TensorArg(c3)}), 0);
  EXPECT_EQ(ctx->error,
            "kernel add: argument 1 (B) dimension 0: expected a compact row-major tensor (stride 1), got stride 2");
  int64_t good_strides[1] = {1};
  strided.strides = good_strides;
  EXPECT_EQ(Invoke(add, ctx.get(), {TensorArg(a3), strided_arg, TensorArg(c3)}), 0) << ctx->error;

  // Nothing was written by the failed calls' bodies, and a good call still works.
  ASSERT_EQ(Invoke(add, ctx.get(), {TensorArg(a7), TensorArg(b7), TensorArg(c7)}), 0) << ctx->error;
  EXPECT_EQ(c7.data_as<float>()[6], a7.data_as<float>()[6] + b7.data_as<float>()[6]);
}

TEST(LlvmCodegenTest, ConstantDimensionsAndDeclaredBoundsAreChecked) {
  Var n = Var::Shape("n", /*upper_bound=*/16);
  Buffer a("A", DataType::Float32(), {n, 3});
  Var i("i");
  Stmt body = Serial(i, 0, n, BufferStore(a, F32(1), {i, 0}));
  Kernels k({{"bounded", PrimFunc({P(a)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor wrong_cols = MakeTensor({4, 2}, kF32);
  EXPECT_NE(Invoke(k.Get("bounded"), ctx.get(), {TensorArg(wrong_cols)}), 0);
  EXPECT_EQ(ctx->error, "kernel bounded: argument 0 (A) dimension 1: expected 3, got 2");
  vm::Tensor too_big = MakeTensor({17, 3}, kF32);
  EXPECT_NE(Invoke(k.Get("bounded"), ctx.get(), {TensorArg(too_big)}), 0);
  EXPECT_EQ(ctx->error, "kernel bounded: argument 0 (A) dimension 0: n = 17 is above its declared upper bound 16");
  vm::Tensor ok = MakeTensor({16, 3}, kF32);
  EXPECT_EQ(Invoke(k.Get("bounded"), ctx.get(), {TensorArg(ok)}), 0) << ctx->error;
}

TEST(LlvmCodegenTest, CompileErrorsAreClear) {
  Buffer a("A", DataType::Float32(), {4});
  Var i("i");
  Stmt bound = For(i, 0, 4, ForKind::kThreadBinding, BufferStore(a, F32(0), {i}), "threadIdx.x");
  absl::StatusOr<std::string> so = BuildCpuSharedObject({{"gpu_only", PrimFunc({P(a)}, bound)}}, CpuTarget::Host());
  ASSERT_FALSE(so.ok());
  EXPECT_THAT(so.status().message(), HasSubstr("kernel gpu_only: loop i is bound to the GPU thread index threadIdx.x"));

  so = BuildCpuSharedObject({{"bad name", AddFunc()}}, CpuTarget::Host());
  ASSERT_FALSE(so.ok());
  EXPECT_THAT(so.status().message(), HasSubstr("kernel name 'bad name'"));

  so = BuildCpuSharedObject({{"tanhf", AddFunc()}}, CpuTarget::Host());
  ASSERT_FALSE(so.ok());
  EXPECT_THAT(so.status().message(), HasSubstr("C library function"));

  so = BuildCpuSharedObject({{"add", AddFunc()}, {"add", AddFunc()}}, CpuTarget::Host());
  ASSERT_FALSE(so.ok());
  EXPECT_THAT(so.status().message(), HasSubstr("defined twice"));

  Var undefined("m");
  Stmt uses_undefined = Serial(i, 0, 4, BufferStore(a, Cast(DataType::Float32(), undefined), {i}));
  so = BuildCpuSharedObject({{"undef", PrimFunc({P(a)}, uses_undefined)}}, CpuTarget::Host());
  ASSERT_FALSE(so.ok());
  EXPECT_THAT(so.status().message(), HasSubstr("variable m is used where it is not defined"));
}

TEST(LlvmCodegenTest, BaselineCpuTargetRuns) {
  // x86-64 baseline code runs anywhere; the same kernel gives the same answer.
  absl::StatusOr<CpuTarget> baseline = CpuTarget::Named("x86-64");
  ASSERT_TRUE(baseline.ok());
  Kernels k({{"add", AddFunc()}}, *baseline);
  auto ctx = MakeContext(&FourThreads());
  vm::Tensor a = RandomF32({33}, 1), b = RandomF32({33}, 2), c = MakeTensor({33}, kF32);
  ASSERT_EQ(Invoke(k.Get("add"), ctx.get(), {TensorArg(a), TensorArg(b), TensorArg(c)}), 0) << ctx->error;
  for (int e = 0; e < 33; ++e) EXPECT_EQ(c.data_as<float>()[e], a.data_as<float>()[e] + b.data_as<float>()[e]);
}

TEST(LlvmCodegenTest, OptimizedIrIsVectorized) {
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"add", AddFunc()}}, CpuTarget::Host(), /*optimize=*/true);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_THAT(*ir, HasSubstr("define i32 @add("));
  EXPECT_THAT(*ir, HasSubstr("x float>"));
}

// floordiv, floormod and truncating division by a tensor's values: a zero divisor and
// INT_MIN / -1 are reported (tir/transform/insert_division_checks.h) where the CPU would
// raise SIGFPE; other values give C++'s answers, rounded as each operation says.
TEST(LlvmCodegenTest, IntegerDivisionByZeroAndOverflowAreErrors) {
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Int32(), {n}), b("B", DataType::Int32(), {n});
  Buffer q("Q", DataType::Int32(), {n}), r("R", DataType::Int32(), {n}), t("T", DataType::Int32(), {n});
  Var i("i");
  Stmt body = Serial(i, 0, n,
                     SeqStmt({BufferStore(q, FloorDiv(a.Load({i}), b.Load({i})), {i}),
                              BufferStore(r, FloorMod(a.Load({i}), b.Load({i})), {i}),
                              BufferStore(t, Div(a.Load({i}), b.Load({i})), {i})}));
  Kernels k({{"idiv", PrimFunc({P(a), P(b), P(q), P(r), P(t)}, body)}});
  auto ctx = MakeContext(&FourThreads());
  auto run = [&](std::vector<int32_t> x, std::vector<int32_t> y, vm::Tensor* out_q = nullptr) {
    int64_t len = static_cast<int64_t>(x.size());
    vm::Tensor ta = MakeTensor({len}, kI32), tb = MakeTensor({len}, kI32), tq = MakeTensor({len}, kI32);
    vm::Tensor tr = MakeTensor({len}, kI32), tt = MakeTensor({len}, kI32);
    std::memcpy(ta.data(), x.data(), x.size() * 4);
    std::memcpy(tb.data(), y.data(), y.size() * 4);
    int32_t rc = Invoke(k.Get("idiv"), ctx.get(), {TensorArg(ta), TensorArg(tb), TensorArg(tq), TensorArg(tr), TensorArg(tt)});
    if (rc == 0) {
      for (size_t e = 0; e < x.size(); ++e) {
        int32_t trunc = x[e] / y[e], rem = x[e] % y[e];
        int32_t floor = (rem != 0 && ((rem < 0) != (y[e] < 0))) ? trunc - 1 : trunc;
        EXPECT_EQ(tq.data_as<int32_t>()[e], floor) << x[e] << " / " << y[e];
        EXPECT_EQ(tr.data_as<int32_t>()[e], x[e] - floor * y[e]) << x[e] << " % " << y[e];
        EXPECT_EQ(tt.data_as<int32_t>()[e], trunc) << x[e] << " / " << y[e];
      }
    }
    return rc;
  };
  EXPECT_EQ(run({7, -7, 7, -7, 0, -2147483647 - 1}, {2, 2, -2, -2, 5, 1}), 0) << ctx->error;
  EXPECT_NE(run({1, 2, 3}, {1, 0, 1}), 0);
  EXPECT_EQ(ctx->error, "kernel idiv: division by zero in floordiv(A[i], B[i])");
  EXPECT_NE(run({4, -2147483647 - 1}, {2, -1}), 0);
  EXPECT_EQ(ctx->error, "kernel idiv: integer overflow in floordiv(A[i], B[i]): -2147483648 divided by -1");
}

// The host half of a GPU function (a cuda target, split by split_host_device) is CPU code:
// it checks its arguments like any kernel, then calls ctx->launch with the launch
// dimensions and the device kernel's arguments.
struct LaunchRecorder {
  int32_t kernel = -1;
  KilnLaunchDims dims{};
  std::vector<KilnArg> args;
};
LaunchRecorder* recorder = nullptr;

int32_t RecordLaunch(KilnCallContext*, int32_t device_kernel, const KilnLaunchDims* dims, const KilnArg* args,
                     int32_t num_args) {
  recorder->kernel = device_kernel;
  recorder->dims = *dims;
  recorder->args.assign(args, args + num_args);
  return 0;
}

// The host half of a GPU function `func`, lowered and loaded as kernel `name` (the
// object keeps the code alive); `device_kernels` counts the kernels it launches.
struct GpuHost {
  std::shared_ptr<vm::KernelObject> object;
  KilnKernelFn fn = nullptr;
  size_t device_kernels = 0;
};

absl::StatusOr<GpuHost> LoadGpuHost(const std::string& name, const PrimFunc& func) {
  KILN_ASSIGN_OR_RETURN(tir::transform::LoweredFunc lowered, tir::transform::LowerPrimFunc(func, Target::Cpu()));
  KILN_ASSIGN_OR_RETURN(std::string so, BuildLoweredSharedObject({{name, lowered.host}}, CpuTarget::Host()));
  GpuHost host;
  KILN_ASSIGN_OR_RETURN(host.object, vm::KernelObject::Load(so));
  KILN_ASSIGN_OR_RETURN(host.fn, host.object->Find(name));
  host.device_kernels = lowered.device_kernels.size();
  return host;
}

TEST(LlvmCodegenTest, HostCodeOfGpuFunctionsLaunchesDeviceKernels) {
  Var n = Var::Shape("n");
  Buffer a("A", DataType::Float32(), {n});
  Var alpha("alpha", DataType::Float32());
  Var bx("bx"), tx("tx");
  PrimExpr idx = bx * 64 + tx;
  Stmt nest = For(bx, 0, FloorDiv(n + 63, 64), ForKind::kThreadBinding,
                  For(tx, 0, 64, ForKind::kThreadBinding,
                      IfThenElse(LT(idx, n), BufferStore(a, a.Load({idx}) * alpha, {idx})), "threadIdx.x"),
                  "blockIdx.x");
  PrimFunc func = WithTarget(PrimFunc({P(a), P(alpha)}, nest), Target::Cuda("sm_90"));
  absl::StatusOr<GpuHost> host_half = LoadGpuHost("scale", func);
  ASSERT_TRUE(host_half.ok()) << host_half.status();
  // n has no upper bound: the kernel with int64 indices and its int32 variant, which the host
  // code picks when n fits (narrow_gpu_indices).
  ASSERT_EQ(host_half->device_kernels, 2u);
  KilnKernelFn scale = host_half->fn;

  auto ctx = MakeContext(&FourThreads());
  // A tensor "in CUDA memory": the host code never reads its data, only passes the pointer.
  vm::Tensor host = MakeTensor({200}, kF32);
  DLTensor device = *host.dl_tensor();
  device.device = {kDLCUDA, 0};
  KilnArg arg{};
  arg.value.tensor = &device;
  arg.type_code = kKilnArgTensor;
  EXPECT_NE(Invoke(scale, ctx.get(), {arg, FloatArg(0.5)}), 0);
  EXPECT_EQ(ctx->error, "kernel scale: this call context cannot launch device kernels (the function was compiled for a GPU)");

  LaunchRecorder rec;
  recorder = &rec;
  ctx->ctx.launch = RecordLaunch;
  ASSERT_EQ(Invoke(scale, ctx.get(), {arg, FloatArg(0.5)}), 0) << ctx->error;
  EXPECT_EQ(rec.kernel, 1);  // n = 200 fits: the int32 variant
  EXPECT_EQ(rec.dims.grid[0], 4u);  // ceil(200 / 64)
  EXPECT_EQ(rec.dims.grid[1], 1u);
  EXPECT_EQ(rec.dims.block[0], 64u);
  EXPECT_EQ(rec.dims.block[2], 1u);
  ASSERT_EQ(rec.args.size(), 3u);  // A's data, n, alpha
  EXPECT_EQ(rec.args[0].type_code, kKilnArgHandle);
  EXPECT_EQ(rec.args[0].value.handle, host.data());
  EXPECT_EQ(rec.args[1].type_code, kKilnArgInt);
  EXPECT_EQ(rec.args[1].value.i64, 200);
  EXPECT_EQ(rec.args[2].type_code, kKilnArgFloat);
  EXPECT_EQ(rec.args[2].value.f64, 0.5);
  // A tensor in CPU memory is refused by the host code's prologue.
  EXPECT_NE(Invoke(scale, ctx.get(), {TensorArg(host), FloatArg(0.5)}), 0);
  EXPECT_EQ(ctx->error, "kernel scale: argument 0 (A): expected a tensor in CUDA memory, got DLPack device type 1");
  recorder = nullptr;
}

// ---------------------------------------------------------------- bit operations

template <typename T>
vm::Tensor FromVector(const std::vector<T>& values, DLDataType dtype) {
  vm::Tensor t = MakeTensor({static_cast<int64_t>(values.size())}, dtype);
  std::memcpy(t.data(), values.data(), values.size() * sizeof(T));
  return t;
}

template <typename T>
std::vector<T> ToVector(const vm::Tensor& t) {
  return std::vector<T>(t.data_as<T>(), t.data_as<T>() + t.numel());
}

PrimFunc ParseKernel(const char* text) {
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(text);
  KILN_CHECK(parsed.ok()) << parsed.status();
  return parsed->func;
}

// An intermediate the host half allocates between two kernels (softmax's row maximum) is
// device workspace: ctx->workspace_alloc even when it would fit the stack (the context's
// device is the GPU), the same address passed to both launches, freed after the last one and
// on every early return; a failed allocation is reported and launches nothing.
std::vector<std::vector<KilnArg>>* launches = nullptr;

int32_t RecordEveryLaunch(KilnCallContext*, int32_t, const KilnLaunchDims*, const KilnArg* args, int32_t num_args) {
  launches->emplace_back(args, args + num_args);
  return 0;
}

int32_t FailSecondLaunch(KilnCallContext* ctx, int32_t kernel, const KilnLaunchDims* dims, const KilnArg* args,
                         int32_t num_args) {
  if (!launches->empty()) {
    ctx->set_error(ctx, "the device is lost");
    return 1;
  }
  return RecordEveryLaunch(ctx, kernel, dims, args, num_args);
}

TEST(LlvmCodegenTest, HostAllocationsOfGpuFunctionsAreDeviceWorkspace) {
  PrimFunc func = ParseKernel(R"TIR(
prim_func @rows(A: Buffer((4, 16), float32), C: Buffer((4, 16), float32)) {
  attr target = "cuda -arch=sm_90"
  allocate M: Buffer((4,), float32) {
    for bx in thread_binding(0, 4, "blockIdx.x") {
      M[bx] = A[bx, 0]
    }
    for bx in thread_binding(0, 4, "blockIdx.x") {
      for tx in thread_binding(0, 16, "threadIdx.x") {
        C[bx, tx] = A[bx, tx] - M[bx]
      }
    }
  }
})TIR");
  absl::StatusOr<GpuHost> host_half = LoadGpuHost("rows", func);
  ASSERT_TRUE(host_half.ok()) << host_half.status();
  ASSERT_EQ(host_half->device_kernels, 2u);
  KilnKernelFn rows = host_half->fn;

  vm::Tensor a_host = MakeTensor({4, 16}, kF32), c_host = MakeTensor({4, 16}, kF32);
  DLTensor a = *a_host.dl_tensor(), c = *c_host.dl_tensor();
  a.device = c.device = {kDLCUDA, 0};
  KilnArg a_arg{}, c_arg{};
  a_arg.value.tensor = &a;
  c_arg.value.tensor = &c;
  a_arg.type_code = c_arg.type_code = kKilnArgTensor;

  std::vector<std::vector<KilnArg>> seen;
  launches = &seen;
  auto ctx = MakeContext(&FourThreads());
  ctx->ctx.launch = RecordEveryLaunch;
  ASSERT_EQ(Invoke(rows, ctx.get(), {a_arg, c_arg}), 0) << ctx->error;
  EXPECT_EQ(ctx->workspace_allocations.load(), 1);
  EXPECT_EQ(ctx->live_workspaces.load(), 0);
  ASSERT_EQ(seen.size(), 2u);
  // Kernel 0 (M_data, A_data), kernel 1 (C_data, A_data, M_data): the same workspace.
  ASSERT_EQ(seen[0].size(), 2u);
  ASSERT_EQ(seen[1].size(), 3u);
  EXPECT_EQ(seen[0][0].type_code, kKilnArgHandle);
  EXPECT_NE(seen[0][0].value.handle, nullptr);
  EXPECT_EQ(seen[1][2].value.handle, seen[0][0].value.handle);
  EXPECT_EQ(seen[0][1].value.handle, a_host.data());
  EXPECT_EQ(seen[1][0].value.handle, c_host.data());

  // A launch that fails returns its error, the workspace freed.
  seen.clear();
  ctx->ctx.launch = FailSecondLaunch;
  EXPECT_NE(Invoke(rows, ctx.get(), {a_arg, c_arg}), 0);
  EXPECT_EQ(ctx->error, "the device is lost");
  EXPECT_EQ(ctx->live_workspaces.load(), 0);

  // No memory: one clear error, nothing launched.
  seen.clear();
  auto full = MakeContext(&FourThreads());
  full->fail_after = 0;
  full->ctx.launch = RecordEveryLaunch;
  EXPECT_NE(Invoke(rows, full.get(), {a_arg, c_arg}), 0);
  EXPECT_EQ(full->error, "kernel rows: cannot allocate 16 bytes of workspace for buffer M");
  EXPECT_TRUE(seen.empty());
  launches = nullptr;
}

constexpr DLDataType kU8{kDLUInt, 8, 1};
constexpr DLDataType kU16{kDLUInt, 16, 1};
constexpr DLDataType kU32{kDLUInt, 32, 1};
constexpr DLDataType kF16{kDLFloat, 16, 1};

// The kernels of tests/tir/bit_kernels.h give the numbers worked out there, as the
// interpreter does: out-of-range and negative shift amounts shift every bit out.
TEST(LlvmCodegenTest, BitOperationsMatchTheInterpretersNumbers) {
  Kernels k({{"bits", ParseKernel(tir::testing::kBitOps)},
             {"vbits", ParseKernel(tir::testing::kVectorBitOps)},
             {"reinterpret", ParseKernel(tir::testing::kReinterpret)}});
  auto ctx = MakeContext(&FourThreads());
  {
    vm::Tensor a = FromVector(tir::testing::kBitOpsA, kI32), u = FromVector(tir::testing::kBitOpsU, kU8);
    vm::Tensor o = MakeTensor({12}, kI32), p = MakeTensor({4}, kU8);
    ASSERT_EQ(Invoke(k.Get("bits"), ctx.get(), {TensorArg(a), TensorArg(u), TensorArg(o), TensorArg(p)}), 0)
        << ctx->error;
    EXPECT_EQ(ToVector<int32_t>(o), tir::testing::kBitOpsO);
    EXPECT_EQ(ToVector<uint8_t>(p), tir::testing::kBitOpsP);
  }
  {
    vm::Tensor a = FromVector(tir::testing::kVectorBitOpsA, kI32), s = FromVector(tir::testing::kVectorBitOpsS, kI32);
    vm::Tensor w = FromVector(tir::testing::kVectorBitOpsW, kI32);
    vm::Tensor o = MakeTensor({8}, kI32), m = MakeTensor({8}, kU32), v = MakeTensor({2}, kI64);
    ASSERT_EQ(Invoke(k.Get("vbits"), ctx.get(),
                     {TensorArg(a), TensorArg(s), TensorArg(o), TensorArg(m), TensorArg(w), TensorArg(v)}),
              0)
        << ctx->error;
    EXPECT_EQ(ToVector<int32_t>(o), tir::testing::kVectorBitOpsO);
    EXPECT_EQ(ToVector<uint32_t>(m), tir::testing::kVectorBitOpsM);
    EXPECT_EQ(ToVector<int64_t>(v), tir::testing::kVectorBitOpsV);
  }
  {
    vm::Tensor h = FromVector(tir::testing::kReinterpretH, kU16), x = FromVector(tir::testing::kReinterpretX, kF32);
    vm::Tensor f = MakeTensor({3}, kF16), g = MakeTensor({3}, kU16), i = MakeTensor({2}, kI32);
    ASSERT_EQ(Invoke(k.Get("reinterpret"), ctx.get(),
                     {TensorArg(h), TensorArg(f), TensorArg(g), TensorArg(x), TensorArg(i)}),
              0)
        << ctx->error;
    EXPECT_EQ(ToVector<uint16_t>(f), tir::testing::kReinterpretF);
    EXPECT_EQ(ToVector<uint16_t>(g), tir::testing::kReinterpretG);
    EXPECT_EQ(ToVector<int32_t>(i), tir::testing::kReinterpretI);
  }
}

// int4 and uint4 buffers: byte load + shift + mask + sign extension, read-modify-write
// stores that keep the neighbouring nibble, odd lengths and vector accesses.
TEST(LlvmCodegenTest, Int4BuffersArePackedLowNibbleFirst) {
  Kernels k({{"int4", ParseKernel(tir::testing::kInt4)}});
  auto ctx = MakeContext(&FourThreads());
  const DLDataType i4{kDLInt, 4, 1}, u4{kDLUInt, 4, 1}, i8{kDLInt, 8, 1};
  const int64_t n = static_cast<int64_t>(tir::testing::kInt4A.size());
  vm::Tensor a = FromVector(tir::testing::kInt4A, i8);
  vm::Tensor q = MakeTensor({n}, i4), b = MakeTensor({n}, i8), u = MakeTensor({n}, u4), v = MakeTensor({8}, i4);
  ASSERT_EQ(q.nbytes(), 5);
  std::memset(q.data(), 0xff, 5);
  ASSERT_EQ(Invoke(k.Get("int4"), ctx.get(), {TensorArg(a), TensorArg(q), TensorArg(b), TensorArg(u), TensorArg(v)}),
            0)
      << ctx->error;
  auto bytes = [](const vm::Tensor& t) {
    const auto* p = static_cast<const uint8_t*>(t.data());
    return std::vector<uint8_t>(p, p + t.nbytes());
  };
  EXPECT_EQ(bytes(q), tir::testing::kInt4Q);
  EXPECT_EQ(ToVector<int8_t>(b), tir::testing::kInt4B);
  EXPECT_EQ(bytes(u), tir::testing::kInt4U);
  EXPECT_EQ(bytes(v), tir::testing::kInt4V);
}

// The Q4_0 dequantization kernels of tests/tir/q4_0.h, compiled, on random blocks (odd
// counts, special scales), match the plain C++ reference bit for bit.
TEST(LlvmCodegenTest, DequantizesQ4_0BlocksLikeTheReference) {
  Kernels k({{"q4_0", ParseKernel(tir::testing::kDequantizeQ4_0)},
             {"q4_0_simd", ParseKernel(tir::testing::kDequantizeQ4_0Vectorized)}});
  auto ctx = MakeContext(&FourThreads());
  for (int64_t nb : {1, 7, 64, 301}) {
    std::vector<uint8_t> blocks = tir::testing::RandomQ4_0Blocks(nb, static_cast<uint32_t>(nb));
    std::vector<float> expected = tir::testing::ReferenceDequantizeQ4_0(blocks);
    vm::Tensor q = MakeTensor({nb, 18}, kU8);
    std::memcpy(q.data(), blocks.data(), blocks.size());
    for (const char* name : {"q4_0", "q4_0_simd"}) {
      vm::Tensor w = MakeTensor({nb, 32}, kF32);
      ASSERT_EQ(Invoke(k.Get(name), ctx.get(), {TensorArg(q), TensorArg(w)}), 0) << ctx->error;
      for (int64_t i = 0; i < nb * 32; ++i) {
        ASSERT_TRUE(tir::testing::SameWeight(w.data_as<float>()[i], expected[i]))
            << name << " nb=" << nb << " weight " << i << ": " << w.data_as<float>()[i] << " vs " << expected[i];
      }
    }
  }
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"q4_0_simd", ParseKernel(tir::testing::kDequantizeQ4_0Vectorized)}},
                                                 CpuTarget::Host(), /*optimize=*/true);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_THAT(*ir, HasSubstr("lshr <16 x i8>"));
}

// A vectorized loop of bit operations becomes SIMD code (the loop vectorizer widens ~,
// shifts and reinterpret) and computes what plain C++ does for in-range amounts.
TEST(LlvmCodegenTest, VectorizedBitOperations) {
  PrimFunc f = ParseKernel(R"(prim_func @vbitloop(A: Buffer((n,), int32), S: Buffer((n,), int32), B: Buffer((n,), float32), O: Buffer((n,), int32), F: Buffer((n,), float32)) {
  for i in serial(0, floordiv(n, 8)) {
    for j in vectorized(0, 8) {
      O[i * 8 + j] = ~(A[i * 8 + j] >> (S[i * 8 + j] & int32(31))) ^ int32(0x5a)
      F[i * 8 + j] = reinterpret(float32, reinterpret(int32, B[i * 8 + j]) & int32(0x7fffffff))
    }
  }
})");
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"vbitloop", f}}, CpuTarget::Host(), /*optimize=*/true);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_THAT(*ir, HasSubstr("ashr <"));
  Kernels k({{"vbitloop", f}});
  auto ctx = MakeContext(&FourThreads());
  const int64_t n = 64;
  std::mt19937 rng(5);
  std::vector<int32_t> av(n), sv(n);
  for (int64_t e = 0; e < n; ++e) {
    av[e] = static_cast<int32_t>(rng());
    sv[e] = static_cast<int32_t>(rng() % 100) - 30;
  }
  vm::Tensor a = FromVector(av, kI32), s = FromVector(sv, kI32), b = RandomF32({n}, 9);
  vm::Tensor o = MakeTensor({n}, kI32), fo = MakeTensor({n}, kF32);
  ASSERT_EQ(Invoke(k.Get("vbitloop"), ctx.get(), {TensorArg(a), TensorArg(s), TensorArg(b), TensorArg(o), TensorArg(fo)}),
            0)
      << ctx->error;
  for (int64_t e = 0; e < n; ++e) {
    EXPECT_EQ(o.data_as<int32_t>()[e], ~(av[e] >> (sv[e] & 31)) ^ 0x5a) << e;
    EXPECT_EQ(fo.data_as<float>()[e], std::fabs(b.data_as<float>()[e])) << e;
  }
}

}  // namespace
}  // namespace kiln::codegen
