#include "vm/virtual_machine.h"

#include <chrono>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/int_math.h"
#include "support/nearest_name.h"
#include "support/status_macros.h"
#include "vm/storage.h"
#include "vm/thread_pool.h"

namespace kiln::vm {
namespace {

// Marks the call-depth error: it is complete in one line, so the frames it unwinds through
// do not prefix it with their location (256 prefixes made an 11 KB message). The first
// caller to see it adds where the limit was hit and sets the payload to "located".
constexpr char kDepthPayload[] = "kiln.vm/call_depth";

int32_t PoolParallelFor(KilnCallContext*, int64_t num_tasks, KilnParallelBody body, void* closure) {
  return ThreadPool::Global().ParallelFor(num_tasks, body, closure);
}

std::string DimName(const Function& fn, const Operand& o) {
  if (o.debug_name >= 0) return absl::StrCat(" (", fn.strings[o.debug_name], ")");
  return "";
}

bool SameDevice(DLDevice a, DLDevice b) { return a.device_type == b.device_type && a.device_id == b.device_id; }

}  // namespace

VirtualMachine::VirtualMachine(std::shared_ptr<const Executable> executable, Device* device)
    : executable_(std::move(executable)) {
  // A null executable (an unchecked failed load) or device: every call returns the error.
  if (executable_ == nullptr || device == nullptr) {
    status_ = absl::InvalidArgumentError(
        executable_ == nullptr ? "VirtualMachine: null executable (check the status Executable::LoadFile returned)"
                               : "VirtualMachine: null device (CpuDevice() is the default)");
    devices_.assign(1, device);
    dl_devices_.assign(1, DLDevice{kDLCPU, 0});
    return;
  }
  const std::vector<std::string>& names = executable_->contents().devices;
  devices_.assign(names.size(), nullptr);
  dl_devices_.assign(names.size(), DLDevice{kDLCPU, 0});
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StatusOr<Device*> d = i == 0 ? absl::StatusOr<Device*>(device) : GetDevice(names[i]);
    if (!d.ok()) {
      if (status_.ok()) {
        status_ = absl::Status(d.status().code(), absl::StrCat("the executable runs on device '", names[i],
                                                                "', which this VM cannot use: ", d.status().message()));
      }
      continue;
    }
    devices_[i] = *d;
    dl_devices_[i] = (*d)->dl_device();
  }
  // Each GPU device of the table loads the executable's device code of its kind.
  modules_.resize(names.size());
  bool any_module = false;
  for (size_t i = 0; i < names.size(); ++i) {
    Device* d = devices_[i];
    if (d == nullptr || d->dl_device().device_type == kDLCPU) continue;
    for (const DeviceCode& code : executable_->contents().device_code) {
      if (DeviceName(DLDevice{d->dl_device().device_type, 0}).rfind(code.kind + ":", 0) != 0) continue;
      absl::StatusOr<std::shared_ptr<DeviceModule>> module = d->LoadModule(code);
      if (!module.ok()) {
        if (status_.ok()) {
          status_ = absl::Status(module.status().code(), absl::StrCat("loading the ", code.kind, " kernels on ",
                                                                      d->name(), ": ", module.status().message()));
        }
        continue;
      }
      modules_[i] = *std::move(module);
      any_module = true;
    }
  }
  for (const KernelDecl& k : executable_->contents().kernels) {
    Device* d = devices_[k.device];
    kernel_places_.push_back({dl_devices_[k.device], d, d != nullptr ? d->stream() : nullptr, modules_[k.device].get()});
  }
  kernel_args_.resize(executable_->max_call_args());
  call_context_.runtime = &kernel_runtime_;
  call_context_.parallel_for = PoolParallelFor;
  call_context_.workspace_alloc = WorkspaceAlloc;
  call_context_.workspace_free = WorkspaceFree;
  call_context_.set_error = SetKernelError;
  call_context_.num_threads = ThreadPool::Global().num_threads();
  call_context_.device = dl_devices_[0];
  call_context_.stream = nullptr;
  // Without device code a GPU function's host part says it cannot launch (a null launch).
  call_context_.launch = any_module ? LaunchDeviceKernel : nullptr;
}

