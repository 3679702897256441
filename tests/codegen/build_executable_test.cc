// BuildExecutable's contract with the loader: the weights of a model compiled with its
// parameters bound as constants land in the file's weights section and run from the file
// mapping with unchanged numbers (against the reference evaluator on the original model),
// and the CPU the kernels were compiled for is recorded and checked against the host.
#include "codegen/build_executable.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "builtins/default_builtins.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"
#include "tests/reference/reference_evaluator.h"
#include "tests/source_dir.h"
#include "vm/cpu_features.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace kiln::codegen {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::string> Compile(const std::string& text, const CpuTarget& target) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, "test.kir");
  if (!parsed.ok()) return parsed.status();
  relax::PipelineOptions options;
  options.check_well_formed = true;
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, options, &parsed->locations);
  if (!lowered.ok()) return lowered.status();
  return BuildExecutable(*lowered, target);
}

// Deterministic values k / 1000 for k in [-1000, 1000], exact in float32 text.
std::vector<float> Values(int64_t n, uint32_t seed) {
  std::vector<float> out(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u + 7;
  for (float& v : out) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 1000.0f;
  }
  return out;
}

std::string ConstText(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  std::vector<std::string> items;
  for (float v : values) items.push_back(absl::StrCat(v));
  return absl::StrCat("R.const(float32, [", absl::StrJoin(shape, ", "), "], [", absl::StrJoin(items, ", "), "])");
}

vm::Tensor VmTensor(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  vm::Tensor t = *vm::Tensor::Empty(shape, vm::DTypeFloat32());
  for (size_t i = 0; i < values.size(); ++i) t.data_as<float>()[i] = values[i];
  return t;
}

reference::RefValue RefTensor(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  return reference::RefValue(reference::HostTensor::FromDoubles(tir::DataType::Float32(), shape,
                                                                std::vector<double>(values.begin(), values.end())));
}

