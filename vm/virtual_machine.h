// VirtualMachine: runs an Executable's bytecode.
//
// A VM holds mutable state (a stack of register frames, scratch argument arrays) and is
// used by one thread at a time; any number of VMs may share one Executable across threads.
// After an error the VM is ready for the next call: every frame's registers are released
// when the frame returns, also on errors.
//
// Re-entrancy: a builtin may call back into the VM that called it (BuiltinContext::vm):
// Invoke and InvokeClosure then run in a new frame above the current ones. Frames never
// move (vm/register_stack.h), so the builtin's arguments stay valid. Every frame, however
// entered, counts toward one call-depth limit (kMaxCallDepth); exceeding it is a one-line
// error naming the function and the limit.
//
// Devices: the VM maps the executable's device table when it is created — entry 0 ("cpu")
// to the device it is given (the CPU unless told otherwise), every other entry to the
// registered device of that name (vm/device.h). If one is unavailable, Create returns the
// error and every Invoke of a VM built with the constructor returns it. Kernels run with
// their own device and its stream in the call context, and each tensor argument must be on
// that device; parameters are checked against the devices their signatures name.
//
// Threads: a VM runs one top-level call at a time. A call from a second thread while one
// runs returns a FailedPrecondition error (no data race, nothing waits); calls back from a
// builtin on the running thread nest as described above.
//
// Verified bytecode may still loop forever (backward jumps are legal) or recurse widely; an
// embedder running executables it did not compile can bound each call with SetStepLimit.
//
// Errors name the function, the instruction's debug name and, for argument checks, the
// parameter and the (symbolic) dimension.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "vm/device.h"
#include "vm/device_workspace_pool.h"
#include "vm/executable.h"
#include "vm/kernel_abi.h"
#include "vm/register_stack.h"
#include "vm/value.h"

namespace kiln::vm {

class VirtualMachine {
 public:
  // Nested frames allowed at once: bytecode calls, closure calls and calls back from builtins.
  static constexpr int kMaxCallDepth = 256;

  explicit VirtualMachine(std::shared_ptr<const Executable> executable, Device* device = CpuDevice());
  // As the constructor, but returns the error when a device of the executable is unavailable.
  static absl::StatusOr<std::unique_ptr<VirtualMachine>> Create(std::shared_ptr<const Executable> executable,
                                                                Device* device = CpuDevice());
  VirtualMachine(const VirtualMachine&) = delete;
  VirtualMachine& operator=(const VirtualMachine&) = delete;

  // Calls a function by name. Arguments are checked against its parameter signatures.
  absl::StatusOr<Value> Invoke(const std::string& function, const std::vector<Value>& args);
  // Calls by index (see Executable::FindFunction), the form to use in a hot loop.
  absl::StatusOr<Value> Invoke(int32_t function_index, const Value* args, size_t num_args);
  // Calls a closure (made by this executable's bytecode or MakeClosure) with its captured
  // values followed by `args`.
  absl::StatusOr<Value> InvokeClosure(const Value& closure, const Value* args, size_t num_args);
  // A closure of a function of the executable with `captured` bound to its first parameters.
  absl::StatusOr<Value> MakeClosure(const std::string& function, std::vector<Value> captured) const;

  // Bounds every top-level call (Invoke, InvokeClosure) to `steps` backward jumps and
  // function entries together — the only ways bytecode can run for long — so a looping
  // executable returns a ResourceExhausted error instead of hanging. 0 (the default): no limit.
  // Checked only on backward jumps and calls: straight-line code pays nothing.
  void SetStepLimit(int64_t steps) { step_limit_ = steps; }

  const Executable& executable() const { return *executable_; }
  // OK, or why a device of the executable could not be mapped.
  const absl::Status& status() const { return status_; }
  // The default device (device table entry 0).
  Device* device() const { return devices_[0]; }
  // The device table, indexed like Executable::Contents::devices (null where unavailable).
  const std::vector<Device*>& devices() const { return devices_; }

  // Optional per-callee timing for `kiln run --profile`: total nanoseconds and call count
  // per kernel and builtin, indexed like the executable's tables. A kernel on a device with
  // its own clock (CUDA: events on its stream, Device::CreateTimer) is timed by the device,
  // so the figure is GPU time, not launch overhead; elsewhere host time, with GPU work
  // waited for (Synchronize) before the clock stops.
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
  // Pushes a frame for function `index`, fills its first parameters with `prefix` (captured
  // values) and the rest with `args` (operands of the calling instruction, or values),
  // checks them, runs the function and pops the frame.
  struct Args {
    const Value* prefix = nullptr;
    size_t num_prefix = 0;
    const Value* values = nullptr;  // either values...
    const Operand* operands = nullptr;  // ...or operands read from caller_regs
    const Value* caller_regs = nullptr;
    size_t count = 0;
  };
  absl::StatusOr<Value> Enter(int32_t index, const Args& args);
  // Claims the VM for the calling thread for one top-level call (Invoke, InvokeClosure); a
  // call back from a builtin on that thread finds it claimed by itself and nests. Another
  // thread's call gets error() instead of racing on the registers.
  class OneThreadAtATime {
   public:
    explicit OneThreadAtATime(VirtualMachine* vm);
    ~OneThreadAtATime();
    OneThreadAtATime(const OneThreadAtATime&) = delete;
    OneThreadAtATime& operator=(const OneThreadAtATime&) = delete;
    bool ok() const { return claimed_ || nested_; }
    // `call` names what was called ("function 'main'").
    absl::Status error(const std::string& call) const;

