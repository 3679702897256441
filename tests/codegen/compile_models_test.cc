// Whole modules with Relax operators (legalized by the pipeline) compiled to executables
// and run by the VM, checked against the reference evaluator (tests/reference), which
// shares no code with legalization, TIR lowering or the VM.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"
#include "tests/reference/reference_evaluator.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"
#include "tests/source_dir.h"

namespace kiln::codegen {
namespace {

struct Compiled {
  relax::IRModule normalized;  // for the reference evaluator
  std::shared_ptr<const vm::Executable> exe;
};

Compiled CompileText(const std::string& text, const std::string& name, bool libraries = true,
                     std::string* lowered_text = nullptr, bool fuse = true) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, name);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return {};
  absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed->module, &parsed->locations);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  relax::PipelineOptions options;
  options.check_well_formed = true;
  options.libraries.openblas = libraries;
  options.libraries.openblas_by_evidence = false;  // every matmul OpenBLAS can take: its path is tested
  options.fuse = fuse;
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, options, &parsed->locations);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (!lowered.ok() || !normalized.ok()) return {};
  if (lowered_text != nullptr) *lowered_text = relax::PrintModule(*lowered);
  absl::StatusOr<std::string> bytes = BuildExecutable(*lowered, CpuTarget::Host());
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  if (!bytes.ok()) return {};
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
  EXPECT_TRUE(exe.ok()) << exe.status();
  return {*normalized, exe.ok() ? *exe : nullptr};
}

// The same random float32 data as a VM tensor and a reference tensor.
struct Input {
  vm::Tensor vm;
  reference::RefValue ref;
};
Input RandomInput(std::vector<int64_t> shape, uint32_t seed) {
  vm::Tensor t = *vm::Tensor::Empty(shape, vm::DTypeFloat32());
  std::vector<double> values(t.numel());
  uint32_t s = seed * 2654435761u + 7;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    float v = static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 1000.0f;
    t.data_as<float>()[i] = v;
    values[i] = v;
  }
  return {t, reference::RefValue(reference::HostTensor::FromDoubles(tir::DataType::Float32(), shape, values))};
}

void ExpectClose(const vm::Tensor& got, const reference::HostTensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  std::vector<double> w = want.ToDoubles();
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.data_as<float>()[i];
    ASSERT_NEAR(g, w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
  }
}

// examples/models/<file> from the source tree (KILN_SOURCE_DIR), compiled; a null
// executable (with a failure added) when it cannot be read or compiled.
Compiled CompileExample(const std::string& file) {
  const std::string root = kiln::test::SourceDir();
  std::string path = std::string(root) + "/examples/models/" + file;
  absl::StatusOr<std::string> text = support::ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return {};
  return CompileText(*text, path);
}

// The transformer block's parameters after x, in order.
const std::vector<std::vector<int64_t>> kTransformerWeightShapes = {
    {64, 64}, {64, 64}, {64, 64}, {64, 64}, {64}, {64}, {64, 256}, {256}, {256, 64}, {64}, {64}, {64}};

TEST(CompileModelsTest, MlpFromExamplesMatchesTheReference) {
  const std::string root = kiln::test::SourceDir();
  std::string path = std::string(root) + "/examples/models/mlp.kir";
  absl::StatusOr<std::string> text = support::ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  Compiled c = CompileText(*text, path);
  ASSERT_NE(c.exe, nullptr);
  vm::VirtualMachine machine(c.exe);
  Input w0 = RandomInput({784, 256}, 1), b0 = RandomInput({256}, 2), w1 = RandomInput({256, 10}, 3),
        b1 = RandomInput({10}, 4);
  for (int64_t b : {1, 7, 64, 300}) {
    Input x = RandomInput({b, 784}, 10 + static_cast<uint32_t>(b));
    absl::StatusOr<vm::Value> got = machine.Invoke(
        "main", {vm::Value(x.vm), vm::Value(w0.vm), vm::Value(b0.vm), vm::Value(w1.vm), vm::Value(b1.vm)});
    ASSERT_TRUE(got.ok()) << got.status();
    absl::StatusOr<reference::RefValue> want = reference::Evaluate(c.normalized, "main", {x.ref, w0.ref, b0.ref, w1.ref, b1.ref});
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectClose(got->as_tensor(), want->tensor(), 1e-4);
  }
}