TEST(BuildExecutable, ExampleMlpWithBoundWeightsRunsFromTheMappingWithUnchangedNumbers) {
  // examples/models/mlp.kir with its four weights bound as constants: the compiled file holds
  // them in its weights section, and loading it maps them instead of copying.
  const std::vector<std::vector<int64_t>> shapes = {{784, 256}, {256}, {256, 10}, {10}};
  std::vector<std::vector<float>> weights;
  for (size_t i = 0; i < shapes.size(); ++i) {
    weights.push_back(Values(shapes[i][0] * (shapes[i].size() > 1 ? shapes[i][1] : 1), 1 + static_cast<uint32_t>(i)));
  }
  std::string bound = absl::StrCat(
      "module {\n  func @main(x: Tensor((b, 784), float32)) -> Tensor((b, 10), float32) where b <= 4096 {\n",
      "    w0 = ", ConstText(shapes[0], weights[0]), "\n    b0 = ", ConstText(shapes[1], weights[1]),
      "\n    w1 = ", ConstText(shapes[2], weights[2]), "\n    b1 = ", ConstText(shapes[3], weights[3]), "\n",
      "    dataflow {\n      h0 = R.matmul(x, w0)\n      h1 = R.add(h0, b0)\n      h2 = R.gelu(h1)\n",
      "      l0 = R.matmul(h2, w1)\n      l = R.add(l0, b1)\n      probs = R.softmax(l, axis=-1)\n    }\n",
      "    return probs\n  }\n}\n");
  absl::StatusOr<std::string> bytes = Compile(bound, CpuTarget::Host());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  std::string path = ::testing::TempDir() + "/mlp_bound.kx";
  ASSERT_TRUE(support::WriteFile(path, *bytes).ok());
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::LoadFile(path, builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok()) << exe.status();

  // Every weight larger than the inline limit (w0, b0, w1; not b1's 40 bytes) is a view of the mapping.
  int64_t mapped_bytes = 0;
  for (const vm::Value& c : (*exe)->contents().constants) {
    if (!c.is_tensor()) continue;
    const vm::Tensor& t = c.as_tensor();
    bool inside = (*exe)->image()->Contains(t.data(), static_cast<size_t>(t.nbytes()));
    EXPECT_EQ(inside, t.nbytes() > vm::kInlineConstantMaxBytes) << t.Describe();
    if (inside) mapped_bytes += t.nbytes();
  }
  EXPECT_GE(mapped_bytes, (784 * 256 + 256 + 256 * 10) * 4);
  EXPECT_TRUE((*exe)->image()->is_mapped());

  // The reference: the original example with the same weights passed as parameters.
  absl::StatusOr<std::string> original = support::ReadFile(kiln::test::SourceDir() + "/examples/models/mlp.kir");
  ASSERT_TRUE(original.ok()) << original.status();
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(*original, "mlp.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed->module, &parsed->locations);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  vm::VirtualMachine machine(*exe);
  for (int64_t b : {1, 7, 64}) {
    std::vector<float> x = Values(b * 784, 50 + static_cast<uint32_t>(b));
    absl::StatusOr<vm::Value> got = machine.Invoke("main", {vm::Value(VmTensor({b, 784}, x))});
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<reference::RefValue> args{RefTensor({b, 784}, x)};
    for (size_t i = 0; i < shapes.size(); ++i) args.push_back(RefTensor(shapes[i], weights[i]));
    absl::StatusOr<reference::RefValue> want = reference::Evaluate(*normalized, "main", args);
    ASSERT_TRUE(want.ok()) << want.status();
    std::vector<double> w = want->tensor().ToDoubles();
    const vm::Tensor& g = got->as_tensor();
    ASSERT_EQ(g.numel(), static_cast<int64_t>(w.size()));
    for (int64_t i = 0; i < g.numel(); ++i) {
      ASSERT_NEAR(g.data_as<float>()[i], w[i], 1e-4 * (1 + std::fabs(w[i]))) << "batch " << b << " element " << i;
    }
  }
}

std::string AddModule() {
  absl::StatusOr<std::string> text = support::ReadFile(kiln::test::SourceDir() + "/tests/relax/modules/call_tir_add.kir");
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

TEST(BuildExecutable, RecordsTheHostsCpuAndLoadsOnIt) {
  CpuTarget host = CpuTarget::Host();
  absl::StatusOr<std::string> bytes = Compile(AddModule(), host);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<vm::Executable::Contents> contents = vm::Executable::Decode(*bytes);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_EQ(contents->cpu_name, host.mcpu);
  EXPECT_THAT(contents->cpu_features, ::testing::Contains("sse2"));
  for (const std::string& f : contents->cpu_features) EXPECT_TRUE(vm::HostHasCpuFeature(f)) << f;
  EXPECT_TRUE(vm::Executable::Load(*bytes, builtins::DefaultRegistry()).ok());
}

TEST(BuildExecutable, KernelsForAnAvx512CpuLoadOnlyWhereTheHostHasIt) {
  absl::StatusOr<CpuTarget> skylake = CpuTarget::Named("skylake-avx512");
  ASSERT_TRUE(skylake.ok());
  absl::StatusOr<std::string> bytes = Compile(AddModule(), *skylake);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<vm::Executable::Contents> contents = vm::Executable::Decode(*bytes);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_EQ(contents->cpu_name, "skylake-avx512");
  for (const char* f : {"avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl"}) {
    EXPECT_THAT(contents->cpu_features, ::testing::Contains(f));
  }
  EXPECT_THAT(contents->cpu_features, ::testing::Not(::testing::Contains("avx512fp16")));
  std::vector<std::string> missing;
  for (const std::string& f : contents->cpu_features) {
    if (!vm::HostHasCpuFeature(f)) missing.push_back(f);
  }
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
  if (missing.empty()) {
    EXPECT_TRUE(exe.ok()) << exe.status();
  } else {
    ASSERT_FALSE(exe.ok());
    EXPECT_THAT(std::string(exe.status().message()),
                HasSubstr("compiled for CPU 'skylake-avx512' and use " + absl::StrJoin(missing, ", ") + ", which this CPU"));
  }
}

TEST(BuildExecutable, ABaselineCpuNeedsNoVectorExtensions) {
  absl::StatusOr<CpuTarget> baseline = CpuTarget::Named("x86-64");
  ASSERT_TRUE(baseline.ok());
  absl::StatusOr<std::string> bytes = Compile(AddModule(), *baseline);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<vm::Executable::Contents> contents = vm::Executable::Decode(*bytes);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_THAT(contents->cpu_features, ::testing::Contains("sse2"));
  EXPECT_THAT(contents->cpu_features, ::testing::Not(::testing::Contains("avx")));
  EXPECT_TRUE(vm::Executable::Load(*bytes, builtins::DefaultRegistry()).ok());
}

TEST(BuildExecutable, ExternalConstantsAreResolvedByNameAtLoadAndMetadataIsKept) {
  // An external constant carries no bytes: the executable declares it (name, dtype, shape)
  // and the loader takes it from a WeightProvider, checking dtype and shape; it is never
  // folded at compile time even where its operands would allow it.
  const std::string text =
      "module {\n  func @main(x: Tensor((n, 3), float32)) -> Tensor((n, 3), float32) {\n"
      "    w = R.const(float32, [3], external=\"layer.scale\")\n"
      "    dataflow {\n      two = R.add(w, w)\n      y = R.multiply(x, two)\n    }\n    return y\n  }\n}\n";
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, "test.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  relax::PipelineOptions options;
  options.check_well_formed = true;
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, options, &parsed->locations);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<std::string> bytes = BuildExecutable(*lowered, CpuTarget::Host(), {{"kiln.model.gguf", "/m.gguf"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<vm::Executable::Contents> contents = vm::Executable::Decode(*bytes);
  ASSERT_TRUE(contents.ok()) << contents.status();
  ASSERT_EQ(contents->external_weights.size(), 1u);
  EXPECT_EQ(contents->metadata.at("kiln.model.gguf"), "/m.gguf");

  // Without a provider, or with a tensor of the wrong shape, loading fails naming the weight.
  absl::Status missing = vm::Executable::Load(*bytes, builtins::DefaultRegistry()).status();
  EXPECT_THAT(std::string(missing.message()), HasSubstr("layer.scale"));
  vm::TensorMapWeightProvider wrong;
  wrong.Add("layer.scale", VmTensor({4}, {1, 2, 3, 4}));
  vm::LoadOptions wrong_options;
  wrong_options.weights = &wrong;
  absl::Status mismatch = vm::Executable::Load(*bytes, builtins::DefaultRegistry(), wrong_options).status();
  EXPECT_THAT(std::string(mismatch.message()), HasSubstr("layer.scale"));

  vm::TensorMapWeightProvider weights;
  weights.Add("layer.scale", VmTensor({3}, {0.5f, -1.0f, 4.0f}));
  vm::LoadOptions load;
  load.weights = &weights;
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry(), load);
  ASSERT_TRUE(exe.ok()) << exe.status();
  vm::VirtualMachine machine(*exe);
  absl::StatusOr<vm::Value> got = machine.Invoke("main", {vm::Value(VmTensor({2, 3}, {1, 2, 3, 4, 5, 6}))});
  ASSERT_TRUE(got.ok()) << got.status();
  const float want[] = {1, -4, 24, 4, -10, 48};  // x * (2 * scale)
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got->as_tensor().data_as<float>()[i], want[i]) << i;
}

// With kiln_runtime, a "kiln." builtin that registry lacks is refused before the image is
// encoded (kiln compile: a misspelt one used to compile and fail only in kiln run); other
// names are an application's and pass, and without a registry nothing is checked.
TEST(BuildExecutable, KilnBuiltinsAreCheckedAgainstTheRuntimeWhenAsked) {
  auto build = [](const std::string& builtin, const vm::BuiltinRegistry* runtime) {
    std::string text = absl::StrCat(
        "module {\n  impure func @main(x: Tensor((n,), float32)) -> Tensor((n,), float32) {\n"
        "    y: Tensor((n,), float32) = R.call_builtin(R.extern(\"", builtin, "\"), x, out_sinfo=Tensor((n,), float32))\n"
        "    return y\n  }\n}\n");
    absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, "b.kir");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, relax::PipelineOptions());
    EXPECT_TRUE(lowered.ok()) << lowered.status();
    return BuildExecutable(*lowered, CpuTarget::Host(), {}, runtime).status();
  };
  const vm::BuiltinRegistry& runtime = builtins::DefaultRegistry();
  EXPECT_THAT(std::string(build("kiln.tuple_gett", &runtime).message()),
              HasSubstr("builtin 'kiln.tuple_gett', which this runtime does not provide (did you mean 'kiln.tuple_get'?)"));
  EXPECT_TRUE(build("kiln.tuple_gett", nullptr).ok());
  EXPECT_TRUE(build("app.double", &runtime).ok());
  EXPECT_TRUE(build("kiln.copy", &runtime).ok());
}

}  // namespace
}  // namespace kiln::codegen
