// Matmuls with few rows on the GPU (tir/schedule_rules/gpu_few_rows.cc): k split across the
// threads of a block, several outputs per block, the partial sums combined per output by
// lower_cross_thread_reduction (one group of shared slots per output). Which threads split k
// follows the weight's layout; the lowered kernels keep every barrier outside the guards.
// The numbers: float32, float16 and GGML-quantized weights at edge shapes (k not a multiple
// of the split, 1, 2, 7, 17 rows, constant and symbolic) run on Vulkan (Mesa's lavapipe)
// against the reference evaluator, and the same modules compile for cuda through NVRTC.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cuda_codegen.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/spirv_codegen.h"
#include "relax/text_parser.h"
#include "relax/transform/legalize_ops.h"
#include "tests/codegen/gpu_compile.h"
#include "tests/codegen/gpu_kernels.h"
#include "tests/codegen/op_cases.h"
#include "tests/codegen/op_check.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/gpu_schedule.h"
#include "tir/stmt_functor.h"
#include "tir/target.h"
#include "tir/text_parser.h"
#include "tir/text_printer.h"
#include "tir/transform/lower_cross_thread_reduction.h"
#include "vm/device.h"

namespace kiln::op_cases {
namespace {

// The one PrimFunc legalization makes of a one-op module (no fusion).
tir::PrimFunc Legalized(const std::string& text) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return tir::PrimFunc();
  absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed->module);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  if (!normalized.ok()) return tir::PrimFunc();
  absl::StatusOr<relax::IRModule> legalized = relax::LegalizeOps(*normalized);
  EXPECT_TRUE(legalized.ok()) << legalized.status();
  if (!legalized.ok()) return tir::PrimFunc();
  for (const relax::IRModule::Entry& e : legalized->entries()) {
    if (e.prim_func()) return *e.prim_func();
  }
  ADD_FAILURE() << "no PrimFunc in\n" << text;
  return tir::PrimFunc();
}

std::string OneOp(const std::vector<Param>& params, const std::string& expr) {
  return ModuleText(Case{"f", params, expr, {}});
}

// Each thread-bound loop's tag with the block variables its loop variable feeds: "S" when
// only spatial ones, "R" when a reduction one.
std::map<std::string, std::string> ThreadRoles(const tir::PrimFunc& f) {
  std::map<std::string, std::string> roles;
  tir::schedule_internal::ForEachStmt(f->body, [&](const tir::Stmt& s) {
    const auto* loop = s.as<tir::ForNode>();
    if (!loop || loop->for_kind != tir::ForKind::kThreadBinding) return;
    std::string role = "S";
    tir::schedule_internal::ForEachStmt(loop->body, [&](const tir::Stmt& inner) {
      const auto* block = inner.as<tir::BlockNode>();
      if (!block || !block->is_reduction()) return;
      for (const tir::IterVar& iv : block->iter_vars) {
        if (iv.type == tir::IterType::kReduction && tir::schedule_internal::UsesVar(iv.value, loop->loop_var.get())) {
          role = "R";
        }
      }
    });
    roles[loop->thread_tag] = role;
  });
  return roles;
}

// Barriers, and how many of them an `if` on a thread index encloses (a deadlock on a GPU).
std::pair<int, int> Barriers(const tir::PrimFunc& kernel) {
  class Walker : public tir::StmtExprVisitor {
   public:
    void VisitStmt_(const tir::ForNode* op, const tir::Stmt& self) override {
      if (op->thread_tag.rfind("threadIdx", 0) == 0) threads_.push_back(op->loop_var.get());
      tir::StmtExprVisitor::VisitStmt_(op, self);
    }
    void VisitStmt_(const tir::IfThenElseNode* op, const tir::Stmt& self) override {
      bool divergent = false;
      for (const tir::VarNode* v : threads_) divergent = divergent || tir::schedule_internal::UsesVar(op->condition, v);
      depth_ += divergent;
      tir::StmtExprVisitor::VisitStmt_(op, self);
      depth_ -= divergent;
    }
    void VisitExpr_(const tir::CallNode* op, const tir::PrimExpr& self) override {
      if (op->op == "storage_sync") {
        ++count;
        guarded += depth_ > 0;
      }
      tir::StmtExprVisitor::VisitExpr_(op, self);
    }
    int count = 0, guarded = 0;

   private:
    std::vector<const tir::VarNode*> threads_;
    int depth_ = 0;
  } walker;
  walker.VisitStmt(kernel->body);
  return {walker.count, walker.guarded};
}