int32_t VirtualMachine::LaunchDeviceKernel(KilnCallContext* ctx, int32_t kernel, const KilnLaunchDims* dims,
                                           const KilnArg* args, int32_t num_args) {
  auto* runtime = static_cast<KernelRuntime*>(ctx->runtime);
  if (runtime->module == nullptr) {
    SetKernelError(ctx, absl::StrCat("the kernel launches device code but runs on ", DeviceName(ctx->device),
                                     ", which has none loaded (run it on the GPU it was compiled for, e.g. --device cuda)")
                            .c_str());
    return 1;
  }
  absl::Status status = runtime->module->Launch(kernel, *dims, args, num_args, ctx->stream);
  if (!status.ok()) {
    SetKernelError(ctx, std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}

VirtualMachine::OneThreadAtATime::OneThreadAtATime(VirtualMachine* vm) : vm_(vm) {
  const std::thread::id me = std::this_thread::get_id();
  if (vm->running_thread_.load(std::memory_order_acquire) == me) {
    nested_ = true;
    return;
  }
  std::thread::id idle;
  claimed_ = vm->running_thread_.compare_exchange_strong(idle, me, std::memory_order_acq_rel);
}

VirtualMachine::OneThreadAtATime::~OneThreadAtATime() {
  if (claimed_) vm_->running_thread_.store(std::thread::id(), std::memory_order_release);
}

absl::Status VirtualMachine::OneThreadAtATime::error(const std::string& call) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "calling ", call, ": VirtualMachine used by two threads at once (another thread's call is running on it); a VM "
      "runs one call at a time, so create one VM per thread (they may share the Executable)"));
}

absl::StatusOr<std::unique_ptr<VirtualMachine>> VirtualMachine::Create(std::shared_ptr<const Executable> executable,
                                                                       Device* device) {
  auto vm = std::make_unique<VirtualMachine>(std::move(executable), device);
  if (!vm->status().ok()) return vm->status();
  return vm;
}

void VirtualMachine::SetKernelError(KilnCallContext* ctx, const char* message) {
  auto* runtime = static_cast<KernelRuntime*>(ctx->runtime);
  std::lock_guard<std::mutex> lock(runtime->mutex);
  if (runtime->message.empty()) runtime->message = message ? message : "(no message)";
}

void* VirtualMachine::WorkspaceAlloc(KilnCallContext* ctx, uint64_t bytes) {
  auto* runtime = static_cast<KernelRuntime*>(ctx->runtime);
  Device* device = runtime->device;
  if (ctx->device.device_type == kDLCPU) {
    // Host memory: the size is kept in front of the block, so workspace_free needs only
    // the pointer and no lock.
    absl::StatusOr<void*> p = device->Allocate(bytes + 64, 64);
    if (!p.ok()) return nullptr;
    *static_cast<uint64_t*>(*p) = bytes + 64;
    return static_cast<char*>(*p) + 64;
  }
  return runtime->device_workspace.Allocate(device, bytes);
}

void VirtualMachine::WorkspaceFree(KilnCallContext* ctx, void* ptr) {
  if (ptr == nullptr) return;
  auto* runtime = static_cast<KernelRuntime*>(ctx->runtime);
  if (ctx->device.device_type == kDLCPU) {
    char* block = static_cast<char*>(ptr) - 64;
    runtime->device->Free(block, *reinterpret_cast<uint64_t*>(block));
    return;
  }
  runtime->device_workspace.Free(ptr);  // not ours: ignored rather than corrupting
}

void VirtualMachine::EnableProfiling(bool enable) {
  profiling_ = enable;
  timers_.clear();
  timers_.resize(devices_.size());
  for (size_t i = 0; enable && i < devices_.size(); ++i) {
    if (devices_[i] == nullptr) continue;
    absl::StatusOr<std::unique_ptr<DeviceTimer>> timer = devices_[i]->CreateTimer();
    // Without a timer (none on this device, or events failed) the kernel gets host time.
    if (timer.ok()) timers_[i] = *std::move(timer);
  }
  size_t kernels = executable_->contents().kernels.size();
  size_t builtins = executable_->contents().builtins.size();
  profile_ = Profile{std::vector<int64_t>(kernels), std::vector<int64_t>(kernels),
                     std::vector<int64_t>(builtins), std::vector<int64_t>(builtins)};
}

absl::StatusOr<Value> VirtualMachine::Invoke(const std::string& function, const std::vector<Value>& args) {
  if (!status_.ok()) return status_;
  int32_t index = executable_->FindFunction(function);
  if (index < 0) {
    std::vector<std::string> names;
    for (const Function& fn : executable_->functions()) names.push_back(fn.name);
    const std::string has = names.empty() ? "it has none" : absl::StrCat("it has: ", absl::StrJoin(names, ", "));
    return absl::NotFoundError(absl::StrCat("no function '", function, "' in the executable (", has, ")",
                                            support::DidYouMean(function, names)));
  }
  return Invoke(index, args.data(), args.size());
}