   private:
    VirtualMachine* vm_;
    bool claimed_ = false;
    bool nested_ = false;
  };
  std::atomic<std::thread::id> running_thread_{};
  absl::StatusOr<Value> Run(int32_t function_index, Value* regs);
  absl::StatusOr<Value> CallClosure(const Value& closure, const Args& args);
  absl::Status CheckParams(const Function& fn, Value* regs);
  // Matches `shape` against a dim pattern. Errors start with " dimension ..." so the caller
  // prefixes what was matched (built only on failure: the success path allocates nothing).
  absl::Status MatchDims(const Function& fn, Value* regs, const std::vector<int64_t>& shape, const Operand* pattern,
                         int count);
  absl::Status CallKernel(const Function& fn, Value* regs, const Instruction& in);
  absl::Status CallBuiltin(const Function& fn, Value* regs, const Instruction& in);
  absl::Status IntOp(const Function& fn, Value* regs, const Instruction& in);
  absl::StatusOr<int64_t> IntOperand(const Function& fn, const Value* regs, const Operand& o);
  absl::Status InstructionError(const Function& fn, size_t pc, const absl::Status& status) const;
  const Value& OperandValue(const Value* regs, const Operand& o, Value* immediate) const;

  std::shared_ptr<const Executable> executable_;
  absl::Status status_;
  std::vector<Device*> devices_;
  std::vector<DLDevice> dl_devices_;
  // Per kernel: the device it runs on and that device's stream.
  struct KernelPlace {
    DLDevice dl;
    Device* device;
    void* stream;
    DeviceModule* module;  // the executable's device code loaded there, or null
  };
  // Per device table entry: its loaded device code (null where it has none).
  std::vector<std::shared_ptr<DeviceModule>> modules_;
  std::vector<KernelPlace> kernel_places_;
  // The executable's constants live in host memory; a kernel on another device gets a copy
  // made there on first use and kept for the VM's life (TVM loads constants to the device
  // likewise). Keyed by the constant's DLTensor, then the device.
  absl::StatusOr<DLTensor*> ConstantOnDevice(const DLTensor* constant, const KernelPlace& place);
  std::map<const DLTensor*, std::map<std::pair<int, int>, Tensor>> device_constants_;
  RegisterStack stack_;
  int depth_ = 0;
  int64_t step_limit_ = 0;
  int64_t steps_left_ = 0;  // of the current top-level call, when step_limit_ > 0
  absl::Status StepLimitError(const Function& fn) const;
  std::vector<KilnArg> kernel_args_;  // a kernel never re-enters the VM, so one array serves all
  KilnCallContext call_context_{};
  // What kernels reach through ctx->runtime: the message a failing kernel reports through
  // ctx->set_error (tasks of a parallel loop may fail at once on several threads: the first
  // message wins, under the lock), the running kernel's device (workspace_alloc), and the
  // workspace blocks on GPU devices, kept for reuse (freeing would wait for their kernels).
  struct KernelRuntime {
    std::mutex mutex;
    std::string message;
    Device* device = nullptr;
    DeviceModule* module = nullptr;  // the running kernel's device code (ctx->launch)
    DeviceWorkspacePool device_workspace;
  };
  KernelRuntime kernel_runtime_;
  static void SetKernelError(KilnCallContext* ctx, const char* message);  // ctx->set_error
  static void* WorkspaceAlloc(KilnCallContext* ctx, uint64_t bytes);     // ctx->workspace_alloc
  static void WorkspaceFree(KilnCallContext* ctx, void* ptr);            // ctx->workspace_free
  static int32_t LaunchDeviceKernel(KilnCallContext* ctx, int32_t kernel, const KilnLaunchDims* dims,
                                    const KilnArg* args, int32_t num_args);  // ctx->launch
  bool profiling_ = false;
  Profile profile_;
  // Per device table entry while profiling: the device's timer, or null (host time).
  std::vector<std::unique_ptr<DeviceTimer>> timers_;
  absl::Status ProfiledKernelCall(const KernelDecl& decl, const KernelPlace& place, KilnKernelFn fn, int32_t num_args,
                                  int32_t kernel, int32_t* status);
  StorageStats storage_stats_;
};

}  // namespace kiln::vm
