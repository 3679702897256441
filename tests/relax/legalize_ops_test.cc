// LegalizeOps: the shape of the IR it produces (text in, printed module checked). The
// numbers the kernels compute are checked in tests/codegen/op_harness_test.cc.
#include "relax/transform/legalize_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "relax/block_builder.h"
#include "relax/op/legalize_common.h"
#include "relax/op_registry.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/well_formed.h"
#include "support/status_macros.h"
#include "tests/source_dir.h"
#include "tests/relax/pass_test_util.h"
#include "tir/text_parser.h"

namespace kiln::relax {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::Normalized;

std::string Legalized(const std::string& text) {
  absl::StatusOr<IRModule> out = LegalizeOps(Normalized(text));
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return "";
  // The result is itself a normalized, well-formed module.
  absl::StatusOr<IRModule> again = NormalizeModule(*out);
  EXPECT_TRUE(again.ok()) << again.status();
  absl::Status wf = CheckWellFormed(*out);
  EXPECT_TRUE(wf.ok()) << wf;
  return PrintModule(*out);
}

TEST(LegalizeOpsTest, EveryTensorOperatorHasALegalization) {
  // Calls, the lowered forms that legalization itself produces and run-time checks (VM
  // codegen lowers check_dims and check_slice_strides to builtins) have nothing to lower;
  // neither has tensor_to_shape, which VM codegen turns into a builtin call like shape_of.
  const std::vector<std::string> structural = {"alloc_storage", "alloc_tensor", "call_builtin", "call_pure_builtin",
                                               "call_dps_library", "call_tir", "call_tir_dps", "check_dims",
                                               "check_slice_strides", "print", "shape_of", "storage_tensor",
                                               "tensor_to_shape"};
  for (const std::string& name : OpRegistry::Global().Names()) {
    const bool is_structural = std::find(structural.begin(), structural.end(), name) != structural.end();
    EXPECT_EQ(OpRegistry::Global().Find(name)->legalize != nullptr, !is_structural) << name;
  }
}

TEST(LegalizeOpsTest, ElementwiseBecomesCallTirWithSharedSymbolicShape) {
  std::string text = Legalized(R"(module {
  func @main(x: Tensor((n, 4), float32), y: Tensor((1, 4), float32)) -> Tensor((n, 4), float32) {
    z = R.add(x, y)
    w = R.exp(z)
    return w
  }
})");
  EXPECT_THAT(text, HasSubstr("R.call_tir(@add, (x, y), out_sinfo=Tensor((n, 4), float32))"));
  EXPECT_THAT(text, HasSubstr("R.call_tir(@exp, (z,), out_sinfo=Tensor((n, 4), float32))"));
  EXPECT_THAT(text, HasSubstr("prim_func @add(A: Buffer((n, 4), float32), B: Buffer((1, 4), float32), out: Buffer((n, 4), float32))"));
  EXPECT_THAT(text, HasSubstr("block \"add\""));
  // The broadcast operand reads row 0.
  EXPECT_THAT(text, HasSubstr("B[0, v1]"));
  EXPECT_THAT(text, HasSubstr("exp(A[v0, v1])"));
  EXPECT_THAT(text, Not(HasSubstr("R.add(")));
}

TEST(LegalizeOpsTest, StructurallyEqualKernelsAreSharedAndNamesAreUnique) {
  std::string text = Legalized(R"(module {
  func @main(x: Tensor((n, 4), float32), y: Tensor((m, 4), float32), z: Tensor((3,), float32)) -> Tensor((m, 4), float32) {
    a = R.add(x, x)
    b = R.add(y, y)
    c = R.add(z, z)
    return b
  }
})");
  // (n, 4) and (m, 4) kernels are equal up to renaming of the shape var: one PrimFunc.
  EXPECT_THAT(text, HasSubstr("R.call_tir(@add, (x, x)"));
  EXPECT_THAT(text, HasSubstr("R.call_tir(@add, (y, y)"));
  EXPECT_THAT(text, HasSubstr("R.call_tir(@add1, (z, z)"));
  EXPECT_THAT(text, Not(HasSubstr("@add2")));
}

TEST(LegalizeOpsTest, ReductionsHaveReductionIterVarsAndInit) {
  std::string text = Legalized(R"(module {
  func @main(x: Tensor((n, k), float32), w: Tensor((k, 8), float32)) -> Tensor((n, 8), float32) {
    y = R.matmul(x, w)
    s = R.sum(y, axis=[1])
    m = R.softmax(y, axis=-1)
    return m
  }
})");
  EXPECT_THAT(text, HasSubstr("block \"matmul\""));
  EXPECT_THAT(text, HasSubstr("reduce(k, k0)"));
  EXPECT_THAT(text, HasSubstr("init {"));
  EXPECT_THAT(text, HasSubstr("block \"softmax_max\""));
  EXPECT_THAT(text, HasSubstr("block \"softmax_sum\""));
  EXPECT_THAT(text, HasSubstr("block \"softmax\""));
}

