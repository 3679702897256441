// FuseOps: call_tir chains grouped into primitive functions, IR text in, IR text out.
#include "relax/transform/fuse_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "relax/block_builder.h"
#include "relax/structural_equal.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/well_formed.h"
#include "tests/relax/fusion_kernels.h"
#include "tests/relax/pass_test_util.h"

namespace kiln::relax {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::Normalized;

IRModule Fused(const IRModule& m) {
  absl::StatusOr<IRModule> fused = FuseOps(m);
  EXPECT_TRUE(fused.ok()) << fused.status();
  if (!fused.ok()) return {};
  absl::Status wf = CheckWellFormed(*fused);
  EXPECT_TRUE(wf.ok()) << wf << "\n" << PrintModule(*fused);
  return *fused;
}

TEST(FuseOpsTest, MatmulBiasReluBecomesOnePrimitiveFunction) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 8), float32), w: Tensor((8, 4), float32), b: Tensor((4,), float32)) -> Tensor((n, 4), float32) where n <= 1024 {
    dataflow {
      %h = R.call_tir(@mm, (x, w), out_sinfo=Tensor((n, 4), float32))
      %hb = R.call_tir(@bias, (%h, b), out_sinfo=Tensor((n, 4), float32))
      y = R.call_tir(@relu, (%hb,), out_sinfo=Tensor((n, 4), float32))
    }
    return y
  }
)") + fusion_test::kKernels + "}\n");
  IRModule fused = Fused(m);
  IRModule expected = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 8), float32), w: Tensor((8, 4), float32), b: Tensor((4,), float32)) -> Tensor((n, 4), float32) where n <= 1024 {
    dataflow {
      y = @fused_mm_bias_relu(x, w, b)
    }
    return y
  }
  func @fused_mm_bias_relu(x: Tensor((n, 8), float32), w: Tensor((8, 4), float32), b: Tensor((4,), float32)) -> Tensor((n, 4), float32) where n <= 1024 {
    attr primitive = true
    dataflow {
      %h = R.call_tir(@mm, (x, w), out_sinfo=Tensor((n, 4), float32))
      %hb = R.call_tir(@bias, (%h, b), out_sinfo=Tensor((n, 4), float32))
      y = R.call_tir(@relu, (%hb,), out_sinfo=Tensor((n, 4), float32))
    }
    return y
  }
)") + fusion_test::kKernels + "}\n");
  EXPECT_TRUE(StructuralEqual(fused, expected)) << StructuralDiff(fused, expected) << "\n" << PrintModule(fused);
  // The printed form parses and normalizes back to the same module.
  EXPECT_TRUE(StructuralEqual(Normalized(PrintModule(fused)), fused));
}

TEST(FuseOpsTest, AnIntermediateUsedTwiceIsNotFusedAway) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 8), float32), w: Tensor((8, 4), float32)) -> Tensor((n, 4), float32) {
    dataflow {
      %h = R.call_tir(@mm, (x, w), out_sinfo=Tensor((n, 4), float32))
      %a = R.call_tir(@relu, (%h,), out_sinfo=Tensor((n, 4), float32))
      %c = R.call_tir(@add, (%h, %a), out_sinfo=Tensor((n, 4), float32))
      y = R.call_tir(@relu, (%c,), out_sinfo=Tensor((n, 4), float32))
    }
    return y
  }
)") + fusion_test::kKernels + "}\n");
  IRModule fused = Fused(m);
  std::string text = PrintModule(fused);
  // %h feeds two calls: the matmul stays alone. relu(%h) is used only by the add, and the
  // add only by the last relu: those three fuse.
  EXPECT_THAT(text, HasSubstr("%h: Tensor((n, 4), float32) = R.call_tir(@mm, (x, w)"));
  EXPECT_THAT(text, HasSubstr("y: Tensor((n, 4), float32) = @fused_relu_add_relu(%h)"));
  EXPECT_EQ(fused.Find("fused_mm_relu"), nullptr) << text;
}

