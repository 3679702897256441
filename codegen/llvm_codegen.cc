#include "codegen/llvm_codegen.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "codegen/fast_math.h"
#include "codegen/half_libcalls.h"
#include "codegen/llvm_kernel_lowering.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "tir/intrinsics.h"
#include "tir/target.h"
#include "tir/transform/make_kernel_abi.h"
#include "tir/transform/pipeline.h"
#include "vm/kernel_abi.h"

namespace kiln::codegen {
namespace {

// The generated code addresses the ABI structs by field index; these pin the C layout the
// LLVM struct types below describe.
static_assert(sizeof(void*) == 8);
static_assert(offsetof(DLTensor, data) == 0 && offsetof(DLTensor, device) == 8 &&
              offsetof(DLTensor, ndim) == 16 && offsetof(DLTensor, dtype) == 20 &&
              offsetof(DLTensor, shape) == 24 && offsetof(DLTensor, strides) == 32 &&
              offsetof(DLTensor, byte_offset) == 40 && sizeof(DLTensor) == 48);
static_assert(offsetof(KilnArg, type_code) == 8 && sizeof(KilnArg) == 16);
static_assert(offsetof(KilnCallContext, parallel_for) == 8 &&
              offsetof(KilnCallContext, workspace_alloc) == 16 &&
              offsetof(KilnCallContext, workspace_free) == 24 &&
              offsetof(KilnCallContext, set_error) == 32 &&
              offsetof(KilnCallContext, num_threads) == 40 && offsetof(KilnCallContext, device) == 44 &&
              offsetof(KilnCallContext, stream) == 56 && offsetof(KilnCallContext, launch) == 64);
static_assert(offsetof(KilnLaunchDims, block) == 12 && offsetof(KilnLaunchDims, dynamic_shared_bytes) == 24 &&
              sizeof(KilnLaunchDims) == 28);
// Lowered TIR spells the ABI's codes with tir/intrinsics.h's constants.
static_assert(tir::kArgTypeTensor == kKilnArgTensor && tir::kArgTypeInt == kKilnArgInt &&
              tir::kArgTypeFloat == kKilnArgFloat && tir::kArgTypeHandle == kKilnArgHandle);
static_assert(tir::kDeviceTypeCpu == kDLCPU && tir::kDeviceTypeCuda == kDLCUDA &&
              tir::kDeviceTypeCudaHost == kDLCUDAHost && tir::kDeviceTypeVulkan == kDLVulkan);

// Names a kernel may not take: the C library functions generated code calls or that LLVM
// may introduce (memset for a zeroing loop), which a kernel of that name would replace.
const std::set<std::string>& ReservedNames() {
  static const auto* names = new std::set<std::string>{
      "main",   "memcpy", "memmove", "memset", "memcmp", "snprintf", "abort", "malloc", "free",
      "exp",    "expf",   "exp2",    "exp2f",  "log",    "logf",     "log2",  "log2f",  "log10",
      "log10f", "sqrt",   "sqrtf",   "tanh",   "tanhf",  "erf",      "erff",  "fabs",   "fabsf",
      "floor",  "floorf", "ceil",    "ceilf",  "round",  "roundf",   "roundeven", "roundevenf",
      "nearbyint", "nearbyintf", "rint", "rintf", "pow", "powf", "sin", "sinf", "cos", "cosf",
      "tan",    "tanf",   "asin",    "asinf",  "acos",   "acosf",    "atan",  "atanf",  "sinh",
      "sinhf",  "cosh",   "coshf",   "asinh",  "asinhf", "acosh",    "acoshf", "atanh", "atanhf",
      "log1p",  "log1pf", "expm1",   "expm1f", "fmod",   "fmodf",
      "fmin",   "fminf",  "fmax",    "fmaxf",  "fma",    "fmaf",     "sincos", "sincosf",
      kHalfToFloatLibcall, kFloatToHalfLibcall};
  return *names;
}

absl::Status CheckKernelName(const std::string& name) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("kernel name '", name, "' ", why));
  };
  if (name.empty()) return bad("is empty");
  if (std::isdigit(static_cast<unsigned char>(name[0])) || name[0] == '.') {
    return bad("must start with a letter or '_'");
  }
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') {
      return bad("may contain only letters, digits, '_' and '.' (it becomes a symbol name)");
    }
  }
  if (ReservedNames().count(name) > 0) {
    return bad("is a C library function that generated code may call; rename the kernel");
  }
  return absl::OkStatus();
}

}  // namespace