TEST(LegalizeOpsTest, ConcatOfATupleVariableIsUnpacked) {
  std::string text = Legalized(R"(module {
  func @main(x: Tensor((n, 4), float32), y: Tensor((m, 4), float32)) -> Tensor((n + m, 4), float32) {
    t = (x, y)
    c = R.concat(t, axis=0)
    return c
  }
})");
  EXPECT_THAT(text, HasSubstr("c_in0: Tensor((n, 4), float32) = t[0]"));
  EXPECT_THAT(text, HasSubstr("R.call_tir(@concat, (c_in0, c_in1)"));
  EXPECT_THAT(text, HasSubstr("out[v0_1 + n, v1_1] = B[v0_1, v1_1]"));
  EXPECT_THAT(text, HasSubstr("block \"concat0\""));
  EXPECT_THAT(text, HasSubstr("block \"concat1\""));
}

// String tensors (vm/string_tensor.h) never reach a kernel: reshape stays a view (the VM's
// kiln.reshape), any other operator over strings is Unimplemented, naming it.
TEST(LegalizeOpsTest, StringTensorsOnlyReshape) {
  std::string text = Legalized(R"(module {
  func @main(x: Tensor((2, 3), string)) -> Tensor((3, 2), string) {
    y = R.reshape(x, R.shape([3, 2]))
    return y
  }
})");
  EXPECT_THAT(text, HasSubstr("R.reshape(x"));
  EXPECT_THAT(text, Not(HasSubstr("call_tir")));
  absl::StatusOr<IRModule> concat = LegalizeOps(Normalized(R"(module {
  func @main(x: Tensor((2, 3), string)) -> Tensor((4, 3), string) {
    t = (x, x)
    y = R.concat(t, axis=0)
    return y
  }
})"));
  ASSERT_FALSE(concat.ok());
  EXPECT_EQ(concat.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(concat.status().message(), HasSubstr("concat: string tensors are not supported by this operator"));
}

TEST(LegalizeOpsTest, UnbindableCompoundDimBecomesAFreshVariable) {
  std::string text = Legalized(R"(module {
  func @main(x: Tensor((n, 3), float32)) -> Object {
    s = R.strided_slice(x, axes=[0], begin=[1], end=[9223372036854775807])
    e = R.exp(s)
    return e
  }
})");
  // The slice kernel binds n from its input; the exp kernel only sees n - 1.
  EXPECT_THAT(text, HasSubstr("out: Buffer((max(n - 1, 0), 3), float32)"));
  EXPECT_THAT(text, HasSubstr("prim_func @exp(A: Buffer((d0, 3), float32), out: Buffer((d0, 3), float32))"));
}

TEST(LegalizeOpsTest, SymbolicScalarsTheKernelCannotBindArePassedAsTirVars) {
  std::string text = Legalized(R"(module {
  func @main(x: Tensor((p,), float32), y: Tensor((n,), float32)) -> Object {
    r = R.arange(R.prim(p), R.prim(p + n))
    return r
  }
})");
  EXPECT_THAT(text, HasSubstr("R.call_tir(@arange, (), R.shape([p]), out_sinfo=Tensor((n,), int64))"));
  EXPECT_THAT(text, HasSubstr("prim_func @arange(out: Buffer((n,), int64), p: int64)"));
}

TEST(LegalizeOpsTest, ShapeOfAndCallTirAreLeftAlone) {
  std::string text = Legalized(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Shape((n, 4)) {
    s = R.shape_of(x)
    return s
  }
})");
  EXPECT_THAT(text, HasSubstr("R.shape_of(x)"));
  EXPECT_THAT(text, Not(HasSubstr("prim_func")));
}

TEST(LegalizeOpsTest, UnsupportedDtypeIsAClearError) {
  IRModule module = Normalized(R"(module {
  func @main(x: Tensor((4,), bfloat16)) -> Tensor((4,), bfloat16) {
    y = R.relu(x)
    return y
  }
})");
  absl::StatusOr<IRModule> out = LegalizeOps(module);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("function 'main', binding 'y': relu"));
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("bfloat16"));
}

TEST(LegalizeOpsTest, UnknownShapeIsAClearError) {
  IRModule module = Normalized(R"(module {
  func @main(x: Tensor(ndim=2, float32)) -> Tensor(ndim=2, float32) {
    y = R.exp(x)
    return y
  }
})");
  absl::StatusOr<IRModule> out = LegalizeOps(module);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("exp: cannot legalize: argument 0 has an unknown shape"));
}

// Every example module that normalizes legalizes to a normalized, well-formed module with
// no tensor operator left, or fails with an error naming the function and binding.
TEST(LegalizeOpsTest, ExampleModulesLegalizeOrFailCleanly) {
  const std::string root = kiln::test::SourceDir();
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(root) / "tests/relax/modules")) {
    if (entry.path().extension() == ".kir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 10u);
  int legalized = 0;
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    absl::StatusOr<ParsedModule> parsed = ParseModule(ss.str());
    if (!parsed.ok()) continue;
    absl::StatusOr<IRModule> normalized = NormalizeModule(parsed->module);
    if (!normalized.ok()) continue;
    absl::StatusOr<IRModule> out = LegalizeOps(*normalized);
    if (!out.ok()) {
      EXPECT_THAT(std::string(out.status().message()), ::testing::StartsWith("function '"));
      continue;
    }
    ++legalized;
    absl::StatusOr<IRModule> again = NormalizeModule(*out);
    EXPECT_TRUE(again.ok()) << again.status();
    absl::Status wf = CheckWellFormed(*out);
    EXPECT_TRUE(wf.ok()) << wf;
    const std::string text = PrintModule(*out);
    for (const char* op : {"R.add(", "R.matmul(", "R.softmax(", "R.exp(", "R.reshape(", "R.conv2d("}) {
      EXPECT_THAT(text, Not(HasSubstr(op)));
    }
  }
  EXPECT_GE(legalized, 5);
}