TEST(FuseOpsTest, TheBlockOutputIsNotFusedAway) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 8), float32), w: Tensor((8, 4), float32)) -> Tuple(Tensor((n, 4), float32), Tensor((n, 4), float32)) {
    dataflow {
      %h = R.call_tir(@mm, (x, w), out_sinfo=Tensor((n, 4), float32))
      gv = R.call_tir(@relu, (%h,), out_sinfo=Tensor((n, 4), float32))
      z = R.call_tir(@relu, (gv,), out_sinfo=Tensor((n, 4), float32))
    }
    t = (gv, z)
    return t
  }
)") + fusion_test::kKernels + "}\n");
  IRModule fused = Fused(m);
  std::string text = PrintModule(fused);
  EXPECT_THAT(text, HasSubstr("gv: Tensor((n, 4), float32) = @fused_mm_relu(x, w)"));
  EXPECT_THAT(text, HasSubstr("z: Tensor((n, 4), float32) = R.call_tir(@relu, (gv,)"));
}

TEST(FuseOpsTest, ReductionsStayAloneAndElementwiseChainsAfterThemFuse) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n,), float32) {
    dataflow {
      %h = R.call_tir(@relu, (x,), out_sinfo=Tensor((n, 4), float32))
      %s = R.call_tir(@rowsum, (%h,), out_sinfo=Tensor((n,), float32))
      %t = R.call_tir(@exp1, (%s,), out_sinfo=Tensor((n,), float32))
      y = R.call_tir(@exp1, (%t,), out_sinfo=Tensor((n,), float32))
    }
    return y
  }
)") + fusion_test::kKernels + "}\n");
  IRModule fused = Fused(m);
  std::string text = PrintModule(fused);
  EXPECT_THAT(text, HasSubstr("%h: Tensor((n, 4), float32) = R.call_tir(@relu, (x,)"));
  EXPECT_THAT(text, HasSubstr("%s: Tensor((n,), float32) = R.call_tir(@rowsum, (%h,)"));
  EXPECT_THAT(text, HasSubstr("y: Tensor((n,), float32) = @fused_exp_exp(%s)"));
  EXPECT_THAT(text, Not(HasSubstr("fused_relu")));
  EXPECT_THAT(text, Not(HasSubstr("fused_rowsum")));
}

TEST(FuseOpsTest, InjectiveJoinsOnlyInjectiveOrElementwiseGroups) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32), b: Tensor((4,), float32), x2: Tensor((4, n), float32)) -> Tuple(Tensor((4, n), float32), Tensor((4, n), float32)) {
    dataflow {
      %a = R.call_tir(@bias, (x, b), out_sinfo=Tensor((n, 4), float32))
      y1 = R.call_tir(@transpose, (%a,), out_sinfo=Tensor((4, n), float32))
      %c = R.call_tir(@relu2, (x2,), out_sinfo=Tensor((4, n), float32))
      %d = R.call_tir(@transpose2, (%c,), out_sinfo=Tensor((n, 4), float32))
      y2 = R.call_tir(@transpose, (%d,), out_sinfo=Tensor((4, n), float32))
    }
    t = (y1, y2)
    return t
  }
)") + fusion_test::kKernels + "}\n");
  IRModule fused = Fused(m);
  std::string text = PrintModule(fused);
  // broadcast then injective: not fused. elementwise then injective then injective: fused.
  EXPECT_THAT(text, HasSubstr("y1: Tensor((4, n), float32) = R.call_tir(@transpose, (%a,)"));
  EXPECT_THAT(text, HasSubstr("y2: Tensor((4, n), float32) = @fused_relu_transpose_transpose(x2)"));
}

