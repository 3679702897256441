// The default CPU schedule end to end: elementwise, reduction, matmul and softmax PrimFuncs
// over symbolic shapes are compiled unscheduled and scheduled (ScheduleForCpu, for AVX2 and
// AVX-512 vector widths), run on random data for sizes that are and are not multiples of
// the tiles and lanes, and compared with plain loops written here.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/tir/schedule_workloads.h"
#include "codegen/cpu_shared_object.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "support/check.h"
#include "tir/schedule_rules/cpu_schedule.h"
#include "tir/local_address_attr.h"
#include "tir/schedule/schedule.h"
#include "tir/structural_equal.h"
#include "tir/target.h"
#include "vm/kernel_abi.h"
#include "vm/kernel_object.h"
#include "vm/tensor.h"
#include "vm/thread_pool.h"

namespace kiln::codegen {
namespace {

using tir::testing::kFusedMatmulBiasGelu;
using tir::testing::kMatmul;
using tir::testing::kRowSum;

// ---------------------------------------------------------------- harness

struct TestContext {
  KilnCallContext ctx;  // first member: callbacks cast the context pointer back
  vm::ThreadPool* pool;
  std::string error;
};

int32_t PoolParallelFor(KilnCallContext* ctx, int64_t num_tasks, KilnParallelBody body, void* closure) {
  return reinterpret_cast<TestContext*>(ctx)->pool->ParallelFor(num_tasks, body, closure);
}
void* Alloc(KilnCallContext*, uint64_t bytes) { return std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64); }
void Free(KilnCallContext*, void* ptr) { std::free(ptr); }
void SetError(KilnCallContext* ctx, const char* message) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  reinterpret_cast<TestContext*>(ctx)->error = message;
}

TestContext* Context() {
  static auto* pool = new vm::ThreadPool(4);
  static auto* test = [] {
    auto* t = new TestContext();
    t->ctx.runtime = nullptr;
    t->ctx.parallel_for = PoolParallelFor;
    t->ctx.workspace_alloc = Alloc;
    t->ctx.workspace_free = Free;
    t->ctx.set_error = SetError;
    t->ctx.num_threads = pool->num_threads();
    t->pool = pool;
    return t;
  }();
  return test;
}

constexpr DLDataType kF32{kDLFloat, 32, 1};

vm::Tensor RandomF32(const std::vector<int64_t>& shape, uint32_t seed) {
  absl::StatusOr<vm::Tensor> t = vm::Tensor::Empty(shape, kF32);
  KILN_CHECK(t.ok()) << t.status();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t i = 0; i < t->numel(); ++i) t->data_as<float>()[i] = dist(rng);
  return *t;
}

tir::PrimFunc Parse(const std::string& text) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule("module {\n" + text + "\n}\n");
  KILN_CHECK(parsed.ok()) << parsed.status();
  for (const relax::IRModule::Entry& e : parsed->module.entries()) {
    if (e.prim_func()) return *e.prim_func();
  }
  KILN_CHECK(false);
  return tir::PrimFunc();
}

// One kernel compiled four ways: as written, and scheduled for 8 and for 16 lanes for this
// machine, and scheduled for 8 lanes compiled for an AVX2-only CPU (haswell: no AVX-512
// instructions, so masked vector tails use AVX2's masked moves), whatever the host has.
// The 16-lane schedule is for a 512-bit target (its attribute says so), whose vector tails
// mask local accumulators too (tir/schedule/guard_vectorized_tails.cc).
class Variants {
 public:
  explicit Variants(const tir::PrimFunc& func, const tir::CpuScheduleKnobs& knobs = {}, int threads = 4) {
    NamedPrimFuncs funcs = {{"plain", func}}, avx2;
    for (int lanes : {8, 16}) {
      const tir::PrimFunc target_func = lanes == 16 ? tir::WithTarget(func, tir::Target::Cpu("host", 512, 4)) : func;
      absl::StatusOr<tir::PrimFunc> scheduled =
          tir::ScheduleForCpu(target_func, {.vector_lanes = lanes, .num_threads = threads, .knobs = knobs});
      KILN_CHECK(scheduled.ok()) << scheduled.status();
      funcs.push_back({"lanes" + std::to_string(lanes), *scheduled});
      if (lanes == 8) avx2.push_back({"lanes8_avx2", *scheduled});
      scheduled_text_ += relax::PrintPrimFunc(*scheduled, "lanes" + std::to_string(lanes));
    }
    object_ = Load(funcs, CpuTarget::Host());
    absl::StatusOr<CpuTarget> haswell = CpuTarget::Named("haswell");
    KILN_CHECK(haswell.ok()) << haswell.status();
    avx2_object_ = Load(avx2, *haswell);
  }
  static std::vector<std::string> Names() { return {"plain", "lanes8", "lanes16", "lanes8_avx2"}; }
  // Runs one variant on the tensors (inputs first, then the output).
  void Run(const std::string& name, const std::vector<vm::Tensor>& tensors) const {
    absl::StatusOr<KilnKernelFn> fn = (name == "lanes8_avx2" ? avx2_object_ : object_)->Find(name);
    KILN_CHECK(fn.ok()) << fn.status();
    std::vector<KilnArg> args;
    for (const vm::Tensor& t : tensors) {
      KilnArg a{};
      a.value.tensor = t.dl_tensor();
      a.type_code = kKilnArgTensor;
      args.push_back(a);
    }
    TestContext* ctx = Context();
    ctx->error.clear();
    int32_t rc = (*fn)(args.data(), static_cast<int32_t>(args.size()), &ctx->ctx);
    KILN_CHECK(rc == 0) << name << ": " << ctx->error;
  }
  const std::string& scheduled_text() const { return scheduled_text_; }

 private:
  std::shared_ptr<vm::KernelObject> Load(const NamedPrimFuncs& funcs, const CpuTarget& target) const {
    absl::StatusOr<std::string> so = BuildCpuSharedObject(funcs, target);
    KILN_CHECK(so.ok()) << so.status() << "\n" << scheduled_text_;
    absl::StatusOr<std::shared_ptr<vm::KernelObject>> object = vm::KernelObject::Load(*so);
    KILN_CHECK(object.ok()) << object.status();
    return *object;
  }

  std::shared_ptr<vm::KernelObject> object_, avx2_object_;
  std::string scheduled_text_;
};

// Every element of `out` within `tol * scale[i]` of `expected`.
void ExpectClose(const vm::Tensor& out, const std::vector<double>& expected, const std::vector<double>& scale,
                 const std::string& what) {
  ASSERT_EQ(out.numel(), static_cast<int64_t>(expected.size())) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    double got = out.data_as<float>()[i];
    ASSERT_NEAR(got, expected[i], 1e-5 * (scale[i] + 1.0)) << what << " element " << i;
  }
}

// ---------------------------------------------------------------- kernels

const char* kElementwise = R"(
prim_func @f(A: Buffer((n, m), float32), B: Buffer((n, m), float32), C: Buffer((n, m), float32)) {
  for i in serial(0, n) {
    for j in serial(0, m) {
      block "C" {
        vi = spatial(n, i)
        vj = spatial(m, j)
        C[vi, vj] = max(A[vi, vj], 0.0) * B[vi, vj] + A[vi, vj]
      }
    }
  }
})";

const char* k1d = R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    block "B" {
      vi = spatial(n, i)
      B[vi] = A[vi] * 3.0 - 1.0
    }
  }
})";



const char* kBatchMatmul = R"(
prim_func @f(A: Buffer((b, m, k), float32), B: Buffer((b, k, n), float32), C: Buffer((b, m, n), float32)) {
  for bb in serial(0, b) {
    for i in serial(0, m) {
      for j in serial(0, n) {
        for r in serial(0, k) {
          block "C" {
            vb = spatial(b, bb)
            vi = spatial(m, i)
            vj = spatial(n, j)
            vk = reduce(k, r)
            init {
              C[vb, vi, vj] = 0.0
            }
            C[vb, vi, vj] = C[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]
          }
        }
      }
    }
  }
})";

const char* kSoftmax = R"(
prim_func @f(A: Buffer((n, 37), float32), B: Buffer((n, 37), float32)) {
  for i in serial(0, n) {
    block "row" {
      vi = spatial(n, i)
      alloc mx: Buffer((1,), float32, scope="local")
      alloc sm: Buffer((1,), float32, scope="local")
      for k in serial(0, 37) {
        block "max" {
          vk = reduce(37, k)
          init {
            mx[0] = float32(-inf)
          }
          mx[0] = max(mx[0], A[vi, vk])
        }
      }
      for k2 in serial(0, 37) {
        block "sum" {
          vk2 = reduce(37, k2)
          init {
            sm[0] = 0.0
          }
          sm[0] = sm[0] + exp(A[vi, vk2] - mx[0])
        }
      }
      for j in serial(0, 37) {
        block "norm" {
          vj = spatial(37, j)
          B[vi, vj] = exp(A[vi, vj] - mx[0]) / sm[0]
        }
      }
    }
  }
})";

const std::vector<int64_t> kSizes = {1, 7, 13, 100, 1003};

// ---------------------------------------------------------------- tests

TEST(ScheduleNumericsTest, Elementwise2d) {
  Variants v(Parse(kElementwise));
  for (int64_t n : kSizes) {
    for (int64_t m : kSizes) {
      if (n * m > 200000) continue;
      vm::Tensor a = RandomF32({n, m}, 1), b = RandomF32({n, m}, 2);
      std::vector<double> expected(n * m), scale(n * m);
      for (int64_t i = 0; i < n * m; ++i) {
        double x = a.data_as<float>()[i], y = b.data_as<float>()[i];
        expected[i] = std::max(x, 0.0) * y + x;
        scale[i] = std::fabs(std::max(x, 0.0) * y) + std::fabs(x);
      }
      for (const std::string& name : Variants::Names()) {
        vm::Tensor c = RandomF32({n, m}, 3);
        v.Run(name, {a, b, c});
        ExpectClose(c, expected, scale, name + " n=" + std::to_string(n) + " m=" + std::to_string(m));
      }
    }
  }
}

TEST(ScheduleNumericsTest, Elementwise1d) {
  Variants v(Parse(k1d));
  for (int64_t n : {1, 7, 13, 16, 17, 100, 1000, 4099}) {
    vm::Tensor a = RandomF32({n}, 4);
    std::vector<double> expected(n), scale(n);
    for (int64_t i = 0; i < n; ++i) {
      double x = a.data_as<float>()[i];
      expected[i] = x * 3.0 - 1.0;
      scale[i] = std::fabs(3.0 * x) + 1.0;
    }
    for (const std::string& name : Variants::Names()) {
      vm::Tensor b = RandomF32({n}, 5);
      v.Run(name, {a, b});
      ExpectClose(b, expected, scale, name + " n=" + std::to_string(n));
    }
  }
}

// A transpose gathers along its vectorized loop; its tail runs the lanes unrolled
// (GuardVectorizedTails), every size around the vector widths against the plain copy.
TEST(ScheduleNumericsTest, TransposeWithAGatheringTail) {
  Variants v(Parse(R"(
prim_func @f(A: Buffer((n, 5), float32), B: Buffer((5, n), float32)) {
  for i in serial(0, 5) {
    for j in serial(0, n) {
      block "B" {
        vi = spatial(5, i)
        vj = spatial(n, j)
        B[vi, vj] = A[vj, vi]
      }
    }
  }
})"));
  EXPECT_NE(v.scheduled_text().find("_tail in unroll(0, 16)"), std::string::npos) << v.scheduled_text();
  for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 100}) {
    vm::Tensor a = RandomF32({n, 5}, 6);
    std::vector<double> expected(5 * n), scale(5 * n, 1.0);
    for (int64_t i = 0; i < 5; ++i) {
      for (int64_t j = 0; j < n; ++j) expected[i * n + j] = a.data_as<float>()[j * 5 + i];
    }
    for (const std::string& name : Variants::Names()) {
      vm::Tensor b = RandomF32({5, n}, 7);
      v.Run(name, {a, b});
      ExpectClose(b, expected, scale, name + " n=" + std::to_string(n));
    }
  }
}