TEST(GpuFewRowsTest, TheWeightsLayoutDecidesWhichThreadsSplitK) {
  // x @ w with w of k x n (columns innermost): threadIdx.x takes columns, threadIdx.y k.
  tir::PrimFunc nn = Legalized(OneOp({P("x", {"1", "1003"}), P("w", {"1003", "4096"})}, "R.matmul(x, w)"));
  // A quantized weight (rows of blocks along k): threadIdx.x (a warp) strides k.
  tir::PrimFunc q4 =
      Legalized(OneOp({P("x", {"m", "320"}), P("w", {"4096", "180"}, "uint8")}, "R.quantized_matmul(x, w, format=\"q4_0\")"));
  tir::PrimFunc q4k =
      Legalized(OneOp({P("x", {"1", "512"}), P("w", {"4096", "288"}, "uint8")}, "R.quantized_matmul(x, w, format=\"q4_K\")"));
  for (const tir::Target& target : {tir::Target::Vulkan(), tir::Target::Cuda()}) {
    SCOPED_TRACE(target.ToString());
    absl::StatusOr<tir::PrimFunc> a = tir::ScheduleForGpu(nn, target);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(ThreadRoles(*a), (std::map<std::string, std::string>{{"blockIdx.x", "S"}, {"threadIdx.x", "S"}, {"threadIdx.y", "R"}}))
        << tir::PrintPrimFunc(*a, "f");
    for (const tir::PrimFunc& q : {q4, q4k}) {
      absl::StatusOr<tir::PrimFunc> b = tir::ScheduleForGpu(q, target);
      ASSERT_TRUE(b.ok()) << b.status();
      EXPECT_EQ(ThreadRoles(*b), (std::map<std::string, std::string>{{"blockIdx.x", "S"}, {"threadIdx.x", "R"}, {"threadIdx.y", "S"}}))
          << tir::PrintPrimFunc(*b, "f");
    }
    // The lowered kernels: 256 threads, one slot each (8 outputs x 32 partials, or 8 columns
    // x 32 partials), a tree of barriers that no thread-dependent guard encloses.
    for (const tir::PrimFunc& f : {nn, q4}) {
      absl::StatusOr<std::vector<tir::PrimFunc>> kernels = ScheduledKernels(f, target);
      ASSERT_TRUE(kernels.ok()) << kernels.status();
      int combining = 0;
      for (const tir::PrimFunc& kernel : *kernels) {
        auto [count, guarded] = Barriers(kernel);
        if (count == 0) continue;  // the output's fill for a symbolic row count
        ++combining;
        const std::string text = tir::PrintPrimFunc(kernel);
        EXPECT_THAT(text, ::testing::HasSubstr("out_combine: Buffer((256,), float32, scope=\"shared\")"));
        EXPECT_EQ(count, 6) << text;  // after the partials, then 32 -> 16 -> 8 -> 4 -> 2 -> 1
        EXPECT_EQ(guarded, 0);
      }
      EXPECT_GT(combining, 0);
    }
  }
}

