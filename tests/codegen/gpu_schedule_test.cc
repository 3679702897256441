// The default GPU schedule (tir/schedule_rules/gpu_schedule.h) on every operator of the op
// harness: the result passes the verifier (or the error says what is not supported), its
// trace prints, parses and replays to the same function, and the TIR interpreter (which
// runs thread-bound loops one iteration after another) computes exactly what it computes on
// the unscheduled function, at the case's sizes made constant. Then the Bind primitive's
// refusals and the verifier's limits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/annotate_patterns.h"
#include "relax/transform/dead_code_elimination.h"
#include "relax/transform/fold_constants.h"
#include "relax/transform/fuse_ops.h"
#include "relax/transform/fuse_tir.h"
#include "relax/transform/legalize_ops.h"
#include "support/status_macros.h"
#include "tests/codegen/op_cases.h"
#include "tests/tir/schedule_workloads.h"
#include "tir/interpreter.h"
#include "tir/text_printer.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/trace.h"
#include "tir/schedule_rules/gpu_schedule.h"
#include "tir/structural_equal.h"
#include "tir/target.h"
#include "tir/text_parser.h"

namespace kiln::op_cases {

namespace {

absl::StatusOr<relax::IRModule> BeforeSchedule(const std::string& text) {
  KILN_ASSIGN_OR_RETURN(relax::ParsedModule parsed, relax::ParseModule(text));
  KILN_ASSIGN_OR_RETURN(relax::IRModule m, relax::NormalizeModule(parsed.module, &parsed.locations));
  KILN_ASSIGN_OR_RETURN(m, relax::FoldConstants(m));
  KILN_ASSIGN_OR_RETURN(m, relax::LegalizeOps(m));
  KILN_ASSIGN_OR_RETURN(m, relax::AnnotatePatterns(m));
  KILN_ASSIGN_OR_RETURN(m, relax::FuseOps(m));
  KILN_ASSIGN_OR_RETURN(m, relax::FuseTir(m));
  return relax::DeadCodeElimination(m);
}

std::string ConstantModuleText(const Case& c, const std::map<std::string, int64_t>& size) {
  std::string text = ModuleText(c);
  for (const auto& [name, value] : size) {
    text = std::regex_replace(text, std::regex("\\b" + name + "\\b"), std::to_string(value));
  }
  return text;
}

// Runs `a` and `b` (same parameters, constant shapes) on the same random inputs; every
// buffer must end byte-identical. Returns false (nothing compared) when a shape is symbolic
// or the unscheduled function itself fails on these inputs (an integer division by zero).
bool ExpectSameResults(const tir::PrimFunc& a, const tir::PrimFunc& b) {
  std::mt19937 rng(7);
  std::vector<std::vector<uint8_t>> data_a, data_b;
  std::vector<tir::HostBuffer> buffers_a, buffers_b;
  for (const tir::PrimFuncParam& p : a->params) {
    if (!p.is_buffer()) return false;
    std::vector<int64_t> shape;
    int64_t numel = 1;
    for (const tir::PrimExpr& d : p.buffer->shape) {
      std::optional<int64_t> v = d.as_int();
      if (!v) return false;
      shape.push_back(*v);
      numel *= *v;
    }
    tir::DataType t = p.buffer->dtype;
    std::vector<uint8_t> bytes(static_cast<size_t>(t.StorageBytes(numel)));
    for (int64_t i = 0; i < numel; ++i) {
      if (t.is_float() && t.bits() == 32) {
        float f = std::uniform_real_distribution<float>(-2, 2)(rng);
        std::memcpy(bytes.data() + 4 * i, &f, 4);
      } else if (t.is_float() && t.bits() == 64) {
        double f = std::uniform_real_distribution<double>(-2, 2)(rng);
        std::memcpy(bytes.data() + 8 * i, &f, 8);
      } else if (t.is_bool()) {
        bytes[i] = rng() & 1;
      } else if (!t.is_float() && !t.is_sub_byte()) {
        // Small positive integers: valid indices and divisors for most operators.
        int64_t v = 1 + static_cast<int64_t>(rng() % 3);
        std::memcpy(bytes.data() + (t.bits() / 8) * i, &v, t.bits() / 8);
      } else {
        for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<uint8_t>(rng() & 0x3f);
      }
    }
    data_a.push_back(bytes);
    data_b.push_back(bytes);
    buffers_a.push_back(tir::HostBuffer::Writable(t, shape, nullptr));
    buffers_b.push_back(tir::HostBuffer::Writable(t, shape, nullptr));
  }
  std::vector<tir::InterpreterArg> args_a, args_b;
  for (size_t i = 0; i < buffers_a.size(); ++i) {
    buffers_a[i].data = data_a[i].data();
    buffers_b[i].data = data_b[i].data();
    args_a.push_back(&buffers_a[i]);
    args_b.push_back(&buffers_b[i]);
  }
  if (!tir::RunPrimFunc(a, args_a).ok()) return false;
  absl::Status st = tir::RunPrimFunc(b, args_b);
  EXPECT_TRUE(st.ok()) << st;
  for (size_t i = 0; i < data_a.size(); ++i) EXPECT_EQ(data_a[i], data_b[i]) << "buffer " << i;
  return true;
}

class GpuScheduleTest : public ::testing::TestWithParam<Case> {};

TEST_P(GpuScheduleTest, VerifiesReplaysAndComputesTheSame) {
  const Case& c = GetParam();
  // Symbolic shapes (as compiled) for the verifier and the trace; a constant size for numerics.
  std::map<std::string, int64_t> size = c.sizes.size() > 1 ? c.sizes[1] : c.sizes[0];
  for (const std::string& text : {ModuleText(c), ConstantModuleText(c, size)}) {
    absl::StatusOr<relax::IRModule> module = BeforeSchedule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    for (const relax::IRModule::Entry& entry : module->entries()) {
      if (!entry.prim_func()) continue;
      SCOPED_TRACE(entry.name);
      // Vulkan's limits (256 invocations per workgroup) are the tighter ones: both verify.
      absl::StatusOr<tir::PrimFunc> on_vulkan = tir::ScheduleForGpu(*entry.prim_func(), tir::Target::Vulkan());
      const tir::Target cuda = tir::Target::Cuda();
      std::string trace;
      absl::StatusOr<tir::PrimFunc> f = tir::ScheduleForGpu(*entry.prim_func(), cuda, &trace);
      EXPECT_EQ(on_vulkan.ok(), f.ok()) << on_vulkan.status() << " vs " << f.status();
      if (!f.ok()) {
        // Only the documented gaps: an unbound block or a host read of device memory.
        EXPECT_THAT(f.status().message(), ::testing::AnyOf(::testing::HasSubstr("not inside a loop bound to GPU threads"),
                                                          ::testing::HasSubstr("host code cannot read device memory")));
        continue;
      }
      EXPECT_TRUE(tir::VerifyGpuFunction(*f, cuda).ok());
      absl::StatusOr<tir::Trace> parsed = tir::Trace::Parse(trace);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      tir::Schedule again(*entry.prim_func());
      ASSERT_TRUE(parsed->Replay(&again).ok()) << trace;
      EXPECT_TRUE(tir::StructuralEqual(again.func(), *f)) << tir::StructuralDiff(again.func(), *f);
      ExpectSameResults(*entry.prim_func(), *f);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, GpuScheduleTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// A plain elementwise function over `n` elements (a number or a symbol).
tir::PrimFunc AddOne(const std::string& n) {
  const std::string text = std::regex_replace(R"(
prim_func @f(A: Buffer((N,), float32), B: Buffer((N,), float32)) {
  for i in serial(0, N) {
    block "B" {
      vi = spatial(N, i)
      B[vi] = A[vi] + 1.0
    }
  }
})", std::regex("\\bN\\b"), n);
  absl::StatusOr<tir::ParsedPrimFunc> parsed = tir::ParsePrimFunc(text);
  KILN_CHECK(parsed.ok()) << parsed.status() << text;
  return parsed->func;
}

TEST(GpuScheduleRulesTest, InjectiveBindsBlocksAndThreadsWithAGuardedTail) {
  std::string trace;
  absl::StatusOr<tir::PrimFunc> f = tir::ScheduleForGpu(AddOne("n"), tir::Target::Cuda(), &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(trace,
            "split(\"i\", [-1, 256]) -> [\"i_0\", \"i_1\"]\n"
            "bind(\"i_0\", \"blockIdx.x\")\nbind(\"i_1\", \"threadIdx.x\")\n")
      << trace;
}

TEST(GpuScheduleRulesTest, SmallConstantNestsGetOneWarpRoundedBlock) {
  std::string trace;
  absl::StatusOr<tir::PrimFunc> f = tir::ScheduleForGpu(AddOne("40"), tir::Target::Cuda(), &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(trace, ::testing::HasSubstr("[-1, 64]"));
}

TEST(GpuBindTest, RefusesBadTagsRepeatedTagsAndReductions) {
  tir::Schedule s(AddOne("100"));
  EXPECT_THAT(s.Bind("i", "warpIdx").message(), ::testing::HasSubstr("not a thread index"));
  absl::StatusOr<std::vector<std::string>> parts = s.Split("i", {-1, 32});
  ASSERT_TRUE(parts.ok());
  ASSERT_TRUE(s.Bind((*parts)[0], "threadIdx.x").ok());
  EXPECT_THAT(s.Bind((*parts)[1], "threadIdx.x").message(), ::testing::HasSubstr("already bound to threadIdx.x"));
  EXPECT_THAT(s.Bind((*parts)[0], "blockIdx.x").message(), ::testing::HasSubstr("already thread_binding"));
  // A reduction loop.
  const std::string text_of_sum = R"(
prim_func @f(A: Buffer((64,), float32), B: Buffer((1,), float32)) {
  for k in serial(0, 64) {
    block "S" {
      vk = reduce(64, k)
      init {
        B[0] = 0.0
      }
      B[0] = B[0] + A[vk]
    }
  }
})";
  absl::StatusOr<tir::ParsedPrimFunc> sum = tir::ParsePrimFunc(text_of_sum);
  ASSERT_TRUE(sum.ok()) << sum.status();
  // Across blocks, the iterations would race; across the threads of one block, a sum's
  // partials are combined in shared memory (lower_cross_thread_reduction).
  tir::Schedule r(sum->func);
  EXPECT_THAT(r.Bind("k", "blockIdx.x").message(), ::testing::HasSubstr("reduction variable"));
  EXPECT_TRUE(r.Bind("k", "threadIdx.x").ok());
  // A reduction whose partials cannot be combined stays refused.
  absl::StatusOr<tir::ParsedPrimFunc> scaled =
      tir::ParsePrimFunc(std::regex_replace(text_of_sum, std::regex("B\\[0\\] \\+ A"), "B[0] * 2.0 + A"));
  ASSERT_TRUE(scaled.ok()) << scaled.status();
  tir::Schedule q(scaled->func);
  EXPECT_THAT(q.Bind("k", "threadIdx.x").message(), ::testing::HasSubstr("reduction variable"));
}

TEST(GpuVerifyTest, RejectsUnboundStoresAndLimits) {
  tir::Target cuda = tir::Target::Cuda();
  absl::Status unbound = tir::VerifyGpuFunction(AddOne("8"), cuda);
  EXPECT_THAT(unbound.message(), ::testing::HasSubstr("store to 'B' in block 'B' is not inside a loop bound"));
  // 2048 threads per block where the target allows 1024.
  tir::Schedule s(AddOne("4096"));
  absl::StatusOr<std::vector<std::string>> parts = s.Split("i", {-1, 2048});
  ASSERT_TRUE(parts.ok());
  ASSERT_TRUE(s.Bind((*parts)[0], "blockIdx.x").ok());
  ASSERT_TRUE(s.Bind((*parts)[1], "threadIdx.x").ok());
  EXPECT_THAT(tir::VerifyGpuFunction(s.func(), cuda).message(),
              ::testing::HasSubstr("runs 2048 threads per block; the target allows 1024"));
  // A symbolic thread extent.
  tir::Schedule sym(AddOne("n"));
  ASSERT_TRUE(sym.Bind("i", "threadIdx.x").ok());
  EXPECT_THAT(tir::VerifyGpuFunction(sym.func(), cuda).message(), ::testing::HasSubstr("symbolic extent"));
  // Shared memory above the limit.
  absl::StatusOr<tir::ParsedPrimFunc> shared = tir::ParsePrimFunc(R"(
prim_func @f(A: Buffer((128,), float32)) {
  for t in thread_binding(0, 128, "threadIdx.x") {
    allocate S: Buffer((16384,), float32, scope="shared") {
      S[t] = 0.0
      A[t] = S[t]
    }
  }
})");
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_THAT(tir::VerifyGpuFunction(shared->func, cuda).message(),
              ::testing::HasSubstr("65536 bytes of shared memory per block; the target allows 49152"));
  // Vulkan's defaults: 256 invocations and 16 KiB per workgroup.
  tir::Target vulkan = tir::Target::Vulkan();
  tir::Schedule wide(AddOne("4096"));
  parts = wide.Split("i", {-1, 512});
  ASSERT_TRUE(parts.ok());
  ASSERT_TRUE(wide.Bind((*parts)[0], "blockIdx.x").ok());
  ASSERT_TRUE(wide.Bind((*parts)[1], "threadIdx.x").ok());
  EXPECT_TRUE(tir::VerifyGpuFunction(wide.func(), cuda).ok());
  EXPECT_THAT(tir::VerifyGpuFunction(wide.func(), vulkan).message(),
              ::testing::HasSubstr("runs 512 threads per block; the target allows 256"));
  EXPECT_THAT(tir::VerifyGpuFunction(shared->func, vulkan).message(),
              ::testing::HasSubstr("65536 bytes of shared memory per block; the target allows 16384"));
  // A data-dependent check before the kernel would run on the host, reading device memory.
  absl::StatusOr<tir::ParsedPrimFunc> host_read = tir::ParsePrimFunc(R"(
prim_func @f(A: Buffer((128,), float32)) {
  assert A[0] > 0.0, "A[0] must be positive"
  for t in thread_binding(0, 128, "threadIdx.x") {
    A[t] = 1.0
  }
})");
  ASSERT_TRUE(host_read.ok()) << host_read.status();
  EXPECT_THAT(tir::VerifyGpuFunction(host_read->func, vulkan).message(),
              ::testing::HasSubstr("the load of 'A' is outside the loops bound to GPU threads: host code cannot read "
                                   "device memory"));
}

// tests/tir/schedule_workloads.h's matmul with m, n, k replaced (numbers, or symbols).
tir::PrimFunc Matmul(const std::string& m, const std::string& n, const std::string& k) {
  std::string text = tir::testing::kMatmul;
  text = std::regex_replace(text, std::regex("\\bm\\b"), m);
  text = std::regex_replace(text, std::regex("\\bn\\b"), n);
  text = std::regex_replace(text, std::regex("\\bk\\b"), k);
  absl::StatusOr<tir::ParsedPrimFunc> parsed = tir::ParsePrimFunc(text);
  KILN_CHECK(parsed.ok()) << parsed.status() << text;
  return parsed->func;
}

TEST(GpuScheduleRulesTest, MatmulsStageOperandTilesInSharedMemory) {
  for (const auto& [m, n, k] : {std::tuple<std::string, std::string, std::string>{"m", "256", "784"},
                                {"37", "10", "19"},      // tails in every tiled dimension
                                {"70", "9", "40"}}) {  // several blocks and steps, all with tails
    SCOPED_TRACE(m + " x " + n + " x " + k);
    std::string trace;
    absl::StatusOr<tir::PrimFunc> f = tir::ScheduleForGpu(Matmul(m, n, k), tir::Target::Vulkan(), &trace);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_THAT(trace, ::testing::HasSubstr("cache_read_shared"));
    EXPECT_THAT(trace, ::testing::HasSubstr("reverse_compute_at"));
    // Both operand tiles in shared memory inside the thread loops, the accumulators in a
    // 4 x 4 (or smaller) local tile, no loads and stores of C in the reduction loop.
    const std::string text = tir::PrintPrimFunc(*f, "f");
    EXPECT_THAT(text, ::testing::ContainsRegex("allocate A_shared: Buffer\\(\\([0-9]+, [0-9]+\\), float32, scope=\"shared\"\\)"));
    EXPECT_THAT(text, ::testing::ContainsRegex("allocate B_shared: Buffer\\(\\([0-9]+, [0-9]+\\), float32, scope=\"shared\"\\)"));
    EXPECT_THAT(text, ::testing::ContainsRegex("allocate C_local: Buffer\\(\\([1-4], [1-4]\\), float32, scope=\"local\"\\)"));
    EXPECT_THAT(text, ::testing::ContainsRegex("C_local\\[i_2, j_2\\] = C_local\\[i_2, j_2\\] \\+ A_shared\\[[^]]+\\] \\* "
                                               "B_shared\\[[^]]+\\]"));
    EXPECT_THAT(text, ::testing::HasSubstr("\"threadIdx.y\""));
    EXPECT_TRUE(tir::VerifyGpuFunction(*f, tir::Target::Vulkan()).ok());
    // Run serially (each thread copies the whole tile itself), bit-identical to the
    // unscheduled function: the sum runs in the same order of k.
    if (m != "m") {
      EXPECT_TRUE(ExpectSameResults(Matmul(m, n, k), *f));
    }
  }
}

TEST(GpuScheduleRulesTest, MatrixVectorProductsKeepARegisterTilePerThread) {
  // Four columns or fewer: one register tile spans them, no operand is reused across
  // threads, so no shared tiles; each thread reads device memory directly.
  std::string trace;
  absl::StatusOr<tir::PrimFunc> f = tir::ScheduleForGpu(Matmul("m", "3", "784"), tir::Target::Vulkan(), &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(trace, ::testing::Not(::testing::HasSubstr("cache_read_shared")));
  const std::string text = tir::PrintPrimFunc(*f, "f");
  EXPECT_THAT(text, ::testing::HasSubstr("C_local[i_1, j] = C_local[i_1, j] + A[vi, vk] * B[vk, vj]"));
  absl::StatusOr<tir::PrimFunc> fixed = tir::ScheduleForGpu(Matmul("37", "3", "19"), tir::Target::Vulkan(), &trace);
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_TRUE(ExpectSameResults(Matmul("37", "3", "19"), *fixed));
  // One tile in all: nothing to spread over threads, so one thread per output instead.
  absl::StatusOr<tir::PrimFunc> small = tir::ScheduleForGpu(Matmul("3", "2", "5"), tir::Target::Vulkan(), &trace);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_THAT(trace, ::testing::Not(::testing::HasSubstr("cache_write")));
}

// Between kernels, an intermediate in global memory is device workspace (accepted); shared
// or per-thread memory cannot outlive one kernel.
TEST(GpuVerifyTest, OnlyGlobalMemoryIsAllocatedBetweenKernels) {
  const char* text = R"(
prim_func @f(A: Buffer((128,), float32)) {
  allocate M: Buffer((128,), float32, scope="SCOPE") {
    for t in thread_binding(0, 128, "threadIdx.x") {
      M[t] = A[t] * 2.0
    }
    for t in thread_binding(0, 128, "threadIdx.x") {
      A[t] = M[127 - t]
    }
  }
})";
  for (const std::string scope : {"global", "local", "shared"}) {
    SCOPED_TRACE(scope);
    absl::StatusOr<tir::ParsedPrimFunc> f = tir::ParsePrimFunc(std::regex_replace(text, std::regex("SCOPE"), scope));
    ASSERT_TRUE(f.ok()) << f.status();
    absl::Status verified = tir::VerifyGpuFunction(f->func, tir::Target::Vulkan());
    if (scope == "global") {
      EXPECT_TRUE(verified.ok()) << verified;
    } else {
      EXPECT_THAT(verified.message(),
                  ::testing::HasSubstr(absl::StrCat("the ", scope, " buffer 'M' is allocated outside the loops bound to GPU "
                                                    "threads; only device (\"global\") memory can be shared")));
    }
  }
}

TEST(GpuScheduleRulesTest, VulkanWorkgroupsAreAtMostItsLimit) {
  std::string trace;
  absl::StatusOr<tir::PrimFunc> f = tir::ScheduleForGpu(AddOne("n"), tir::Target::Vulkan(), &trace);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(trace, ::testing::HasSubstr("256"));
  EXPECT_TRUE(tir::VerifyGpuFunction(*f, tir::Target::Vulkan()).ok());
}

}  // namespace
}  // namespace kiln::op_cases