TEST(ScheduleNumericsTest, ElementwiseWithBlockLocalTemporary) {
  Variants v(Parse(R"(
prim_func @f(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
  for i in serial(0, n) {
    block "B" {
      vi = spatial(n, i)
      alloc T: Buffer((1,), float32, scope="local")
      T[0] = A[vi] * 2.0
      B[vi] = T[0] + 1.0
    }
  }
})"));
  for (int64_t n : {1, 7, 13, 100, 1003}) {
    vm::Tensor a = RandomF32({n}, 25);
    std::vector<double> expected(n), scale(n);
    for (int64_t i = 0; i < n; ++i) {
      expected[i] = a.data_as<float>()[i] * 2.0 + 1.0;
      scale[i] = std::fabs(expected[i]) + 1.0;
    }
    for (const std::string& name : Variants::Names()) {
      vm::Tensor b = RandomF32({n}, 26);
      v.Run(name, {a, b});
      ExpectClose(b, expected, scale, name + " n=" + std::to_string(n));
    }
  }
}

TEST(ScheduleNumericsTest, RowSum) {
  Variants v(Parse(kRowSum));
  for (int64_t n : kSizes) {
    for (int64_t m : kSizes) {
      vm::Tensor a = RandomF32({n, m}, 6);
      std::vector<double> expected(n, 0.0), scale(n, 0.0);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t r = 0; r < m; ++r) {
          expected[i] += a.data_as<float>()[i * m + r];
          scale[i] += std::fabs(a.data_as<float>()[i * m + r]);
        }
      }
      for (const std::string& name : Variants::Names()) {
        vm::Tensor b = RandomF32({n}, 7);
        v.Run(name, {a, b});
        ExpectClose(b, expected, scale, name + " n=" + std::to_string(n) + " m=" + std::to_string(m));
      }
    }
  }
}

std::vector<double> NaiveMatmul(const float* a, const float* b, int64_t m, int64_t k, int64_t n,
                                std::vector<double>* scale) {
  std::vector<double> c(m * n, 0.0);
  scale->assign(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t r = 0; r < k; ++r) {
        double p = static_cast<double>(a[i * k + r]) * b[r * n + j];
        c[i * n + j] += p;
        (*scale)[i * n + j] += std::fabs(p);
      }
    }
  }
  return c;
}

// kMatmul with some of its sizes constant: each argument is the size's text ("128"), or its
// symbol ("m", "k", "n") to keep it symbolic.
std::string MatmulWithSizes(const std::string& m, const std::string& k, const std::string& n) {
  std::string text = kMatmul;
  const std::vector<std::pair<std::string, std::string>> sizes = {
      {"((m, k)", "((" + m + ", " + k + ")"}, {"((k, n)", "((" + k + ", " + n + ")"},
      {"((m, n)", "((" + m + ", " + n + ")"}, {"(0, m)", "(0, " + m + ")"},
      {"(0, n)", "(0, " + n + ")"},           {"(0, k)", "(0, " + k + ")"},
      {"(m, i)", "(" + m + ", i)"},           {"(n, j)", "(" + n + ", j)"},
      {"(k, r)", "(" + k + ", r)"}};
  for (const auto& [from, to] : sizes) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

// Runs every variant on random (m, k) x (k, n) operands and compares with the naive matmul.
void ExpectMatmulVariantsMatchNaive(const Variants& v, int64_t m, int64_t k, int64_t n, uint32_t seed,
                                    const std::string& what) {
  vm::Tensor a = RandomF32({m, k}, seed), b = RandomF32({k, n}, seed + 1);
  std::vector<double> scale;
  std::vector<double> expected = NaiveMatmul(a.data_as<float>(), b.data_as<float>(), m, k, n, &scale);
  for (const std::string& name : Variants::Names()) {
    vm::Tensor c = RandomF32({m, n}, seed + 2);
    v.Run(name, {a, b, c});
    ExpectClose(c, expected, scale, name + " " + what);
  }
}

TEST(ScheduleNumericsTest, Matmul) {
  Variants v(Parse(kMatmul));
  struct Shape {
    int64_t m, k, n;
  };
  std::vector<Shape> shapes = {{1, 1, 1}, {7, 13, 1}, {13, 7, 100}, {100, 13, 7}, {4, 16, 32},
                               {100, 100, 100}, {5, 1003, 33}, {1003, 3, 17}, {9, 2, 1003},
                               // fewer than 64 rows: the wide-tile branch, full and edge tiles
                               {1, 13, 1003}, {7, 100, 530}, {3, 1, 1024}, {1, 2, 600}, {8, 5, 600},
                               {41, 20, 300}, {63, 3, 257}, {64, 5, 300}};
  for (const Shape& s : shapes) {
    vm::Tensor a = RandomF32({s.m, s.k}, 8), b = RandomF32({s.k, s.n}, 9);
    std::vector<double> scale;
    std::vector<double> expected = NaiveMatmul(a.data_as<float>(), b.data_as<float>(), s.m, s.k, s.n, &scale);
    for (const std::string& name : Variants::Names()) {
      vm::Tensor c = RandomF32({s.m, s.n}, 10);
      v.Run(name, {a, b, c});
      ExpectClose(c, expected, scale,
                  name + " m=" + std::to_string(s.m) + " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n));
    }
  }
}

// Register tiles of three vectors (matmul.col_vectors=3: 4 x 24 on AVX2, 48 columns on
// AVX-512) step in three unrolled single vectors, init, update and write-back alike: as one
// 24- or 48-lane vector LLVM split them lane by lane (2048^3 on AVX2 at 9-11 GF/s). Against
// the naive matmul: widths that are multiples of the tile, a column edge, a symbolic width, a
// row edge; then the scheduled text has no vector loop of three vectors.
TEST(ScheduleNumericsTest, MatmulRegisterTilesOfThreeVectors) {
  absl::StatusOr<tir::CpuScheduleKnobs> knobs = tir::CpuScheduleKnobs::Parse("matmul.col_vectors=3");
  ASSERT_TRUE(knobs.ok()) << knobs.status();
  for (const char* n : {"96", "100", "n"}) {
    Variants v(Parse(MatmulWithSizes("m", "37", n)), *knobs);
    EXPECT_EQ(v.scheduled_text().find("vectorized(0, 24)"), std::string::npos) << v.scheduled_text();
    EXPECT_EQ(v.scheduled_text().find("vectorized(0, 48)"), std::string::npos) << v.scheduled_text();
    for (int64_t m : {66, 131}) {
      const int64_t cols = std::string(n) == "n" ? 145 : std::stoll(n);
      ExpectMatmulVariantsMatchNaive(v, m, 37, cols, 190, std::string("n=") + n + " m=" + std::to_string(m));
    }
  }
}

// The default rule's register tile against a large constant weight (k and n at least 1024):
// 4 x 3 vectors on 8 lanes (24-column panels, RegisterTileVectors), 8 x 2 on 16 lanes; a
// width of 1040 leaves an edge panel of one vector on 8 lanes (43 x 24 + 8) and of 16
// columns on 16 (32 x 32 + 16). Many rows (the register tiles' branch) with a row edge,
// against the naive matmul.
TEST(ScheduleNumericsTest, MatmulRegisterTilesOfALargeWeight) {
  Variants v(Parse(MatmulWithSizes("m", "1024", "1040")));
  for (const char* buffer : {"Buffer((1024, 24), float32, scope=\"local\")",
                             "Buffer((4, 24), float32, scope=\"local\")",
                             "Buffer((8, 32), float32, scope=\"local\")"}) {
    EXPECT_NE(v.scheduled_text().find(buffer), std::string::npos) << buffer << "\n" << v.scheduled_text();
  }
  for (int64_t m : {66, 131}) ExpectMatmulVariantsMatchNaive(v, m, 1024, 1040, 191, "m=" + std::to_string(m));
}

// A constant width of 530 (not a multiple of the 16- or 32-column tile) gives enough
// column panels for 4 threads, so the schedule packs B's panel per parallel iteration.
TEST(ScheduleNumericsTest, MatmulWithPackedPanels) {
  Variants v(Parse(MatmulWithSizes("m", "k", "530")));
  ASSERT_NE(v.scheduled_text().find("B_local"), std::string::npos) << v.scheduled_text();
  for (int64_t m : {1, 7, 13, 100}) {
    for (int64_t k : {1, 13, 100}) {
      ExpectMatmulVariantsMatchNaive(v, m, k, 530, 50, "m=" + std::to_string(m) + " k=" + std::to_string(k));
    }
  }
}

// A narrow constant width (no wide tiles: 120 on 8 lanes, 250 on 16) of constant depth on
// one thread packs its panels only from 128 rows on; the function is versioned on `m >= 128` and fewer rows read
// B in place. Row counts on both sides of the version, with and without a row edge.
TEST(ScheduleNumericsTest, MatmulNarrowWeightPackedOnlyForManyRows) {
  for (const char* n : {"120", "250"}) {
    for (int64_t k : {13, 100}) {
      Variants v(Parse(MatmulWithSizes("m", std::to_string(k), n)), {}, /*threads=*/1);
      ASSERT_NE(v.scheduled_text().find("if m >= 128"), std::string::npos) << v.scheduled_text();
      ASSERT_NE(v.scheduled_text().find("B_local"), std::string::npos) << v.scheduled_text();
      for (int64_t m : {1, 7, 64, 127, 128, 131}) {
        ExpectMatmulVariantsMatchNaive(v, m, k, std::stoll(n), 52,
                                       std::string("n=") + n + " m=" + std::to_string(m) + " k=" + std::to_string(k));
      }
    }
  }
}

// The register tiles' row edge (the last m mod 8 rows on 16 lanes, m mod 4 or 6 on 8) runs in
// steps of two rows outside k (StepRegisterEdgeRows), an odd last row alone, unconditioned:
// row counts with whole steps only, a lone row, both, and on each side of the packed
// version (m >= 128) of this narrow weight, against the naive matmul; with the knob off, as
// before. Only where the k x 32 panel stays in L1 (8 KiB here).
TEST(ScheduleNumericsTest, MatmulRegisterRowEdgeInStepsOfTwoRows) {
  const tir::PrimFunc func = Parse(MatmulWithSizes("m", "64", "256"));
  Variants v(func, {}, /*threads=*/1);
  EXPECT_NE(v.scheduled_text().find("block \"C_edge_part\""), std::string::npos) << v.scheduled_text();
  absl::StatusOr<tir::CpuScheduleKnobs> off = tir::CpuScheduleKnobs::Parse("matmul.edge_steps=0");
  ASSERT_TRUE(off.ok()) << off.status();
  Variants unstepped(func, *off, /*threads=*/1);
  EXPECT_EQ(unstepped.scheduled_text().find("block \"C_edge_part\""), std::string::npos);
  for (int64_t m : {2, 3, 4, 5, 6, 7, 9, 14, 15, 70, 127, 129, 131, 134}) {
    ExpectMatmulVariantsMatchNaive(v, m, 64, 256, 200, "m=" + std::to_string(m));
  }
  for (int64_t m : {5, 131}) ExpectMatmulVariantsMatchNaive(unstepped, m, 64, 256, 201, "off m=" + std::to_string(m));
  // A panel beyond L1 (1024 x 32 floats, 128 KiB), which each step would read again from L2:
  // no steps. (One block of rows: the blocks' copies would rename the edge; LeftBlockRows.)
  const tir::CpuScheduleKnobs one_block = *tir::CpuScheduleKnobs::Parse("matmul.left_block_rows=0");
  absl::StatusOr<tir::PrimFunc> deep = tir::ScheduleForCpu(Parse(MatmulWithSizes("m", "1024", "256")),
                                                           {.vector_lanes = 16, .num_threads = 1, .knobs = one_block});
  ASSERT_TRUE(deep.ok()) << deep.status();
  const std::string deep_text = relax::PrintPrimFunc(*deep, "deep");
  EXPECT_NE(deep_text.find("block \"C_edge\""), std::string::npos) << deep_text;
  EXPECT_EQ(deep_text.find("block \"C_edge_part\""), std::string::npos) << deep_text;

  // Through k the accumulators stay in registers: no loop body that multiplies stores a
  // vector. Between the steps the edge's tile lives in memory (the steps loop is serial,
  // so a step's rows are at a variable place; unrolled, the steps compiled 30 % slower for
  // no measured gain); without the steps no accumulator tile is left in memory.
  for (const tir::CpuScheduleKnobs& knobs : {tir::CpuScheduleKnobs{}, *off}) {
    const tir::PrimFunc wide = tir::WithTarget(func, tir::Target::Cpu("host", 512, 1));
    absl::StatusOr<tir::PrimFunc> scheduled =
        tir::ScheduleForCpu(wide, {.vector_lanes = 16, .num_threads = 1, .knobs = knobs});
    ASSERT_TRUE(scheduled.ok()) << scheduled.status();
    absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"k", *scheduled}}, CpuTarget::Host(), /*optimize=*/true);
    ASSERT_TRUE(ir.ok()) << ir.status();
    int allocas = 0, storing_bodies = 0;
    for (absl::string_view body : absl::StrSplit(*ir, "\n\n")) {
      int products = 0, stores = 0;
      for (absl::string_view line : absl::StrSplit(body, '\n')) {
        allocas += absl::StrContains(line, "alloca") && absl::StrContains(line, "C_local");
        products += absl::StrContains(line, "fmul <32 x float>") || absl::StrContains(line, "fmuladd.v32f32");
        stores += absl::StrContains(line, "store <32 x float>");
      }
      storing_bodies += products >= 2 && stores > 0;
    }
    EXPECT_EQ(allocas, knobs.matmul.edge_steps ? 2 : 0) << *ir;  // both versions' edge tiles
    EXPECT_EQ(storing_bodies, 0) << *ir;
  }
}

