// FuseTir: primitive functions into one PrimFunc each, IR text in, IR text out; and the
// three fusion passes in the pipeline (numerics: tests/codegen/compile_models_test.cc).
#include "relax/transform/fuse_tir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "relax/block_builder.h"
#include "relax/structural_equal.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/fuse_ops.h"
#include "relax/transform/pipeline.h"
#include "relax/well_formed.h"
#include "tir/structural_equal.h"
#include "tests/relax/fusion_kernels.h"
#include "tests/relax/pass_test_util.h"

namespace kiln::relax {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::Normalized;

IRModule FusedTir(const std::string& text) {
  absl::StatusOr<IRModule> ops = FuseOps(Normalized(text));
  EXPECT_TRUE(ops.ok()) << ops.status();
  if (!ops.ok()) return {};
  absl::StatusOr<IRModule> tir = FuseTir(*ops);
  EXPECT_TRUE(tir.ok()) << tir.status();
  if (!tir.ok()) return {};
  absl::Status wf = CheckWellFormed(*tir);
  EXPECT_TRUE(wf.ok()) << wf << "\n" << PrintModule(*tir);
  return *tir;
}

TEST(FuseTirTest, MatmulBiasReluBecomesOnePrimFunc) {
  IRModule fused = FusedTir(std::string(R"(module {
  func @main(x: Tensor((n, 8), float32), w: Tensor((8, 4), float32), b: Tensor((4,), float32)) -> Tensor((n, 4), float32) where n <= 1024 {
    dataflow {
      %h = R.call_tir(@mm, (x, w), out_sinfo=Tensor((n, 4), float32))
      %hb = R.call_tir(@bias, (%h, b), out_sinfo=Tensor((n, 4), float32))
      y = R.call_tir(@relu, (%hb,), out_sinfo=Tensor((n, 4), float32))
    }
    return y
  }
)") + fusion_test::kKernels + "}\n");
  // The kernel's `m` became the call site's `n`; the two intermediates are allocations
  // around the three loop nests; the kernels nothing else calls are gone.
  IRModule expected = Normalized(R"(module {
  func @main(x: Tensor((n, 8), float32), w: Tensor((8, 4), float32), b: Tensor((4,), float32)) -> Tensor((n, 4), float32) where n <= 1024 {
    dataflow {
      y: Tensor((n, 4), float32) = R.call_tir(@fused_mm_bias_relu, (x, w, b), out_sinfo=Tensor((n, 4), float32))
    }
    return y
  }
  prim_func @fused_mm_bias_relu(x: Buffer((n, 8), float32), w: Buffer((8, 4), float32), b: Buffer((4,), float32), y: Buffer((n, 4), float32)) where n <= 1024 {
    attr op_pattern = "out_ewise_fusable"
    allocate h: Buffer((n, 4), float32) {
      allocate hb: Buffer((n, 4), float32) {
        for i in serial(0, n) {
          for j in serial(0, 4) {
            for k in serial(0, 8) {
              block "mm" {
                vi = spatial(n, i)
                vj = spatial(4, j)
                vk = reduce(8, k)
                init {
                  h[vi, vj] = 0.0
                }
                h[vi, vj] = h[vi, vj] + x[vi, vk] * w[vk, vj]
              }
            }
          }
        }
        for i1 in serial(0, n) {
          for j1 in serial(0, 4) {
            block "bias" {
              vi1 = spatial(n, i1)
              vj1 = spatial(4, j1)
              hb[vi1, vj1] = h[vi1, vj1] + b[vj1]
            }
          }
        }
        for i2 in serial(0, n) {
          for j2 in serial(0, 4) {
            block "relu" {
              vi2 = spatial(n, i2)
              vj2 = spatial(4, j2)
              y[vi2, vj2] = max(hb[vi2, vj2], 0.0)
            }
          }
        }
      }
    }
  }
})");
  ASSERT_NE(fused.Find("main"), nullptr);
  ASSERT_NE(fused.Find("fused_mm_bias_relu"), nullptr);
  ASSERT_NE(fused.Find("fused_mm_bias_relu")->prim_func(), nullptr) << PrintModule(fused);
  const Expr& main_fn = std::get<Expr>(fused.Find("main")->func);
  const Expr& main_expected = std::get<Expr>(expected.Find("main")->func);
  EXPECT_TRUE(StructuralEqual(main_fn, main_expected)) << StructuralDiff(main_fn, main_expected);
  EXPECT_TRUE(tir::StructuralEqual(*fused.Find("fused_mm_bias_relu")->prim_func(),
                                   *expected.Find("fused_mm_bias_relu")->prim_func()))
      << PrintModule(fused);
  for (const char* gone : {"mm", "bias", "relu"}) EXPECT_EQ(fused.Find(gone), nullptr) << gone;
  // Kernels fusion did not use are left alone.
  EXPECT_NE(fused.Find("rowsum"), nullptr);
}