// A literal for a printf format string.
std::string EscapeFormat(const std::string& text) { return absl::StrReplaceAll(text, {{"%", "%%"}}); }

absl::Status KernelLowering::Run() {
  llvm::Function* fn = llvm::Function::Create(abi_.kernel, llvm::Function::ExternalLinkage, name_, module_);
  if (fn->getName() != name_) {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", name_, "' is defined twice"));
  }
  fn->setVisibility(llvm::GlobalValue::DefaultVisibility);
  SetCommonAttributes(fn);
  fn->getArg(0)->setName("args");
  fn->getArg(1)->setName("num_args");
  fn->getArg(2)->setName("ctx");
  BeginFunction(fn, fn->getArg(2));
  // The kernel ABI's two parameters (tir/transform/make_kernel_abi.h); the context is the
  // emitter's own.
  auto conv = func_->attrs.find(tir::transform::kCallingConvAttr);
  const auto& params = func_->params;
  if (conv == func_->attrs.end() || conv->second != tir::transform::kKernelAbi || params.size() != 2 ||
      params[0].is_buffer() || params[0].var.dtype() != DataType::Handle() || params[1].is_buffer() ||
      params[1].var.dtype() != DataType::Int32()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel ", name_, ": the function must be lowered first (tir/transform/pipeline.h: calling_conv = kernel_abi)"));
  }
  vars_[params[0].var.get()] = fn->getArg(0);
  vars_[params[1].var.get()] = fn->getArg(1);
  absl::StatusOr<std::optional<tir::Target>> target = tir::TargetOf(func_);
  if (!target.ok()) return absl::InvalidArgumentError(absl::StrCat("kernel ", name_, ": ", target.status().message()));
  gpu_host_ = target->has_value() && (*target)->is_gpu();
  LowerStmt(func_->body);
  if (status_.ok() && b_.GetInsertBlock() != nullptr) b_.CreateRet(b_.getInt32(0));
  return status_;
}

// ------------------------------------------------------------------ function state

// Returns `code` from the current function after freeing the live workspace blocks.
void KernelLowering::EmitReturn(llvm::Value* code) {
  if (!fs_.workspaces.empty()) {
    llvm::Value* free_fn = LoadField(abi_.context, fs_.ctx, kCtxWorkspaceFree, "workspace_free");
    for (auto it = fs_.workspaces.rbegin(); it != fs_.workspaces.rend(); ++it) {
      // Freeing does not publish the pointer. Without the attribute a block freed on an
      // error path (an allocation nested in its scope failed) counts as escaped, and LLVM
      // may no longer assume that the kernel's arguments do not alias it.
      llvm::CallInst* free_call = b_.CreateCall(abi_.workspace_free, free_fn, {fs_.ctx, *it});
      free_call->addParamAttr(1, llvm::Attribute::NoCapture);
    }
  }
  b_.CreateRet(code);
}

void KernelLowering::SetCommonAttributes(llvm::Function* fn) {
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->addFnAttr("target-cpu", machine_.getTargetCPU());
  if (!machine_.getTargetFeatureString().empty()) {
    fn->addFnAttr("target-features", machine_.getTargetFeatureString());
  }
}

void KernelLowering::BeginFunction(llvm::Function* fn, llvm::Value* ctx) {
  fs_.fn = fn;
  fs_.ctx = ctx;
  fs_.entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
  b_.SetInsertPoint(fs_.entry);
}

// An alloca in the entry block, so it is allocated once per call, not per iteration.
llvm::AllocaInst* KernelLowering::EntryAlloca(llvm::Type* type, llvm::Value* count, uint64_t align, const std::string& name) {
  llvm::IRBuilder<> entry(fs_.entry, fs_.entry->begin());
  llvm::AllocaInst* a = entry.CreateAlloca(type, count, name);
  a->setAlignment(llvm::Align(align));
  return a;
}
// ------------------------------------------------------------------ errors