// Blocks of the left operand's rows (matmul.left_block_rows, here 24: four 6-row tiles on 8
// lanes, three 8-row tiles on 16) walk every packed column panel before the next block
// starts: row counts inside one block, at and around block ends, a partial last block with
// a row edge, against the naive matmul. By default the rule blocks a left operand of more
// than 8 MiB (k = 2048: 1024 rows), none of a depth below 1024 (blocks of more than 2048 rows)
// or that it cannot size (a symbolic k).
TEST(ScheduleNumericsTest, MatmulLeftOperandInRowBlocks) {
  absl::StatusOr<tir::CpuScheduleKnobs> blocked = tir::CpuScheduleKnobs::Parse("matmul.left_block_rows=24");
  absl::StatusOr<tir::CpuScheduleKnobs> unblocked = tir::CpuScheduleKnobs::Parse("matmul.left_block_rows=0");
  ASSERT_TRUE(blocked.ok() && unblocked.ok());
  const tir::PrimFunc func = Parse(MatmulWithSizes("m", "37", "530"));
  Variants v(func, *blocked);
  EXPECT_NE(v.scheduled_text(), Variants(func, *unblocked).scheduled_text());
  for (int64_t m : {1, 7, 23, 24, 25, 47, 48, 49, 100, 131}) {
    ExpectMatmulVariantsMatchNaive(v, m, 37, 530, 210, "m=" + std::to_string(m));
  }
  auto text = [](const std::string& k, const tir::CpuScheduleKnobs& knobs) {
    absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForCpu(
        Parse(MatmulWithSizes("m", k, "2048")), {.vector_lanes = 8, .num_threads = 1, .knobs = knobs});
    KILN_CHECK(scheduled.ok()) << scheduled.status();
    return relax::PrintPrimFunc(*scheduled, "f");
  };
  EXPECT_NE(text("2048", {}), text("2048", *unblocked));
  EXPECT_NE(text("2048", {}).find("1024 * "), std::string::npos) << text("2048", {});
  EXPECT_EQ(text("512", {}), text("512", *unblocked));
  EXPECT_EQ(text("k", {}), text("k", *unblocked));
}

// A model's weight (constant k, a multiple of the 16-step k block, and a constant width of
// 1030: several wide tiles per thread share, the last one partial) with a symbolic row count:
// full 16-row tiles take the k-blocked register accumulators in row steps (8 rows for 16
// lanes, 4 for 8), the row-edge copy (every tile when m < 16, the last when m is not a
// multiple of 16) checks each row step once: whole steps keep their rows in registers, the
// partial step takes the streaming order; many rows take the packed register tiles (and on
// 16 lanes, 32-64 rows the packed wide tiles: k = 128 is two of their k blocks). Row
// counts with whole steps only (4, 8 on 8 lanes; 8 on 16), whole and partial steps (5, 7,
// 9, 12, 13, 15), a partial step only (1, 3), and full tiles before each.
TEST(ScheduleNumericsTest, MatmulWideTilesOverAConstantWeight) {
  Variants v(Parse(MatmulWithSizes("m", "128", "1030")));
  // The k blocks of the wide tiles, the 4-row steps of 8 lanes and the edge copy's 8 weight
  // rows per step; the edge's partial-step copy (GuardSteps).
  EXPECT_NE(v.scheduled_text().find("serial(0, 16)"), std::string::npos) << v.scheduled_text();
  EXPECT_NE(v.scheduled_text().find("unroll(0, 4)"), std::string::npos) << v.scheduled_text();
  EXPECT_NE(v.scheduled_text().find("unroll(0, 8)"), std::string::npos) << v.scheduled_text();
  EXPECT_NE(v.scheduled_text().find("_edge_part"), std::string::npos) << v.scheduled_text();
  for (int64_t m : {1, 3, 4, 5, 7, 8, 9, 12, 13, 15, 16, 17, 24, 32, 40, 63, 64, 100}) {
    ExpectMatmulVariantsMatchNaive(v, m, 128, 1030, 70, "m=" + std::to_string(m));
  }
}

// A k block of 64 (the wide_k_block knob, unpacked) over k = 192: full tiles run three
// blocks of 64 (`serial(0, 64)`), the row edge splits each block into its groups of 8 weight
// rows. Row counts with a partial 4-row step (8 lanes), whole steps only, a full tile before
// the edge, and a full tile alone.
TEST(ScheduleNumericsTest, MatmulWideTilesWithALargerKBlock) {
  absl::StatusOr<tir::CpuScheduleKnobs> knobs = tir::CpuScheduleKnobs::Parse("matmul.wide_k_block=64");
  ASSERT_TRUE(knobs.ok()) << knobs.status();
  Variants v(Parse(MatmulWithSizes("m", "192", "1030")), *knobs);
  EXPECT_NE(v.scheduled_text().find("serial(0, 64)"), std::string::npos) << v.scheduled_text();
  for (int64_t m : {1, 2, 3, 5, 8, 13, 16, 17, 31}) {
    ExpectMatmulVariantsMatchNaive(v, m, 192, 1030, 100, "m=" + std::to_string(m));
  }
}

// The row edge's one-row version (knob matmul.gemv_rows_per_pass: 16 or 8 weight rows per
// pass, versioned on floormod(m, 16) == 1) against the naive matmul: a symbolic m at 1 and
// 17 (the version) and at 2, 3, 16, 33 (the copy), k a multiple of the k block and an odd
// width; a constant m = 1 (the one-row order without a branch); an odd k (no k blocks:
// nothing versioned).
TEST(ScheduleNumericsTest, MatmulWideTilesOneRowEdgeByKnob) {
  for (const char* per_pass : {"16", "8"}) {
    SCOPED_TRACE(per_pass);
    absl::StatusOr<tir::CpuScheduleKnobs> knobs =
        tir::CpuScheduleKnobs::Parse(absl::StrCat("matmul.gemv_rows_per_pass=", per_pass));
    ASSERT_TRUE(knobs.ok()) << knobs.status();
    Variants v(Parse(MatmulWithSizes("m", "144", "1003")), *knobs);
    EXPECT_NE(v.scheduled_text().find("if floormod(m, 16) == 1 {"), std::string::npos) << v.scheduled_text();
    for (int64_t m : {1, 2, 3, 16, 17, 33}) {
      ExpectMatmulVariantsMatchNaive(v, m, 144, 1003, 110, "m=" + std::to_string(m));
    }
    Variants one(Parse(MatmulWithSizes("1", "144", "1003")), *knobs);
    ExpectMatmulVariantsMatchNaive(one, 1, 144, 1003, 120, "constant m=1");
    Variants odd(Parse(MatmulWithSizes("m", "143", "1003")), *knobs);
    for (int64_t m : {1, 2}) ExpectMatmulVariantsMatchNaive(odd, m, 143, 1003, 130, "k=143 m=" + std::to_string(m));
  }
}

// The wide-tile knobs that k-block and pack the weight (cpu_knobs.h): 12-row tiles in
// 6-row steps (AVX2's 6 x 2-vector register tile), k blocks of 64 (128 = two), each block
// of a sub-tile copied before the row steps read it; register tiles from 32 rows. Rows that
// fill tiles, leave a row edge, or take the register tiles.
TEST(ScheduleNumericsTest, MatmulWideTilesKBlockedAndPackedByKnobs) {
  absl::StatusOr<tir::CpuScheduleKnobs> knobs = tir::CpuScheduleKnobs::Parse(
      "matmul.row_tile=12 matmul.wide_step_rows=6 matmul.wide_k_block=64 matmul.wide_pack=1 "
      "matmul.wide_subtiles=2 matmul.many_rows=32");
  ASSERT_TRUE(knobs.ok()) << knobs.status();
  Variants v(Parse(MatmulWithSizes("m", "128", "1030")), *knobs);
  EXPECT_NE(v.scheduled_text().find("unroll(0, 6)"), std::string::npos) << v.scheduled_text();
  EXPECT_NE(v.scheduled_text().find("B_local_1"), std::string::npos) << v.scheduled_text();
  for (int64_t m : {1, 5, 6, 12, 13, 24, 31, 32, 40}) {
    ExpectMatmulVariantsMatchNaive(v, m, 128, 1030, 80, "m=" + std::to_string(m));
  }
}

// The packed wide tiles (8 lanes: k a multiple of 256, from 16 rows; 16 lanes: of 64, from
// 32 rows): 64-row tiles in 4-row steps (8 on 16 lanes) over k blocks of 256 weight rows (64)
// copied into a panel, the row edge's
// steps guarded once each (whole steps, a short last step, none past the rows); fewer rows
// the unpacked tiles, 65 and more the register tiles. Row counts on each side of every
// boundary, a width that is not a multiple of the 128-column sub-tile.
TEST(ScheduleNumericsTest, MatmulPackedWideTilesOfAvx2) {
  Variants v(Parse(MatmulWithSizes("m", "512", "300")));
  EXPECT_NE(v.scheduled_text().find("if m >= 16 {"), std::string::npos) << v.scheduled_text();
  EXPECT_NE(v.scheduled_text().find("if m >= 32 {"), std::string::npos) << v.scheduled_text();
  EXPECT_NE(v.scheduled_text().find("_part"), std::string::npos) << v.scheduled_text();
  for (int64_t m :
       {1, 5, 6, 7, 13, 15, 16, 17, 31, 32, 33, 34, 36, 47, 48, 49, 53, 54, 55, 60, 61, 62, 63, 64, 65, 66, 70}) {
    ExpectMatmulVariantsMatchNaive(v, m, 512, 300, 90, "m=" + std::to_string(m));
  }
}

// A width of many packed sub-tiles on 4 threads (1700 columns: 425 a thread, three AVX2
// sub-tiles of 192): tiles of one sub-tile (9 tiles, at most 3 a thread: 576 columns)
// rather than two (5 tiles of 384, 2 a thread: 768), the last tile a column edge.
TEST(ScheduleNumericsTest, MatmulPackedWideTilesShareColumnsEvenly) {
  Variants v(Parse(MatmulWithSizes("m", "512", "1700")));
  EXPECT_NE(v.scheduled_text().find("Buffer((64, 192), float32, scope=\"local\")"), std::string::npos)
      << v.scheduled_text();
  EXPECT_EQ(v.scheduled_text().find("Buffer((64, 384), float32, scope=\"local\")"), std::string::npos)
      << v.scheduled_text();
  for (int64_t m : {1, 32, 47, 64}) {
    ExpectMatmulVariantsMatchNaive(v, m, 512, 1700, 170, "m=" + std::to_string(m));
  }
}

