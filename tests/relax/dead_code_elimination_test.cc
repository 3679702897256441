// DeadCodeElimination: IR text in, the expected module text out (compared structurally).
#include "relax/transform/dead_code_elimination.h"

#include <gtest/gtest.h>

#include <string>

#include "relax/block_builder.h"
#include "relax/structural_equal.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/well_formed.h"
#include "tests/relax/pass_test_util.h"

namespace kiln::relax {
namespace {

using testing::Normalized;

void ExpectEliminatesTo(const std::string& in, const std::string& expected) {
  absl::StatusOr<IRModule> out = DeadCodeElimination(Normalized(in));
  ASSERT_TRUE(out.ok()) << out.status();
  absl::Status wf = CheckWellFormed(*out);
  EXPECT_TRUE(wf.ok()) << wf << "\n" << PrintModule(*out);
  IRModule want = Normalized(expected);
  EXPECT_TRUE(StructuralEqual(*out, want)) << StructuralDiff(*out, want) << "\ngot:\n" << PrintModule(*out);
}

TEST(DeadCodeEliminationTest, DeadChainInADataflowBlockGoesEntirely) {
  ExpectEliminatesTo(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    dataflow {
      %a = R.exp(x)
      %b = R.add(%a, %a)
      %c = R.multiply(%b, %b)
      %used = R.relu(x)
      unused_out = R.negative(%c)
      y = R.sigmoid(%used)
    }
    return y
  }
})",
                     R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    dataflow {
      %used = R.relu(x)
      y = R.sigmoid(%used)
    }
    return y
  }
})");
}

TEST(DeadCodeEliminationTest, ImpureBindingsAndMatchCastsStayOutsideDataflow) {
  ExpectEliminatesTo(R"(module {
  impure func @log(x: Tensor((n,), float32)) -> Object {
    p = R.print(x, format="{}")
    return p
  }

  impure func @main(x: Tensor((n,), float32), y: Tensor) -> Tensor((n,), float32) {
    dead = R.exp(x)
    dead_tuple = (dead, x)
    printed = R.print(x, format="x = {}")
    logged = @log(x)
    builtin = R.call_builtin(R.extern("kiln.runtime.sync"))
    ext = R.extern("kiln.runtime.sync")()
    checked = match_cast(y, Tensor((m,), float32))
    kept = R.add(x, x)
    return kept
  }
})",
                     R"(module {
  impure func @log(x: Tensor((n,), float32)) -> Object {
    p = R.print(x, format="{}")
    return p
  }

  impure func @main(x: Tensor((n,), float32), y: Tensor) -> Tensor((n,), float32) {
    printed = R.print(x, format="x = {}")
    logged = @log(x)
    builtin = R.call_builtin(R.extern("kiln.runtime.sync"))
    ext = R.extern("kiln.runtime.sync")()
    checked = match_cast(y, Tensor((m,), float32))
    kept = R.add(x, x)
    return kept
  }
})");
}

TEST(DeadCodeEliminationTest, EmptyBlocksAndDeadIfsGo) {
  ExpectEliminatesTo(R"(module {
  func @main(c: Prim(bool), x: Tensor((2,), float32)) -> Tensor((2,), float32) {
    dataflow {
      %a = R.exp(x)
      b = R.add(%a, x)
    }
    unused = if c {
      t = R.relu(x)
      yield t
    } else {
      yield x
    }
    r = if c {
      dead_in_branch = R.exp(x)
      s = R.negative(x)
      yield s
    } else {
      yield x
    }
    return r
  }
})",
                     R"(module {
  func @main(c: Prim(bool), x: Tensor((2,), float32)) -> Tensor((2,), float32) {
    r = if c {
      s = R.negative(x)
      yield s
    } else {
      yield x
    }
    return r
  }
})");
}

TEST(DeadCodeEliminationTest, AnIfWithAnImpureBranchStays) {
  const std::string text = R"(module {
  impure func @main(c: Prim(bool), x: Tensor((2,), float32)) -> Tensor((2,), float32) {
    unused = if c {
      p = R.print(x, format="{}")
      yield x
    } else {
      yield x
    }
    return x
  }
})";
  ExpectEliminatesTo(text, text);
}

TEST(DeadCodeEliminationTest, UnreachedKernelsAndPrivateFunctionsAreRemoved) {
  ExpectEliminatesTo(R"(module {
  func @main(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    a = R.call_tir(@used_kernel, (x,), out_sinfo=Tensor((4,), float32))
    dead = R.call_tir(@dead_kernel, (x,), out_sinfo=Tensor((4,), float32))
    b = @fused(a)
    return b
  }

  func @other_entry(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    return x
  }

  func @fused(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    attr primitive = true
    y = R.call_tir(@fused_kernel, (x,), out_sinfo=Tensor((4,), float32))
    return y
  }

  func @orphan_group(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    attr primitive = true
    y = R.call_tir(@orphan_kernel, (x,), out_sinfo=Tensor((4,), float32))
    return y
  }

  func @helper(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    attr private = true
    return x
  }

  func @not_really_private(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    attr private = false
    return x
  }

  prim_func @used_kernel(A: Buffer((4,), float32), B: Buffer((4,), float32)) {
    B[0] = A[0]
  }

  prim_func @dead_kernel(A: Buffer((4,), float32), B: Buffer((4,), float32)) {
    B[0] = A[0]
  }

  prim_func @fused_kernel(A: Buffer((4,), float32), B: Buffer((4,), float32)) {
    B[0] = A[0]
  }

  prim_func @orphan_kernel(A: Buffer((4,), float32), B: Buffer((4,), float32)) {
    B[0] = A[0]
  }

  prim_func @never_called(A: Buffer((4,), float32)) {
    A[0] = 1.0
  }
})",
                     R"(module {
  func @main(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    a = R.call_tir(@used_kernel, (x,), out_sinfo=Tensor((4,), float32))
    b = @fused(a)
    return b
  }

  func @other_entry(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    return x
  }

  func @fused(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    attr primitive = true
    y = R.call_tir(@fused_kernel, (x,), out_sinfo=Tensor((4,), float32))
    return y
  }

  func @not_really_private(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    attr private = false
    return x
  }

  prim_func @used_kernel(A: Buffer((4,), float32), B: Buffer((4,), float32)) {
    B[0] = A[0]
  }

  prim_func @fused_kernel(A: Buffer((4,), float32), B: Buffer((4,), float32)) {
    B[0] = A[0]
  }
})");
}

TEST(DeadCodeEliminationTest, FunctionsReachedThroughVariablesStay) {
  const std::string text = R"(module {
  func @main(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    f = @square
    y = f(x)
    return y
  }

  func @square(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    attr private = true
    y = R.multiply(x, x)
    return y
  }
})";
  ExpectEliminatesTo(text, text);
}

TEST(DeadCodeEliminationTest, NothingDeadReturnsTheSameModule) {
  IRModule in = Normalized(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    dataflow {
      %a = R.exp(x)
      y = R.add(%a, x)
    }
    return y
  }
})");
  absl::StatusOr<IRModule> out = DeadCodeElimination(in);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->entries().size(), 1u);
  EXPECT_TRUE(std::get<Expr>(out->entries()[0].func).same_as(std::get<Expr>(in.entries()[0].func)));
}

}  // namespace
}  // namespace kiln::relax