// One function mixing an OpenBLAS call (784x256) with generated kernels (256x10 matmul,
// gelu, softmax) against the same module compiled to generated kernels only: both match the
// reference and each other.
TEST(CompileModelsTest, MlpWithAndWithoutOpenBlasAgree) {
  const std::string root = kiln::test::SourceDir();
  std::string path = std::string(root) + "/examples/models/mlp.kir";
  absl::StatusOr<std::string> text = support::ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  std::string with_text, without_text;
  Compiled with = CompileText(*text, path, /*libraries=*/true, &with_text);
  Compiled without = CompileText(*text, path, /*libraries=*/false, &without_text);
  ASSERT_NE(with.exe, nullptr);
  ASSERT_NE(without.exe, nullptr);
  EXPECT_NE(with_text.find("R.extern(\"kiln.openblas.sgemm\")"), std::string::npos) << with_text;
  EXPECT_NE(with_text.find("@fused_matmul_add,"), std::string::npos) << "the small matmul stays generated (fused with its bias add)\n" << with_text;
  EXPECT_EQ(without_text.find("openblas"), std::string::npos) << without_text;
  vm::VirtualMachine vm_with(with.exe), vm_without(without.exe);
  Input w0 = RandomInput({784, 256}, 5), b0 = RandomInput({256}, 6), w1 = RandomInput({256, 10}, 7),
        b1 = RandomInput({10}, 8);
  for (int64_t b : {1, 7, 300}) {
    Input x = RandomInput({b, 784}, 20 + static_cast<uint32_t>(b));
    std::vector<vm::Value> args{vm::Value(x.vm), vm::Value(w0.vm), vm::Value(b0.vm), vm::Value(w1.vm), vm::Value(b1.vm)};
    absl::StatusOr<vm::Value> got_with = vm_with.Invoke("main", args);
    absl::StatusOr<vm::Value> got_without = vm_without.Invoke("main", args);
    ASSERT_TRUE(got_with.ok()) << got_with.status();
    ASSERT_TRUE(got_without.ok()) << got_without.status();
    absl::StatusOr<reference::RefValue> want =
        reference::Evaluate(with.normalized, "main", {x.ref, w0.ref, b0.ref, w1.ref, b1.ref});
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectClose(got_with->as_tensor(), want->tensor(), 1e-4);
    ExpectClose(got_without->as_tensor(), want->tensor(), 1e-4);
    const vm::Tensor& a = got_with->as_tensor();
    const vm::Tensor& c = got_without->as_tensor();
    ASSERT_EQ(a.shape(), c.shape());
    for (int64_t i = 0; i < a.numel(); ++i) {
      // Summation orders differ (784-term dot products), so float32 rounding does too.
      ASSERT_NEAR(a.data_as<float>()[i], c.data_as<float>()[i], 1e-4 * (1 + std::fabs(c.data_as<float>()[i])))
          << "batch " << b << " element " << i;
    }
  }
}

TEST(CompileModelsTest, TransformerBlockFromExamplesMatchesTheReference) {
  Compiled c = CompileExample("transformer_block.kir");
  ASSERT_NE(c.exe, nullptr);
  vm::VirtualMachine machine(c.exe);
  std::vector<Input> weights;
  for (size_t i = 0; i < kTransformerWeightShapes.size(); ++i) {
    weights.push_back(RandomInput(kTransformerWeightShapes[i], 100 + static_cast<uint32_t>(i)));
  }
  for (int64_t n : {1, 7, 64, 300}) {
    Input x = RandomInput({n, 64}, 30 + static_cast<uint32_t>(n));
    std::vector<vm::Value> args{vm::Value(x.vm)};
    std::vector<reference::RefValue> ref_args{x.ref};
    for (const Input& w : weights) {
      args.push_back(vm::Value(w.vm));
      ref_args.push_back(w.ref);
    }
    absl::StatusOr<vm::Value> got = machine.Invoke("main", args);
    ASSERT_TRUE(got.ok()) << got.status();
    absl::StatusOr<reference::RefValue> want = reference::Evaluate(c.normalized, "main", ref_args);
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectClose(got->as_tensor(), want->tensor(), 1e-3);
  }
}

int CountOf(const std::string& text, const std::string& what) {
  int count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
  return count;
}