// The knob matmul.packed_least_rows moves the packed wide tiles' start (the rule's 16 on
// AVX2, 32 on AVX-512). To 17: a symbolic m on each side of the new boundary and the old
// ones, up to the register tiles; a constant m that takes them (24: a partial 64-row tile
// alone) and one that does not (16).
// The tuner searches 24, 40 and 48 (tune/search_space.cc): 40, above the rules' 16 and 32,
// leaves 16-39 rows to the unpacked tiles.
TEST(ScheduleNumericsTest, MatmulPackedWideTilesFromMoreRowsByKnob) {
  absl::StatusOr<tir::CpuScheduleKnobs> knobs = tir::CpuScheduleKnobs::Parse("matmul.packed_least_rows=40");
  ASSERT_TRUE(knobs.ok()) << knobs.status();
  Variants v(Parse(MatmulWithSizes("m", "512", "300")), *knobs);
  EXPECT_NE(v.scheduled_text().find("if m >= 40 {"), std::string::npos) << v.scheduled_text();
  EXPECT_EQ(v.scheduled_text().find("if m >= 32 {"), std::string::npos) << v.scheduled_text();
  EXPECT_EQ(v.scheduled_text().find("if m >= 16 {"), std::string::npos) << v.scheduled_text();
  for (int64_t m : {1, 15, 16, 17, 31, 32, 33, 39, 40, 41, 63, 64, 65}) {
    ExpectMatmulVariantsMatchNaive(v, m, 512, 300, 160, "m=" + std::to_string(m));
  }
}

TEST(ScheduleNumericsTest, MatmulPackedWideTilesFromFewerRowsByKnob) {
  absl::StatusOr<tir::CpuScheduleKnobs> knobs = tir::CpuScheduleKnobs::Parse("matmul.packed_least_rows=17");
  ASSERT_TRUE(knobs.ok()) << knobs.status();
  Variants v(Parse(MatmulWithSizes("m", "512", "300")), *knobs);
  EXPECT_NE(v.scheduled_text().find("if m >= 17 {"), std::string::npos) << v.scheduled_text();
  EXPECT_EQ(v.scheduled_text().find("if m >= 32 {"), std::string::npos) << v.scheduled_text();
  for (int64_t m : {1, 15, 16, 17, 18, 20, 23, 24, 31, 32, 33, 63, 64, 65}) {
    ExpectMatmulVariantsMatchNaive(v, m, 512, 300, 140, "m=" + std::to_string(m));
  }
  for (int64_t m : {16, 24}) {
    Variants constant(Parse(MatmulWithSizes(std::to_string(m), "512", "300")), *knobs);
    ExpectMatmulVariantsMatchNaive(constant, m, 512, 300, 150, "constant m=" + std::to_string(m));
  }
}

// The loop bodies of optimized LLVM IR that multiply at least `least_products` vectors of
// `lanes` floats from the packed panel (`B_local`): each such body is expected to store no
// vector of that width (its accumulators stay in registers). Returns how many there are.
int StepBodiesWithoutStores(const std::string& ir, int lanes, int least_products) {
  const std::string vector = absl::StrCat("<", lanes, " x float>");
  int step_bodies = 0;
  for (absl::string_view block : absl::StrSplit(ir, "\n\n")) {
    int products = 0, stores = 0;
    for (absl::string_view line : absl::StrSplit(block, '\n')) {
      products += absl::StrContains(line, "fmul " + vector) ||
                  absl::StrContains(line, absl::StrCat("fmuladd.v", lanes, "f32"));
      stores += absl::StrContains(line, "store " + vector);
    }
    if (products < least_products || !absl::StrContains(block, "%B_local")) continue;
    ++step_bodies;
    EXPECT_EQ(stores, 0) << block;
  }
  return step_bodies;
}

// The packed wide tiles' row edge (AVX2, m = 33-63 over a 4096 x 4096 weight) keeps each
// whole 4-row step's 8 accumulators in registers through its k loop, as the full tiles do:
// in the optimized LLVM IR no loop body that multiplies four vector pairs from the packed panel
// (`B_local`; the unpacked tiles' streaming edge stores its accumulators once per 8 weight
// rows by design) stores a vector. The edge once guarded its panel's allocation again on the
// rows (a copy of the k loops that never ran), and with it LLVM loaded and stored every
// accumulator at every k step. In vector pairs (4 x 2 steps, matmul.wide_step_vectors=2;
// the default steps are 4 x 3, checked below).
TEST(ScheduleNumericsTest, PackedWideRowEdgeKeepsTheAccumulatorsInRegisters) {
  const tir::PrimFunc func =
      tir::WithTarget(Parse(MatmulWithSizes("m", "4096", "4096")), tir::Target::Cpu("haswell", 256, 1));
  absl::StatusOr<tir::CpuScheduleKnobs> pairs = tir::CpuScheduleKnobs::Parse("matmul.wide_step_vectors=2");
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  absl::StatusOr<tir::PrimFunc> scheduled =
      tir::ScheduleForCpu(func, {.vector_lanes = 8, .num_threads = 1, .knobs = *pairs});
  ASSERT_TRUE(scheduled.ok()) << scheduled.status();
  ASSERT_NE(relax::PrintPrimFunc(*scheduled, "k").find("_edge_part"), std::string::npos);
  absl::StatusOr<CpuTarget> haswell = CpuTarget::Named("haswell");
  ASSERT_TRUE(haswell.ok()) << haswell.status();
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"k", *scheduled}}, *haswell, /*optimize=*/true);
  ASSERT_TRUE(ir.ok()) << ir.status();
  // The full tiles' steps and the edge's whole steps.
  EXPECT_GE(StepBodiesWithoutStores(*ir, 16, 4), 2);
}

// The default 4 x 3 steps (12 accumulators): every loop body that multiplies twelve vectors
// from the packed panel keeps its accumulators in registers, on 1 and 2 threads. Only the
// steps' accumulators are addressed per term (tir/local_address_attr.h): the function's
// other tiles (the unpacked pairs of fewer rows) keep one address per access.
TEST(ScheduleNumericsTest, PackedWideThreeVectorStepsKeepTheAccumulatorsInRegisters) {
  for (int threads : {1, 2}) {
  const tir::PrimFunc func =
      tir::WithTarget(Parse(MatmulWithSizes("m", "4096", "4608")), tir::Target::Cpu("haswell", 256, threads));
  absl::StatusOr<tir::PrimFunc> scheduled =
      tir::ScheduleForCpu(func, {.vector_lanes = 8, .num_threads = threads});
  ASSERT_TRUE(scheduled.ok()) << scheduled.status();
  auto per_term = (*scheduled)->attrs.find(tir::kLocalAddressPerTermAttr);
  ASSERT_NE(per_term, (*scheduled)->attrs.end());
  EXPECT_EQ(per_term->second, "C_local_steps");
  absl::StatusOr<CpuTarget> haswell = CpuTarget::Named("haswell");
  ASSERT_TRUE(haswell.ok()) << haswell.status();
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"k", *scheduled}}, *haswell, /*optimize=*/true);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_GE(StepBodiesWithoutStores(*ir, 8, 12), 2);
  }
}

// AVX2's packed wide tiles with a column edge of whole vectors (4096 = 10 x 384 + 256: the
// edge's second sub-tile has 64 columns, two 4 x 3 steps and two vectors of a third). The
// vectors past the edge's columns do nothing, with no masked tail (they ran masked loads and
// stores of their accumulators at every k step, a third of the matmul's time on AVX2 code);
// the panel copy is vector loads and stores, not a memcpy or memmove call per weight row
// (768 bytes); the register steps prefetch the next panel; and the numbers agree with the
// naive matmul where the edge ends a step early (448 = 384 + 64) and mid-vector (460),
// constant and symbolic m (a full tile and a row edge, whose two versions of the steps
// both prefetch).
TEST(ScheduleNumericsTest, PackedWideColumnEdgeInWholeVectorsAndPanelCopyInline) {
  const tir::Target haswell_target = tir::Target::Cpu("haswell", 256, 1);
  absl::StatusOr<tir::PrimFunc> constant = tir::ScheduleForCpu(
      tir::WithTarget(Parse(MatmulWithSizes("64", "4096", "4096")), haswell_target), {.vector_lanes = 8});
  ASSERT_TRUE(constant.ok()) << constant.status();
  const std::string printed = relax::PrintPrimFunc(*constant, "k");
  EXPECT_TRUE(absl::StrContains(printed, "B_local")) << printed;
  for (absl::string_view line : absl::StrSplit(printed, '\n')) {
    EXPECT_FALSE(absl::StrContains(line, "A[") && absl::StrContains(line, "select("))
        << "a masked tail of the update: " << line;
  }
  absl::StatusOr<tir::PrimFunc> symbolic = tir::ScheduleForCpu(
      tir::WithTarget(Parse(MatmulWithSizes("m", "4096", "4608")), haswell_target), {.vector_lanes = 8});
  ASSERT_TRUE(symbolic.ok()) << symbolic.status();
  absl::StatusOr<CpuTarget> haswell = CpuTarget::Named("haswell");
  ASSERT_TRUE(haswell.ok()) << haswell.status();
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"k", *symbolic}}, *haswell, /*optimize=*/true);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_TRUE(absl::StrContains(*ir, "i64 8192")) << "the GEMV edge's 8 KiB runs keep their memcpy";
  // The register steps prefetch the next panel into L2 (prefetch_next; read, locality 2).
  EXPECT_TRUE(absl::StrContains(*ir, "call void @llvm.prefetch.p0i8(i8* ") && absl::StrContains(*ir, "i32 0, i32 2, i32 1)"))
      << "no prefetch of the next panel";
  for (absl::string_view line : absl::StrSplit(*ir, '\n')) {
    EXPECT_FALSE((absl::StrContains(line, "@llvm.memcpy") || absl::StrContains(line, "@llvm.memmove")) &&
                 absl::StrContains(line, "i64 768,"))
        << "a panel row copied by a call: " << line;
  }
  for (int64_t n : {448, 460}) {
    Variants symbolic_m(Parse(MatmulWithSizes("m", "512", std::to_string(n))));
    for (int64_t m : {33, 64}) {
      ExpectMatmulVariantsMatchNaive(symbolic_m, m, 512, n, 190, "n=" + std::to_string(n) + " m=" + std::to_string(m));
    }
    Variants constant_m(Parse(MatmulWithSizes("64", "512", std::to_string(n))));
    ExpectMatmulVariantsMatchNaive(constant_m, 64, 512, n, 191, "constant m=64 n=" + std::to_string(n));
  }
}

// AVX2's packed wide tiles in 4 x 3 steps (matmul.wide_step_vectors=3, 24-column steps and
// local addresses per term) against the naive matmul: row counts across the packed tiles'
// first row (32) and tile (64), not multiples of the 4-row step, widths not multiples of 24
// (300 = 12 x 24 + 12, the column edge) and one that is (576), k of three packed k blocks
// (768) and one odd k (a single block's worth is not blocked); symbolic and constant m.
TEST(ScheduleNumericsTest, MatmulPackedWideThreeVectorStepsByKnob) {
  absl::StatusOr<tir::CpuScheduleKnobs> knobs = tir::CpuScheduleKnobs::Parse("matmul.wide_step_vectors=3");
  ASSERT_TRUE(knobs.ok()) << knobs.status();
  for (int64_t n : {300, 576}) {
    Variants v(Parse(MatmulWithSizes("m", "768", std::to_string(n))), *knobs);
    for (int64_t m : {1, 16, 31, 32, 33, 35, 46, 48, 63, 64, 65}) {
      ExpectMatmulVariantsMatchNaive(v, m, 768, n, 160, "n=" + std::to_string(n) + " m=" + std::to_string(m));
    }
  }
  Variants odd_k(Parse(MatmulWithSizes("m", "257", "300")), *knobs);
  for (int64_t m : {33, 64}) ExpectMatmulVariantsMatchNaive(odd_k, m, 257, 300, 170, "k=257 m=" + std::to_string(m));
  Variants constant(Parse(MatmulWithSizes("40", "768", "300")), *knobs);
  ExpectMatmulVariantsMatchNaive(constant, 40, 768, 300, 180, "constant m=40");
}

// A constant 3 rows: the wide tile without a row branch (a branch on n < 256 remains);
// widths below, at and above one 256-column tile, and not multiples of the vector pair.
TEST(ScheduleNumericsTest, MatmulWithThreeConstantRows) {
  Variants v(Parse(MatmulWithSizes("3", "k", "n")));
  for (int64_t n : {1, 33, 256, 1030}) {
    for (int64_t k : {1, 13}) {
      ExpectMatmulVariantsMatchNaive(v, 3, k, n, 60, "n=" + std::to_string(n) + " k=" + std::to_string(k));
    }
  }
}

