// The Vulkan device's kernels: an executable's SPIR-V module checked and loaded, a pipeline
// per kernel built on first launch and kept, and launches recorded per the kernel contract
// (docs/vm.md, "Vulkan"): handle parameters are storage buffers at set 0, binding = their
// index among the handles; every other parameter is an 8-byte push-constant slot.
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "vm/spirv_module_info.h"
#include "vm/vulkan_device_impl.h"

namespace kiln::vm::vulkan {
namespace {

constexpr uint32_t kPushConstantSlotBytes = 8;

struct Pipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t num_buffers = 0;
  uint32_t push_constant_bytes = 0;
};

class VulkanModule final : public DeviceModule {
 public:
  VulkanModule(VulkanDevice& device, VkShaderModule shader, std::vector<DeviceKernelInfo> kernels)
      : device_(device), shader_(shader), kernels_(std::move(kernels)), pipelines_(kernels_.size()) {}

  ~VulkanModule() override {
    const Api& api = device_.api();
    std::lock_guard<std::mutex> lock(device_.mutex());
    // Recorded launches may use the pipelines.
    (void)device_.Flush("finishing the kernels before unloading them");
    for (Pipeline& p : pipelines_) Destroy(p);
    api.vkDestroyShaderModule(device_.device(), shader_, nullptr);
  }