tir::PrimFunc Kernel(const std::string& text) {
  absl::StatusOr<tir::ParsedPrimFunc> parsed = tir::ParsePrimFunc(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? parsed->func : tir::PrimFunc();
}

// A legalization may add several PrimFuncs and emit glue through the builder: here add(a, b)
// becomes t = neg(b) (a kernel), u = R.negative(t) (glue using an operator, legalized in
// turn by the registry's negative), then plus(a, u).
TEST(LegalizeOpsTest, ALegalizationMayEmitSeveralKernelsAndGlue) {
  LegalizeMap custom;
  custom["add"] = [](LegalizeContext& context, const CallNode& call) -> absl::StatusOr<Expr> {
    Expr neg = context.AddPrimFunc("neg", Kernel(R"(prim_func @neg(A: Buffer((n, 4), float32), out: Buffer((n, 4), float32)) {
  for i in serial(0, n) {
    for j in serial(0, 4) {
      out[i, j] = float32(0.0) - A[i, j]
    }
  }
})"));
    Expr plus = context.AddPrimFunc("plus", Kernel(R"(prim_func @plus(A: Buffer((n, 4), float32), B: Buffer((n, 4), float32), out: Buffer((n, 4), float32)) {
  for i in serial(0, n) {
    for j in serial(0, 4) {
      out[i, j] = A[i, j] + B[i, j]
    }
  }
})"));
    BlockBuilder& builder = context.builder();
    const Expr& a = call.args[0];
    const Expr& b = call.args[1];
    KILN_ASSIGN_OR_RETURN(Var t, builder.Emit(op::CallTir(neg, {b}, b.struct_info()), context.binding_name() + "_neg"));
    KILN_ASSIGN_OR_RETURN(Var u, builder.Emit(Call(Op("negative"), {t}), context.binding_name() + "_back"));
    return op::CallTir(plus, {a, u}, call.struct_info());
  };
  absl::StatusOr<IRModule> out = LegalizeOps(Normalized(R"(module {
  func @main(x: Tensor((n, 4), float32), y: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    dataflow {
      %z = R.add(x, y)
      w = R.add(%z, x)
    }
    return w
  }
})"),
                                             custom);
  ASSERT_TRUE(out.ok()) << out.status();
  absl::Status wf = CheckWellFormed(*out);
  EXPECT_TRUE(wf.ok()) << wf;
  ASSERT_TRUE(NormalizeModule(*out).ok());
  std::string text = PrintModule(*out);
  EXPECT_THAT(text, HasSubstr("%z_neg: Tensor((n, 4), float32) = R.call_tir(@neg, (y,), out_sinfo=Tensor((n, 4), float32))"));
  EXPECT_THAT(text, HasSubstr("%z_back: Tensor((n, 4), float32) = R.call_tir(@negative, (%z_neg,)"));
  EXPECT_THAT(text, HasSubstr("%z: Tensor((n, 4), float32) = R.call_tir(@plus, (x, %z_back)"));
  EXPECT_THAT(text, HasSubstr("w: Tensor((n, 4), float32) = R.call_tir(@plus, (%z, %w_back)"));
  // Each PrimFunc joins the module once, however often it is used.
  EXPECT_THAT(text, Not(HasSubstr("@neg1")));
  EXPECT_THAT(text, Not(HasSubstr("@plus1")));
  EXPECT_THAT(text, Not(HasSubstr("R.add(")));
  EXPECT_THAT(text, Not(HasSubstr("R.negative(")));
  for (const char* name : {"neg", "plus", "negative"}) {
    const IRModule::Entry* entry = out->Find(name);
    ASSERT_NE(entry, nullptr) << name;
    EXPECT_NE(entry->prim_func(), nullptr) << name;
  }
}

TEST(LegalizeOpsTest, ALegalizationThatEmitsItselfIsAnError) {
  LegalizeMap custom;
  custom["exp"] = [](LegalizeContext& context, const CallNode& call) -> absl::StatusOr<Expr> {
    return context.builder().Emit(Call(Op("exp"), {call.args[0]}));
  };
  absl::StatusOr<IRModule> out = LegalizeOps(Normalized(R"(module {
  func @main(x: Tensor((4,), float32)) -> Tensor((4,), float32) {
    y = R.exp(x)
    return y
  }
})"),
                                             custom);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("function 'main', binding 'y': exp: legalizations nest deeper than 16 levels"));
}

}  // namespace
}  // namespace kiln::relax