// Records the first lowering error; the caller carries on with a placeholder value so the
// code stays simple, and Run returns the error.
llvm::Value* KernelLowering::Fail(const std::string& message, llvm::Type* type) {
  if (status_.ok()) status_ = absl::InvalidArgumentError(absl::StrCat("kernel ", name_, ": ", message));
  return type == nullptr ? nullptr : llvm::UndefValue::get(type);
}

llvm::Value* KernelLowering::LoadField(llvm::StructType* type, llvm::Value* ptr, unsigned field, const std::string& name) {
  llvm::Value* p = b_.CreateStructGEP(type, ptr, field);
  return b_.CreateLoad(type->getElementType(field), p, name);
}

// Emits a run-time check: when `ok` is false, report the message (a printf format over
// the int64 `values`) through ctx->set_error and return 1 from the current function.
void KernelLowering::Check(llvm::Value* ok, const std::string& format, const std::vector<llvm::Value*>& values) {
  llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "check_fail", fs_.fn);
  llvm::BasicBlock* cont = llvm::BasicBlock::Create(ctx_, "check_ok", fs_.fn);
  llvm::MDBuilder md(ctx_);
  b_.CreateCondBr(ok, cont, fail, md.createBranchWeights(1u << 20, 1));
  b_.SetInsertPoint(fail);
  ReportError(format, values);
  EmitReturn(b_.getInt32(1));
  b_.SetInsertPoint(cont);
}

// A callback's nonzero status (its error already reported) is returned from the current
// function; execution goes on at `done` otherwise.
void KernelLowering::ReturnIfNonzero(llvm::Value* rc, llvm::BasicBlock* done) {
  llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "callback_fail", fs_.fn);
  llvm::MDBuilder md(ctx_);
  b_.CreateCondBr(b_.CreateICmpEQ(rc, b_.getInt32(0)), done, fail, md.createBranchWeights(1u << 20, 1));
  b_.SetInsertPoint(fail);
  EmitReturn(rc);
  b_.SetInsertPoint(done);
}

void KernelLowering::ReportError(const std::string& format, const std::vector<llvm::Value*>& values) {
  llvm::Value* message;
  if (values.empty()) {
    message = b_.CreateGlobalStringPtr(absl::StrReplaceAll(format, {{"%%", "%"}}), "error_message");
  } else {
    llvm::Value* buffer = EntryAlloca(b_.getInt8Ty(), b_.getInt64(kErrorMessageBytes), 1, "error_buffer");
    std::vector<llvm::Value*> call_args = {buffer, b_.getInt64(kErrorMessageBytes),
                                           b_.CreateGlobalStringPtr(format, "error_format")};
    for (llvm::Value* v : values) call_args.push_back(v);
    llvm::FunctionCallee snprintf = module_->getOrInsertFunction("snprintf", abi_.snprintf);
    b_.CreateCall(snprintf, call_args);
    message = buffer;
  }
  llvm::Value* set_error = LoadField(abi_.context, fs_.ctx, kCtxSetError, "set_error");
  b_.CreateCall(abi_.set_error, set_error, {fs_.ctx, message});
}
// ------------------------------------------------------------------ types

llvm::Type* KernelLowering::ScalarType(DataType t) {
  switch (t.code()) {
    case DataType::Code::kInt:
    case DataType::Code::kUInt:
      return b_.getIntNTy(t.bits());
    case DataType::Code::kBool:
      return b_.getInt1Ty();
    case DataType::Code::kFloat:
      if (t.bits() == 16) return b_.getHalfTy();
      if (t.bits() == 32) return b_.getFloatTy();
      if (t.bits() == 64) return b_.getDoubleTy();
      break;
    case DataType::Code::kHandle:
      return b_.getInt8PtrTy();
    case DataType::Code::kBFloat:
      // Held as its 16 bits: kernels move bfloat16 and convert it (CastValue), never
      // compute in it (LowerBinary refuses).
      if (t.bits() == 16) return b_.getInt16Ty();
      break;
  }
  Fail(absl::StrCat(t.ToString(), " is not supported by the CPU code generator"));
  return b_.getInt32Ty();
}