  absl::Status Launch(int32_t kernel, const KilnLaunchDims& dims, const KilnArg* args, int32_t num_args,
                      void*) override {
    if (kernel < 0 || static_cast<size_t>(kernel) >= kernels_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device kernel ", kernel, " does not exist (the module has ", kernels_.size(), ")"));
    }
    const DeviceKernelInfo& info = kernels_[kernel];
    if (num_args != static_cast<int32_t>(info.param_types.size())) {
      return absl::InvalidArgumentError(absl::StrCat("device kernel ", info.name, ": ", num_args, " arguments for ",
                                                     info.param_types.size(), " parameters"));
    }
    const VkPhysicalDeviceLimits& limits = device_.limits();
    for (int i = 0; i < 3; ++i) {
      // An empty grid (a tensor with a zero dimension) has nothing to run.
      if (dims.grid[i] == 0) return absl::OkStatus();
      if (dims.grid[i] > limits.maxComputeWorkGroupCount[i]) {
        return absl::InvalidArgumentError(absl::StrCat("device kernel ", info.name, ": ", dims.grid[i],
                                                       " workgroups along ", std::string(1, "xyz"[i]), " exceed ", device_.name(),
                                                       "'s limit of ", limits.maxComputeWorkGroupCount[i]));
      }
    }
    std::lock_guard<std::mutex> lock(device_.mutex());
    absl::StatusOr<const Pipeline*> pipeline = GetPipeline(kernel);
    if (!pipeline.ok()) return pipeline.status();

    // Buffers: each handle argument resolved to its allocation, bound from its offset.
    std::vector<VkDescriptorBufferInfo> buffers;
    std::vector<uint64_t> slots;
    for (size_t i = 0; i < info.param_types.size(); ++i) {
      const KilnArg& a = args[i];
      const std::string& t = info.param_types[i];
      if (t != "handle") {
        uint64_t slot = 0;
        if (t == "float64" || t == "float32" || t == "float16") {
          double v = a.type_code == kKilnArgFloat ? a.value.f64 : static_cast<double>(a.value.i64);
          std::memcpy(&slot, &v, 8);
        } else if (t == "bool") {
          slot = a.value.i64 != 0;
        } else {
          int64_t v = a.type_code == kKilnArgFloat ? static_cast<int64_t>(a.value.f64) : a.value.i64;
          std::memcpy(&slot, &v, 8);
        }
        slots.push_back(slot);
        continue;
      }
      if (a.type_code != kKilnArgHandle) {
        return absl::InvalidArgumentError(
            absl::StrCat("device kernel ", info.name, ": argument ", i, " should be a buffer (handle)"));
      }
      absl::StatusOr<BufferSpan> span = device_.Resolve(a.value.handle, 0);
      if (!span.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("device kernel ", info.name, ": argument ", i, ": ", span.status().message()));
      }
      uint64_t alignment = limits.minStorageBufferOffsetAlignment;
      if (span->offset % alignment != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "device kernel ", info.name, ": argument ", i, " starts ", span->offset,
            " bytes into its buffer, not a multiple of ", device_.name(), "'s storage buffer offset alignment (",
            alignment, ")"));
      }
      if (span->offset >= span->allocation->size) {
        return absl::InvalidArgumentError(absl::StrCat("device kernel ", info.name, ": argument ", i,
                                                       " starts at the end of its buffer (an empty tensor)"));
      }
      VkDescriptorBufferInfo b{};
      b.buffer = span->allocation->buffer;
      b.offset = span->offset;
      b.range = std::min<uint64_t>(span->allocation->size - span->offset, limits.maxStorageBufferRange);
      buffers.push_back(b);
    }

    const Api& api = device_.api();
    VkDescriptorSet set = VK_NULL_HANDLE;
    if (!buffers.empty()) {
      absl::StatusOr<VkDescriptorSet> allocated = device_.AllocateDescriptorSet((*pipeline)->set_layout);
      if (!allocated.ok()) return Named(info, allocated.status());
      set = *allocated;
      std::vector<VkWriteDescriptorSet> writes(buffers.size());
      for (size_t b = 0; b < buffers.size(); ++b) {
        writes[b] = Info<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
        writes[b].dstSet = set;
        writes[b].dstBinding = static_cast<uint32_t>(b);
        writes[b].descriptorCount = 1;
        writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[b].pBufferInfo = &buffers[b];
      }
      api.vkUpdateDescriptorSets(device_.device(), static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
    }
    absl::StatusOr<VkCommandBuffer> commands = device_.Record();
    if (!commands.ok()) return Named(info, commands.status());
    api.vkCmdBindPipeline(*commands, VK_PIPELINE_BIND_POINT_COMPUTE, (*pipeline)->pipeline);
    if (set != VK_NULL_HANDLE) {
      api.vkCmdBindDescriptorSets(*commands, VK_PIPELINE_BIND_POINT_COMPUTE, (*pipeline)->layout, 0, 1, &set, 0,
                                  nullptr);
    }
    if (!slots.empty()) {
      api.vkCmdPushConstants(*commands, (*pipeline)->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                             static_cast<uint32_t>(slots.size() * kPushConstantSlotBytes), slots.data());
    }
    api.vkCmdDispatch(*commands, dims.grid[0], dims.grid[1], dims.grid[2]);
    return absl::OkStatus();
  }

 private:
  static absl::Status Named(const DeviceKernelInfo& info, const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("device kernel ", info.name, ": ", s.message()));
  }

  void Destroy(Pipeline& p) {
    const Api& api = device_.api();
    if (p.pipeline) api.vkDestroyPipeline(device_.device(), p.pipeline, nullptr);
    if (p.layout) api.vkDestroyPipelineLayout(device_.device(), p.layout, nullptr);
    if (p.set_layout) api.vkDestroyDescriptorSetLayout(device_.device(), p.set_layout, nullptr);
    p = Pipeline{};
  }

  // Kernel `kernel`'s pipeline, built on first use (the driver compiles the SPIR-V then).
  absl::StatusOr<const Pipeline*> GetPipeline(int32_t kernel) {
    Pipeline& p = pipelines_[kernel];
    if (p.pipeline != VK_NULL_HANDLE) return &p;
    const DeviceKernelInfo& info = kernels_[kernel];
    const Api& api = device_.api();
    uint32_t scalars = 0;
    for (const std::string& t : info.param_types) (t == "handle" ? p.num_buffers : scalars) += 1;
    p.push_constant_bytes = scalars * kPushConstantSlotBytes;
    if (p.push_constant_bytes > device_.limits().maxPushConstantsSize) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device kernel ", info.name, " takes ", scalars, " scalar parameters (", p.push_constant_bytes,
          " bytes of push constants); ", device_.name(), " allows ", device_.limits().maxPushConstantsSize));
    }
    if (p.num_buffers > device_.limits().maxPerStageDescriptorStorageBuffers) {
      return absl::FailedPreconditionError(absl::StrCat("device kernel ", info.name, " binds ", p.num_buffers,
                                                        " buffers; ", device_.name(), " allows ",
                                                        device_.limits().maxPerStageDescriptorStorageBuffers));
    }
    std::vector<VkDescriptorSetLayoutBinding> bindings(p.num_buffers);
    for (uint32_t b = 0; b < p.num_buffers; ++b) {
      bindings[b] = VkDescriptorSetLayoutBinding{b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
                                                 nullptr};
    }
    VkDescriptorSetLayoutCreateInfo set_info = Info<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
    set_info.bindingCount = p.num_buffers;
    set_info.pBindings = bindings.data();
    VkResult rc = api.vkCreateDescriptorSetLayout(device_.device(), &set_info, nullptr, &p.set_layout);
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, p.push_constant_bytes};
    if (rc == VK_SUCCESS) {
      VkPipelineLayoutCreateInfo layout_info = Info<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
      layout_info.setLayoutCount = 1;
      layout_info.pSetLayouts = &p.set_layout;
      layout_info.pushConstantRangeCount = scalars > 0 ? 1 : 0;
      layout_info.pPushConstantRanges = &range;
      rc = api.vkCreatePipelineLayout(device_.device(), &layout_info, nullptr, &p.layout);
    }
    if (rc == VK_SUCCESS) {
      VkComputePipelineCreateInfo pipeline_info = Info<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
      pipeline_info.stage = Info<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
      pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
      pipeline_info.stage.module = shader_;
      pipeline_info.stage.pName = info.name.c_str();
      pipeline_info.layout = p.layout;
      rc = api.vkCreateComputePipelines(device_.device(), VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &p.pipeline);
    }
    if (rc != VK_SUCCESS) {
      Destroy(p);
      return absl::InternalError(absl::StrCat("device kernel ", info.name, ": building its pipeline on ",
                                              device_.description(), ": ", ResultName(rc)));
    }
    return &p;
  }

  VulkanDevice& device_;
  VkShaderModule shader_;
  std::vector<DeviceKernelInfo> kernels_;
  std::vector<Pipeline> pipelines_;  // by kernel, built on first launch
};

}  // namespace