TEST(ScheduleNumericsTest, MatmulWithTransposedRightOperand) {
  std::string text = kMatmul;
  text.replace(text.find("B: Buffer((k, n)"), 16, "B: Buffer((n, k)");
  text.replace(text.find("B[vk, vj]"), 9, "B[vj, vk]");
  Variants v(Parse(text));
  for (int64_t size : {1, 7, 13, 100}) {
    int64_t m = size + 1, k = size, n = size + 3;
    vm::Tensor a = RandomF32({m, k}, 19), bt = RandomF32({n, k}, 20);
    std::vector<float> b(k * n);  // B = transpose(bt) for the naive loops
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t r = 0; r < k; ++r) b[r * n + j] = bt.data_as<float>()[j * k + r];
    }
    std::vector<double> scale;
    std::vector<double> expected = NaiveMatmul(a.data_as<float>(), b.data(), m, k, n, &scale);
    for (const std::string& name : Variants::Names()) {
      vm::Tensor c = RandomF32({m, n}, 21);
      v.Run(name, {a, bt, c});
      ExpectClose(c, expected, scale, name + " size=" + std::to_string(size));
    }
  }
}

TEST(ScheduleNumericsTest, BatchMatmul) {
  Variants v(Parse(kBatchMatmul));
  for (int64_t batch : {1, 3}) {
    for (int64_t size : {1, 7, 13, 100}) {
      int64_t m = size, k = size + 2, n = size + 5;
      vm::Tensor a = RandomF32({batch, m, k}, 11), b = RandomF32({batch, k, n}, 12);
      std::vector<double> expected, scale;
      for (int64_t bi = 0; bi < batch; ++bi) {
        std::vector<double> s;
        std::vector<double> c = NaiveMatmul(a.data_as<float>() + bi * m * k, b.data_as<float>() + bi * k * n, m, k,
                                            n, &s);
        expected.insert(expected.end(), c.begin(), c.end());
        scale.insert(scale.end(), s.begin(), s.end());
      }
      for (const std::string& name : Variants::Names()) {
        vm::Tensor c = RandomF32({batch, m, n}, 13);
        v.Run(name, {a, b, c});
        ExpectClose(c, expected, scale, name + " batch=" + std::to_string(batch) + " size=" + std::to_string(size));
      }
    }
  }
}

// The batched form with a constant width of 300: each parallel iteration is one (batch,
// column panel) pair and packs that panel.
TEST(ScheduleNumericsTest, BatchMatmulWithPackedPanels) {
  std::string text = kBatchMatmul;
  for (const char* from : {"B: Buffer((b, k, n)", "C: Buffer((b, m, n)"}) {
    std::string f = from;
    text.replace(text.find(f), f.size(), f.substr(0, f.size() - 2) + "300)");
  }
  text.replace(text.find("serial(0, n)"), 12, "serial(0, 300)");
  text.replace(text.find("spatial(n, j)"), 13, "spatial(300, j)");
  Variants v(Parse(text));
  ASSERT_NE(v.scheduled_text().find("B_local"), std::string::npos) << v.scheduled_text();
  for (int64_t batch : {1, 3}) {
    for (int64_t size : {1, 13}) {
      int64_t m = size + 4, k = size, n = 300;
      vm::Tensor a = RandomF32({batch, m, k}, 53), b = RandomF32({batch, k, n}, 54);
      std::vector<double> expected, scale;
      for (int64_t bi = 0; bi < batch; ++bi) {
        std::vector<double> sc;
        std::vector<double> c = NaiveMatmul(a.data_as<float>() + bi * m * k, b.data_as<float>() + bi * k * n, m, k, n, &sc);
        expected.insert(expected.end(), c.begin(), c.end());
        scale.insert(scale.end(), sc.begin(), sc.end());
      }
      for (const std::string& name : Variants::Names()) {
        vm::Tensor c = RandomF32({batch, m, n}, 55);
        v.Run(name, {a, b, c});
        ExpectClose(c, expected, scale, name + " batch=" + std::to_string(batch) + " size=" + std::to_string(size));
      }
    }
  }
}

TEST(ScheduleNumericsTest, SoftmaxWithNestedBlocks) {
  Variants v(Parse(kSoftmax));
  for (int64_t n : kSizes) {
    vm::Tensor a = RandomF32({n, 37}, 14);
    std::vector<double> expected(n * 37), scale(n * 37, 1.0);
    for (int64_t i = 0; i < n; ++i) {
      const float* row = a.data_as<float>() + i * 37;
      double mx = row[0], sum = 0.0;
      for (int j = 0; j < 37; ++j) mx = std::max<double>(mx, row[j]);
      for (int j = 0; j < 37; ++j) sum += std::exp(row[j] - mx);
      for (int j = 0; j < 37; ++j) expected[i * 37 + j] = std::exp(row[j] - mx) / sum;
    }
    for (const std::string& name : Variants::Names()) {
      vm::Tensor b = RandomF32({n, 37}, 15);
      v.Run(name, {a, b});
      ExpectClose(b, expected, scale, name + " n=" + std::to_string(n));
    }
  }
}

// The vectorized loops reach the code generator in the form its own vectorizer turns into
// SIMD code: vector types appear in the LLVM IR before LLVM's optimizer has run.
TEST(ScheduleNumericsTest, ScheduledLoopsBecomeSimdBeforeLlvmOptimizes) {
  for (const char* text : {kElementwise, k1d, kMatmul, kSoftmax}) {
    tir::PrimFunc func = Parse(text);
    absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForCpu(func, {.vector_lanes = 16, .num_threads = 4});
    ASSERT_TRUE(scheduled.ok()) << scheduled.status();
    absl::StatusOr<std::string> plain_ir = DumpCpuLlvmIr({{"k", func}}, CpuTarget::Host(), /*optimize=*/false);
    absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"k", *scheduled}}, CpuTarget::Host(), /*optimize=*/false);
    ASSERT_TRUE(ir.ok() && plain_ir.ok()) << ir.status() << plain_ir.status();
    // 16 lanes for elementwise loops, 2 * 16 for the matmul's column tile.
    auto has_simd = [](const std::string& s) {
      return s.find("<16 x float>") != std::string::npos || s.find("<32 x float>") != std::string::npos;
    };
    EXPECT_FALSE(has_simd(*plain_ir)) << text;
    EXPECT_TRUE(has_simd(*ir)) << relax::PrintPrimFunc(*scheduled, "k");
  }
}

// Random sequences of primitives (failed ones must leave the function alone) on the matmul:
// every schedule compiles, computes the naive result, and its trace replays to it.
TEST(ScheduleNumericsTest, RandomSchedulesOfMatmul) {
  tir::PrimFunc func = Parse(kMatmul);
  NamedPrimFuncs funcs;
  std::vector<std::string> traces;
  for (uint32_t seed = 0; seed < 60; ++seed) {
    std::mt19937 rng(seed);
    tir::Schedule s(func);
    for (int step = 0; step < 9; ++step) {
      std::vector<std::string> loops = *s.GetLoops("C");
      auto pick = [&] { return loops[rng() % loops.size()]; };
      tir::PrimFunc before = s.func();
      absl::Status st;
      switch (rng() % 10) {
        case 0:
          st = s.Split(pick(), {-1, static_cast<int64_t>(1 + rng() % 8)}).status();
          break;
        case 1: {
          size_t a = rng() % loops.size();
          if (a + 1 < loops.size()) st = s.Fuse({loops[a], loops[a + 1]}).status();
          break;
        }
        case 2:
          std::shuffle(loops.begin(), loops.end(), rng);
          st = s.Reorder(loops);
          break;
        case 3:
          st = s.Parallel(pick());
          break;
        case 4:
          st = s.Vectorize(pick());
          break;
        case 5:
          st = s.Unroll(pick());
          break;
        case 6:
          st = s.DecomposeReduction("C", pick()).status();
          break;
        case 7:
          st = s.CacheWrite("C").status();
          break;
        case 8:
          st = s.ReverseComputeAt("C_write_back", pick());
          break;
        default:
          st = s.CacheRead("C", rng() % 2 ? "A" : "B", pick()).status();
          break;
      }
      if (!st.ok()) {
        ASSERT_TRUE(s.func().same_as(before)) << st;
      }
    }
    tir::Schedule again(func);
    ASSERT_TRUE(s.trace().Replay(&again).ok()) << s.trace().ToString();
    ASSERT_TRUE(tir::StructuralEqual(again.func(), s.func())) << s.trace().ToString();
    funcs.push_back({"s" + std::to_string(seed), s.func()});
    traces.push_back(s.trace().ToString() + relax::PrintPrimFunc(s.func(), "s"));
  }
  int rca = 0, cr = 0, cw = 0;  // traces where each succeeded
  for (const std::string& t : traces) {
    rca += t.find("reverse_compute_at(") != std::string::npos;
    cr += t.find("cache_read(") != std::string::npos;
    cw += t.find("cache_write(") != std::string::npos;
  }
  // The sequences reach every new primitive successfully.
  EXPECT_GT(rca, 0);
  EXPECT_GT(cr, 0);
  EXPECT_GT(cw, 0);
  absl::StatusOr<std::string> so = BuildCpuSharedObject(funcs, CpuTarget::Host());
  ASSERT_TRUE(so.ok()) << so.status();
  absl::StatusOr<std::shared_ptr<vm::KernelObject>> object = vm::KernelObject::Load(*so);
  ASSERT_TRUE(object.ok()) << object.status();
  struct Shape {
    int64_t m, k, n;
  };
  for (const Shape& sh : std::vector<Shape>{{7, 13, 5}, {16, 16, 16}, {33, 4, 47}}) {
    vm::Tensor a = RandomF32({sh.m, sh.k}, 22), b = RandomF32({sh.k, sh.n}, 23);
    std::vector<double> scale;
    std::vector<double> expected = NaiveMatmul(a.data_as<float>(), b.data_as<float>(), sh.m, sh.k, sh.n, &scale);
    for (size_t i = 0; i < funcs.size(); ++i) {
      vm::Tensor c = RandomF32({sh.m, sh.n}, 24);
      absl::StatusOr<KilnKernelFn> fn = (*object)->Find(funcs[i].first);
      ASSERT_TRUE(fn.ok());
      KilnArg args[3] = {};
      const vm::Tensor* tensors[3] = {&a, &b, &c};
      for (int t = 0; t < 3; ++t) {
        args[t].value.tensor = tensors[t]->dl_tensor();
        args[t].type_code = kKilnArgTensor;
      }
      ASSERT_EQ((*fn)(args, 3, &Context()->ctx), 0) << Context()->error;
      ExpectClose(c, expected, scale, traces[i] + " m=" + std::to_string(sh.m));
    }
  }
}

// matmul -> add(bias) -> gelu in one PrimFunc: the schedule folds the add and the gelu
// into the matmul's write-back; the result matches plain loops for sizes that are not
// multiples of the tiles.
TEST(ScheduleNumericsTest, FusedMatmulBiasGelu) {
  tir::PrimFunc func = Parse(kFusedMatmulBiasGelu);
  Variants v(func);
  // The epilogue runs on the tile: no full-size intermediate is left.
  EXPECT_EQ(v.scheduled_text().find("allocate mm:"), std::string::npos) << v.scheduled_text();
  EXPECT_EQ(v.scheduled_text().find("allocate biased"), std::string::npos) << v.scheduled_text();
  struct Shape {
    int64_t m, k, n;
  };
  for (const Shape& s : std::vector<Shape>{{1, 1, 1}, {7, 13, 5}, {4, 16, 32}, {13, 7, 100}, {100, 33, 67},
                                          {5, 301, 33}, {130, 3, 17}, {3, 20, 700}, {1, 9, 1030}}) {
    vm::Tensor a = RandomF32({s.m, s.k}, 30), w = RandomF32({s.k, s.n}, 31), bias = RandomF32({s.n}, 32);
    std::vector<double> scale;
    std::vector<double> expected = NaiveMatmul(a.data_as<float>(), w.data_as<float>(), s.m, s.k, s.n, &scale);
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double x = expected[i * s.n + j] + bias.data_as<float>()[j];
        expected[i * s.n + j] = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
        scale[i * s.n + j] += std::fabs(bias.data_as<float>()[j]);
      }
    }
    for (const std::string& name : Variants::Names()) {
      vm::Tensor out = RandomF32({s.m, s.n}, 33);
      v.Run(name, {a, w, bias, out});
      ExpectClose(out, expected, scale,
                  name + " m=" + std::to_string(s.m) + " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n));
    }
  }
}