TEST(GpuFewRowsTest, ManyRowsKeepTheSharedTiles) {
  // A symbolic row count: `if (m >= 32)` the shared tiles, else k split across threads.
  tir::PrimFunc f = Legalized(OneOp({P("x", {"m", "1003"}), P("w", {"1003", "256"})}, "R.matmul(x, w)"));
  std::string trace;
  absl::StatusOr<tir::PrimFunc> scheduled = tir::ScheduleForGpu(f, tir::Target::Vulkan(), &trace);
  ASSERT_TRUE(scheduled.ok()) << scheduled.status();
  const std::string text = tir::PrintPrimFunc(*scheduled, "f");
  EXPECT_THAT(text, ::testing::HasSubstr("if m >= 32"));
  EXPECT_THAT(text, ::testing::HasSubstr("scope=\"shared\""));
  EXPECT_THAT(text, ::testing::HasSubstr("threadIdx.y"));
  // 32 rows or more as a constant: the shared tiles alone.
  tir::PrimFunc many = Legalized(OneOp({P("x", {"32", "1003"}), P("w", {"1003", "256"})}, "R.matmul(x, w)"));
  absl::StatusOr<tir::PrimFunc> tiled = tir::ScheduleForGpu(many, tir::Target::Vulkan(), &trace);
  ASSERT_TRUE(tiled.ok()) << tiled.status();
  EXPECT_THAT(trace, ::testing::HasSubstr("cache_read_shared"));
}