std::string ReadExample(const std::string& file) {
  const std::string root = kiln::test::SourceDir();
  absl::StatusOr<std::string> text = support::ReadFile(std::string(root) + "/examples/models/" + file);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

// Operator fusion against one kernel per operator (generated kernels only, so the matmuls
// are fusion's to merge): both match the reference evaluator, and fusion makes fewer
// kernels, matmul + add + gelu among them.
TEST(CompileModelsTest, FusedAndUnfusedModelsMatchTheReference) {
  struct Model {
    std::string file;
    std::vector<std::vector<int64_t>> weights;
    double tol;
  };
  const std::vector<Model> models = {
      {"mlp.kir", {{784, 256}, {256}, {256, 10}, {10}}, 1e-4},
      {"transformer_block.kir", kTransformerWeightShapes, 1e-3},
  };
  for (const Model& model : models) {
    SCOPED_TRACE(model.file);
    std::string text = ReadExample(model.file);
    ASSERT_FALSE(text.empty());
    std::string fused_text, unfused_text;
    Compiled fused = CompileText(text, model.file, /*libraries=*/false, &fused_text, /*fuse=*/true);
    Compiled unfused = CompileText(text, model.file, /*libraries=*/false, &unfused_text, /*fuse=*/false);
    ASSERT_NE(fused.exe, nullptr);
    ASSERT_NE(unfused.exe, nullptr);
    const int fused_kernels = CountOf(fused_text, "R.call_tir_dps(");
    const int unfused_kernels = CountOf(unfused_text, "R.call_tir_dps(");
    EXPECT_LT(fused_kernels, unfused_kernels) << fused_text;
    EXPECT_EQ(CountOf(fused_text, "R.call_tir_dps(@fused_matmul_add_gelu,"), 1) << fused_text;
    // Fused functions are named @fused_...; loop names may contain "fused" too.
    EXPECT_EQ(CountOf(unfused_text, "@fused_"), 0) << unfused_text;
    if (model.file == "transformer_block.kir") {
      // 18 operator calls; 9 kernels fused: q, k, v, attention (kt, scores, scale, softmax,
      // probs . v: relax/transform/fuse_attention.h), proj+res1, norm1, up+bias+gelu,
      // down+bias+res2, norm2.
      EXPECT_EQ(unfused_kernels, 18) << unfused_text;
      EXPECT_EQ(fused_kernels, 9) << fused_text;
      EXPECT_EQ(CountOf(fused_text, "R.call_tir_dps(@attention,"), 1) << fused_text;
      // Neither the n x n scores nor the probabilities are tensors of the function.
      EXPECT_EQ(CountOf(fused_text, "R.shape([n, n])"), 0) << fused_text;
      EXPECT_EQ(CountOf(fused_text, "R.call_tir_dps(@permute_dims"), 0) << fused_text;
      EXPECT_EQ(CountOf(fused_text, "R.call_tir_dps(@softmax"), 0) << fused_text;
    }
    std::vector<Input> weights;
    for (size_t i = 0; i < model.weights.size(); ++i) {
      weights.push_back(RandomInput(model.weights[i], 200 + static_cast<uint32_t>(i)));
    }
    const int64_t width = model.file == "mlp.kir" ? 784 : 64;
    vm::VirtualMachine vm_fused(fused.exe), vm_unfused(unfused.exe);
    for (int64_t n : {1, 7, 300}) {
      SCOPED_TRACE(n);
      Input x = RandomInput({n, width}, 40 + static_cast<uint32_t>(n));
      std::vector<vm::Value> args{vm::Value(x.vm)};
      std::vector<reference::RefValue> ref_args{x.ref};
      for (const Input& w : weights) {
        args.push_back(vm::Value(w.vm));
        ref_args.push_back(w.ref);
      }
      absl::StatusOr<reference::RefValue> want = reference::Evaluate(fused.normalized, "main", ref_args);
      ASSERT_TRUE(want.ok()) << want.status();
      absl::StatusOr<vm::Value> got_fused = vm_fused.Invoke("main", args);
      absl::StatusOr<vm::Value> got_unfused = vm_unfused.Invoke("main", args);
      ASSERT_TRUE(got_fused.ok()) << got_fused.status();
      ASSERT_TRUE(got_unfused.ok()) << got_unfused.status();
      ExpectClose(got_fused->as_tensor(), want->tensor(), model.tol);
      ExpectClose(got_unfused->as_tensor(), want->tensor(), model.tol);
    }
  }
}

// Attention scores without the rest of attention (which fuse_attention takes whole): the
// keys' transpose is no kernel of its own and writes no intermediate; the scores kernel
// reads k and transposes each panel while packing it (kt_local).
TEST(CompileModelsTest, TransposedMatmulOperandIsTransposedWhilePacked) {
  const std::string text = R"(module {
  func @main(q: Tensor((n, 64), float32), k: Tensor((n, 64), float32)) -> Tensor((n, n), float32) where n <= 2048 {
    dataflow {
      %kt = R.permute_dims(k, axes=[1, 0])
      %scores = R.matmul(q, %kt)
      out = R.multiply(%scores, R.const(float32, [], [0.125]))
    }
    return out
  }
})";
  std::string fused_text;
  Compiled fused = CompileText(text, "scores.kir", /*libraries=*/false, &fused_text);
  ASSERT_NE(fused.exe, nullptr);
  EXPECT_EQ(CountOf(fused_text, "R.call_tir_dps(@permute_dims"), 0) << fused_text;
  EXPECT_EQ(CountOf(fused_text, "R.call_tir_dps(@fused_permute_dims_matmul_multiply,"), 1) << fused_text;
  EXPECT_EQ(CountOf(fused_text, "allocate kt:"), 0) << fused_text;
  EXPECT_GE(CountOf(fused_text, "kt_local[ax0_1, ax1_1] = k["), 1) << fused_text;
  vm::VirtualMachine machine(fused.exe);
  for (int64_t n : {1, 7, 300}) {
    SCOPED_TRACE(n);
    Input q = RandomInput({n, 64}, 70 + static_cast<uint32_t>(n)), k = RandomInput({n, 64}, 80 + static_cast<uint32_t>(n));
    absl::StatusOr<reference::RefValue> want = reference::Evaluate(fused.normalized, "main", {q.ref, k.ref});
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<vm::Value> got = machine.Invoke("main", {vm::Value(q.vm), vm::Value(k.vm)});
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectClose(got->as_tensor(), want->tensor(), 1e-5);
  }
}