// Fused forms the epilogue rule must handle or leave alone: a residual add and relu after a
// batched matmul (two epilogue inputs, a batch dimension), and a softmax after a matmul
// (not elementwise: the matmul keeps its full-size output, the softmax reads it).
TEST(ScheduleNumericsTest, FusedBatchMatmulResidualReluAndMatmulSoftmax) {
  Variants residual(Parse(R"(
prim_func @f(A: Buffer((b, m, k), float32), W: Buffer((b, k, n), float32), R: Buffer((b, m, n), float32), out: Buffer((b, m, n), float32)) {
  allocate mm: Buffer((b, m, n), float32) {
    allocate sum: Buffer((b, m, n), float32) {
      for bb in serial(0, b) {
        for i in serial(0, m) {
          for j in serial(0, n) {
            for r in serial(0, k) {
              block "bmm" {
                vb = spatial(b, bb)
                vi = spatial(m, i)
                vj = spatial(n, j)
                vk = reduce(k, r)
                init {
                  mm[vb, vi, vj] = 0.0
                }
                mm[vb, vi, vj] = mm[vb, vi, vj] + A[vb, vi, vk] * W[vb, vk, vj]
              }
            }
          }
        }
      }
      for bb1 in serial(0, b) {
        for i1 in serial(0, m) {
          for j1 in serial(0, n) {
            block "residual" {
              vb1 = spatial(b, bb1)
              vi1 = spatial(m, i1)
              vj1 = spatial(n, j1)
              sum[vb1, vi1, vj1] = mm[vb1, vi1, vj1] + R[vb1, vi1, vj1]
            }
          }
        }
      }
      for bb2 in serial(0, b) {
        for i2 in serial(0, m) {
          for j2 in serial(0, n) {
            block "relu" {
              vb2 = spatial(b, bb2)
              vi2 = spatial(m, i2)
              vj2 = spatial(n, j2)
              out[vb2, vi2, vj2] = max(sum[vb2, vi2, vj2], 0.0)
            }
          }
        }
      }
    }
  }
})"));
  EXPECT_EQ(residual.scheduled_text().find("allocate mm:"), std::string::npos) << residual.scheduled_text();
  for (int64_t batch : {1, 3}) {
    for (int64_t size : {1, 7, 40}) {
      int64_t m = size + 2, k = size, n = size * 2 + 1;
      vm::Tensor a = RandomF32({batch, m, k}, 40), w = RandomF32({batch, k, n}, 41), r = RandomF32({batch, m, n}, 42);
      std::vector<double> expected, scale;
      for (int64_t bi = 0; bi < batch; ++bi) {
        std::vector<double> sc;
        std::vector<double> c = NaiveMatmul(a.data_as<float>() + bi * m * k, w.data_as<float>() + bi * k * n, m, k, n, &sc);
        for (int64_t e = 0; e < m * n; ++e) {
          double x = c[e] + r.data_as<float>()[bi * m * n + e];
          expected.push_back(std::max(x, 0.0));
          scale.push_back(sc[e] + std::fabs(r.data_as<float>()[bi * m * n + e]));
        }
      }
      for (const std::string& name : Variants::Names()) {
        vm::Tensor out = RandomF32({batch, m, n}, 43);
        residual.Run(name, {a, w, r, out});
        ExpectClose(out, expected, scale, name + " batch=" + std::to_string(batch) + " size=" + std::to_string(size));
      }
    }
  }

  Variants softmax(Parse(R"(
prim_func @f(A: Buffer((m, k), float32), W: Buffer((k, n), float32), out: Buffer((m, n), float32)) {
  allocate mm: Buffer((m, n), float32) {
    allocate mx: Buffer((m,), float32) {
      allocate sm: Buffer((m,), float32) {
        for i in serial(0, m) {
          for j in serial(0, n) {
            for r in serial(0, k) {
              block "matmul" {
                vi = spatial(m, i)
                vj = spatial(n, j)
                vk = reduce(k, r)
                init {
                  mm[vi, vj] = 0.0
                }
                mm[vi, vj] = mm[vi, vj] + A[vi, vk] * W[vk, vj]
              }
            }
          }
        }
        for i1 in serial(0, m) {
          for j1 in serial(0, n) {
            block "max" {
              vi1 = spatial(m, i1)
              vj1 = reduce(n, j1)
              init {
                mx[vi1] = float32(-inf)
              }
              mx[vi1] = max(mx[vi1], mm[vi1, vj1])
            }
          }
        }
        for i2 in serial(0, m) {
          for j2 in serial(0, n) {
            block "sum" {
              vi2 = spatial(m, i2)
              vj2 = reduce(n, j2)
              init {
                sm[vi2] = 0.0
              }
              sm[vi2] = sm[vi2] + exp(mm[vi2, vj2] - mx[vi2])
            }
          }
        }
        for i3 in serial(0, m) {
          for j3 in serial(0, n) {
            block "norm" {
              vi3 = spatial(m, i3)
              vj3 = spatial(n, j3)
              out[vi3, vj3] = exp(mm[vi3, vj3] - mx[vi3]) / sm[vi3]
            }
          }
        }
      }
    }
  }
})"));
  EXPECT_NE(softmax.scheduled_text().find("mm_local"), std::string::npos) << softmax.scheduled_text();
  for (int64_t size : {1, 7, 13, 100}) {
    int64_t m = size + 1, k = size, n = size + 3;
    vm::Tensor a = RandomF32({m, k}, 44), w = RandomF32({k, n}, 45);
    std::vector<double> scale;
    std::vector<double> logits = NaiveMatmul(a.data_as<float>(), w.data_as<float>(), m, k, n, &scale);
    std::vector<double> expected(m * n), ones(m * n, 1.0);
    for (int64_t i = 0; i < m; ++i) {
      double mx = logits[i * n], sum = 0.0;
      for (int64_t j = 0; j < n; ++j) mx = std::max(mx, logits[i * n + j]);
      for (int64_t j = 0; j < n; ++j) sum += std::exp(logits[i * n + j] - mx);
      for (int64_t j = 0; j < n; ++j) expected[i * n + j] = std::exp(logits[i * n + j] - mx) / sum;
    }
    for (const std::string& name : Variants::Names()) {
      vm::Tensor out = RandomF32({m, n}, 46);
      softmax.Run(name, {a, w, out});
      ExpectClose(out, expected, ones, name + " size=" + std::to_string(size));
    }
  }
}

// The accumulator tile is a small local buffer that LLVM promotes to vector registers in
// the full tiles: after optimization the fast path's alloca is gone (only the edge tiles'
// serial copy keeps one).
TEST(ScheduleNumericsTest, MatmulAccumulatorLivesInRegisters) {
  for (const char* text : {kMatmul, kFusedMatmulBiasGelu}) {
    absl::StatusOr<tir::PrimFunc> scheduled =
        tir::ScheduleForCpu(Parse(text), {.vector_lanes = 16, .num_threads = 4});
    ASSERT_TRUE(scheduled.ok()) << scheduled.status();
    std::string printed = relax::PrintPrimFunc(*scheduled, "k");
    std::string local = printed.find("C_local") != std::string::npos ? "C_local" : "mm_local";
    ASSERT_NE(printed.find("allocate " + local + ": Buffer((8, 32)"), std::string::npos) << printed;
    absl::StatusOr<std::string> raw = DumpCpuLlvmIr({{"k", *scheduled}}, CpuTarget::Host(), /*optimize=*/false);
    absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"k", *scheduled}}, CpuTarget::Host(), /*optimize=*/true);
    ASSERT_TRUE(ir.ok() && raw.ok()) << ir.status() << raw.status();
    EXPECT_NE(raw->find("%" + local + " = alloca"), std::string::npos) << *raw;
    EXPECT_EQ(ir->find("%" + local + " = alloca"), std::string::npos) << *ir;
  }
}

// The symbolic (n x 64) . (64 x n) matmul (attention scores' shape): its columns are the
// symbolic n, so a column tile of 32 (16 lanes) or 16 (8 lanes) leaves a tail, and at n = 16
// on 16 lanes every column is in it. The tail's init and update run all the lanes of the
// tile with the lanes out of range blended away, and its write-back reads the tile through a
// staging vector, and the column edge in full rows has no row conditions
// (guard_vectorized_tails.cc): only the packed panel's copy and the write-back to C remain
// loops of symbolic extent (masked), none inside the k loop. On 8 lanes LLVM then keeps every
// copy of the accumulator tile in registers (on 16 lanes the copy for the corner tile, rows
// and columns both out of range, still keeps it in memory: docs/schedule.md). Without the
// row edge's steps of two rows, whose tile lives in memory between the steps
// (MatmulRegisterRowEdgeInStepsOfTwoRows).
TEST(ScheduleNumericsTest, SymbolicColumnTailKeepsTheAccumulatorInRegisters) {
  const tir::PrimFunc func = Parse(MatmulWithSizes("n", "64", "n"));
  absl::StatusOr<tir::CpuScheduleKnobs> no_steps = tir::CpuScheduleKnobs::Parse("matmul.edge_steps=0");
  ASSERT_TRUE(no_steps.ok()) << no_steps.status();
  for (int lanes : {8, 16}) {
    const tir::PrimFunc target_func =
        tir::WithTarget(func, tir::Target::Cpu(lanes == 16 ? "host" : "haswell", lanes * 32, 4));
    absl::StatusOr<tir::PrimFunc> scheduled =
        tir::ScheduleForCpu(target_func, {.vector_lanes = lanes, .num_threads = 4, .knobs = *no_steps});
    ASSERT_TRUE(scheduled.ok()) << scheduled.status();
    const std::string printed = relax::PrintPrimFunc(*scheduled, "k");
    EXPECT_NE(printed.find("[i_1_edge_2_edge, j_1_tail_edge_edge] = select(j_1_tail_edge_edge < n"), std::string::npos)
        << printed;
    std::vector<absl::string_view> lines = absl::StrSplit(printed, '\n');
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      if (!absl::StrContains(lines[i], "vectorized(0, min(")) continue;
      EXPECT_TRUE(absl::StrContains(lines[i + 1], "B_cache") || absl::StrContains(lines[i + 1], "write_back"))
          << "lanes " << lanes << ": a masked loop in " << lines[i + 1] << "\n" << printed;
    }
    if (lanes != 8) continue;
    absl::StatusOr<CpuTarget> haswell = CpuTarget::Named("haswell");
    ASSERT_TRUE(haswell.ok()) << haswell.status();
    absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"k", *scheduled}}, *haswell, /*optimize=*/true);
    ASSERT_TRUE(ir.ok()) << ir.status();
    for (absl::string_view line : absl::StrSplit(*ir, '\n')) {
      EXPECT_FALSE(absl::StrContains(line, "alloca") && absl::StrContains(line, "C_local") &&
                   !absl::StrContains(line, "_stage"))
          << line;
    }
  }
  Variants v(func);
  for (int64_t n : {1, 15, 16, 17, 33}) ExpectMatmulVariantsMatchNaive(v, n, 64, n, 70, "n=" + std::to_string(n));
}

// The lines of the branch that `line` (an `if ... {`) opens, up to its `} else {`.
std::vector<std::string> BranchLines(const std::vector<std::string>& lines, size_t line) {
  const size_t indent = lines[line].find_first_not_of(' ');
  std::vector<std::string> out;
  for (size_t i = line + 1; i < lines.size() && lines[i].find_first_not_of(' ') != indent; ++i) {
    out.push_back(lines[i]);
  }
  return out;
}

