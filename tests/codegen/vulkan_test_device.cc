#include "tests/codegen/vulkan_test_device.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "vm/device_code.h"

namespace kiln::codegen::testing {

namespace {

// Host allocations by start address, to find the allocation a kernel's handle points into.
class Allocations {
 public:
  void Add(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    sizes_[static_cast<char*>(p)] = bytes;
  }
  void Remove(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    sizes_.erase(static_cast<char*>(p));
  }
  // The bytes from `p` to the end of its allocation; 0 when `p` is in none.
  size_t BytesFrom(const void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    const char* c = static_cast<const char*>(p);
    auto it = sizes_.upper_bound(const_cast<char*>(c));
    if (it == sizes_.begin()) return 0;
    --it;
    if (c >= it->first + it->second) return 0;
    return static_cast<size_t>(it->first + it->second - c);
  }

 private:
  std::mutex mu_;
  std::map<char*, size_t> sizes_;
};

class TestModule : public vm::DeviceModule {
 public:
  TestModule(std::shared_ptr<SpirvTestRunner> runner, vm::DeviceCode code, Allocations* allocations)
      : runner_(std::move(runner)), code_(std::move(code)), allocations_(allocations) {}

  absl::Status Launch(int32_t kernel, const KilnLaunchDims& dims, const KilnArg* args, int32_t num_args,
                      void* stream) override {
    if (kernel < 0 || kernel >= static_cast<int32_t>(code_.kernels.size())) {
      return absl::InvalidArgumentError(absl::StrCat("no device kernel ", kernel));
    }
    const vm::DeviceKernelInfo& info = code_.kernels[kernel];
    if (static_cast<size_t>(num_args) != info.param_types.size()) {
      return absl::InvalidArgumentError(absl::StrCat(info.name, ": ", num_args, " arguments for ",
                                                     info.param_types.size(), " parameters"));
    }
    std::vector<std::string> before, buffers;
    std::vector<char*> where;
    std::vector<uint64_t> push;
    for (int32_t i = 0; i < num_args; ++i) {
      if (info.param_types[i] == "handle") {
        char* p = static_cast<char*>(args[i].value.handle);
        size_t bytes = allocations_->BytesFrom(p);
        if (bytes == 0) return absl::InvalidArgumentError(absl::StrCat(info.name, ": argument ", i, " is not device memory"));
        buffers.emplace_back(p, bytes);
        where.push_back(p);
      } else {
        uint64_t slot;
        std::memcpy(&slot, &args[i].value, sizeof slot);  // i64 or f64, as the contract packs them
        push.push_back(slot);
      }
    }
    before = buffers;
    std::vector<std::string*> pointers;
    for (std::string& b : buffers) pointers.push_back(&b);
    absl::Status run = runner_->Run(code_.binaries.at(0).bytes, info.name, pointers, push,
                                    {dims.grid[0], dims.grid[1], dims.grid[2]});
    if (!run.ok()) return absl::Status(run.code(), absl::StrCat(info.name, ": ", run.message()));
    // Only what the kernel changed goes back (two handles may view one allocation).
    for (size_t b = 0; b < buffers.size(); ++b) {
      for (size_t k = 0; k < buffers[b].size(); ++k) {
        if (buffers[b][k] != before[b][k]) where[b][k] = buffers[b][k];
      }
    }
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<SpirvTestRunner> runner_;
  vm::DeviceCode code_;
  Allocations* allocations_;
};

class VulkanTestDevice : public vm::Device {
 public:
  explicit VulkanTestDevice(std::shared_ptr<SpirvTestRunner> runner) : runner_(std::move(runner)) {}
  DLDevice dl_device() const override { return {kDLVulkan, 0}; }
  std::string name() const override { return "vulkan:0"; }
  absl::StatusOr<void*> Allocate(size_t bytes, size_t alignment) override {
    alignment = std::max<size_t>(alignment, 64);
    void* p = std::aligned_alloc(alignment, std::max<size_t>(alignment, (bytes + alignment - 1) / alignment * alignment));
    if (p == nullptr) return absl::ResourceExhaustedError("test device: out of memory");
    allocations_.Add(p, std::max<size_t>(bytes, 1));
    return p;
  }
  void Free(void* ptr, size_t bytes) override {
    allocations_.Remove(ptr);
    std::free(ptr);
  }
  absl::Status CopyToHost(void* host_dst, const void* src, size_t bytes) override {
    std::memcpy(host_dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyFromHost(void* dst, const void* host_src, size_t bytes) override {
    std::memcpy(dst, host_src, bytes);
    return absl::OkStatus();
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }
  absl::StatusOr<std::shared_ptr<vm::DeviceModule>> LoadModule(const vm::DeviceCode& code) override {
    if (code.kind != "vulkan" || code.binaries.size() != 1 || code.binaries[0].format != "spirv") {
      return absl::InvalidArgumentError("test device: not a vulkan module with one spirv binary");
    }
    return std::make_shared<TestModule>(runner_, code, &allocations_);
  }

 private:
  std::shared_ptr<SpirvTestRunner> runner_;
  Allocations allocations_;
};

}  // namespace

std::unique_ptr<vm::Device> MakeVulkanTestDevice(std::shared_ptr<SpirvTestRunner> runner) {
  return std::make_unique<VulkanTestDevice>(std::move(runner));
}

}  // namespace kiln::codegen::testing