// Fusion of injective chains (transpose, reshape), an operand read twice by one consumer,
// and a kernel with tir_vars (arange's start p, which fusion leaves alone): fused and
// unfused both match the reference.
TEST(CompileModelsTest, FusedInjectiveChainsMatchTheReference) {
  const std::string text = R"(module {
  func @main(x: Tensor((n, 8), float32), y: Tensor((8,), float32), z: Tensor((p,), float32)) -> Tuple(Tensor((4, 2 * n), float32), Tensor((n,), float32)) {
    dataflow {
      %a = R.add(x, y)
      %b = R.tanh(%a)
      %t = R.permute_dims(%b, axes=[1, 0])
      %e = R.exp(%t)
      %sq = R.multiply(%e, %e)
      o1 = R.reshape(%sq, R.shape([4, 2 * n]))
      %r = R.arange(R.prim(p), R.prim(p + n))
      %rf = R.astype(%r, dtype=float32)
      %s = R.sigmoid(%rf)
      o2 = R.add(%s, %s)
    }
    out = (o1, o2)
    return out
  }
})";
  std::string fused_text, unfused_text;
  Compiled fused = CompileText(text, "injective.kir", true, &fused_text, /*fuse=*/true);
  Compiled unfused = CompileText(text, "injective.kir", true, &unfused_text, /*fuse=*/false);
  ASSERT_NE(fused.exe, nullptr);
  ASSERT_NE(unfused.exe, nullptr);
  EXPECT_NE(fused_text.find("@fused_add_tanh,"), std::string::npos) << fused_text;
  EXPECT_NE(fused_text.find("@fused_permute_dims_exp_multiply_reshape,"), std::string::npos) << fused_text;
  EXPECT_NE(fused_text.find("R.call_tir_dps(@arange, (), (%r_out,), R.shape([p]))"), std::string::npos) << fused_text;
  EXPECT_NE(fused_text.find("@fused_astype_sigmoid_add,"), std::string::npos) << fused_text;
  vm::VirtualMachine vm_fused(fused.exe), vm_unfused(unfused.exe);
  Input y = RandomInput({8}, 9);
  for (int64_t n : {1, 7, 300}) {
    SCOPED_TRACE(n);
    Input x = RandomInput({n, 8}, 50 + static_cast<uint32_t>(n));
    Input z = RandomInput({n + 3}, 60 + static_cast<uint32_t>(n));
    absl::StatusOr<reference::RefValue> want = reference::Evaluate(fused.normalized, "main", {x.ref, y.ref, z.ref});
    ASSERT_TRUE(want.ok()) << want.status();
    for (vm::VirtualMachine* machine : {&vm_fused, &vm_unfused}) {
      absl::StatusOr<vm::Value> got = machine->Invoke("main", {vm::Value(x.vm), vm::Value(y.vm), vm::Value(z.vm)});
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectClose(got->as_tuple()[0].as_tensor(), want->fields()[0].tensor(), 1e-5);
      ExpectClose(got->as_tuple()[1].as_tensor(), want->fields()[1].tensor(), 1e-5);
    }
  }
}