absl::StatusOr<std::shared_ptr<DeviceModule>> VulkanDevice::LoadModule(const DeviceCode& code) {
  if (code.kind != "vulkan") return Device::LoadModule(code);
  const DeviceBinary* binary = nullptr;
  for (const DeviceBinary& b : code.binaries) {
    if (b.format == "spirv") binary = &b;
  }
  if (binary == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("the executable's vulkan device code has no SPIR-V module"));
  }
  absl::StatusOr<SpirvModuleInfo> module_info = ReadSpirvModuleInfo(binary->bytes);
  if (!module_info.ok()) return module_info.status();
  for (uint32_t capability : module_info->capabilities) {
    if (capabilities().count(capability) == 0) {
      return absl::FailedPreconditionError(absl::StrCat(description(), " lacks the SPIR-V capability ",
                                                        SpirvCapabilityName(capability),
                                                        " that the executable's kernels use"));
    }
  }
  for (const DeviceKernelInfo& k : code.kernels) {
    bool found = false;
    for (const std::string& e : module_info->compute_entry_points) found = found || e == k.name;
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("device kernel ", k.name, " has no GLCompute entry point in the SPIR-V module"));
    }
  }
  VkShaderModuleCreateInfo info = Info<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  // The words are copied: std::string storage need not be 4-byte aligned.
  std::vector<uint32_t> words(binary->bytes.size() / 4);
  std::memcpy(words.data(), binary->bytes.data(), words.size() * 4);
  info.codeSize = words.size() * 4;
  info.pCode = words.data();
  VkShaderModule shader = VK_NULL_HANDLE;
  VkResult rc = api().vkCreateShaderModule(device(), &info, nullptr, &shader);
  if (rc != VK_SUCCESS) {
    return absl::InternalError(absl::StrCat(description(), ": loading the SPIR-V module: ", ResultName(rc)));
  }
  return std::shared_ptr<DeviceModule>(std::make_shared<VulkanModule>(*this, shader, code.kernels));
}

}  // namespace kiln::vm::vulkan
