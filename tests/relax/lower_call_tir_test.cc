// LowerCallTir: call_tir -> alloc_tensor + call_tir_dps, text in, text out; and the
// pipeline's options.
#include "relax/transform/lower_call_tir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "relax/block_builder.h"
#include "relax/structural_equal.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/pipeline.h"
#include "relax/well_formed.h"
#include "tests/relax/pass_test_util.h"

namespace kiln::relax {
namespace {

using ::testing::HasSubstr;

using testing::Normalized;

constexpr char kKernels[] = R"(
  prim_func @k(A: Buffer((n, 4), float32), B: Buffer((n, 4), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 4) {
        B[i, j] = A[i, j]
      }
    }
  }
  prim_func @k2(A: Buffer((n, 4), float32), B: Buffer((n, 4), float32), C: Buffer((n + 1,), int32), s: int64) {
    for i in serial(0, n) {
      for j in serial(0, 4) {
        B[i, j] = A[i, j]
      }
    }
  }
)";

TEST(LowerCallTirTest, SingleOutputInADataflowBlock) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    dataflow {
      %a = R.call_tir(@k, (x,), out_sinfo=Tensor((n, 4), float32))
      gv = R.call_tir(@k, (%a,), out_sinfo=Tensor((n, 4), float32))
    }
    return gv
  }
)") + kKernels + "}\n");
  absl::StatusOr<IRModule> lowered = LowerCallTir(m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_TRUE(CheckWellFormed(*lowered).ok()) << CheckWellFormed(*lowered);
  IRModule expected = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    dataflow {
      %a_out: Tensor((n, 4), float32) = R.alloc_tensor(R.shape([n, 4]), dtype=float32)
      %a: Tensor((n, 4), float32) = R.call_tir_dps(@k, (x,), (%a_out,))
      %gv_out: Tensor((n, 4), float32) = R.alloc_tensor(R.shape([n, 4]), dtype=float32)
      gv: Tensor((n, 4), float32) = R.call_tir_dps(@k, (%a,), (%gv_out,))
    }
    return gv
  }
)") + kKernels + "}\n");
  EXPECT_TRUE(StructuralEqual(*lowered, expected)) << PrintModule(*lowered);
}

// A match_cast of a call stays a match_cast around the lowered call: the symbols it defines
// (m) are used afterwards, and VM codegen binds them from the match.
TEST(LowerCallTirTest, MatchCastOfACallKeepsItsPattern) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor(ndim=2, float32) {
    y: Tensor((m, 4), float32) = match_cast(R.call_tir(@k, (x,), out_sinfo=Tensor((n, 4), float32)), Tensor((m, 4), float32))
    z = R.call_tir(@k, (y,), out_sinfo=Tensor((m, 4), float32))
    return z
  }
)") + kKernels + "}\n");
  absl::StatusOr<IRModule> lowered = LowerCallTir(m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_TRUE(CheckWellFormed(*lowered).ok()) << CheckWellFormed(*lowered);
  IRModule expected = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor(ndim=2, float32) {
    y_out: Tensor((n, 4), float32) = R.alloc_tensor(R.shape([n, 4]), dtype=float32)
    y: Tensor((m, 4), float32) = match_cast(R.call_tir_dps(@k, (x,), (y_out,)), Tensor((m, 4), float32))
    z_out: Tensor((m, 4), float32) = R.alloc_tensor(R.shape([m, 4]), dtype=float32)
    z: Tensor((m, 4), float32) = R.call_tir_dps(@k, (y,), (z_out,))
    return z
  }
)") + kKernels + "}\n");
  EXPECT_TRUE(StructuralEqual(*lowered, expected)) << PrintModule(*lowered);
}

