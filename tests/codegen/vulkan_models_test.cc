// The example models (examples/models: the MLP and the transformer block) compiled once for
// the vulkan target and run through the VM on the runtime's Vulkan device (lavapipe in CI)
// for n in {1, 7, 64, 300}, against the independent reference evaluator. Fused and unfused
// (one kernel per operator) builds are both run; their softmax and layer norms are several
// kernels sharing device workspace (tir/transform/split_host_device.h), as are the fused
// kernels' intermediates. The models are the examples' full size (784 -> 256 -> 10; width
// 64, MLP 256): on lavapipe all six runs take a few seconds.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "builtins/default_builtins.h"
#include "relax/block_builder.h"
#include "support/file_io.h"
#include "tests/codegen/gpu_compile.h"
#include "tests/reference/reference_evaluator.h"
#include "tests/source_dir.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"
#include "vm/vulkan_device.h"

namespace kiln::op_cases {
namespace {

struct Model {
  std::string file;  // under examples/models
  int64_t width;                               // x is (n, width)
  std::vector<std::vector<int64_t>> weights;   // the parameters after x
  double tol;
};

const std::vector<Model>& Models() {
  static const auto* models = new std::vector<Model>{
      {"mlp.kir", 784, {{784, 256}, {256}, {256, 10}, {10}}, 1e-4},
      {"transformer_block.kir", 64,
       {{64, 64}, {64, 64}, {64, 64}, {64, 64}, {64}, {64}, {64, 256}, {256}, {256, 64}, {64}, {64}, {64}}, 1e-3},
  };
  return *models;
}

// Uniform in [-1, 1], the same values for the VM and the reference.
reference::HostTensor RandomTensor(const std::vector<int64_t>& shape, uint32_t seed) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<double> values(count);
  uint32_t s = seed * 2654435761u + 7;
  for (double& v : values) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 1000.0f;
  }
  return reference::HostTensor::FromDoubles(tir::DataType::Float32(), shape, values);
}

absl::StatusOr<vm::Tensor> OnDevice(const reference::HostTensor& t, vm::Device* device) {
  absl::StatusOr<vm::Tensor> host = vm::Tensor::Empty(t.shape(), DLDataType{kDLFloat, 32, 1});
  if (!host.ok()) return host.status();
  std::vector<double> values = t.ToDoubles();
  for (size_t i = 0; i < values.size(); ++i) host->data_as<float>()[i] = static_cast<float>(values[i]);
  return host->CopyTo(device);
}

class VulkanModelsTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(VulkanModelsTest, MatchesTheReferenceForEveryBatchSize) {
  if (absl::Status available = vm::VulkanAvailable(); !available.ok()) {
    GTEST_SKIP() << "no Vulkan device here: " << available.message();
  }
  const auto& [file, fuse] = GetParam();
  const Model* model = nullptr;
  for (const Model& m : Models()) {
    if (m.file == file) model = &m;
  }
  ASSERT_NE(model, nullptr);
  absl::StatusOr<std::string> text = support::ReadFile(kiln::test::SourceDir() + "/examples/models/" + file);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<std::string> bytes = CompileForGpu(*text, tir::Target::Vulkan(), fuse);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok()) << exe.status();
  // Every kernel is a SPIR-V entry point, the softmax and norms included.
  ASSERT_EQ((*exe)->contents().device_code.size(), 1u);
  EXPECT_EQ((*exe)->contents().device_code[0].kind, "vulkan");
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(*text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed->module);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  absl::StatusOr<vm::Device*> gpu = vm::GetDevice("vulkan:0");
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  absl::StatusOr<std::unique_ptr<vm::VirtualMachine>> machine = vm::VirtualMachine::Create(*exe, *gpu);
  ASSERT_TRUE(machine.ok()) << machine.status();
  // One executable for every batch size: the weights stay on the device between calls.
  std::vector<vm::Value> weights;
  std::vector<reference::RefValue> ref_weights;
  for (size_t i = 0; i < model->weights.size(); ++i) {
    reference::HostTensor w = RandomTensor(model->weights[i], 200 + static_cast<uint32_t>(i));
    absl::StatusOr<vm::Tensor> on_gpu = OnDevice(w, *gpu);
    ASSERT_TRUE(on_gpu.ok()) << on_gpu.status();
    weights.emplace_back(*on_gpu);
    ref_weights.emplace_back(std::move(w));
  }
  for (int64_t n : {1, 7, 64, 300}) {
    SCOPED_TRACE(absl::StrCat("n=", n));
    reference::HostTensor x = RandomTensor({n, model->width}, 40 + static_cast<uint32_t>(n));
    absl::StatusOr<vm::Tensor> x_gpu = OnDevice(x, *gpu);
    ASSERT_TRUE(x_gpu.ok()) << x_gpu.status();
    std::vector<vm::Value> args{vm::Value(*x_gpu)};
    args.insert(args.end(), weights.begin(), weights.end());
    std::vector<reference::RefValue> ref_args{reference::RefValue(x)};
    ref_args.insert(ref_args.end(), ref_weights.begin(), ref_weights.end());
    absl::StatusOr<reference::RefValue> want = reference::Evaluate(*normalized, "main", ref_args);
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<vm::Value> got = (*machine)->Invoke("main", args);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(got->is_tensor());
    absl::StatusOr<vm::Tensor> host = got->as_tensor().CopyTo(vm::CpuDevice());
    ASSERT_TRUE(host.ok()) << host.status();
    ASSERT_EQ(host->shape(), want->tensor().shape());
    std::vector<double> expected = want->tensor().ToDoubles();
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(host->data_as<float>()[i], expected[i], model->tol * (1 + std::fabs(expected[i]))) << "element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, VulkanModelsTest,
                         ::testing::Combine(::testing::Values("mlp.kir", "transformer_block.kir"), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, bool>>& info) {
                           std::string name = std::get<0>(info.param);
                           name = name.substr(0, name.find('.'));
                           return name + (std::get<1>(info.param) ? "_fused" : "_unfused");
                         });

}  // namespace
}  // namespace kiln::op_cases