// The type of a value in registers: bool is i1.
llvm::Type* KernelLowering::LlvmType(DataType t) {
  llvm::Type* elem = ScalarType(t.element_of());
  return t.lanes() > 1 ? llvm::FixedVectorType::get(elem, t.lanes()) : elem;
}

// The type of one buffer element in memory: bool is a byte; sub-byte integers are packed,
// so their buffers are addressed in bytes (PackedLoad / PackedStore).
llvm::Type* KernelLowering::StorageType(DataType t) {
  if (t.element_of().is_bool() || t.element_of().is_sub_byte()) return b_.getInt8Ty();
  return ScalarType(t.element_of());
}
absl::StatusOr<std::unique_ptr<llvm::Module>> EmitLlvmModule(const NamedPrimFuncs& kernels, llvm::LLVMContext& context,
                                                             const llvm::TargetMachine& machine) {
  auto module = std::make_unique<llvm::Module>("kiln_kernels", context);
  module->setTargetTriple(machine.getTargetTriple().str());
  module->setDataLayout(machine.createDataLayout());
  AbiTypes abi(context);
  std::set<std::string> seen;
  for (const auto& [name, func] : kernels) {
    if (absl::Status s = CheckKernelName(name); !s.ok()) return s;
    if (!seen.insert(name).second) return absl::InvalidArgumentError(absl::StrCat("kernel '", name, "' is defined twice"));
    if (!func.defined()) return absl::InvalidArgumentError(absl::StrCat("kernel '", name, "' has no PrimFunc"));
    KernelLowering lowering(module.get(), abi, machine, name, func);
    if (absl::Status s = lowering.Run(); !s.ok()) return s;
  }
  DefineHalfLibcalls(*module, machine);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) {
    os.flush();
    return absl::InternalError(absl::StrCat("the CPU code generator produced invalid LLVM IR (a bug in Kiln): ", problems));
  }
  return module;
}

absl::StatusOr<NamedPrimFuncs> LowerForCpu(const NamedPrimFuncs& kernels, const llvm::TargetMachine& machine,
                                           const std::function<void(const std::string&, const std::string&,
                                                                    const tir::PrimFunc&)>& after_pass) {
  tir::Target cpu = tir::Target::Cpu(machine.getTargetCPU().str());
  NamedPrimFuncs lowered;
  for (const auto& [name, func] : kernels) {
    if (!func.defined()) return absl::InvalidArgumentError(absl::StrCat("kernel '", name, "' has no PrimFunc"));
    absl::StatusOr<std::optional<tir::Target>> own = tir::TargetOf(func);
    if (!own.ok()) return absl::InvalidArgumentError(absl::StrCat("kernel ", name, ": ", own.status().message()));
    if (own->has_value() && !(*own)->is_cpu()) {
      return absl::InvalidArgumentError(absl::StrCat("kernel ", name, ": its target is ", (*own)->ToString(),
                                                     "; the CPU code generator compiles cpu targets only"));
    }
    tir::transform::LowerOptions options;
    if (after_pass) {
      options.after_pass = [&, name = name](const std::string& pass, const tir::PrimFunc& f) { after_pass(name, pass, f); };
    }
    absl::StatusOr<tir::transform::LoweredFunc> result = tir::transform::LowerPrimFunc(func, cpu, options);
    if (!result.ok()) {
      return absl::Status(result.status().code(), absl::StrCat("kernel ", name, ": ", result.status().message()));
    }
    lowered.emplace_back(name, result->host);
  }
  return lowered;
}

absl::StatusOr<std::unique_ptr<llvm::Module>> LowerToLlvm(const NamedPrimFuncs& kernels, llvm::LLVMContext& context,
                                                          const llvm::TargetMachine& machine) {
  for (const auto& [name, func] : kernels) KILN_RETURN_IF_ERROR(CheckKernelName(name));
  KILN_ASSIGN_OR_RETURN(NamedPrimFuncs lowered, LowerForCpu(kernels, machine));
  return EmitLlvmModule(lowered, context, machine);
}

}  // namespace kiln::codegen