// q @ permute_dims(k): with transposed_operands (the CPU pipeline) the transpose joins the
// matmul that reads it as its second operand, and an elementwise epilogue still follows;
// by default, and as a first operand, it stays a kernel of its own.
TEST(FuseOpsTest, TransposeJoinsTheMatmulReadingItAsSecondOperand) {
  const std::string kernels = std::string(fusion_test::kKernels) + R"(
  prim_func @qk(A: Buffer((m, 4), float32), B: Buffer((4, m), float32), C: Buffer((m, m), float32)) {
    attr op_pattern = "out_ewise_fusable"
    for i in serial(0, m) {
      for j in serial(0, m) {
        for k in serial(0, 4) {
          block "qk" {
            vi = spatial(m, i)
            vj = spatial(m, j)
            vk = reduce(4, k)
            init {
              C[vi, vj] = 0.0
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
  prim_func @half(A: Buffer((m, m), float32), B: Buffer((m, m), float32)) {
    attr op_pattern = "elementwise"
    for i in serial(0, m) {
      for j in serial(0, m) {
        block "half" {
          vi = spatial(m, i)
          vj = spatial(m, j)
          B[vi, vj] = A[vi, vj] * 0.5
        }
      }
    }
  }
)";
  IRModule m = Normalized(std::string(R"(module {
  func @main(q: Tensor((n, 4), float32), k: Tensor((n, 4), float32)) -> Tensor((n, n), float32) {
    dataflow {
      %kt = R.call_tir(@transpose, (k,), out_sinfo=Tensor((4, n), float32))
      %s = R.call_tir(@qk, (q, %kt), out_sinfo=Tensor((n, n), float32))
      y = R.call_tir(@half, (%s,), out_sinfo=Tensor((n, n), float32))
    }
    return y
  }
)") + kernels + "}\n");
  absl::StatusOr<IRModule> with = FuseOps(m, FuseOpsOptions{/*transposed_operands=*/true});
  ASSERT_TRUE(with.ok()) << with.status();
  ASSERT_TRUE(CheckWellFormed(*with).ok());
  EXPECT_THAT(PrintModule(*with), HasSubstr("y: Tensor((n, n), float32) = @fused_transpose_qk_half(k, q)"));
  std::string by_default = PrintModule(Fused(m));
  EXPECT_THAT(by_default, HasSubstr("R.call_tir(@transpose, (k,)"));
  EXPECT_THAT(by_default, HasSubstr("@fused_qk_half(q, %kt)"));

  // The transpose as the first operand: not fused.
  IRModule first = Normalized(std::string(R"(module {
  func @main(q: Tensor((4, n), float32), k: Tensor((4, n), float32)) -> Tensor((n, n), float32) {
    dataflow {
      %qt = R.call_tir(@transpose2, (q,), out_sinfo=Tensor((n, 4), float32))
      y = R.call_tir(@qk, (%qt, k), out_sinfo=Tensor((n, n), float32))
    }
    return y
  }
)") + kernels + "}\n");
  absl::StatusOr<IRModule> first_fused = FuseOps(first, FuseOpsOptions{/*transposed_operands=*/true});
  ASSERT_TRUE(first_fused.ok()) << first_fused.status();
  EXPECT_THAT(PrintModule(*first_fused), Not(HasSubstr("@fused_")));
}

TEST(FuseOpsTest, DataflowBlocksInIfBranchesAreFusedToo) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32), c: Prim(bool)) -> Tensor((n, 4), float32) {
    r = if c {
      dataflow {
        %a = R.call_tir(@relu, (x,), out_sinfo=Tensor((n, 4), float32))
        t = R.call_tir(@add, (%a, x), out_sinfo=Tensor((n, 4), float32))
      }
      yield t
    } else {
      yield x
    }
    return r
  }
)") + fusion_test::kKernels + "}\n");
  IRModule fused = Fused(m);
  EXPECT_THAT(PrintModule(fused), HasSubstr("t: Tensor((n, 4), float32) = @fused_relu_add(x)"));
}

TEST(FuseOpsTest, TirVarsAndMismatchedKernelsAreNotFused) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32), u: Tensor((m, 4), float32)) -> Tuple(Tensor((n, 4), float32), Tensor((n, 4), float32)) {
    dataflow {
      %a = R.call_tir(@relu_s, (x,), R.shape([n]), out_sinfo=Tensor((n, 4), float32))
      y1 = R.call_tir(@relu, (%a,), out_sinfo=Tensor((n, 4), float32))
      %c = R.call_tir(@relu, (x,), out_sinfo=Tensor((n, 4), float32))
      y2 = R.call_tir(@add, (%c, u), out_sinfo=Tensor((n, 4), float32))
    }
    t = (y1, y2)
    return t
  }
  prim_func @relu_s(A: Buffer((n, 4), float32), B: Buffer((n, 4), float32), s: int64) {
    attr op_pattern = "elementwise"
    for i in serial(0, n) {
      for j in serial(0, 4) {
        block "relu_s" {
          vi = spatial(n, i)
          vj = spatial(4, j)
          B[vi, vj] = max(A[vi, vj], 0.0)
        }
      }
    }
  }
)") + fusion_test::kKernels + "}\n");
  IRModule fused = Fused(m);
  // The first call passes tir_vars; the add's kernel has one `n` for both operands, which
  // the call site's n and m cannot be proven to match. Nothing fuses.
  EXPECT_TRUE(StructuralEqual(fused, m)) << PrintModule(fused);
}

}  // namespace
}  // namespace kiln::relax