TEST(FuseTirTest, AKernelCalledTwiceIsInlinedTwiceWithUniqueBlocks) {
  IRModule fused = FusedTir(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tuple(Tensor((n, 4), float32), Tensor((n, 4), float32)) {
    dataflow {
      %a = R.call_tir(@relu, (x,), out_sinfo=Tensor((n, 4), float32))
      %b = R.call_tir(@add, (%a, x), out_sinfo=Tensor((n, 4), float32))
      %c = R.call_tir(@relu, (%b,), out_sinfo=Tensor((n, 4), float32))
      y = R.call_tir(@add, (%c, x), out_sinfo=Tensor((n, 4), float32))
      z = R.call_tir(@exp1, (R.const(float32, [2], [1.0, 2.0]),), out_sinfo=Tensor((2,), float32))
      z2 = R.call_tir(@relu, (x,), out_sinfo=Tensor((n, 4), float32))
    }
    t = (y, z2)
    return t
  }
)") + fusion_test::kKernels + "}\n");
  std::string text = PrintModule(fused);
  EXPECT_THAT(text, HasSubstr("R.call_tir(@fused_relu_add_relu_add, (x,), out_sinfo=Tensor((n, 4), float32))"));
  EXPECT_THAT(text, HasSubstr("prim_func @fused_relu_add_relu_add(x: Buffer((n, 4), float32), y: Buffer((n, 4), float32))"));
  for (const char* block : {"block \"relu\"", "block \"add\"", "block \"relu_1\"", "block \"add_1\""}) {
    EXPECT_THAT(text, HasSubstr(block));
  }
  // relu is still called on its own, so it stays; add was called only by the fused chain.
  // Kernels fusion never touched (mm, called by nobody) are not fusion's to remove.
  EXPECT_NE(fused.Find("relu"), nullptr);
  EXPECT_EQ(fused.Find("add"), nullptr) << text;
  EXPECT_NE(fused.Find("exp1"), nullptr);
  EXPECT_NE(fused.Find("mm"), nullptr);
}

TEST(FuseTirTest, AConstantOperandBecomesAParameter) {
  IRModule fused = FusedTir(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    dataflow {
      %a = R.call_tir(@relu, (x,), out_sinfo=Tensor((n, 4), float32))
      y = R.call_tir(@bias, (%a, R.const(float32, [4], [1.0, 2.0, 3.0, 4.0])), out_sinfo=Tensor((n, 4), float32))
    }
    return y
  }
)") + fusion_test::kKernels + "}\n");
  std::string text = PrintModule(fused);
  EXPECT_THAT(text, HasSubstr("R.call_tir(@fused_relu_bias, (x, R.const(float32, [4], [1.0, 2.0, 3.0, 4.0])),"));
  EXPECT_THAT(text, HasSubstr("prim_func @fused_relu_bias(x: Buffer((n, 4), float32), c: Buffer((4,), float32), y: Buffer((n, 4), float32))"));
}

