// DeduplicatePrimFuncs: structurally equal PrimFuncs become one, their callers redirected.
#include "relax/transform/deduplicate_prim_funcs.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "relax/structural_equal.h"
#include "relax/text_printer.h"
#include "relax/transform/pipeline.h"
#include "relax/well_formed.h"
#include "tests/relax/pass_test_util.h"

namespace kiln::relax {
namespace {

using testing::Normalized;

// A PrimFunc adding a constant, with its names (parameters, symbolic size, loop, block
// iteration variable) and the constant chosen by the caller.
std::string AddKernel(const std::string& name, const std::string& v, const std::string& constant,
                      const std::string& block = "C") {
  return absl::StrCat("  prim_func @", name, "(A_", v, ": Buffer((", v, ",), float32), C_", v, ": Buffer((", v,
                      ",), float32)) {\n    for i_", v, " in serial(0, ", v, ") {\n      block \"", block,
                      "\" {\n        vi_", v, " = spatial(", v, ", i_", v, ")\n        C_", v, "[vi_", v, "] = A_", v,
                      "[vi_", v, "] + ", constant, "\n      }\n    }\n  }\n");
}

std::string Main(const std::string& first, const std::string& second) {
  return absl::StrCat(R"(  func @main(x: Tensor((n,), float32)) -> Tensor((n,), float32) {
    dataflow {
      %a = R.call_tir(@)", first, R"(, (x,), out_sinfo=Tensor((n,), float32))
      gv = R.call_tir(@)", second, R"(, (%a,), out_sinfo=Tensor((n,), float32))
    }
    return gv
  }
)");
}

TEST(DeduplicatePrimFuncsTest, EqualKernelsBecomeTheFirstAndCallsFollow) {
  IRModule in = Normalized(absl::StrCat("module {\n", Main("add_one", "add_one_again"), AddKernel("add_one", "n", "1.0"),
                                        AddKernel("add_one_again", "m", "1.0"), "}\n"));
  absl::StatusOr<IRModule> out = DeduplicatePrimFuncs(in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(CheckWellFormed(*out).ok()) << CheckWellFormed(*out);
  IRModule want = Normalized(absl::StrCat("module {\n", Main("add_one", "add_one"), AddKernel("add_one", "n", "1.0"), "}\n"));
  EXPECT_TRUE(StructuralEqual(*out, want)) << StructuralDiff(*out, want) << "\ngot:\n" << PrintModule(*out);
}

TEST(DeduplicatePrimFuncsTest, DifferentKernelsStay) {
  // Another constant; another block name (schedules refer to blocks by name).
  for (const std::string& other : {AddKernel("second", "n", "2.0"), AddKernel("second", "n", "1.0", "D")}) {
    IRModule in = Normalized(absl::StrCat("module {\n", Main("first", "second"), AddKernel("first", "n", "1.0"), other, "}\n"));
    absl::StatusOr<IRModule> out = DeduplicatePrimFuncs(in);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->entries().size(), in.entries().size());
    for (size_t i = 0; i < in.entries().size(); ++i) {
      EXPECT_EQ(out->entries()[i].name, in.entries()[i].name);
      EXPECT_TRUE(out->entries()[i].prim_func() == nullptr ||
                  out->entries()[i].prim_func()->same_as(*in.entries()[i].prim_func()));
    }
  }
}

int CountPrimFuncs(const IRModule& module) {
  int n = 0;
  for (const IRModule::Entry& e : module.entries()) n += e.prim_func() != nullptr;
  return n;
}

// `layers` transformer blocks (as examples/models/transformer_block.kir) one after the
// other in one function, sharing weights: each layer's fused kernels are their own PrimFuncs
// until deduplicated.
std::string StackedBlocks(int layers) {
  const std::string layer = R"(      %q$ = R.matmul(h$, wq)
      %k$ = R.matmul(h$, wk)
      %v$ = R.matmul(h$, wv)
      %kt$ = R.permute_dims(%k$, axes=[1, 0])
      %s$ = R.matmul(%q$, %kt$)
      %scaled$ = R.multiply(%s$, R.const(float32, [], [0.125]))
      %p$ = R.softmax(%scaled$, axis=-1)
      %a$ = R.matmul(%p$, %v$)
      %o$ = R.matmul(%a$, wo)
      %r$ = R.add(h$, %o$)
      %n$ = R.layer_norm(%r$, g, b, axes=[-1], epsilon=1e-05)
      %u$ = R.matmul(%n$, w1)
      %ub$ = R.add(%u$, bias1)
      %act$ = R.gelu(%ub$)
      %d$ = R.matmul(%act$, w2)
      %db$ = R.add(%d$, bias2)
      %r2$ = R.add(%n$, %db$)
      h@ = R.layer_norm(%r2$, g, b, axes=[-1], epsilon=1e-05)
)";
  std::string body;
  for (int l = 0; l < layers; ++l) {
    std::string text = absl::StrReplaceAll(layer, {{"$", absl::StrCat(l)}, {"@", absl::StrCat(l + 1)}});
    // Only the last layer's output leaves the dataflow block.
    if (l + 1 < layers) text = absl::StrReplaceAll(text, {{absl::StrCat("h", l + 1, " ="), absl::StrCat("%h", l + 1, " =")}});
    if (l > 0) text = absl::StrReplaceAll(text, {{absl::StrCat("(h", l, ","), absl::StrCat("(%h", l, ",")}});
    body += text;
  }
  return absl::StrCat(
      "module {\n  func @main(h0: Tensor((n, 64), float32), wq: Tensor((64, 64), float32), wk: Tensor((64, 64), "
      "float32), wv: Tensor((64, 64), float32), wo: Tensor((64, 64), float32), g: Tensor((64,), float32), b: "
      "Tensor((64,), float32), w1: Tensor((64, 256), float32), bias1: Tensor((256,), float32), w2: Tensor((256, 64), "
      "float32), bias2: Tensor((64,), float32)) -> Tensor((n, 64), float32) where n <= 2048 {\n    dataflow {\n",
      body, "    }\n    return h", layers, "\n  }\n}\n");
}

TEST(DeduplicatePrimFuncsTest, StackedLayersCompileOneLayersKernels) {
  PipelineOptions options;
  options.check_well_formed = true;
  options.libraries.openblas = false;
  absl::StatusOr<IRModule> one = RunPipeline(Normalized(StackedBlocks(1)), options);
  ASSERT_TRUE(one.ok()) << one.status();
  absl::StatusOr<IRModule> three = RunPipeline(Normalized(StackedBlocks(3)), options);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_GT(CountPrimFuncs(*one), 5);
  EXPECT_EQ(CountPrimFuncs(*three), CountPrimFuncs(*one)) << PrintModule(*three);
}

}  // namespace
}  // namespace kiln::relax
