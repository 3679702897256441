// VirtualMachine: runs an Executable's bytecode.
//
// A VM holds mutable state (registers, scratch argument arrays) and is used by one thread
// at a time; any number of VMs may share one Executable across threads. After an error the
// VM is ready for the next call: every call starts from fresh registers.
//
// Errors name the function, the instruction's debug name and, for argument checks, the
// parameter and the (symbolic) dimension.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vm/device.h"
#include "vm/executable.h"
#include "vm/kernel_abi.h"
#include "vm/value.h"

namespace kiln::vm {

class VirtualMachine {
 public:
  explicit VirtualMachine(std::shared_ptr<const Executable> executable, Device* device = CpuDevice());
  VirtualMachine(const VirtualMachine&) = delete;
  VirtualMachine& operator=(const VirtualMachine&) = delete;

  // Calls a function by name. Arguments are checked against its parameter signatures.
  absl::StatusOr<Value> Invoke(const std::string& function, const std::vector<Value>& args);
  // Calls by index (see Executable::FindFunction), the form to use in a hot loop.
  absl::StatusOr<Value> Invoke(int32_t function_index, const Value* args, size_t num_args);

  const Executable& executable() const { return *executable_; }
  Device* device() const { return device_; }

  // Optional per-callee timing for `kiln run --profile`: total nanoseconds and call count
  // per kernel and builtin, indexed like the executable's tables.
  struct Profile {
    std::vector<int64_t> kernel_ns, kernel_calls, builtin_ns, builtin_calls;
  };
  void EnableProfiling(bool enable);
  const Profile& profile() const { return profile_; }

  // What planned memory did since the last reset (always counted; `kiln run --stats`):
  // AllocStorage instructions and their bytes, AllocTensor instructions and the bytes of
  // the tensors they placed. tensor_bytes - storage_bytes is what sharing saved.
  struct StorageStats {
    int64_t storages = 0, storage_bytes = 0, tensors = 0, tensor_bytes = 0;
  };
  const StorageStats& storage_stats() const { return storage_stats_; }
  void ResetStorageStats() { storage_stats_ = StorageStats(); }

 private:
  absl::StatusOr<Value> Run(int32_t function_index, size_t base, int depth);
  absl::Status CheckParams(const Function& fn, size_t base);
  // Matches `shape` against a dim pattern. Errors start with " dimension ..." so the caller
  // prefixes what was matched (built only on failure: the success path allocates nothing).
  absl::Status MatchDims(const Function& fn, size_t base, const std::vector<int64_t>& shape,
                         const Operand* pattern, int count);
  absl::Status CallKernel(const Function& fn, size_t base, const Instruction& in);
  absl::Status CallBuiltin(const Function& fn, size_t base, const Instruction& in);
  absl::StatusOr<int64_t> IntOperand(const Function& fn, size_t base, const Operand& o);
  absl::Status InstructionError(const Function& fn, size_t pc, const absl::Status& status) const;

  std::shared_ptr<const Executable> executable_;
  Device* device_;
  std::vector<Value> registers_;
  std::vector<KilnArg> kernel_args_;
  std::vector<const Value*> builtin_args_;
  std::vector<Value> immediates_;
  KilnCallContext call_context_{};
  // The message a failing kernel reports through ctx->set_error. Tasks of a parallel loop
  // may fail at once on several threads: the first message wins, under the lock.
  struct KernelError {
    std::mutex mutex;
    std::string message;
  };
  KernelError kernel_error_;
  static void SetKernelError(KilnCallContext* ctx, const char* message);  // ctx->set_error
  bool profiling_ = false;
  Profile profile_;
  StorageStats storage_stats_;
};

}  // namespace kiln::vm