TEST(FuseTirTest, RejectsPrimitiveFunctionsItCannotFuse) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    y = @f(x)
    return y
  }
  func @f(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    attr primitive = true
    dataflow {
      y = R.relu(x)
    }
    return y
  }
)") + fusion_test::kKernels + "}\n");
  absl::StatusOr<IRModule> fused = FuseTir(m);
  ASSERT_FALSE(fused.ok());
  EXPECT_THAT(std::string(fused.status().message()), HasSubstr("primitive function 'f': binding 'y': is not a call_tir"));
}

TEST(FuseTirTest, MismatchedCallSiteShapesAreAnError) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32), u: Tensor((k, 4), float32)) -> Tensor((n, 4), float32) {
    y = @f(x, u)
    return y
  }
  func @f(x: Tensor((n, 4), float32), u: Tensor((k, 4), float32)) -> Tensor((n, 4), float32) {
    attr primitive = true
    dataflow {
      y = R.call_tir(@add, (x, u), out_sinfo=Tensor((n, 4), float32))
    }
    return y
  }
)") + fusion_test::kKernels + "}\n");
  absl::StatusOr<IRModule> fused = FuseTir(m);
  ASSERT_FALSE(fused.ok());
  EXPECT_THAT(std::string(fused.status().message()),
              HasSubstr("primitive function 'f': binding 'y': add: parameter 1 (B) dim 0 is n, the call passes k"));
}

constexpr char kMlpLayer[] = R"(module {
  func @main(x: Tensor((n, 16), float32), w: Tensor((16, 8), float32), b: Tensor((8,), float32)) -> Tensor((n, 8), float32) where n <= 4096 {
    dataflow {
      %h = R.matmul(x, w)
      %hb = R.add(%h, b)
      %g = R.gelu(%hb)
      y = R.softmax(%g, axis=-1)
    }
    return y
  }
})";

std::string RunWithFuse(bool fuse, const std::string& dump_after) {
  absl::StatusOr<ParsedModule> parsed = ParseModule(kMlpLayer, "layer.kir");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return "";
  std::FILE* sink = std::tmpfile();
  PipelineOptions options;
  options.fuse = fuse;
  options.check_well_formed = true;
  options.dump_after = {dump_after};
  options.dump_to = sink;
  absl::StatusOr<IRModule> out = RunPipeline(parsed->module, options, &parsed->locations);
  EXPECT_TRUE(out.ok()) << out.status();
  std::rewind(sink);
  std::string dumped;
  char buf[4096];
  for (size_t k; (k = std::fread(buf, 1, sizeof buf, sink)) > 0;) dumped.append(buf, k);
  std::fclose(sink);
  return dumped;
}

TEST(FusionPipelineTest, MatmulAddGeluIsOneKernelAndFuseOffChangesNothing) {
  std::string on = RunWithFuse(true, "lower_call_tir");
  EXPECT_THAT(on, HasSubstr("R.call_tir_dps(@fused_matmul_add_gelu, (x, w, b),"));
  EXPECT_THAT(on, HasSubstr("R.call_tir_dps(@softmax,"));
  EXPECT_THAT(on, Not(HasSubstr("prim_func @matmul(")));
  EXPECT_THAT(on, Not(HasSubstr("prim_func @gelu(")));
  std::string annotated = RunWithFuse(true, "annotate_patterns");
  EXPECT_THAT(annotated, HasSubstr("attr op_pattern = \"out_ewise_fusable\""));
  std::string off = RunWithFuse(false, "fuse_tir");
  EXPECT_THAT(off, HasSubstr("// after pass fuse_tir"));
  EXPECT_THAT(off, Not(HasSubstr("fused_")));
  EXPECT_THAT(off, HasSubstr("R.call_tir(@gelu, (%hb,)"));
}

}  // namespace
}  // namespace kiln::relax