absl::StatusOr<Value> VirtualMachine::Invoke(int32_t function_index, const Value* args, size_t num_args) {
  if (!status_.ok()) return status_;
  if (function_index < 0 || function_index >= static_cast<int32_t>(executable_->functions().size())) {
    return absl::OutOfRangeError(absl::StrCat("function index ", function_index, " out of range: the executable has ",
                                              executable_->functions().size(), " functions",
                                              function_index == -1 ? " (FindFunction returns -1 for an unknown name)" : ""));
  }
  const Function& fn = executable_->functions()[function_index];
  if (args == nullptr && num_args > 0) {
    return absl::InvalidArgumentError(absl::StrCat("function '", fn.name, "' called with ", num_args,
                                                   " arguments but a null argument array"));
  }
  if (num_args != fn.params.size()) {
    // The parameters by name, so that a caller can tell which one is missing or extra.
    std::string names;
    for (const ParamSignature& param : fn.params) absl::StrAppend(&names, names.empty() ? "" : ", ", param.name);
    return absl::InvalidArgumentError(absl::StrCat("function '", fn.name, "' takes ", fn.params.size(),
                                                   fn.params.size() == 1 ? " argument" : " arguments", " (", names,
                                                   "), got ", num_args));
  }
  Args a;
  a.values = args;
  a.count = num_args;
  OneThreadAtATime guard(this);
  if (!guard.ok()) return guard.error(absl::StrCat("function '", fn.name, "'"));
  return Enter(function_index, a);
}

absl::StatusOr<Value> VirtualMachine::InvokeClosure(const Value& closure, const Value* args, size_t num_args) {
  if (args == nullptr && num_args > 0) {
    return absl::InvalidArgumentError(absl::StrCat("closure called with ", num_args, " arguments but a null argument array"));
  }
  Args a;
  a.values = args;
  a.count = num_args;
  OneThreadAtATime guard(this);
  if (!guard.ok()) return guard.error("a closure");
  return CallClosure(closure, a);
}

absl::StatusOr<Value> VirtualMachine::MakeClosure(const std::string& function, std::vector<Value> captured) const {
  if (!status_.ok()) return status_;
  int32_t index = executable_->FindFunction(function);
  if (index < 0) return absl::NotFoundError(absl::StrCat("no function '", function, "' in the executable"));
  size_t params = executable_->functions()[index].params.size();
  if (captured.size() > params) {
    return absl::InvalidArgumentError(absl::StrCat("function '", function, "' takes ", params, " arguments; cannot capture ",
                                                   captured.size()));
  }
  return Value::FromClosure(Closure{index, std::move(captured), executable_.get()});
}

absl::StatusOr<Value> VirtualMachine::CallClosure(const Value& closure, const Args& args) {
  if (!status_.ok()) return status_;
  if (closure.kind() != Value::Kind::kClosure) {
    return absl::InvalidArgumentError(absl::StrCat("expected a closure to call, got ", closure.Describe()));
  }
  const Closure& c = closure.as_closure();
  // The index is checked too: another executable may since have taken a freed one's address.
  if (c.executable != executable_.get() || c.function_index < 0 ||
      c.function_index >= static_cast<int32_t>(executable_->functions().size())) {
    return absl::InvalidArgumentError("the closure was made by another executable than this VM runs");
  }
  const Function& fn = executable_->functions()[c.function_index];
  if (c.captured.size() + args.count != fn.params.size()) {
    return absl::InvalidArgumentError(absl::StrCat("closure of function '", fn.name, "' called with ", args.count,
                                                   " arguments; it takes ", fn.params.size() - c.captured.size(),
                                                   c.captured.empty() ? "" : absl::StrCat(" besides its ", c.captured.size(), " captured")));
  }
  Args a = args;
  a.prefix = c.captured.data();
  a.num_prefix = c.captured.size();
  // Hold the closure while it runs: the register it came from may be overwritten meanwhile.
  Value hold = closure;
  return Enter(c.function_index, a);
}

absl::StatusOr<Value> VirtualMachine::Enter(int32_t index, const Args& args) {
  if (!status_.ok()) return status_;
  const Function& fn = executable_->functions()[index];
  if (depth_ >= kMaxCallDepth) {
    absl::Status error = absl::ResourceExhaustedError(absl::StrCat(
        "call depth limit of ", kMaxCallDepth, " nested calls exceeded calling function '", fn.name,
        "' (unbounded recursion?)"));
    error.SetPayload(kDepthPayload, absl::Cord("new"));
    return error;
  }
  if (step_limit_ > 0) {
    if (depth_ == 0) steps_left_ = step_limit_;
    if (--steps_left_ < 0) return StepLimitError(fn);
  }
  RegisterStack::Mark mark;
  Value* regs = stack_.Push(static_cast<size_t>(fn.num_registers), &mark);
  for (size_t i = 0; i < args.num_prefix; ++i) regs[i] = args.prefix[i];
  Value immediate;
  for (size_t i = 0; i < args.count; ++i) {
    regs[args.num_prefix + i] =
        args.values != nullptr ? args.values[i] : OperandValue(args.caller_regs, args.operands[i], &immediate);
  }
  ++depth_;
  absl::Status checked = CheckParams(fn, regs);
  absl::StatusOr<Value> result = checked.ok() ? Run(index, regs) : absl::StatusOr<Value>(checked);
  --depth_;
  stack_.Pop(regs, static_cast<size_t>(fn.num_registers), mark);
  return result;
}

