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
#include "codegen/llvm_kernel_lowering.h"
#include "codegen/loop_vectorizer.h"
#include "support/check.h"
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
              offsetof(KilnCallContext, num_threads) == 40);

// Names a kernel may not take: the C library functions generated code calls or that LLVM
// may introduce (memset for a zeroing loop), which a kernel of that name would replace.
const std::set<std::string>& ReservedNames() {
  static const auto* names = new std::set<std::string>{
      "main",   "memcpy", "memmove", "memset", "memcmp", "snprintf", "abort", "malloc", "free",
      "exp",    "expf",   "exp2",    "exp2f",  "log",    "logf",     "log2",  "log2f",  "log10",
      "log10f", "sqrt",   "sqrtf",   "tanh",   "tanhf",  "erf",      "erff",  "fabs",   "fabsf",
      "floor",  "floorf", "ceil",    "ceilf",  "round",  "roundf",   "roundeven", "roundevenf",
      "nearbyint", "nearbyintf", "rint", "rintf", "pow", "powf", "sin", "sinf", "cos", "cosf",
      "fmin",   "fminf",  "fmax",    "fmaxf",  "fma",    "fmaf",     "sincos", "sincosf"};
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

// The variables an expression reads (shape expressions only need the common forms).
void CollectVars(const PrimExpr& e, std::vector<const tir::VarNode*>* out) {
  if (!e.defined()) return;
  if (const auto* v = e.as<tir::VarNode>()) {
    out->push_back(v);
  } else if (const auto* bin = e.as<tir::BinaryNode>()) {
    CollectVars(bin->a, out);
    CollectVars(bin->b, out);
  } else if (const auto* n = e.as<tir::NotNode>()) {
    CollectVars(n->a, out);
  } else if (const auto* c = e.as<tir::CastNode>()) {
    CollectVars(c->value, out);
  } else if (const auto* s = e.as<tir::SelectNode>()) {
    CollectVars(s->condition, out);
    CollectVars(s->true_value, out);
    CollectVars(s->false_value, out);
  } else if (const auto* call = e.as<tir::CallNode>()) {
    for (const PrimExpr& a : call->args) CollectVars(a, out);
  }
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
  EmitPrologue(fn->getArg(0), fn->getArg(1));
  if (status_.ok()) LowerStmt(func_->body);
  if (status_.ok() && b_.GetInsertBlock() != nullptr) b_.CreateRet(b_.getInt32(0));
  return status_;
}

// ------------------------------------------------------------------ function state

// Returns `code` from the current function after freeing the live workspace blocks.
void KernelLowering::EmitReturn(llvm::Value* code) {
  if (!fs_.workspaces.empty()) {
    llvm::Value* free_fn = LoadField(abi_.context, fs_.ctx, kCtxWorkspaceFree, "workspace_free");
    for (auto it = fs_.workspaces.rbegin(); it != fs_.workspaces.rend(); ++it) {
      b_.CreateCall(abi_.workspace_free, free_fn, {fs_.ctx, *it});
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

// The type of one buffer element in memory: bool is a byte.
llvm::Type* KernelLowering::StorageType(DataType t) {
  if (t.element_of().is_bool()) return b_.getInt8Ty();
  return ScalarType(t.element_of());
}
// ------------------------------------------------------------------ prologue

void KernelLowering::EmitPrologue(llvm::Value* args, llvm::Value* num_args) {
  const auto& params = func_->params;
  const std::string kernel = EscapeFormat(absl::StrCat("kernel ", name_));
  Check(b_.CreateICmpEQ(num_args, b_.getInt32(static_cast<int32_t>(params.size()))),
        absl::StrCat(kernel, ": expected ", params.size(), " arguments, got %lld"),
        {b_.CreateSExt(num_args, b_.getInt64Ty())});

  struct Deferred {
    PrimExpr expected;
    llvm::Value* actual;
    std::string where;  // "argument 1 (B) dimension 0"
  };
  std::vector<Deferred> deferred;

  // A dimension or stride: constants are checked now, a variable is bound at its first
  // occurrence and checked at later ones, compound expressions once every variable is bound.
  auto match = [&](const PrimExpr& expected, llvm::Value* actual, const std::string& where) {
    if (std::optional<int64_t> c = expected.as_int()) {
      Check(b_.CreateICmpEQ(actual, b_.getInt64(*c)),
            absl::StrCat(kernel, ": ", where, ": expected ", *c, ", got %lld"), {actual});
      return;
    }
    if (const auto* var = expected.as<tir::VarNode>()) {
      if (!var->dtype().is_integer() || !var->dtype().is_scalar()) {
        Fail(absl::StrCat(where, ": symbolic dimension ", var->name, " must be an integer"));
        return;
      }
      auto it = vars_.find(var);
      if (it == vars_.end()) {
        std::string vname = EscapeFormat(var->name);
        if (var->lower_bound) {
          Check(b_.CreateICmpSGE(actual, b_.getInt64(*var->lower_bound)),
                absl::StrCat(kernel, ": ", where, ": ", vname, " = %lld is below its declared lower bound ",
                             *var->lower_bound),
                {actual});
        }
        if (var->upper_bound) {
          Check(b_.CreateICmpSLE(actual, b_.getInt64(*var->upper_bound)),
                absl::StrCat(kernel, ": ", where, ": ", vname, " = %lld is above its declared upper bound ",
                             *var->upper_bound),
                {actual});
        }
        vars_[var] = b_.CreateIntCast(actual, LlvmType(var->dtype()), true, var->name);
        return;
      }
      llvm::Value* bound = CastToI64(it->second, var->dtype());
      Check(b_.CreateICmpEQ(actual, bound),
            absl::StrCat(kernel, ": ", where, ": expected %lld (", EscapeFormat(var->name), "), got %lld"),
            {bound, actual});
      return;
    }
    deferred.push_back({expected, actual, where});
  };

  llvm::Type* i64 = b_.getInt64Ty();
  // Scalar parameters first: they define their variables outright, and tensor shapes
  // that mention them are then checked against them, whatever the parameter order.
  for (int pass = 0; pass < 2; ++pass)
  for (size_t i = 0; i < params.size() && status_.ok(); ++i) {
    const tir::PrimFuncParam& param = params[i];
    if (param.is_buffer() != (pass == 1)) continue;
    std::string arg_name = param.is_buffer() ? param.buffer->name : param.var.name();
    std::string arg = EscapeFormat(absl::StrCat("argument ", i, " (", arg_name, ")"));
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(abi_.kiln_arg, args, i);
    llvm::Value* type_code = LoadField(abi_.kiln_arg, slot, 1, "type_code");
    llvm::Value* payload = b_.CreateStructGEP(abi_.kiln_arg, slot, 0);
    auto expect_code = [&](int code, const char* what) {
      Check(b_.CreateICmpEQ(type_code, b_.getInt32(code)),
            absl::StrCat(kernel, ": ", arg, ": expected ", what,
                         ", got argument type code %lld (0 tensor, 1 int, 2 float, 3 handle)"),
            {b_.CreateSExt(type_code, i64)});
    };

    if (!param.is_buffer()) {
      const tir::Var& var = param.var;
      DataType t = var.dtype();
      llvm::Value* value = nullptr;
      if (!t.is_scalar()) {
        Fail(absl::StrCat(arg, ": scalar parameters must not be vectors"));
        break;
      }
      if (t.is_integer() || t.is_bool()) {
        expect_code(kKilnArgInt, "an int");
        llvm::Value* raw = b_.CreateLoad(i64, payload, arg_name);
        if (t.is_int() && var->lower_bound) {
          Check(b_.CreateICmpSGE(raw, b_.getInt64(*var->lower_bound)),
                absl::StrCat(kernel, ": ", arg, ": %lld is below its declared lower bound ", *var->lower_bound),
                {raw});
        }
        if (t.is_int() && var->upper_bound) {
          Check(b_.CreateICmpSLE(raw, b_.getInt64(*var->upper_bound)),
                absl::StrCat(kernel, ": ", arg, ": %lld is above its declared upper bound ", *var->upper_bound),
                {raw});
        }
        value = t.is_bool() ? b_.CreateICmpNE(raw, b_.getInt64(0)) : b_.CreateIntCast(raw, LlvmType(t), true);
      } else if (t.is_float()) {
        expect_code(kKilnArgFloat, "a float");
        llvm::Value* raw = b_.CreateLoad(b_.getDoubleTy(), b_.CreatePointerCast(payload, b_.getDoubleTy()->getPointerTo()), arg_name);
        value = b_.CreateFPCast(raw, LlvmType(t));
      } else if (t.is_handle()) {
        expect_code(kKilnArgHandle, "a handle");
        value = b_.CreateLoad(b_.getInt8PtrTy(), b_.CreatePointerCast(payload, b_.getInt8PtrTy()->getPointerTo()), arg_name);
      } else {
        Fail(absl::StrCat(arg, ": parameters of type ", t.ToString(), " are not supported"));
        break;
      }
      vars_[var.get()] = value;
      continue;
    }

    const tir::Buffer& buffer = param.buffer;
    DataType dtype = buffer->dtype;
    expect_code(kKilnArgTensor, "a tensor");
    llvm::Value* tensor = b_.CreateLoad(abi_.dl_tensor->getPointerTo(),
                                        b_.CreatePointerCast(payload, abi_.dl_tensor->getPointerTo()->getPointerTo()),
                                        arg_name);
    Check(b_.CreateIsNotNull(tensor), absl::StrCat(kernel, ": ", arg, ": the tensor is null"));
    llvm::Value* device = b_.CreateStructGEP(abi_.dl_tensor, tensor, kTensorDevice);
    llvm::Value* device_type = LoadField(abi_.dl_device, device, 0, "device_type");
    Check(b_.CreateOr(b_.CreateICmpEQ(device_type, b_.getInt32(kDLCPU)),
                      b_.CreateICmpEQ(device_type, b_.getInt32(kDLCUDAHost))),
          absl::StrCat(kernel, ": ", arg, ": expected a tensor in CPU memory, got DLPack device type %lld"),
          {b_.CreateSExt(device_type, i64)});
    llvm::Value* ndim = LoadField(abi_.dl_tensor, tensor, kTensorNdim, "ndim");
    Check(b_.CreateICmpEQ(ndim, b_.getInt32(buffer.ndim())),
          absl::StrCat(kernel, ": ", arg, ": expected ", buffer.ndim(), " dimensions, got %lld"),
          {b_.CreateSExt(ndim, i64)});
    llvm::Value* dtype_ptr = b_.CreateStructGEP(abi_.dl_tensor, tensor, kTensorDtype);
    llvm::Value* code = b_.CreateZExt(LoadField(abi_.dl_dtype, dtype_ptr, 0, "dtype_code"), i64);
    llvm::Value* bits = b_.CreateZExt(LoadField(abi_.dl_dtype, dtype_ptr, 1, "dtype_bits"), i64);
    llvm::Value* lanes = b_.CreateZExt(LoadField(abi_.dl_dtype, dtype_ptr, 2, "dtype_lanes"), i64);
    llvm::Value* dtype_ok = b_.CreateAnd(
        b_.CreateICmpEQ(code, b_.getInt64(static_cast<int>(dtype.code()))),
        b_.CreateAnd(b_.CreateICmpEQ(bits, b_.getInt64(dtype.bits())),
                     b_.CreateICmpEQ(lanes, b_.getInt64(dtype.lanes()))));
    Check(dtype_ok,
          absl::StrCat(kernel, ": ", arg, ": expected dtype ", dtype.ToString(), " (code ",
                       static_cast<int>(dtype.code()), " bits ", dtype.bits(), " lanes ", dtype.lanes(),
                       "), got code %lld bits %lld lanes %lld"),
          {code, bits, lanes});

    llvm::Value* shape = LoadField(abi_.dl_tensor, tensor, kTensorShape, "shape");
    std::vector<llvm::Value*> dims;
    for (int d = 0; d < buffer.ndim(); ++d) {
      llvm::Value* dim = b_.CreateLoad(i64, b_.CreateConstInBoundsGEP1_64(i64, shape, d),
                                       absl::StrCat(arg_name, "_dim", d));
      dims.push_back(dim);
      match(buffer->shape[d], dim, absl::StrCat(arg, " dimension ", d));
    }

    // Strides: the compact row-major ones when the tensor has none.
    llvm::Value* strides = LoadField(abi_.dl_tensor, tensor, kTensorStrides, "strides");
    llvm::Value* has_strides = b_.CreateIsNotNull(strides);
    std::vector<llvm::Value*> compact(buffer.ndim());
    llvm::Value* running = b_.getInt64(1);
    for (int d = buffer.ndim() - 1; d >= 0; --d) {
      compact[d] = running;
      running = b_.CreateMul(running, dims[d]);
    }
    if (buffer->strides.empty()) {
      if (buffer.ndim() > 0) {
        llvm::BasicBlock* check = llvm::BasicBlock::Create(ctx_, "check_strides", fs_.fn);
        llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "strides_ok", fs_.fn);
        b_.CreateCondBr(has_strides, check, done);
        b_.SetInsertPoint(check);
        for (int d = 0; d < buffer.ndim(); ++d) {
          llvm::Value* stride = b_.CreateLoad(i64, b_.CreateConstInBoundsGEP1_64(i64, strides, d));
          // The stride of a dimension of extent 1 never matters.
          llvm::Value* ok = b_.CreateOr(b_.CreateICmpEQ(stride, compact[d]), b_.CreateICmpEQ(dims[d], b_.getInt64(1)));
          Check(ok,
                absl::StrCat(kernel, ": ", arg, " dimension ", d,
                             ": expected a compact row-major tensor (stride %lld), got stride %lld"),
                {compact[d], stride});
        }
        b_.CreateBr(done);
        b_.SetInsertPoint(done);
      }
    } else {
      for (int d = 0; d < buffer.ndim(); ++d) {
        llvm::Value* stride_slot = b_.CreateInBoundsGEP(i64, strides, b_.getInt64(d));
        // Loaded only when the tensor has strides; `select` over a load would read NULL.
        llvm::BasicBlock* before = b_.GetInsertBlock();
        llvm::BasicBlock* load_bb = llvm::BasicBlock::Create(ctx_, "load_stride", fs_.fn);
        llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "stride", fs_.fn);
        b_.CreateCondBr(has_strides, load_bb, join);
        b_.SetInsertPoint(load_bb);
        llvm::Value* loaded = b_.CreateLoad(i64, stride_slot);
        b_.CreateBr(join);
        b_.SetInsertPoint(join);
        llvm::PHINode* stride = b_.CreatePHI(i64, 2, absl::StrCat(arg_name, "_stride", d));
        stride->addIncoming(compact[d], before);
        stride->addIncoming(loaded, load_bb);
        match(buffer->strides[d], stride, absl::StrCat(arg, " stride ", d));
      }
    }

    llvm::Value* data = LoadField(abi_.dl_tensor, tensor, kTensorData, "data");
    llvm::Value* byte_offset = LoadField(abi_.dl_tensor, tensor, kTensorByteOffset, "byte_offset");
    llvm::Value* first = b_.CreateInBoundsGEP(b_.getInt8Ty(), data, byte_offset);
    buffers_[buffer.get()] = b_.CreatePointerCast(first, StorageType(dtype)->getPointerTo(), arg_name);
  }

  for (const Deferred& d : deferred) {
    if (!status_.ok()) return;
    std::vector<const tir::VarNode*> used;
    CollectVars(d.expected, &used);
    for (const tir::VarNode* v : used) {
      if (vars_.count(v) == 0) {
        Fail(absl::StrCat(d.where, ": the shape expression ", tir::ToString(d.expected), " uses ", v->name,
                          ", which no argument defines"));
        return;
      }
    }
    llvm::Value* expected = CastToI64(Lower(d.expected), d.expected.dtype());
    Check(b_.CreateICmpEQ(d.actual, expected),
          absl::StrCat(kernel, ": ", d.where, ": expected %lld (", EscapeFormat(tir::ToString(d.expected)),
                       "), got %lld"),
          {expected, d.actual});
  }
}


absl::StatusOr<std::unique_ptr<llvm::Module>> LowerToLlvm(const NamedPrimFuncs& kernels, llvm::LLVMContext& context,
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
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) {
    os.flush();
    return absl::InternalError(absl::StrCat("the CPU code generator produced invalid LLVM IR (a bug in Kiln): ", problems));
  }
  return module;
}

}  // namespace kiln::codegen