// A symbolic column count leaves a column-edge tile of 1..31 columns (32-column tiles on 16
// lanes, 16-column tiles on 8): the edge runs in as many whole vectors as its columns need,
// `if (n - 32 * j_0 <= 16) { one vector } else { two }`, each version straight-line vector
// code of constant extent (the tile's accumulators in registers). Checked on the scores' form
// (n x 64) . (64 x n), whose right operand is packed (the edge's k loop blends one vector
// per row), and on an unpacked (m x 13) . (13 x n); every edge width 1..33 past a full tile,
// with a row edge, against the naive matmul, AVX2 code included. The tiles-in-registers
// checks without the row edge's steps of two rows, whose tile lives in memory between steps
// (MatmulRegisterRowEdgeInStepsOfTwoRows).
TEST(ScheduleNumericsTest, ColumnEdgeRunsInWholeVectors) {
  const tir::PrimFunc scores = Parse(MatmulWithSizes("n", "64", "n"));
  absl::StatusOr<tir::CpuScheduleKnobs> no_steps = tir::CpuScheduleKnobs::Parse("matmul.edge_steps=0");
  ASSERT_TRUE(no_steps.ok()) << no_steps.status();
  for (int lanes : {8, 16}) {
    const tir::PrimFunc target_func =
        tir::WithTarget(scores, tir::Target::Cpu(lanes == 16 ? "host" : "haswell", lanes * 32, 1));
    absl::StatusOr<tir::PrimFunc> scheduled =
        tir::ScheduleForCpu(target_func, {.vector_lanes = lanes, .num_threads = 1, .knobs = *no_steps});
    ASSERT_TRUE(scheduled.ok()) << scheduled.status();
    const std::string printed = relax::PrintPrimFunc(*scheduled, "k");
    std::vector<std::string> lines = absl::StrSplit(printed, '\n');
    const std::string one_vector = " <= " + std::to_string(lanes) + " {";
    int versions = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (!absl::StartsWith(absl::StripLeadingAsciiWhitespace(lines[i]), "if n - ") ||
          !absl::EndsWith(lines[i], one_vector)) {
        continue;
      }
      ++versions;
      bool blended = false;
      for (const std::string& line : BranchLines(lines, i)) {
        blended |= absl::StrContains(line, "= select(");
        const size_t at = line.find("vectorized(0, ");
        if (at == std::string::npos) continue;
        const std::string extent = line.substr(at + 14);
        EXPECT_TRUE(absl::StartsWith(extent, std::to_string(lanes) + ")") ||
                    absl::StartsWith(extent, "min(max(n - "))
            << "lanes " << lanes << ": more than one vector in the one-vector edge: " << line << "\n" << printed;
      }
      EXPECT_TRUE(blended) << "lanes " << lanes << ": no blended vector in the one-vector edge\n" << printed;
    }
    EXPECT_GE(versions, 1) << printed;
    if (lanes != 8) continue;
    absl::StatusOr<CpuTarget> haswell = CpuTarget::Named("haswell");
    ASSERT_TRUE(haswell.ok()) << haswell.status();
    absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"k", *scheduled}}, *haswell, /*optimize=*/true);
    ASSERT_TRUE(ir.ok()) << ir.status();
    for (absl::string_view line : absl::StrSplit(*ir, '\n')) {
      EXPECT_FALSE(absl::StrContains(line, "alloca") && absl::StrContains(line, "C_local") &&
                   !absl::StrContains(line, "_stage"))
          << "an accumulator tile left in memory: " << line;
    }
  }
  Variants packed(scores);
  for (int64_t edge = 1; edge <= 33; ++edge) {
    const int64_t n = 32 + edge;
    ExpectMatmulVariantsMatchNaive(packed, n, 64, n, 80, "scores n=" + std::to_string(n));
  }
  // Unpacked, the edge's k loop reads B's row straight from the function's buffer: in one
  // masked load per vector (`select(in range, B[..], 0)`, codegen's MaskedLoad), so that
  // the accumulators stay in registers (it was LLVM's masked loop over the tile in memory
  // on AVX-512, a serial loop on AVX2).
  const tir::PrimFunc unpacked_func = Parse(MatmulWithSizes("m", "13", "n"));
  absl::StatusOr<tir::PrimFunc> unpacked_avx2 =
      tir::ScheduleForCpu(tir::WithTarget(unpacked_func, tir::Target::Cpu("haswell", 256, 1)),
                          {.vector_lanes = 8, .num_threads = 1, .knobs = *no_steps});
  ASSERT_TRUE(unpacked_avx2.ok()) << unpacked_avx2.status();
  // The few-rows branch's wide tiles (`_else`) too: their tail updates the wide accumulator
  // at `32 * pair + lane`, in the tile for every pair, so it is blended whole (it was serial).
  for (absl::string_view line : absl::StrSplit(relax::PrintPrimFunc(*unpacked_avx2, "k"), '\n')) {
    EXPECT_FALSE(absl::StrContains(line, "_tail") && absl::StrContains(line, "in serial(")) << "a serial tail: " << line;
  }
  absl::StatusOr<CpuTarget> haswell = CpuTarget::Named("haswell");
  ASSERT_TRUE(haswell.ok()) << haswell.status();
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"k", *unpacked_avx2}}, *haswell, /*optimize=*/true);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_TRUE(absl::StrContains(*ir, "@llvm.masked.load")) << *ir;
  // The register tiles (6 x 16 floats); the few-rows branch's wide 16 x 128 tiles live in
  // memory by design.
  for (absl::string_view line : absl::StrSplit(*ir, '\n')) {
    EXPECT_FALSE(absl::StrContains(line, "alloca [96 x float]")) << "an accumulator tile left in memory: " << line;
  }
  EXPECT_TRUE(absl::StrContains(relax::PrintPrimFunc(*unpacked_avx2, "k"), "Buffer((6, 16), float32"));
  Variants unpacked(unpacked_func);
  for (int64_t edge = 1; edge <= 33; ++edge) {
    ExpectMatmulVariantsMatchNaive(unpacked, 9, 13, 32 + edge, 81, "m=9 k=13 n=" + std::to_string(32 + edge));
  }
  ExpectMatmulVariantsMatchNaive(unpacked, 16, 13, 300, 82, "m=16 k=13 n=300");
}

// The wide tiles' column edge (issue 15, edge22). Over a constant weight the edge tile's
// serial loops stop at its last vector pair with a column in range (CutLoopsPastLaneBounds):
// at n = 4100 on one AVX-512 thread the 4-column edge of a 4096-column tile walked all 16
// sub-tiles x 8 pairs, now its sub-tile and pair loops end at the columns (the edge is the
// last tile, pinned so by GuardVectorizedTails: one sub-tile, `1 - 8 * s` pairs). On 2
// threads the tile index comes from the fused parallel loop (`floordiv(f, rows)`) and is
// pinned too: left symbolic, the edge's extents and masks were computed at run time (a
// 64 x 4096 x 4096 AVX2 matmul in 4 x 3 steps ran 1.6x slower). Its last pair is blended whole on AVX2 too (it
// was a serial loop there; ColumnEdgeRunsInWholeVectors checks the symbolic width's). Every
// edge width 1..33 past a whole sub-tile of a symbolic width, and constant widths whose edge
// is on each side of every vector (8, 16 lanes) and pair boundary (each its own compile),
// the GEMV, a row edge and a full 16-row tile, all variants and AVX2 code, against the
// naive matmul.
TEST(ScheduleNumericsTest, WideTileColumnEdgeOfEveryWidth) {
  const tir::PrimFunc wide = Parse(MatmulWithSizes("m", "4096", "4100"));
  absl::StatusOr<tir::PrimFunc> one_thread = tir::ScheduleForCpu(
      tir::WithTarget(wide, tir::Target::Cpu("host", 512, 1)), {.vector_lanes = 16, .num_threads = 1});
  ASSERT_TRUE(one_thread.ok()) << one_thread.status();
  const std::string printed = relax::PrintPrimFunc(*one_thread, "k");
  EXPECT_TRUE(absl::StrContains(printed, "in serial(0, 1) {")) << printed;
  EXPECT_TRUE(absl::StrContains(printed, "in serial(0, min(max(1 - 8 * ")) << printed;
  absl::StatusOr<tir::PrimFunc> two_threads = tir::ScheduleForCpu(
      tir::WithTarget(wide, tir::Target::Cpu("haswell", 256, 2)), {.vector_lanes = 8, .num_threads = 2});
  ASSERT_TRUE(two_threads.ok()) << two_threads.status();
  const std::string printed2 = relax::PrintPrimFunc(*two_threads, "k");
  EXPECT_TRUE(absl::StrContains(printed2, "_fused in parallel(")) << printed2;
  for (absl::string_view line : absl::StrSplit(printed2, '\n')) {
    EXPECT_FALSE(absl::StrContains(line, "min(max(") && absl::StrContains(line, "floordiv("))
        << "an edge extent computed from the parallel tile index: " << line;
  }
  Variants symbolic(Parse(MatmulWithSizes("m", "32", "n")));
  for (int64_t edge = 1; edge <= 33; ++edge) {
    for (int64_t m : {1, 5, 16}) {
      ExpectMatmulVariantsMatchNaive(symbolic, m, 32, 256 + edge, 160,
                                     "symbolic n=" + std::to_string(256 + edge) + " m=" + std::to_string(m));
    }
  }
  for (int64_t edge : {1, 8, 9, 16, 17, 31, 33}) {
    const int64_t n = 1024 + edge;  // 4 threads: tiles of 512 columns, the last `edge` wide
    Variants constant(Parse(MatmulWithSizes("m", "32", std::to_string(n))));
    for (int64_t m : {1, 5, 16}) {
      ExpectMatmulVariantsMatchNaive(constant, m, 32, n, 170, "n=" + std::to_string(n) + " m=" + std::to_string(m));
    }
  }
}

// Not an assertion: how much the schedule buys on a 256^3 matmul on this machine.
TEST(ScheduleNumericsTest, MatmulTiming) {
  Variants v(Parse(kMatmul));
  const int64_t s = 256;
  vm::Tensor a = RandomF32({s, s}, 16), b = RandomF32({s, s}, 17), c = RandomF32({s, s}, 18);
  for (const std::string& name : Variants::Names()) {
    v.Run(name, {a, b, c});  // warm up
    auto start = std::chrono::steady_clock::now();
    const int reps = 5;
    for (int r = 0; r < reps; ++r) v.Run(name, {a, b, c});
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / reps;
    std::cout << "matmul 256 " << name << ": " << ms << " ms (" << 2.0 * s * s * s / ms / 1e6
              << " GFLOP/s, 4 threads)\n";
  }
}


// ---------------------------------------------------------------- row reductions (rfactor)

// Row reductions as legalization makes them (a guarded fill for an empty row, then the
// reduction): sum, max, min, and a sum whose init is not the identity. The scheduled
// variants split each row into vector lanes of partial results (rfactor), so a sum is
// reassociated: it is compared with a tolerance relative to the sum of absolute values.
std::string RowReduction(const std::string& init, const std::string& update) {
  return R"(
prim_func @f(A: Buffer((n, m), float32), B: Buffer((n,), float32)) {
  if m == 0 {
    for i0 in serial(0, n) {
      block "B_empty" {
        v0 = spatial(n, i0)
        B[v0] = )" + init + R"(
      }
    }
  }
  for i in serial(0, n) {
    for r in serial(0, m) {
      block "B" {
        vi = spatial(n, i)
        vr = reduce(m, r)
        init {
          B[vi] = )" + init + R"(
        }
        B[vi] = )" + update + R"(
      }
    }
  }
})";
}

const std::vector<int64_t> kRowLengths = {0, 1, 2, 7, 13, 15, 16, 17, 31, 32, 33, 100, 1003};

// kRowLengths and every rest 1..63 past two rounds of 64 lanes (AVX-512: 64 lanes, tail
// steps of 16, the last under 16 one step of the lanes in range; AVX2: 32 and 8): each
// vector tail count and every masked last step.
std::vector<int64_t> RaggedRowLengths() {
  std::vector<int64_t> lengths = kRowLengths;
  for (int64_t rest = 1; rest < 64; ++rest) lengths.push_back(128 + rest);
  return lengths;
}

TEST(ScheduleNumericsTest, RowReductionsInLanes) {
  struct Case {
    const char* what;
    std::string init, update;
    double start;
    double (*combine)(double, double);
    bool exact;
  };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Case> cases = {
      {"sum", "0.0", "B[vi] + A[vi, vr]", 0.0, [](double a, double x) { return a + x; }, false},
      {"sum from 3", "3.0", "B[vi] + A[vi, vr] * 2.0", 3.0, [](double a, double x) { return a + 2 * x; }, false},
      {"max", "float32(-inf)", "max(B[vi], A[vi, vr])", -inf, [](double a, double x) { return std::max(a, x); }, true},
      {"min", "float32(inf)", "min(A[vi, vr], B[vi])", inf, [](double a, double x) { return std::min(a, x); }, true},
  };
  for (const Case& c : cases) {
    Variants v(Parse(RowReduction(c.init, c.update)));
    ASSERT_NE(v.scheduled_text().find("vectorized"), std::string::npos) << v.scheduled_text();
    for (int64_t n : {1, 5, 37}) {
      for (int64_t m : RaggedRowLengths()) {
        vm::Tensor a = RandomF32({n, m}, 30 + static_cast<uint32_t>(m));
        std::vector<double> expected(n, c.start), scale(n, std::fabs(c.start));
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t r = 0; r < m; ++r) {
            double x = a.data_as<float>()[i * m + r];
            expected[i] = c.combine(expected[i], x);
            scale[i] += 2 * std::fabs(x);
          }
        }
        for (const std::string& name : Variants::Names()) {
          vm::Tensor b = RandomF32({n}, 31);
          v.Run(name, {a, b});
          std::string what = std::string(c.what) + " " + name + " n=" + std::to_string(n) + " m=" + std::to_string(m);
          if (c.exact) {
            for (int64_t i = 0; i < n; ++i) ASSERT_EQ(b.data_as<float>()[i], expected[i]) << what << " row " << i;
          } else {
            ExpectClose(b, expected, scale, what);
          }
        }
      }
    }
  }
}