// A wrong input shape for a compiled model is the VM's signature error, naming the function,
// the parameter and the dimension, not a crash inside a kernel; the VM then runs on.
TEST(CompileModelsTest, TransformerBlockRejectsAWrongInputShapeClearly) {
  Compiled c = CompileExample("transformer_block.kir");
  ASSERT_NE(c.exe, nullptr);
  vm::VirtualMachine machine(c.exe);
  auto args_with_x = [&](std::vector<int64_t> x_shape, std::vector<int64_t> w1_shape = {64, 256}) {
    std::vector<vm::Value> args{vm::Value(RandomInput(x_shape, 1).vm)};
    for (size_t i = 0; i < kTransformerWeightShapes.size(); ++i) {
      std::vector<int64_t> shape = i == 6 ? w1_shape : kTransformerWeightShapes[i];  // parameter w1
      args.push_back(vm::Value(RandomInput(shape, 2 + static_cast<uint32_t>(i)).vm));
    }
    return args;
  };
  auto error_of = [&](const std::vector<vm::Value>& args) {
    absl::StatusOr<vm::Value> r = machine.Invoke("main", args);
    return r.ok() ? std::string("no error") : std::string(r.status().message());
  };
  // x with 65 columns where the block expects 64.
  std::string wide = error_of(args_with_x({7, 65}));
  EXPECT_NE(wide.find("function 'main'"), std::string::npos) << wide;
  EXPECT_NE(wide.find("parameter 'x' dimension 1"), std::string::npos) << wide;
  EXPECT_NE(wide.find("expected 64"), std::string::npos) << wide;
  // A weight that disagrees with the model: w1 of 255 columns.
  std::string weight = error_of(args_with_x({7, 64}, {64, 255}));
  EXPECT_NE(weight.find("parameter 'w1' dimension 1"), std::string::npos) << weight;
  // The wrong rank.
  std::string rank = error_of(args_with_x({7 * 64}));
  EXPECT_NE(rank.find("parameter 'x'"), std::string::npos) << rank;
  // n above its declared bound (n <= 2048): checked on entry, before any kernel or library
  // call runs (memory planning sizes storage by the bound).
  std::string bound = error_of(args_with_x({2049, 64}));
  EXPECT_NE(bound.find("function 'main' at instruction 1 (bounds of n)"), std::string::npos) << bound;
  EXPECT_NE(bound.find("n = 2049 is above its declared upper bound 2048"), std::string::npos) << bound;
  // The machine is still usable.
  absl::StatusOr<vm::Value> good = machine.Invoke("main", args_with_x({7, 64}));
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->as_tensor().shape(), (std::vector<int64_t>{7, 64}));
}

TEST(CompileModelsTest, ElementwiseAndReductionOpsMatchTheReference) {
  Compiled c = CompileText(R"(module {
  func @main(x: Tensor((n, 16), float32), y: Tensor((16,), float32)) -> Tuple(Tensor((n, 16), float32), Tensor((n,), float32)) {
    dataflow {
      %a = R.multiply(x, y)
      %b = R.relu(%a)
      %c = R.exp(%b)
      s = R.sum(%c, axis=[1])
      r = R.subtract(%c, x)
    }
    out = (r, s)
    return out
  }
})", "ops.kir");
  ASSERT_NE(c.exe, nullptr);
  vm::VirtualMachine machine(c.exe);
  Input y = RandomInput({16}, 5);
  for (int64_t n : {1, 7, 64, 300}) {
    Input x = RandomInput({n, 16}, 20 + static_cast<uint32_t>(n));
    absl::StatusOr<vm::Value> got = machine.Invoke("main", {vm::Value(x.vm), vm::Value(y.vm)});
    ASSERT_TRUE(got.ok()) << got.status();
    absl::StatusOr<reference::RefValue> want = reference::Evaluate(c.normalized, "main", {x.ref, y.ref});
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectClose(got->as_tuple()[0].as_tensor(), want->fields()[0].tensor(), 1e-5);
    ExpectClose(got->as_tuple()[1].as_tensor(), want->fields()[1].tensor(), 1e-5);
  }
}

}  // namespace
}  // namespace kiln::codegen