TEST(GpuFewRowsTest, ThreadGroupsOverOutputsGetTheirOwnSlots) {
  // Four outputs per block (threadIdx.y), each the sum of its row by 8 threads (threadIdx.x):
  // output ty's partials live in slots [8 ty, 8 ty + 8). 15 outputs: the last block's
  // fourth group has no output, so the write is guarded by the outputs' condition too (the
  // row's tail guards only the partials).
  absl::StatusOr<tir::ParsedPrimFunc> parsed = tir::ParsePrimFunc(R"(
prim_func @f(A: Buffer((15, 100), float32), B: Buffer((15,), float32)) {
  for b in thread_binding(0, 4, "blockIdx.x") {
    for ty in thread_binding(0, 4, "threadIdx.y") {
      for ro in serial(0, 13) {
        for tx in thread_binding(0, 8, "threadIdx.x") {
          block "B" {
            vi = spatial(15, b * 4 + ty)
            vr = reduce(100, ro * 8 + tx)
            where b * 4 + ty < 15 && ro * 8 + tx < 100
            init {
              B[vi] = 0.0
            }
            B[vi] = B[vi] + A[vi, vr]
          }
        }
      }
    }
  }
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<tir::PrimFunc> lowered = tir::transform::LowerCrossThreadReductions(parsed->func);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const std::string text = tir::PrintPrimFunc(*lowered, "f");
  EXPECT_THAT(text, ::testing::HasSubstr("B_combine: Buffer((32,), float32, scope=\"shared\")"));
  EXPECT_THAT(text, ::testing::HasSubstr("B_combine[ty * 8 + tx] = B_partial[0]"));
  EXPECT_THAT(text, ::testing::HasSubstr("if tx == 0 && b * 4 + ty < 15 {"));
  EXPECT_THAT(text, ::testing::HasSubstr("B[b * 4 + ty] = B_combine[ty * 8]"));
  EXPECT_TRUE(tir::VerifyGpuFunction(parsed->func, tir::Target::Vulkan()).ok());
}

// The edge shapes: k not a multiple of the split (1003 over 8 or 32 threads), 1, 2, 7 and
// 17 rows, symbolic and constant, a batch, float16, and the GGML formats.
std::vector<Case> FewRowsCases() {
  const Sizes rows = {{{"m", 1}}, {{"m", 2}}, {{"m", 7}}, {{"m", 17}}};
  const Sizes rows_and_many = {{{"m", 1}}, {{"m", 2}}, {{"m", 7}}, {{"m", 17}}, {{"m", 33}}};
  const Sizes constant = {{}};
  const Gen tame = {0, 60};  // positive float16 scales below 1 (op_cases.h)
  std::vector<Case> cases = {
      {"f32_symbolic_rows", {P("x", {"m", "1003"}), P("w", {"1003", "67"})}, "R.matmul(x, w)", rows_and_many, 1e-4, 1e-3},
      {"f32_one_row", {P("x", {"1", "1003"}), P("w", {"1003", "67"})}, "R.matmul(x, w)", constant, 1e-4, 1e-3},
      {"f32_seven_rows", {P("x", {"7", "1003"}), P("w", {"1003", "67"})}, "R.matmul(x, w)", constant, 1e-4, 1e-3},
      {"f32_matvec", {P("x", {"2", "1003"}), P("w", {"1003", "1"})}, "R.matmul(x, w)", constant, 1e-4, 1e-3},
      {"f32_batched", {P("x", {"2", "m", "259"}), P("w", {"259", "13"})}, "R.matmul(x, w)", rows, 1e-4, 1e-3},
      {"f32_transposed_weight", {P("x", {"m", "1003"}), P("w", {"67", "1003"})}, "R.matmul(x, wt)", rows, 1e-4, 1e-3,
       "    wt = R.permute_dims(w)\n"},
      {"f16", {P("x", {"m", "1003"}, "float16", {-1, 1}), P("w", {"1003", "67"}, "float16", {-0.05, 0.05})},
       "R.matmul(x, w, out_dtype=float32)", rows, 1e-2, 1e-2},
  };
  for (auto [format, k, bytes_per_row, tolerance] :
       {std::tuple{"q4_0", "320", "180", 1e-4}, {"q4_1", "320", "200", 1e-4}, {"q8_0", "320", "340", 1e-4},
        {"q4_K", "512", "288", 1e-3}, {"q6_K", "256", "210", 1e-3}}) {
    cases.push_back({absl::StrCat(format, "_symbolic_rows"), {P("x", {"m", k}), P("w", {"67", bytes_per_row}, "uint8", tame)},
                     absl::StrCat("R.quantized_matmul(x, w, format=\"", format, "\")"), rows, tolerance, tolerance});
  }
  cases.push_back({"q4_0_one_row", {P("x", {"1", "320"}), P("w", {"67", "180"}, "uint8", tame)},
                   "R.quantized_matmul(x, w, format=\"q4_0\")", constant, 1e-4, 1e-4});
  return cases;
}

class GpuFewRowsCaseTest : public ::testing::TestWithParam<Case> {};

TEST_P(GpuFewRowsCaseTest, RunsOnVulkanAndMatchesTheReference) {
  absl::StatusOr<vm::Device*> device = vm::GetDevice("vulkan:0");
  if (!device.ok()) GTEST_SKIP() << "no Vulkan device here: " << device.status().message();
  const Case& c = GetParam();
  const GpuCompiled& compiled = CompiledForGpu(c, tir::Target::Vulkan());
  ASSERT_TRUE(compiled.status.ok()) << compiled.status;
  absl::Status run = RunAgainstReferenceOn(c, compiled.exe, *device);
  EXPECT_TRUE(run.ok()) << run;
}

TEST_P(GpuFewRowsCaseTest, CompilesWithNvrtc) {
  if (absl::Status nvrtc = codegen::NvrtcAvailable(); !nvrtc.ok()) GTEST_SKIP() << nvrtc.message();
  const Case& c = GetParam();
  const GpuCompiled& compiled = CompiledForGpu(c, tir::Target::Cuda());
  ASSERT_TRUE(compiled.status.ok()) << compiled.status;
  ASSERT_EQ(compiled.exe->contents().device_code.size(), 1u);
  EXPECT_FALSE(compiled.exe->contents().device_code[0].binaries.empty());
}

INSTANTIATE_TEST_SUITE_P(EdgeShapes, GpuFewRowsCaseTest, ::testing::ValuesIn(FewRowsCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace kiln::op_cases
