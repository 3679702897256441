#include "vm/virtual_machine.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "support/int_math.h"
#include "vm/storage.h"
#include "vm/thread_pool.h"

namespace kiln::vm {
namespace {

constexpr int kMaxCallDepth = 256;

int32_t PoolParallelFor(KilnCallContext*, int64_t num_tasks, KilnParallelBody body, void* closure) {
  return ThreadPool::Global().ParallelFor(num_tasks, body, closure);
}

void* WorkspaceAlloc(KilnCallContext*, uint64_t bytes) {
  absl::StatusOr<void*> p = CpuDevice()->Allocate(bytes + 64, 64);
  if (!p.ok()) return nullptr;
  // The size is kept in front of the block so workspace_free needs only the pointer.
  *static_cast<uint64_t*>(*p) = bytes + 64;
  return static_cast<char*>(*p) + 64;
}

void WorkspaceFree(KilnCallContext*, void* ptr) {
  if (ptr == nullptr) return;
  char* block = static_cast<char*>(ptr) - 64;
  CpuDevice()->Free(block, *reinterpret_cast<uint64_t*>(block));
}

std::string DimName(const Function& fn, const Operand& o) {
  if (o.debug_name >= 0) return absl::StrCat(" (", fn.strings[o.debug_name], ")");
  return "";
}

}  // namespace

VirtualMachine::VirtualMachine(std::shared_ptr<const Executable> executable, Device* device)
    : executable_(std::move(executable)), device_(device) {
  kernel_args_.resize(executable_->max_call_args());
  builtin_args_.resize(executable_->max_call_args());
  immediates_.resize(executable_->max_call_args());
  call_context_.runtime = &kernel_error_;
  call_context_.parallel_for = PoolParallelFor;
  call_context_.workspace_alloc = WorkspaceAlloc;
  call_context_.workspace_free = WorkspaceFree;
  call_context_.set_error = SetKernelError;
  call_context_.num_threads = ThreadPool::Global().num_threads();
  call_context_.device = device_->dl_device();
  call_context_.stream = nullptr;
  call_context_.launch = nullptr;
}

void VirtualMachine::SetKernelError(KilnCallContext* ctx, const char* message) {
  auto* error = static_cast<KernelError*>(ctx->runtime);
  std::lock_guard<std::mutex> lock(error->mutex);
  if (error->message.empty()) error->message = message ? message : "(no message)";
}

void VirtualMachine::EnableProfiling(bool enable) {
  profiling_ = enable;
  size_t kernels = executable_->contents().kernels.size();
  size_t builtins = executable_->contents().builtins.size();
  profile_ = Profile{std::vector<int64_t>(kernels), std::vector<int64_t>(kernels),
                     std::vector<int64_t>(builtins), std::vector<int64_t>(builtins)};
}

absl::StatusOr<Value> VirtualMachine::Invoke(const std::string& function, const std::vector<Value>& args) {
  int32_t index = executable_->FindFunction(function);
  if (index < 0) {
    std::string known;
    for (const Function& fn : executable_->functions()) absl::StrAppend(&known, known.empty() ? "" : ", ", fn.name);
    return absl::NotFoundError(absl::StrCat("no function '", function, "' in the executable (it has: ", known, ")"));
  }
  return Invoke(index, args.data(), args.size());
}

absl::StatusOr<Value> VirtualMachine::Invoke(int32_t function_index, const Value* args, size_t num_args) {
  if (function_index < 0 || function_index >= static_cast<int32_t>(executable_->functions().size())) {
    return absl::OutOfRangeError(absl::StrCat("function index ", function_index, " out of range"));
  }
  const Function& fn = executable_->functions()[function_index];
  if (num_args != fn.params.size()) {
    return absl::InvalidArgumentError(absl::StrCat("function '", fn.name, "' takes ", fn.params.size(),
                                                   " arguments, got ", num_args));
  }
  if (registers_.size() < static_cast<size_t>(fn.num_registers)) registers_.resize(fn.num_registers);
  for (size_t i = 0; i < num_args; ++i) registers_[i] = args[i];
  absl::Status checked = CheckParams(fn, 0);
  absl::StatusOr<Value> result = checked.ok() ? Run(function_index, 0, 0) : absl::StatusOr<Value>(checked);
  // Release everything the call held, also after an error, so the VM starts clean.
  for (Value& reg : registers_) reg = Value();
  return result;
}

absl::Status VirtualMachine::MatchDims(const Function& fn, size_t base, const std::vector<int64_t>& shape,
                                       const Operand* pattern, int count) {
  if (static_cast<int>(shape.size()) != count) {
    return absl::InvalidArgumentError(absl::StrCat(": expected ", count, " dimensions, got ", shape.size(),
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
        registers_[base + o.value] = Value(actual);
        break;
      case Operand::Kind::kReg: {
        const Value& bound = registers_[base + o.value];
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

absl::Status VirtualMachine::CheckParams(const Function& fn, size_t base) {
  for (size_t p = 0; p < fn.params.size(); ++p) {
    const ParamSignature& sig = fn.params[p];
    const Value& v = registers_[base + p];
    auto what = [&] { return absl::StrCat("function '", fn.name, "' parameter '", sig.name, "'"); };
    auto prefixed = [&](const absl::Status& s) { return absl::Status(s.code(), absl::StrCat(what(), s.message())); };
    if (sig.kind != Value::Kind::kNone && v.kind() != sig.kind) {
      return absl::InvalidArgumentError(absl::StrCat(what(), ": expected a ", Value::KindName(sig.kind), ", got ", v.Describe()));
    }
    if (v.kind() == Value::Kind::kTensor) {
      const Tensor& t = v.as_tensor();
      if (sig.check_dtype && t.dtype() != sig.dtype) {
        return absl::InvalidArgumentError(absl::StrCat(what(), ": expected dtype ", DTypeToString(sig.dtype), ", got ",
                                                       DTypeToString(t.dtype()), " (", t.Describe(), ")"));
      }
      if (t.device().device_type != device_->dl_device().device_type) {
        return absl::InvalidArgumentError(absl::StrCat(what(), ": tensor is on another device than the VM (", device_->name(), ")"));
      }
      if (sig.ndim >= 0) {
        absl::Status s = MatchDims(fn, base, t.shape(), sig.dims.data(), sig.ndim);
        if (!s.ok()) return prefixed(s);
      }
    } else if (v.kind() == Value::Kind::kShape && sig.ndim >= 0) {
      absl::Status s = MatchDims(fn, base, v.as_shape(), sig.dims.data(), sig.ndim);
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
  return absl::Status(status.code(), absl::StrCat(where, ": ", status.message()));
}

absl::StatusOr<int64_t> VirtualMachine::IntOperand(const Function& fn, size_t base, const Operand& o) {
  if (o.kind == Operand::Kind::kImm) return o.value;
  const Value& v = registers_[base + o.value];
  if (!v.is_int()) return absl::InvalidArgumentError(absl::StrCat("expected an int in register ", o.value, ", found ", v.Describe()));
  return v.as_int();
}

absl::Status VirtualMachine::CallKernel(const Function& fn, size_t base, const Instruction& in) {
  const KernelDecl& decl = executable_->contents().kernels[in.a];
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
    const Value& v = o.kind == Operand::Kind::kConst ? executable_->contents().constants[o.value] : registers_[base + o.value];
    if (expected == 't' && v.kind() == Value::Kind::kTensor) {
      arg.value.tensor = v.as_tensor().dl_tensor();
      arg.type_code = kKilnArgTensor;
    } else if (expected == 'i' && v.kind() == Value::Kind::kInt) {
      arg.value.i64 = v.as_int();
      arg.type_code = kKilnArgInt;
    } else if (expected == 'f' && v.kind() == Value::Kind::kDouble) {
      arg.value.f64 = v.as_double();
      arg.type_code = kKilnArgFloat;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("kernel '", decl.name, "' argument ", i, ": expected ",
                                                     expected == 't' ? "a tensor" : expected == 'i' ? "an int" : "a float",
                                                     ", got ", v.Describe()));
    }
  }
  kernel_error_.message.clear();
  KilnKernelFn fn_ptr = executable_->kernel_fns()[in.a];
  int32_t status;
  if (profiling_) {
    auto start = std::chrono::steady_clock::now();
    status = fn_ptr(kernel_args_.data(), in.c, &call_context_);
    profile_.kernel_ns[in.a] += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    profile_.kernel_calls[in.a]++;
  } else {
    status = fn_ptr(kernel_args_.data(), in.c, &call_context_);
  }
  if (status != 0) {
    return absl::InternalError(absl::StrCat("kernel '", decl.name, "' failed (code ", status, "): ",
                                            kernel_error_.message.empty() ? "no message" : kernel_error_.message));
  }
  return absl::OkStatus();
}

absl::Status VirtualMachine::CallBuiltin(const Function& fn, size_t base, const Instruction& in) {
  for (int i = 0; i < in.c; ++i) {
    const Operand& o = fn.operands[in.b + i];
    switch (o.kind) {
      case Operand::Kind::kImm:
        immediates_[i] = Value(o.value);
        builtin_args_[i] = &immediates_[i];
        break;
      case Operand::Kind::kConst: builtin_args_[i] = &executable_->contents().constants[o.value]; break;
      default: builtin_args_[i] = &registers_[base + o.value]; break;
    }
  }
  BuiltinContext ctx{device_};
  Value result;
  absl::Status status;
  if (profiling_) {
    auto start = std::chrono::steady_clock::now();
    status = executable_->builtin_fns()[in.a](ctx, builtin_args_.data(), in.c, &result);
    profile_.builtin_ns[in.a] += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    profile_.builtin_calls[in.a]++;
  } else {
    status = executable_->builtin_fns()[in.a](ctx, builtin_args_.data(), in.c, &result);
  }
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat("builtin '", executable_->contents().builtins[in.a].name, "': ", status.message()));
  }
  if (in.dst != kNoRegister) registers_[base + in.dst] = std::move(result);
  return absl::OkStatus();
}

absl::StatusOr<Value> VirtualMachine::Run(int32_t function_index, size_t base, int depth) {
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
          status = CallKernel(fn, base, in);
        } else if (kind == CalleeKind::kBuiltin) {
          status = CallBuiltin(fn, base, in);
        } else {
          if (depth + 1 >= kMaxCallDepth) {
            return InstructionError(fn, pc, absl::ResourceExhaustedError(absl::StrCat("call depth exceeds ", kMaxCallDepth)));
          }
          const Function& callee = executable_->functions()[in.a];
          size_t callee_base = base + fn.num_registers;
          if (registers_.size() < callee_base + callee.num_registers) registers_.resize(callee_base + callee.num_registers);
          for (int i = 0; i < in.c; ++i) {
            const Operand& o = fn.operands[in.b + i];
            Value arg = o.kind == Operand::Kind::kImm     ? Value(o.value)
                        : o.kind == Operand::Kind::kConst ? constants[o.value]
                                                          : registers_[base + o.value];
            registers_[callee_base + i] = std::move(arg);
          }
          status = CheckParams(callee, callee_base);
          absl::StatusOr<Value> result = status.ok() ? Run(in.a, callee_base, depth + 1) : absl::StatusOr<Value>(status);
          for (int32_t r = 0; r < callee.num_registers; ++r) registers_[callee_base + r] = Value();
          if (!result.ok()) return InstructionError(fn, pc, result.status());
          if (in.dst != kNoRegister) registers_[base + in.dst] = std::move(*result);
          status = absl::OkStatus();
        }
        if (!status.ok()) return InstructionError(fn, pc, status);
        ++pc;
        break;
      }
      case Opcode::kRet:
        return registers_[base + in.a];
      case Opcode::kGoto:
        pc += in.a;
        break;
      case Opcode::kIf: {
        const Value& cond = registers_[base + in.a];
        bool taken;
        if (cond.kind() == Value::Kind::kBool) {
          taken = cond.as_bool();
        } else if (cond.is_int()) {
          taken = cond.as_int() != 0;
        } else {
          return InstructionError(fn, pc, absl::InvalidArgumentError(absl::StrCat("if condition must be a bool, got ", cond.Describe())));
        }
        pc += taken ? 1 : in.b;
        break;
      }
      case Opcode::kLoadConst:
        registers_[base + in.dst] = constants[in.a];
        ++pc;
        break;
      case Opcode::kMove:
        registers_[base + in.dst] = registers_[base + in.a];
        ++pc;
        break;
      case Opcode::kIntOp: {
        absl::StatusOr<int64_t> a = IntOperand(fn, base, fn.operands[in.b]);
        absl::StatusOr<int64_t> b = IntOperand(fn, base, fn.operands[in.b + 1]);
        if (!a.ok()) return InstructionError(fn, pc, a.status());
        if (!b.ok()) return InstructionError(fn, pc, b.status());
        int64_t x = *a, y = *b, r = 0;
        auto op = static_cast<IntOpKind>(in.sub);
        if ((op == IntOpKind::kFloorDiv || op == IntOpKind::kFloorMod) && y == 0) {
          return InstructionError(fn, pc, absl::InvalidArgumentError(absl::StrCat(IntOpName(op), " by zero")));
        }
        switch (op) {
          case IntOpKind::kAdd: r = x + y; break;
          case IntOpKind::kSub: r = x - y; break;
          case IntOpKind::kMul: r = x * y; break;
          case IntOpKind::kFloorDiv: r = support::FloorDiv(x, y); break;
          case IntOpKind::kFloorMod: r = support::FloorMod(x, y); break;
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
        registers_[base + in.dst] = Value(r);
        ++pc;
        break;
      }
      case Opcode::kMatchShape: {
        const Value& v = registers_[base + in.a];
        auto what = [&] { return absl::StrCat("function '", fn.name, "'", in.dst >= 0 ? absl::StrCat(": ", fn.strings[in.dst]) : ""); };
        const std::vector<int64_t>* shape = nullptr;
        if (v.is_tensor()) {
          shape = &v.as_tensor().shape();
        } else if (v.kind() == Value::Kind::kShape) {
          shape = &v.as_shape();
        } else {
          return absl::InvalidArgumentError(absl::StrCat(what(), ": expected a tensor or shape, got ", v.Describe()));
        }
        absl::Status status = MatchDims(fn, base, *shape, &fn.operands[in.b + 1], in.c - 1);
        if (!status.ok()) return absl::Status(status.code(), absl::StrCat(what(), status.message()));
        ++pc;
        break;
      }
      case Opcode::kMakeShape: {
        Shape shape(in.c);
        for (int i = 0; i < in.c; ++i) {
          absl::StatusOr<int64_t> d = IntOperand(fn, base, fn.operands[in.b + i]);
          if (!d.ok()) return InstructionError(fn, pc, d.status());
          shape[i] = *d;
        }
        registers_[base + in.dst] = Value::FromShape(std::move(shape));
        ++pc;
        break;
      }
      case Opcode::kAllocStorage: {
        absl::StatusOr<int64_t> size = IntOperand(fn, base, fn.operands[in.b]);
        if (!size.ok()) return InstructionError(fn, pc, size.status());
        absl::StatusOr<std::shared_ptr<Storage>> storage = Storage::Allocate(device_, *size);
        if (!storage.ok()) return InstructionError(fn, pc, storage.status());
        storage_stats_.storages++;
        storage_stats_.storage_bytes += *size;
        registers_[base + in.dst] = Value::FromObject(std::move(*storage));
        ++pc;
        break;
      }
      case Opcode::kAllocTensor: {
        const Value& storage_value = registers_[base + in.a];
        const Value& shape_value = registers_[base + in.c];
        auto* storage = storage_value.kind() == Value::Kind::kObject ? dynamic_cast<Storage*>(storage_value.as_object().get()) : nullptr;
        if (storage == nullptr || shape_value.kind() != Value::Kind::kShape) {
          return InstructionError(fn, pc, absl::InvalidArgumentError("alloc_tensor needs a storage and a shape"));
        }
        absl::StatusOr<int64_t> offset = IntOperand(fn, base, fn.operands[in.b]);
        if (!offset.ok()) return InstructionError(fn, pc, offset.status());
        DLDataType dtype = UnpackDType(fn.operands[in.b + 1].value);
        absl::StatusOr<Tensor> tensor = storage->MakeTensor(*offset, shape_value.as_shape(), dtype);
        if (!tensor.ok()) return InstructionError(fn, pc, tensor.status());
        storage_stats_.tensors++;
        storage_stats_.tensor_bytes += tensor->nbytes();
        registers_[base + in.dst] = Value(std::move(*tensor));
        ++pc;
        break;
      }
      case Opcode::kKill:
        registers_[base + in.a] = Value();
        ++pc;
        break;
      case Opcode::kNumOpcodes:
        return absl::InternalError("unverified bytecode");
    }
  }
}

}  // namespace kiln::vm