TEST(LowerCallTirTest, TupleOutputsTirVarsAndIfBranches) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32), c: Prim(bool)) -> Tuple(Tensor((n, 4), float32), Tensor((n + 1,), int32)) {
    r = if c {
      t = R.call_tir(@k2, (x,), R.shape([n * 2]), out_sinfo=Tuple(Tensor((n, 4), float32), Tensor((n + 1,), int32)))
      yield t
    } else {
      u = R.call_tir(@k2, (x,), R.shape([n]), out_sinfo=Tuple(Tensor((n, 4), float32), Tensor((n + 1,), int32)))
      yield u
    }
    return r
  }
)") + kKernels + "}\n");
  absl::StatusOr<IRModule> lowered = LowerCallTir(m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_TRUE(CheckWellFormed(*lowered).ok()) << CheckWellFormed(*lowered);
  std::string text = PrintModule(*lowered);
  EXPECT_THAT(text, HasSubstr("t_out1: Tensor((n + 1,), int32) = R.alloc_tensor(R.shape([n + 1]), dtype=int32)"));
  EXPECT_THAT(text, HasSubstr("R.call_tir_dps(@k2, (x,), (t_out0, t_out1), R.shape([n * 2]))"));
  EXPECT_THAT(text, HasSubstr("R.call_tir_dps(@k2, (x,), (u_out0, u_out1), R.shape([n]))"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("R.call_tir(")));
}

TEST(LowerCallTirTest, UnknownOutputShapeIsAnError) {
  IRModule m = Normalized(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor(ndim=2, float32) {
    y = R.call_tir(@k, (x,), out_sinfo=Tensor(ndim=2, float32))
    return y
  }
)") + kKernels + "}\n");
  absl::StatusOr<IRModule> lowered = LowerCallTir(m);
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()),
              HasSubstr("function 'main', binding 'y': call_tir output 0 (Tensor(ndim=2, float32)) needs a known shape"));
}

TEST(PipelineTest, NamesDumpsAndErrors) {
  EXPECT_EQ(PipelinePassNames(), (std::vector<std::string>{"normalize", "insert_shape_checks", "fold_constants", "dispatch_libraries", "fuse_attention", "legalize", "annotate_patterns", "fuse_ops", "fuse_tir", "dead_code_elimination", "deduplicate_prim_funcs", "bind_target", "schedule", "lower_call_tir", "plan_memory"}));
  absl::Status bad = ValidatePassNames({"normalize", "fuse"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.message()), HasSubstr("unknown pass 'fuse'; the passes are: normalize, insert_shape_checks, fold_constants, dispatch_libraries, fuse_attention, legalize, annotate_patterns, fuse_ops, fuse_tir, dead_code_elimination, deduplicate_prim_funcs, bind_target, schedule, lower_call_tir, plan_memory"));

  absl::StatusOr<ParsedModule> parsed = ParseModule(std::string(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    y = R.call_tir(@k, (x,), out_sinfo=Tensor((n, 4), float32))
    return y
  }
)") + kKernels + "}\n", "p.kir");
  ASSERT_TRUE(parsed.ok());
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  PipelineOptions options;
  options.dump_after = {"lower_call_tir"};
  options.time_passes = true;
  options.check_well_formed = true;
  options.dump_to = sink;
  absl::StatusOr<IRModule> out = RunPipeline(parsed->module, options, &parsed->locations);
  ASSERT_TRUE(out.ok()) << out.status();
  std::rewind(sink);
  std::string dumped;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, sink)) > 0;) dumped.append(buf, n);
  std::fclose(sink);
  EXPECT_THAT(dumped, HasSubstr("pass normalize"));
  EXPECT_THAT(dumped, HasSubstr("// after pass lower_call_tir\nmodule {"));
  EXPECT_THAT(dumped, HasSubstr("R.call_tir_dps(@k, (x,), (y_out,))"));
  EXPECT_THAT(dumped, ::testing::Not(HasSubstr("// after pass normalize")));

  // A parse-level mistake caught by normalize keeps its source location.
  absl::StatusOr<ParsedModule> wrong = ParseModule(R"(module {
  func @main(x: Tensor((n, 4), float32), z: Tensor((3, 2), float32)) -> Tensor((n, 2), float32) {
    y = R.matmul(x, z)
    return y
  }
})", "w.kir");
  ASSERT_TRUE(wrong.ok());
  absl::StatusOr<IRModule> failed = RunPipeline(wrong->module, PipelineOptions{}, &wrong->locations);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("w.kir:3:"));
}

}  // namespace
}  // namespace kiln::relax