// softmax and layer_norm as legalization lowers them (max / sum of exp / quotient; mean /
// variance / affine normalization), every reduction vectorized in lanes.
const char* kLegalizedSoftmax = R"(
prim_func @softmax(A: Buffer((n, m), float32), out: Buffer((n, m), float32)) {
  allocate softmax_max: Buffer((n,), float32) {
    allocate softmax_sum: Buffer((n,), float32) {
      if m == 0 {
        for i0 in serial(0, n) {
          block "softmax_max_empty" {
            v0 = spatial(n, i0)
            softmax_max[v0] = float32(-inf)
          }
        }
      }
      for i0_1 in serial(0, n) {
        for k0 in serial(0, m) {
          block "softmax_max" {
            v0_1 = spatial(n, i0_1)
            vk0 = reduce(m, k0)
            init {
              softmax_max[v0_1] = float32(-inf)
            }
            softmax_max[v0_1] = max(softmax_max[v0_1], A[v0_1, vk0])
          }
        }
      }
      if m == 0 {
        for i0_2 in serial(0, n) {
          block "softmax_sum_empty" {
            v0_2 = spatial(n, i0_2)
            softmax_sum[v0_2] = 0.0
          }
        }
      }
      for i0_3 in serial(0, n) {
        for k0_1 in serial(0, m) {
          block "softmax_sum" {
            v0_3 = spatial(n, i0_3)
            vk0_1 = reduce(m, k0_1)
            init {
              softmax_sum[v0_3] = 0.0
            }
            softmax_sum[v0_3] = softmax_sum[v0_3] + exp(A[v0_3, vk0_1] - softmax_max[v0_3])
          }
        }
      }
      for i0_4 in serial(0, n) {
        for i1 in serial(0, m) {
          block "softmax" {
            v0_4 = spatial(n, i0_4)
            v1 = spatial(m, i1)
            out[v0_4, v1] = exp(A[v0_4, v1] - softmax_max[v0_4]) / softmax_sum[v0_4]
          }
        }
      }
    }
  }
})";

const char* kLegalizedLayerNorm = R"(
prim_func @layer_norm(A: Buffer((n, m), float32), B: Buffer((m,), float32), C: Buffer((m,), float32), out: Buffer((n, m), float32)) {
  allocate norm_sum: Buffer((n,), float32) {
    allocate norm_sum_dev_sq: Buffer((n,), float32) {
      if m == 0 {
        for i0 in serial(0, n) {
          block "layer_norm_sum_empty" {
            v0 = spatial(n, i0)
            norm_sum[v0] = 0.0
          }
        }
      }
      for i0_1 in serial(0, n) {
        for k0 in serial(0, m) {
          block "layer_norm_sum" {
            v0_1 = spatial(n, i0_1)
            vk0 = reduce(m, k0)
            init {
              norm_sum[v0_1] = 0.0
            }
            norm_sum[v0_1] = norm_sum[v0_1] + A[v0_1, vk0]
          }
        }
      }
      if m == 0 {
        for i0_2 in serial(0, n) {
          block "layer_norm_var_empty" {
            v0_2 = spatial(n, i0_2)
            norm_sum_dev_sq[v0_2] = 0.0
          }
        }
      }
      for i0_3 in serial(0, n) {
        for k0_1 in serial(0, m) {
          block "layer_norm_var" {
            v0_3 = spatial(n, i0_3)
            vk0_1 = reduce(m, k0_1)
            init {
              norm_sum_dev_sq[v0_3] = 0.0
            }
            norm_sum_dev_sq[v0_3] = norm_sum_dev_sq[v0_3] + (A[v0_3, vk0_1] - norm_sum[v0_3] / cast(float32, 1 * m)) * (A[v0_3, vk0_1] - norm_sum[v0_3] / cast(float32, 1 * m))
          }
        }
      }
      for i0_4 in serial(0, n) {
        for i1 in serial(0, m) {
          block "layer_norm" {
            v0_4 = spatial(n, i0_4)
            v1 = spatial(m, i1)
            out[v0_4, v1] = (A[v0_4, v1] - norm_sum[v0_4] / cast(float32, 1 * m)) * rsqrt(norm_sum_dev_sq[v0_4] / cast(float32, 1 * m) + 1e-05) * B[v1] + C[v1]
          }
        }
      }
    }
  }
})";

TEST(ScheduleNumericsTest, SoftmaxAndLayerNormInLanes) {
  Variants softmax(Parse(kLegalizedSoftmax));
  Variants norm(Parse(kLegalizedLayerNorm));
  // The lanes' blocks by name or as their edge copy (`..._rf_edge`), the one a symbolic row
  // length runs when its tail never fills a whole vector.
  for (std::string block : {"softmax_max_rf", "softmax_sum_rf"}) {
    EXPECT_NE(softmax.scheduled_text().find("block \"" + block), std::string::npos) << softmax.scheduled_text();
  }
  for (std::string block : {"layer_norm_sum_rf", "layer_norm_var_rf"}) {
    EXPECT_NE(norm.scheduled_text().find("block \"" + block), std::string::npos) << norm.scheduled_text();
  }
  for (int64_t n : {1, 3, 29}) {
    for (int64_t m : kRowLengths) {
      vm::Tensor a = RandomF32({n, m}, 40 + static_cast<uint32_t>(m));
      vm::Tensor gamma = RandomF32({m}, 41), beta = RandomF32({m}, 42);
      std::vector<double> sm(n * m), ln(n * m), sm_scale(n * m, 1.0), ln_scale(n * m);
      for (int64_t i = 0; i < n; ++i) {
        const float* row = a.data_as<float>() + i * m;
        double mx = -std::numeric_limits<double>::infinity(), sum = 0.0, mean = 0.0, var = 0.0;
        for (int64_t j = 0; j < m; ++j) mx = std::max<double>(mx, row[j]);
        for (int64_t j = 0; j < m; ++j) sum += std::exp(row[j] - mx);
        for (int64_t j = 0; j < m; ++j) mean += row[j] / static_cast<double>(m);
        for (int64_t j = 0; j < m; ++j) var += (row[j] - mean) * (row[j] - mean) / static_cast<double>(m);
        for (int64_t j = 0; j < m; ++j) {
          sm[i * m + j] = std::exp(row[j] - mx) / sum;
          double g = gamma.data_as<float>()[j], b = beta.data_as<float>()[j];
          double normalized = (row[j] - mean) / std::sqrt(var + 1e-5);
          ln[i * m + j] = normalized * g + b;
          // The normalized value carries the relative error of the mean and variance.
          ln_scale[i * m + j] = 10.0 * (std::fabs(normalized * g) + std::fabs(b));
        }
      }
      for (const std::string& name : Variants::Names()) {
        std::string what = name + " n=" + std::to_string(n) + " m=" + std::to_string(m);
        vm::Tensor out = RandomF32({n, m}, 43);
        softmax.Run(name, {a, out});
        ExpectClose(out, sm, sm_scale, "softmax " + what);
        vm::Tensor out2 = RandomF32({n, m}, 44);
        norm.Run(name, {a, gamma, beta, out2});
        ExpectClose(out2, ln, ln_scale, "layer_norm " + what);
      }
    }
  }
}

// The lane update is SIMD code before LLVM's optimizer runs, and after it the lanes'
// accumulator lives in a register (its alloca is gone) and the combine is a few vector
// operations on its halves.
TEST(ScheduleNumericsTest, RowReductionLanesAreSimdInRegisters) {
  tir::PrimFunc func = Parse(RowReduction("0.0", "B[vi] + A[vi, vr]"));
  // One vector of lanes (a symbolic row gets two by default: two chains of the same code).
  tir::CpuScheduleOptions options{.vector_lanes = 16, .num_threads = 4};
  options.knobs.reduction.lanes = 16;
  absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForCpu(func, options);
  ASSERT_TRUE(scheduled.ok()) << scheduled.status();
  std::string printed = relax::PrintPrimFunc(*scheduled, "k");
  ASSERT_NE(printed.find("allocate B_lanes: Buffer((16,), float32"), std::string::npos) << printed;
  absl::StatusOr<std::string> raw = DumpCpuLlvmIr({{"k", *scheduled}}, CpuTarget::Host(), /*optimize=*/false);
  absl::StatusOr<std::string> ir = DumpCpuLlvmIr({{"k", *scheduled}}, CpuTarget::Host(), /*optimize=*/true);
  ASSERT_TRUE(ir.ok() && raw.ok()) << ir.status() << raw.status();
  EXPECT_NE(raw->find("fadd <16 x float>"), std::string::npos) << *raw;
  EXPECT_NE(raw->find("%B_lanes = alloca"), std::string::npos) << *raw;
  EXPECT_EQ(ir->find("%B_lanes = alloca"), std::string::npos) << *ir;
  // The main loop adds whole vectors into the register; the combine works on it in place.
  EXPECT_NE(ir->find("= fadd <16 x float> %B_lanes.sroa"), std::string::npos) << *ir;
  // The combine halves the register: 8-, 4- and 2-lane adds of its two halves.
  EXPECT_NE(ir->find("= fadd <8 x float>"), std::string::npos) << *ir;
  EXPECT_NE(ir->find("= fadd <4 x float>"), std::string::npos) << *ir;
}

// The rest of a symbolic row under one vector (64 lanes, tail steps of 16) is one 16-lane
// step over the lanes in range: blended, its loads one masked load (it was up to 15 dependent
// scalar adds per row). Numerics: RowReductionsInLanes (every rest 1..63).
TEST(ScheduleNumericsTest, RowReductionLastStepIsOneMaskedVector) {
  tir::PrimFunc func = Parse(RowReduction("0.0", "B[vi] + A[vi, vr]"));
  absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForCpu(
      tir::WithTarget(func, tir::Target::Cpu("host", 512, 1)), {.vector_lanes = 16, .num_threads = 1});
  ASSERT_TRUE(scheduled.ok()) << scheduled.status();
  const std::string printed = relax::PrintPrimFunc(*scheduled, "k");
  EXPECT_TRUE(absl::StrContains(printed, "[r_tail_tail_edge] = select(r_tail_tail_edge < floormod(m, 16), ")) << printed;
  for (absl::string_view line : absl::StrSplit(printed, '\n')) {
    const bool tail_loop = absl::StrContains(line, "for r_tail in") || absl::StrContains(line, "for r_tail_edge in") ||
                           absl::StrContains(line, "for r_tail_tail");
    EXPECT_FALSE(tail_loop && !absl::StrContains(line, "vectorized(")) << line << "\n" << printed;
  }
  absl::StatusOr<std::string> raw = DumpCpuLlvmIr({{"k", *scheduled}}, CpuTarget::Host(), /*optimize=*/false);
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_TRUE(absl::StrContains(*raw, "@llvm.masked.load.v16f32")) << *raw;
}

// Not an assertion: what the lanes buy on a 512 x 1000 softmax on this machine.
TEST(ScheduleNumericsTest, SoftmaxTiming) {
  Variants v(Parse(kLegalizedSoftmax));
  vm::Tensor a = RandomF32({512, 1000}, 50), out = RandomF32({512, 1000}, 51);
  for (const std::string& name : Variants::Names()) {
    v.Run(name, {a, out});
    auto start = std::chrono::steady_clock::now();
    const int reps = 5;
    for (int r = 0; r < reps; ++r) v.Run(name, {a, out});
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / reps;
    std::cout << "softmax 512x1000 " << name << ": " << ms << " ms (4 threads)\n";
  }
}

}  // namespace
}  // namespace kiln::codegen