const Value& VirtualMachine::OperandValue(const Value* regs, const Operand& o, Value* immediate) const {
  switch (o.kind) {
    case Operand::Kind::kImm:
      *immediate = Value(o.value);
      return *immediate;
    case Operand::Kind::kConst: return executable_->contents().constants[o.value];
    default: return regs[o.value];
  }
}

absl::Status VirtualMachine::MatchDims(const Function& fn, Value* regs, const std::vector<int64_t>& shape,
                                       const Operand* pattern, int count) {
  if (static_cast<int>(shape.size()) != count) {
    return absl::InvalidArgumentError(absl::StrCat(": expected ", count, count == 1 ? " dimension" : " dimensions", ", got ", shape.size(),
                                                   " (shape ", ShapeToString(shape), ")"));
  }
  for (int i = 0; i < count; ++i) {
    const Operand& o = pattern[i];
    int64_t actual = shape[i];
    switch (o.kind) {
      case Operand::Kind::kImm:
        if (actual != o.value) {
          return absl::InvalidArgumentError(absl::StrCat(" dimension ", i, DimName(fn, o), ": expected ", o.value,
                                                         ", got ", actual, " (shape ", ShapeToString(shape), ")"));
        }
        break;
      case Operand::Kind::kBind:
        regs[o.value] = Value(actual);
        break;
      case Operand::Kind::kReg: {
        const Value& bound = regs[o.value];
        if (!bound.is_int() || bound.as_int() != actual) {
          std::string expected = bound.is_int() ? absl::StrCat(bound.as_int()) : bound.Describe();
          return absl::InvalidArgumentError(absl::StrCat(" dimension ", i, DimName(fn, o), ": expected ", expected,
                                                         " (bound earlier), got ", actual, " (shape ", ShapeToString(shape), ")"));
        }
        break;
      }
      default:
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status VirtualMachine::CheckParams(const Function& fn, Value* regs) {
  for (size_t p = 0; p < fn.params.size(); ++p) {
    const ParamSignature& sig = fn.params[p];
    const Value& v = regs[p];
    auto what = [&] { return absl::StrCat("function '", fn.name, "' parameter '", sig.name, "'"); };
    auto prefixed = [&](const absl::Status& s) { return absl::Status(s.code(), absl::StrCat(what(), s.message())); };
    if (sig.kind != Value::Kind::kNone && v.kind() != sig.kind) {
      const bool vowel = sig.kind == Value::Kind::kInt || sig.kind == Value::Kind::kObject;
      return absl::InvalidArgumentError(
          absl::StrCat(what(), ": expected ", vowel ? "an " : "a ", Value::KindName(sig.kind), ", got ", v.Describe()));
    }
    if (v.kind() == Value::Kind::kTensor) {
      const Tensor& t = v.as_tensor();
      if (!t.defined()) return absl::InvalidArgumentError(absl::StrCat(what(), ": got an undefined tensor (Tensor())"));
      // Kernels and builtins read rows without gaps; a strided view (e.g. a transposed
      // DLPack tensor) would be read wrongly, so it is refused here, by name.
      if (!t.is_contiguous()) {
        return absl::InvalidArgumentError(absl::StrCat(what(), ": expected a compact row-major tensor, got ", t.Describe(),
                                                       " with strides ", ShapeToString(t.strides()),
                                                       " (make a contiguous copy first)"));
      }
      if (sig.check_dtype && t.dtype() != sig.dtype) {
        return absl::InvalidArgumentError(absl::StrCat(what(), ": expected dtype ", DTypeToString(sig.dtype), ", got ",
                                                       DTypeToString(t.dtype()), " (", t.Describe(), ")"));
      }
      if (!SameDevice(t.device(), dl_devices_[sig.device])) {
        return absl::InvalidArgumentError(absl::StrCat(what(), ": expected a tensor on ", DeviceName(dl_devices_[sig.device]),
                                                       ", got one on ", DeviceName(t.device()), " (", t.Describe(), ")"));
      }
      if (sig.ndim >= 0) {
        absl::Status s = MatchDims(fn, regs, t.shape(), sig.dims.data(), sig.ndim);
        if (!s.ok()) return prefixed(s);
      }
    } else if (v.kind() == Value::Kind::kShape && sig.ndim >= 0) {
      absl::Status s = MatchDims(fn, regs, v.as_shape(), sig.dims.data(), sig.ndim);
      if (!s.ok()) return prefixed(s);
    }
  }
  return absl::OkStatus();
}

absl::Status VirtualMachine::InstructionError(const Function& fn, size_t pc, const absl::Status& status) const {
  std::string where = absl::StrCat("in function '", fn.name, "' at instruction ", pc);
  if (!fn.instruction_names.empty() && fn.instruction_names[pc] >= 0) {
    absl::StrAppend(&where, " (", fn.strings[fn.instruction_names[pc]], ")");
  }
  if (auto depth = status.GetPayload(kDepthPayload)) {
    if (*depth != "new") return status;
    absl::Status located(status.code(), absl::StrCat(status.message(), " ", where));
    located.SetPayload(kDepthPayload, absl::Cord("located"));
    return located;
  }
  return absl::Status(status.code(), absl::StrCat(where, ": ", status.message()));
}

absl::StatusOr<int64_t> VirtualMachine::IntOperand(const Function&, const Value* regs, const Operand& o) {
  if (o.kind == Operand::Kind::kImm) return o.value;
  const Value& v = regs[o.value];
  if (!v.is_int()) return absl::InvalidArgumentError(absl::StrCat("expected an int in register ", o.value, ", found ", v.Describe()));
  return v.as_int();
}

absl::StatusOr<DLTensor*> VirtualMachine::ConstantOnDevice(const DLTensor* constant, const KernelPlace& place) {
  if (constant->device.device_type != kDLCPU || place.device == nullptr) {
    return absl::NotFoundError("not a host constant");
  }
  std::map<std::pair<int, int>, Tensor>& copies = device_constants_[constant];
  std::pair<int, int> key{place.dl.device_type, place.dl.device_id};
  if (auto copy = copies.find(key); copy != copies.end()) return copy->second.dl_tensor();
  for (const Value& c : executable_->contents().constants) {
    if (c.kind() != Value::Kind::kTensor || c.as_tensor().dl_tensor() != constant) continue;
    absl::StatusOr<Tensor> moved = c.as_tensor().CopyTo(place.device);
    if (!moved.ok()) {
      return absl::Status(moved.status().code(),
                          absl::StrCat("copying a constant to ", place.device->name(), ": ", moved.status().message()));
    }
    return copies.emplace(key, *std::move(moved)).first->second.dl_tensor();
  }
  device_constants_.erase(constant);
  return absl::NotFoundError("not a constant of the executable");
}

absl::Status VirtualMachine::CallKernel(const Function& fn, Value* regs, const Instruction& in) {
  const KernelDecl& decl = executable_->contents().kernels[in.a];
  const KernelPlace& place = kernel_places_[in.a];
  for (int i = 0; i < in.c; ++i) {
    const Operand& o = fn.operands[in.b + i];
    char expected = decl.arg_signature[i];
    KilnArg& arg = kernel_args_[i];
    if (o.kind == Operand::Kind::kImm) {
      if (expected != 'i') return absl::InvalidArgumentError(absl::StrCat("kernel '", decl.name, "' argument ", i, ": immediate given for a non-int"));
      arg.value.i64 = o.value;
      arg.type_code = kKilnArgInt;
      continue;
    }
    const Value& v = o.kind == Operand::Kind::kConst ? executable_->contents().constants[o.value] : regs[o.value];
    if (expected == 't' && v.kind() == Value::Kind::kTensor) {
      DLTensor* t = v.as_tensor().dl_tensor();
      if (!SameDevice(t->device, place.dl)) [[unlikely]] {
        if (absl::StatusOr<DLTensor*> copy = ConstantOnDevice(t, place); copy.ok()) {
          arg.value.tensor = *copy;
          arg.type_code = kKilnArgTensor;
          continue;
        } else if (copy.status().code() != absl::StatusCode::kNotFound) {
          return absl::Status(copy.status().code(), absl::StrCat("kernel '", decl.name, "' argument ", i, ": ",
                                                                 copy.status().message()));
        }
        return absl::InvalidArgumentError(absl::StrCat("kernel '", decl.name, "' argument ", i, ": the tensor is on ",
                                                       DeviceName(t->device), " but the kernel runs on ", DeviceName(place.dl),
                                                       " (copy it there first)"));
      }
      arg.value.tensor = t;
      arg.type_code = kKilnArgTensor;
    } else if (expected == 'i' && v.kind() == Value::Kind::kInt) {
      arg.value.i64 = v.as_int();
      arg.type_code = kKilnArgInt;
    } else if (expected == 'f' && v.kind() == Value::Kind::kDouble) {
      arg.value.f64 = v.as_double();
      arg.type_code = kKilnArgFloat;
    } else if (expected == 'h' && v.kind() == Value::Kind::kObject) {
      // Valid for the call: the register (or constant) holds a reference until it returns.
      arg.value.handle = v.object_ptr();
      arg.type_code = kKilnArgHandle;
    } else {
      const char* what = expected == 't' ? "a tensor" : expected == 'i' ? "an int" : expected == 'f' ? "a float" : "an object handle";
      return absl::InvalidArgumentError(absl::StrCat("kernel '", decl.name, "' argument ", i, ": expected ", what,
                                                     ", got ", v.Describe()));
    }
  }
  kernel_runtime_.message.clear();
  kernel_runtime_.device = place.device;
  kernel_runtime_.module = place.module;
  call_context_.device = place.dl;
  call_context_.stream = place.stream;
  KilnKernelFn fn_ptr = executable_->kernel_fns()[in.a];
  int32_t status;
  if (profiling_) {
    absl::Status profiled = ProfiledKernelCall(decl, place, fn_ptr, in.c, in.a, &status);
    if (!profiled.ok()) return profiled;
  } else {
    status = fn_ptr(kernel_args_.data(), in.c, &call_context_);
  }
  if (status != 0) {
    return absl::InternalError(absl::StrCat("kernel '", decl.name, "' failed (code ", status, "): ",
                                            kernel_runtime_.message.empty() ? "no message" : kernel_runtime_.message));
  }
  return absl::OkStatus();
}

absl::Status VirtualMachine::ProfiledKernelCall(const KernelDecl& decl, const KernelPlace& place, KilnKernelFn fn,
                                                int32_t num_args, int32_t kernel, int32_t* status) {
  DeviceTimer* timer = timers_[static_cast<size_t>(decl.device)].get();
  int64_t ns = 0;
  if (timer != nullptr) {
    // The device's clock between two marks on its stream: the kernels (and library calls
    // such as cuBLAS) the call queued there, without the host's launch overhead.
    KILN_RETURN_IF_ERROR(timer->Start());
    *status = fn(kernel_args_.data(), num_args, &call_context_);
    absl::StatusOr<int64_t> elapsed = timer->StopNs();
    if (!elapsed.ok()) return elapsed.status();
    ns = *elapsed;
  } else {
    auto start = std::chrono::steady_clock::now();
    *status = fn(kernel_args_.data(), num_args, &call_context_);
    // Device kernels run asynchronously: the time is the host's until they have finished.
    if (place.device != nullptr && place.dl.device_type != kDLCPU && *status == 0) {
      KILN_RETURN_IF_ERROR(place.device->Synchronize());
    }
    ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  }
  profile_.kernel_ns[kernel] += ns;
  profile_.kernel_calls[kernel]++;
  return absl::OkStatus();
}

absl::Status VirtualMachine::CallBuiltin(const Function& fn, Value* regs, const Instruction& in) {
  const ResolvedBuiltin& builtin = executable_->builtin_fns()[in.a];
  const std::string& name = executable_->contents().builtins[in.a].name;
  // Local arrays, not VM members: the builtin may re-enter the VM, whose calls would
  // overwrite shared scratch space while this builtin still reads its arguments.
  absl::InlinedVector<const Value*, 8> args(static_cast<size_t>(in.c));
  absl::InlinedVector<Value, 8> immediates(static_cast<size_t>(in.c));
  for (int i = 0; i < in.c; ++i) args[i] = &OperandValue(regs, fn.operands[in.b + i], &immediates[i]);
  absl::Status checked = builtin.signature.CheckArgs(args.data(), in.c);
  if (!checked.ok()) return absl::Status(checked.code(), absl::StrCat("builtin '", name, "' ", checked.message()));
  BuiltinContext ctx{this, devices_[0], builtin.state};
  Value result;
  absl::Status status;
  if (profiling_) {
    auto start = std::chrono::steady_clock::now();
    status = builtin.fn(ctx, args.data(), in.c, &result);
    profile_.builtin_ns[in.a] += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    profile_.builtin_calls[in.a]++;
  } else {
    status = builtin.fn(ctx, args.data(), in.c, &result);
  }
  if (!status.ok()) {
    if (status.GetPayload(kDepthPayload)) return status;
    return absl::Status(status.code(), absl::StrCat("builtin '", name, "': ", status.message()));
  }
  if (!builtin.signature.result.Accepts(result)) {
    return absl::InternalError(absl::StrCat("builtin '", name, "' returned ", result.Describe(), " but its signature says ",
                                            builtin.signature.result.ToString()));
  }
  if (in.dst != kNoRegister) regs[in.dst] = std::move(result);
  return absl::OkStatus();
}

absl::Status VirtualMachine::IntOp(const Function& fn, Value* regs, const Instruction& in) {
  absl::StatusOr<int64_t> a = IntOperand(fn, regs, fn.operands[in.b]);
  absl::StatusOr<int64_t> b = IntOperand(fn, regs, fn.operands[in.b + 1]);
  if (!a.ok()) return a.status();
  if (!b.ok()) return b.status();
  int64_t x = *a, y = *b, r = 0;
  auto op = static_cast<IntOpKind>(in.sub);
  bool overflow = false;
  switch (op) {
    case IntOpKind::kAdd: overflow = __builtin_add_overflow(x, y, &r); break;
    case IntOpKind::kSub: overflow = __builtin_sub_overflow(x, y, &r); break;
    case IntOpKind::kMul: overflow = __builtin_mul_overflow(x, y, &r); break;
    case IntOpKind::kFloorDiv:
    case IntOpKind::kFloorMod:
      if (y == 0) return absl::InvalidArgumentError(absl::StrCat(IntOpName(op), "(", x, ", 0): division by zero"));
      if (y == -1) {  // x / -1 and x % -1 trap in hardware for x = INT64_MIN
        overflow = op == IntOpKind::kFloorDiv && x == INT64_MIN;
        r = op == IntOpKind::kFloorDiv ? (overflow ? 0 : -x) : 0;
      } else {
        r = op == IntOpKind::kFloorDiv ? support::FloorDiv(x, y) : support::FloorMod(x, y);
      }
      break;
    case IntOpKind::kMin: r = x < y ? x : y; break;
    case IntOpKind::kMax: r = x > y ? x : y; break;
    case IntOpKind::kEQ: r = x == y; break;
    case IntOpKind::kNE: r = x != y; break;
    case IntOpKind::kLT: r = x < y; break;
    case IntOpKind::kLE: r = x <= y; break;
    case IntOpKind::kGT: r = x > y; break;
    case IntOpKind::kGE: r = x >= y; break;
    case IntOpKind::kNumIntOps: break;
  }
  if (overflow) {
    return absl::OutOfRangeError(absl::StrCat(IntOpName(op), "(", x, ", ", y, ") overflows int64"));
  }
  regs[in.dst] = Value(r);
  return absl::OkStatus();
}

absl::Status VirtualMachine::StepLimitError(const Function& fn) const {
  return absl::ResourceExhaustedError(absl::StrCat("step limit of ", step_limit_,
                                                   " backward jumps and calls exceeded in function '", fn.name,
                                                   "' (an endless loop?)"));
}

absl::StatusOr<Value> VirtualMachine::Run(int32_t function_index, Value* regs) {
  const Function& fn = executable_->functions()[function_index];
  const std::vector<Value>& constants = executable_->contents().constants;
  size_t pc = 0;
  while (true) {
    const Instruction& in = fn.code[pc];
    switch (in.op) {
      case Opcode::kCall: {
        auto kind = static_cast<CalleeKind>(in.sub);
        absl::Status status;
        if (kind == CalleeKind::kKernel) {
          status = CallKernel(fn, regs, in);
        } else if (kind == CalleeKind::kBuiltin) {
          status = CallBuiltin(fn, regs, in);
        } else {
          Args args;
          args.operands = &fn.operands[in.b];
          args.caller_regs = regs;
          args.count = static_cast<size_t>(in.c);
          absl::StatusOr<Value> result = kind == CalleeKind::kFunction ? Enter(in.a, args) : CallClosure(regs[in.a], args);
          if (!result.ok()) return InstructionError(fn, pc, result.status());
          if (in.dst != kNoRegister) regs[in.dst] = *std::move(result);
        }
        if (!status.ok()) return InstructionError(fn, pc, status);
        ++pc;
        break;
      }
      case Opcode::kRet:
        return regs[in.a];
      case Opcode::kGoto:
        if (in.a <= 0 && step_limit_ > 0 && --steps_left_ < 0) return InstructionError(fn, pc, StepLimitError(fn));
        pc += in.a;
        break;
      case Opcode::kIf: {
        const Value& cond = regs[in.a];
        bool taken;
        if (cond.kind() == Value::Kind::kBool) {
          taken = cond.as_bool();
        } else if (cond.is_int()) {
          taken = cond.as_int() != 0;
        } else {
          return InstructionError(fn, pc, absl::InvalidArgumentError(absl::StrCat("if condition must be a bool, got ", cond.Describe())));
        }
        if (!taken && in.b <= 0 && step_limit_ > 0 && --steps_left_ < 0) {
          return InstructionError(fn, pc, StepLimitError(fn));
        }
        pc += taken ? 1 : in.b;
        break;
      }
      case Opcode::kLoadConst:
        regs[in.dst] = constants[in.a];
        ++pc;
        break;
      case Opcode::kMove:
        regs[in.dst] = regs[in.a];
        ++pc;
        break;
      case Opcode::kIntOp: {
        absl::Status status = IntOp(fn, regs, in);
        if (!status.ok()) return InstructionError(fn, pc, status);
        ++pc;
        break;
      }
      case Opcode::kMatchShape: {
        const Value& v = regs[in.a];
        auto what = [&] { return absl::StrCat("function '", fn.name, "'", in.dst >= 0 ? absl::StrCat(": ", fn.strings[in.dst]) : ""); };
        const std::vector<int64_t>* shape = nullptr;
        if (v.is_tensor()) {
          shape = &v.as_tensor().shape();
        } else if (v.kind() == Value::Kind::kShape) {
          shape = &v.as_shape();
        } else {
          return absl::InvalidArgumentError(absl::StrCat(what(), ": expected a tensor or shape, got ", v.Describe()));
        }
        absl::Status status = MatchDims(fn, regs, *shape, &fn.operands[in.b + 1], in.c - 1);
        if (!status.ok()) return absl::Status(status.code(), absl::StrCat(what(), status.message()));
        ++pc;
        break;
      }
      case Opcode::kMakeShape: {
        Shape shape(in.c);
        for (int i = 0; i < in.c; ++i) {
          absl::StatusOr<int64_t> d = IntOperand(fn, regs, fn.operands[in.b + i]);
          if (!d.ok()) return InstructionError(fn, pc, d.status());
          shape[i] = *d;
        }
        regs[in.dst] = Value::FromShape(std::move(shape));
        ++pc;
        break;
      }
      case Opcode::kAllocStorage: {
        absl::StatusOr<int64_t> size = IntOperand(fn, regs, fn.operands[in.b]);
        if (!size.ok()) return InstructionError(fn, pc, size.status());
        absl::StatusOr<std::shared_ptr<Storage>> storage = Storage::Allocate(devices_[in.a], *size);
        if (!storage.ok()) return InstructionError(fn, pc, storage.status());
        storage_stats_.storages++;
        storage_stats_.storage_bytes += *size;
        regs[in.dst] = Value::FromObject(std::move(*storage));
        ++pc;
        break;
      }
      case Opcode::kAllocTensor: {
        const Value& storage_value = regs[in.a];
        const Value& shape_value = regs[in.c];
        if (!storage_value.is_object<Storage>() || shape_value.kind() != Value::Kind::kShape) {
          return InstructionError(fn, pc, absl::InvalidArgumentError("alloc_tensor needs a storage and a shape"));
        }
        absl::StatusOr<int64_t> offset = IntOperand(fn, regs, fn.operands[in.b]);
        if (!offset.ok()) return InstructionError(fn, pc, offset.status());
        DLDataType dtype = UnpackDType(fn.operands[in.b + 1].value);
        absl::StatusOr<Tensor> tensor = storage_value.as_object<Storage>().MakeTensor(*offset, shape_value.as_shape(), dtype);
        if (!tensor.ok()) return InstructionError(fn, pc, tensor.status());
        storage_stats_.tensors++;
        storage_stats_.tensor_bytes += tensor->nbytes();
        regs[in.dst] = Value(std::move(*tensor));
        ++pc;
        break;
      }
      case Opcode::kKill:
        regs[in.a] = Value();
        ++pc;
        break;
      case Opcode::kMakeClosure: {
        Closure closure{in.a, {}, executable_.get()};
        closure.captured.reserve(in.c);
        Value immediate;
        for (int i = 0; i < in.c; ++i) closure.captured.push_back(OperandValue(regs, fn.operands[in.b + i], &immediate));
        regs[in.dst] = Value::FromClosure(std::move(closure));
        ++pc;
        break;
      }
      case Opcode::kCopyToDevice: {
        const Value& v = regs[in.a];
        if (!v.is_tensor()) {
          return InstructionError(fn, pc, absl::InvalidArgumentError(absl::StrCat("copy_to_device needs a tensor, got ", v.Describe())));
        }
        absl::StatusOr<Tensor> copy = v.as_tensor().CopyTo(devices_[in.c]);
        if (!copy.ok()) return InstructionError(fn, pc, copy.status());
        regs[in.dst] = Value(*std::move(copy));
        ++pc;
        break;
      }
      case Opcode::kNumOpcodes:
        return absl::InternalError("unverified bytecode");
    }
  }
}

}  // namespace kiln::vm
