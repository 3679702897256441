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
#include "codegen/loop_vectorizer.h"
#include "support/check.h"
#include "vm/kernel_abi.h"

namespace kiln::codegen {
namespace {

using tir::DataType;
using tir::ExprKind;
using tir::PrimExpr;
using tir::Stmt;
using tir::StmtKind;

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

// Field indices of the LLVM struct types.
enum DLTensorField { kTensorData = 0, kTensorDevice, kTensorNdim, kTensorDtype, kTensorShape, kTensorStrides, kTensorByteOffset };
enum ContextField { kCtxRuntime = 0, kCtxParallelFor, kCtxWorkspaceAlloc, kCtxWorkspaceFree, kCtxSetError, kCtxNumThreads };

// Allocations of at most this many bytes with a constant size live on the stack (of the
// calling thread, or of a pool worker inside a parallel loop).
constexpr int64_t kMaxStackAllocationBytes = 32 * 1024;
constexpr int64_t kErrorMessageBytes = 512;

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

// Types of the ABI structs and callbacks, built once per module.
struct AbiTypes {
  explicit AbiTypes(llvm::LLVMContext& c) {
    llvm::Type* i8 = llvm::Type::getInt8Ty(c);
    llvm::Type* i16 = llvm::Type::getInt16Ty(c);
    llvm::Type* i32 = llvm::Type::getInt32Ty(c);
    llvm::Type* i64 = llvm::Type::getInt64Ty(c);
    llvm::Type* i8p = llvm::Type::getInt8PtrTy(c);
    llvm::Type* i64p = llvm::Type::getInt64PtrTy(c);
    llvm::Type* voidt = llvm::Type::getVoidTy(c);
    dl_device = llvm::StructType::create(c, {i32, i32}, "DLDevice");
    dl_dtype = llvm::StructType::create(c, {i8, i8, i16}, "DLDataType");
    dl_tensor = llvm::StructType::create(c, {i8p, dl_device, i32, dl_dtype, i64p, i64p, i64}, "DLTensor");
    kiln_arg = llvm::StructType::create(c, {i64, i32}, "KilnArg");
    context = llvm::StructType::create(c, "KilnCallContext");
    llvm::Type* ctxp = context->getPointerTo();
    parallel_body = llvm::FunctionType::get(i32, {i64, i64, i8p}, false);
    parallel_for = llvm::FunctionType::get(i32, {ctxp, i64, parallel_body->getPointerTo(), i8p}, false);
    workspace_alloc = llvm::FunctionType::get(i8p, {ctxp, i64}, false);
    workspace_free = llvm::FunctionType::get(voidt, {ctxp, i8p}, false);
    set_error = llvm::FunctionType::get(voidt, {ctxp, i8p}, false);
    context->setBody({i8p, parallel_for->getPointerTo(), workspace_alloc->getPointerTo(),
                      workspace_free->getPointerTo(), set_error->getPointerTo(), i32});
    kernel = llvm::FunctionType::get(i32, {kiln_arg->getPointerTo(), i32, ctxp}, false);
    snprintf = llvm::FunctionType::get(i32, {i8p, i64, i8p}, true);
  }
  llvm::StructType* dl_device;
  llvm::StructType* dl_dtype;
  llvm::StructType* dl_tensor;
  llvm::StructType* kiln_arg;
  llvm::StructType* context;
  llvm::FunctionType* parallel_body;
  llvm::FunctionType* parallel_for;
  llvm::FunctionType* workspace_alloc;
  llvm::FunctionType* workspace_free;
  llvm::FunctionType* set_error;
  llvm::FunctionType* kernel;
  llvm::FunctionType* snprintf;
};

// A literal for a printf format string.
std::string EscapeFormat(const std::string& text) { return absl::StrReplaceAll(text, {{"%", "%%"}}); }

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

// Lowers one PrimFunc into one exported kernel (plus the closures of its parallel loops).
class KernelLowering {
 public:
  KernelLowering(llvm::Module* module, const AbiTypes& abi, const llvm::TargetMachine& machine,
                 std::string name, const tir::PrimFunc& func)
      : module_(module),
        ctx_(module->getContext()),
        abi_(abi),
        machine_(machine),
        name_(std::move(name)),
        func_(func),
        b_(module->getContext()) {}

  absl::Status Run() {
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

 private:
  // ------------------------------------------------------------------ function state

  struct FunctionState {
    llvm::Function* fn = nullptr;
    llvm::Value* ctx = nullptr;
    llvm::BasicBlock* entry = nullptr;
    // Workspace blocks live at the current point, innermost last; an early return frees them.
    std::vector<llvm::Value*> workspaces;
  };

  // Returns `code` from the current function after freeing the live workspace blocks.
  void EmitReturn(llvm::Value* code) {
    if (!fs_.workspaces.empty()) {
      llvm::Value* free_fn = LoadField(abi_.context, fs_.ctx, kCtxWorkspaceFree, "workspace_free");
      for (auto it = fs_.workspaces.rbegin(); it != fs_.workspaces.rend(); ++it) {
        b_.CreateCall(abi_.workspace_free, free_fn, {fs_.ctx, *it});
      }
    }
    b_.CreateRet(code);
  }

  void SetCommonAttributes(llvm::Function* fn) {
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr("target-cpu", machine_.getTargetCPU());
    if (!machine_.getTargetFeatureString().empty()) {
      fn->addFnAttr("target-features", machine_.getTargetFeatureString());
    }
  }

  void BeginFunction(llvm::Function* fn, llvm::Value* ctx) {
    fs_.fn = fn;
    fs_.ctx = ctx;
    fs_.entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
    b_.SetInsertPoint(fs_.entry);
  }

  // An alloca in the entry block, so it is allocated once per call, not per iteration.
  llvm::AllocaInst* EntryAlloca(llvm::Type* type, llvm::Value* count, uint64_t align, const std::string& name) {
    llvm::IRBuilder<> entry(fs_.entry, fs_.entry->begin());
    llvm::AllocaInst* a = entry.CreateAlloca(type, count, name);
    a->setAlignment(llvm::Align(align));
    return a;
  }

  // ------------------------------------------------------------------ errors

  // Records the first lowering error; the caller carries on with a placeholder value so the
  // code stays simple, and Run returns the error.
  llvm::Value* Fail(const std::string& message, llvm::Type* type = nullptr) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(absl::StrCat("kernel ", name_, ": ", message));
    return type == nullptr ? nullptr : llvm::UndefValue::get(type);
  }

  llvm::Value* LoadField(llvm::StructType* type, llvm::Value* ptr, unsigned field, const std::string& name) {
    llvm::Value* p = b_.CreateStructGEP(type, ptr, field);
    return b_.CreateLoad(type->getElementType(field), p, name);
  }

  // Emits a run-time check: when `ok` is false, report the message (a printf format over
  // the int64 `values`) through ctx->set_error and return 1 from the current function.
  void Check(llvm::Value* ok, const std::string& format, const std::vector<llvm::Value*>& values = {}) {
    llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "check_fail", fs_.fn);
    llvm::BasicBlock* cont = llvm::BasicBlock::Create(ctx_, "check_ok", fs_.fn);
    llvm::MDBuilder md(ctx_);
    b_.CreateCondBr(ok, cont, fail, md.createBranchWeights(1u << 20, 1));
    b_.SetInsertPoint(fail);
    ReportError(format, values);
    EmitReturn(b_.getInt32(1));
    b_.SetInsertPoint(cont);
  }

  void ReportError(const std::string& format, const std::vector<llvm::Value*>& values) {
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

  llvm::Type* ScalarType(DataType t) {
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
  llvm::Type* LlvmType(DataType t) {
    llvm::Type* elem = ScalarType(t.element_of());
    return t.lanes() > 1 ? llvm::FixedVectorType::get(elem, t.lanes()) : elem;
  }

  // The type of one buffer element in memory: bool is a byte; sub-byte integers are packed,
  // so their buffers are addressed in bytes (PackedLoad / PackedStore).
  llvm::Type* StorageType(DataType t) {
    if (t.element_of().is_bool() || t.element_of().is_sub_byte()) return b_.getInt8Ty();
    return ScalarType(t.element_of());
  }

  // ------------------------------------------------------------------ prologue

  void EmitPrologue(llvm::Value* args, llvm::Value* num_args) {
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

  // ------------------------------------------------------------------ statements

  void LowerStmt(const Stmt& s) {
    if (!status_.ok()) return;
    switch (s.kind()) {
      case StmtKind::kBufferStore: {
        const auto* op = s.as<tir::BufferStoreNode>();
        StoreBuffer(op->buffer.get(), op->indices, Lower(op->value), op->value.dtype());
        return;
      }
      case StmtKind::kFor: LowerFor(s.as<tir::ForNode>()); return;
      case StmtKind::kBlock: LowerBlock(s.as<tir::BlockNode>()); return;
      case StmtKind::kIfThenElse: {
        const auto* op = s.as<tir::IfThenElseNode>();
        llvm::Value* cond = ScalarCondition(op->condition, "if");
        llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "if_then", fs_.fn);
        llvm::BasicBlock* else_bb = op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "if_else", fs_.fn) : nullptr;
        llvm::BasicBlock* end_bb = llvm::BasicBlock::Create(ctx_, "if_end", fs_.fn);
        b_.CreateCondBr(cond, then_bb, else_bb ? else_bb : end_bb);
        b_.SetInsertPoint(then_bb);
        LowerStmt(op->then_case);
        b_.CreateBr(end_bb);
        if (else_bb) {
          b_.SetInsertPoint(else_bb);
          LowerStmt(op->else_case);
          b_.CreateBr(end_bb);
        }
        b_.SetInsertPoint(end_bb);
        return;
      }
      case StmtKind::kSeqStmt:
        for (const Stmt& child : s.as<tir::SeqStmtNode>()->seq) LowerStmt(child);
        return;
      case StmtKind::kAllocate: {
        const auto* op = s.as<tir::AllocateNode>();
        WithAllocation(op->buffer, [&] { LowerStmt(op->body); });
        return;
      }
      case StmtKind::kLetStmt: {
        const auto* op = s.as<tir::LetStmtNode>();
        llvm::Value* value = Lower(op->value);
        NameValue(value, op->var.name());
        Bind(op->var.get(), value, [&] { LowerStmt(op->body); });
        return;
      }
      case StmtKind::kEvaluate:
        // Expressions are pure, so the value is computed for nothing; kept for symmetry
        // with other targets and optimized away.
        Lower(s.as<tir::EvaluateNode>()->value);
        return;
      case StmtKind::kAssert: LowerAssert(s.as<tir::AssertNode>()); return;
    }
  }

  // A failed assert reports "kernel NAME: message" (values formatted by snprintf, computed
  // only on the failing path) and returns 1, like the prologue's checks.
  void LowerAssert(const tir::AssertNode* op) {
    llvm::Value* ok = ScalarCondition(op->condition, "assert");
    if (!status_.ok()) return;
    llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "assert_fail", fs_.fn);
    llvm::BasicBlock* cont = llvm::BasicBlock::Create(ctx_, "assert_ok", fs_.fn);
    llvm::MDBuilder md(ctx_);
    b_.CreateCondBr(ok, cont, fail, md.createBranchWeights(1u << 20, 1));
    b_.SetInsertPoint(fail);
    std::vector<llvm::Value*> values;
    for (const PrimExpr& v : op->values) {
      llvm::Value* lowered = Lower(v);
      values.push_back(v.dtype().is_uint() ? b_.CreateZExtOrTrunc(lowered, b_.getInt64Ty())
                                           : b_.CreateSExtOrTrunc(lowered, b_.getInt64Ty()));
    }
    std::string format = EscapeFormat(absl::StrCat("kernel ", name_, ": ", op->message));
    format = tir::ExpandAssertMessage(format, [](size_t) { return std::string("%lld"); });
    ReportError(format, values);
    EmitReturn(b_.getInt32(1));
    b_.SetInsertPoint(cont);
  }

  // Names instructions after the variable they bind, for readable IR dumps.
  static void NameValue(llvm::Value* value, const std::string& name) {
    if (llvm::isa<llvm::Instruction>(value) && !value->hasName()) value->setName(name);
  }

  llvm::Value* ScalarCondition(const PrimExpr& cond, const char* what) {
    if (!cond.dtype().is_bool() || !cond.dtype().is_scalar()) {
      return Fail(absl::StrCat("the ", what, " condition ", tir::ToString(cond), " must be a scalar bool"), b_.getInt1Ty());
    }
    return Lower(cond);
  }

  // Runs `body` with `var` bound to `value`, then restores whatever it shadowed.
  void Bind(const tir::VarNode* var, llvm::Value* value, const std::function<void()>& body) {
    auto it = vars_.find(var);
    std::optional<llvm::Value*> saved;
    if (it != vars_.end()) saved = it->second;
    vars_[var] = value;
    body();
    if (saved) {
      vars_[var] = *saved;
    } else {
      vars_.erase(var);
    }
  }

  enum class LoopHint { kNone, kVectorize, kUnroll };

  // for (var = begin; var < end; ++var) body(var), in the current function.
  void SerialLoop(const tir::VarNode* var, llvm::Value* begin, llvm::Value* end, LoopHint hint,
                  const std::function<void()>& body) {
    bool is_unsigned = var->dtype().is_uint();
    llvm::BasicBlock* preheader = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, absl::StrCat("for_", var->name), fs_.fn);
    llvm::BasicBlock* body_bb = llvm::BasicBlock::Create(ctx_, absl::StrCat("for_", var->name, "_body"), fs_.fn);
    llvm::BasicBlock* exit_bb = llvm::BasicBlock::Create(ctx_, absl::StrCat("for_", var->name, "_end"), fs_.fn);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* i = b_.CreatePHI(begin->getType(), 2, var->name);
    i->addIncoming(begin, preheader);
    llvm::Value* more = is_unsigned ? b_.CreateICmpULT(i, end) : b_.CreateICmpSLT(i, end);
    b_.CreateCondBr(more, body_bb, exit_bb);
    b_.SetInsertPoint(body_bb);
    Bind(var, i, body);
    llvm::Value* next = b_.CreateAdd(i, llvm::ConstantInt::get(i->getType(), 1), "", /*HasNUW=*/is_unsigned,
                                     /*HasNSW=*/!is_unsigned);
    llvm::BranchInst* back = b_.CreateBr(header);
    i->addIncoming(next, b_.GetInsertBlock());
    if (hint != LoopHint::kNone) back->setMetadata(llvm::LLVMContext::MD_loop, LoopMetadata(hint));
    b_.SetInsertPoint(exit_bb);
  }

  llvm::MDNode* LoopMetadata(LoopHint hint) {
    llvm::SmallVector<llvm::Metadata*, 3> ops;
    llvm::TempMDTuple self = llvm::MDNode::getTemporary(ctx_, llvm::None);
    ops.push_back(self.get());
    if (hint == LoopHint::kVectorize) {
      ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                             llvm::ConstantAsMetadata::get(b_.getTrue())}));
    } else {
      ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.full")}));
    }
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, ops);
    id->replaceOperandWith(0, id);
    return id;
  }

  void LowerFor(const tir::ForNode* op) {
    const tir::VarNode* var = op->loop_var.get();
    if (!var->dtype().is_integer() || !var->dtype().is_scalar()) {
      Fail(absl::StrCat("loop variable ", var->name, " must be a scalar integer"));
      return;
    }
    switch (op->for_kind) {
      case tir::ForKind::kThreadBinding:
        Fail(absl::StrCat("loop ", var->name, " is bound to the GPU thread index ", op->thread_tag,
                          ", which the CPU target cannot run; compile this function for a GPU target or "
                          "make the loop serial or parallel"));
        return;
      case tir::ForKind::kParallel:
        LowerParallelFor(op);
        return;
      case tir::ForKind::kVectorized:
        // Straight-line SIMD code when the body allows it; otherwise a hinted loop below.
        if (std::optional<Stmt> lanes = VectorizeLoopBody(*op)) {
          LowerStmt(*lanes);
          return;
        }
        break;
      default:
        break;
    }
    llvm::Value* begin = Lower(op->min);
    llvm::Value* end = b_.CreateAdd(begin, Lower(op->extent), absl::StrCat(var->name, "_end"));
    LoopHint hint = op->for_kind == tir::ForKind::kVectorized ? LoopHint::kVectorize
                    : op->for_kind == tir::ForKind::kUnrolled ? LoopHint::kUnroll
                                                              : LoopHint::kNone;
    SerialLoop(var, begin, end, hint, [&] { LowerStmt(op->body); });
  }

  // The loop body becomes a closure `int32_t body(task, num_tasks, closure)` over a struct
  // holding the call context, the range and every variable and buffer in scope (what the
  // body does not use is dead after inlining the loads, and costs one store).
  void LowerParallelFor(const tir::ForNode* op) {
    const tir::VarNode* var = op->loop_var.get();
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Value* begin = CastToI64(Lower(op->min), var->dtype());
    llvm::Value* extent = CastToI64(Lower(op->extent), var->dtype());

    std::vector<const tir::VarNode*> captured_vars;
    std::vector<const tir::BufferNode*> captured_buffers;
    std::vector<llvm::Type*> fields = {abi_.context->getPointerTo(), i64, i64, i64};
    for (const auto& [v, value] : vars_) {
      captured_vars.push_back(v);
      fields.push_back(value->getType());
    }
    for (const auto& [buf, ptr] : buffers_) {
      captured_buffers.push_back(buf);
      fields.push_back(ptr->getType());
    }
    llvm::StructType* closure_type = llvm::StructType::create(ctx_, fields, absl::StrCat(name_, "_closure"));

    // Skip the whole call when the range is empty.
    llvm::BasicBlock* run_bb = llvm::BasicBlock::Create(ctx_, "parallel", fs_.fn);
    llvm::BasicBlock* done_bb = llvm::BasicBlock::Create(ctx_, "parallel_end", fs_.fn);
    b_.CreateCondBr(b_.CreateICmpSGT(extent, b_.getInt64(0)), run_bb, done_bb);
    b_.SetInsertPoint(run_bb);
    llvm::Value* threads = b_.CreateSExt(LoadField(abi_.context, fs_.ctx, kCtxNumThreads, "num_threads"), i64);
    threads = b_.CreateSelect(b_.CreateICmpSLT(threads, b_.getInt64(1)), b_.getInt64(1), threads);
    llvm::Value* num_tasks = b_.CreateSelect(b_.CreateICmpSLT(extent, threads), extent, threads, "num_tasks");
    llvm::Value* chunk = b_.CreateSDiv(b_.CreateSub(b_.CreateAdd(extent, num_tasks), b_.getInt64(1)), num_tasks, "chunk");

    llvm::AllocaInst* closure = EntryAlloca(closure_type, nullptr, 8, "closure");
    auto store_field = [&](unsigned index, llvm::Value* value) {
      b_.CreateStore(value, b_.CreateStructGEP(closure_type, closure, index));
    };
    store_field(0, fs_.ctx);
    store_field(1, begin);
    store_field(2, extent);
    store_field(3, chunk);
    unsigned index = 4;
    for (const tir::VarNode* v : captured_vars) store_field(index++, vars_[v]);
    for (const tir::BufferNode* buf : captured_buffers) store_field(index++, buffers_[buf]);

    // `$` cannot appear in a kernel name, so the closure never takes a kernel's symbol.
    llvm::Function* body_fn = llvm::Function::Create(abi_.parallel_body, llvm::Function::InternalLinkage,
                                                     absl::StrCat(name_, "$parallel$", var->name), module_);
    SetCommonAttributes(body_fn);

    // Lower the body inside the closure with its own environment, then come back.
    FunctionState saved_fs = fs_;
    auto saved_vars = vars_;
    auto saved_buffers = buffers_;
    llvm::BasicBlock* saved_block = b_.GetInsertBlock();
    {
      llvm::Value* task = body_fn->getArg(0);
      fs_ = FunctionState{};
      fs_.fn = body_fn;
      fs_.entry = llvm::BasicBlock::Create(ctx_, "entry", body_fn);
      b_.SetInsertPoint(fs_.entry);
      llvm::Value* env = b_.CreatePointerCast(body_fn->getArg(2), closure_type->getPointerTo(), "env");
      fs_.ctx = LoadField(closure_type, env, 0, "ctx");
      llvm::Value* lo_begin = LoadField(closure_type, env, 1, "begin");
      llvm::Value* total = LoadField(closure_type, env, 2, "extent");
      llvm::Value* task_chunk = LoadField(closure_type, env, 3, "chunk");
      vars_.clear();
      buffers_.clear();
      unsigned field = 4;
      for (const tir::VarNode* v : captured_vars) vars_[v] = LoadField(closure_type, env, field++, v->name);
      for (const tir::BufferNode* buf : captured_buffers) {
        llvm::Value* ptr = LoadField(closure_type, env, field++, buf->name);
        buffers_[buf] = ptr;
      }
      llvm::Value* lo = b_.CreateMul(task, task_chunk, "lo");
      llvm::Value* hi = b_.CreateAdd(lo, task_chunk);
      hi = b_.CreateSelect(b_.CreateICmpSLT(hi, total), hi, total, "hi");
      // The chunk's offsets, then the loop variable in its own type.
      llvm::Type* var_type = LlvmType(var->dtype());
      llvm::Value* first = b_.CreateIntCast(b_.CreateAdd(lo_begin, lo), var_type, true);
      llvm::Value* last = b_.CreateIntCast(b_.CreateAdd(lo_begin, hi), var_type, true);
      SerialLoop(var, first, last, LoopHint::kNone, [&] { LowerStmt(op->body); });
      b_.CreateRet(b_.getInt32(0));
    }
    fs_ = saved_fs;
    vars_ = std::move(saved_vars);
    buffers_ = std::move(saved_buffers);
    b_.SetInsertPoint(saved_block);

    llvm::Value* parallel_for = LoadField(abi_.context, fs_.ctx, kCtxParallelFor, "parallel_for");
    llvm::Value* rc = b_.CreateCall(abi_.parallel_for, parallel_for,
                                    {fs_.ctx, num_tasks, body_fn, b_.CreatePointerCast(closure, b_.getInt8PtrTy())},
                                    "parallel_rc");
    // A failing task already reported its error; pass its code on.
    llvm::BasicBlock* fail_bb = llvm::BasicBlock::Create(ctx_, "parallel_fail", fs_.fn);
    llvm::MDBuilder md(ctx_);
    b_.CreateCondBr(b_.CreateICmpEQ(rc, b_.getInt32(0)), done_bb, fail_bb, md.createBranchWeights(1u << 20, 1));
    b_.SetInsertPoint(fail_bb);
    EmitReturn(rc);
    b_.SetInsertPoint(done_bb);
  }

  void LowerBlock(const tir::BlockNode* op) {
    // Bind the iteration variables one at a time (a later value may not use an earlier
    // variable, but binding in order is harmless), then run the guarded contents.
    std::function<void(size_t)> bind_from = [&](size_t k) {
      if (k == op->iter_vars.size()) {
        LowerBlockContents(op);
        return;
      }
      const tir::IterVar& iv = op->iter_vars[k];
      llvm::Value* value = Lower(iv.value);
      if (iv.value.dtype() != iv.var.dtype()) value = CastValue(value, iv.value.dtype(), iv.var.dtype());
      NameValue(value, iv.var.name());
      Bind(iv.var.get(), value, [&] { bind_from(k + 1); });
    };
    bind_from(0);
  }

  void LowerBlockContents(const tir::BlockNode* op) {
    auto contents = [&] {
      WithAllocations(op->alloc_buffers, 0, [&] {
        if (op->init.defined()) {
          llvm::Value* first = b_.getTrue();
          for (const tir::IterVar& iv : op->iter_vars) {
            if (iv.type != tir::IterType::kReduction) continue;
            llvm::Value* v = vars_[iv.var.get()];
            first = b_.CreateAnd(first, b_.CreateICmpEQ(v, llvm::ConstantInt::get(v->getType(), 0)));
          }
          llvm::BasicBlock* init_bb = llvm::BasicBlock::Create(ctx_, absl::StrCat(op->name, "_init"), fs_.fn);
          llvm::BasicBlock* body_bb = llvm::BasicBlock::Create(ctx_, absl::StrCat(op->name, "_body"), fs_.fn);
          b_.CreateCondBr(first, init_bb, body_bb);
          b_.SetInsertPoint(init_bb);
          LowerStmt(op->init);
          b_.CreateBr(body_bb);
          b_.SetInsertPoint(body_bb);
        }
        LowerStmt(op->body);
      });
    };
    if (!op->predicate.defined()) {
      contents();
      return;
    }
    llvm::Value* cond = ScalarCondition(op->predicate, "block predicate");
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, absl::StrCat(op->name, "_guarded"), fs_.fn);
    llvm::BasicBlock* end_bb = llvm::BasicBlock::Create(ctx_, absl::StrCat(op->name, "_end"), fs_.fn);
    b_.CreateCondBr(cond, then_bb, end_bb);
    b_.SetInsertPoint(then_bb);
    contents();
    b_.CreateBr(end_bb);
    b_.SetInsertPoint(end_bb);
  }

  void WithAllocations(const std::vector<tir::Buffer>& buffers, size_t k, const std::function<void()>& body) {
    if (k == buffers.size()) {
      body();
      return;
    }
    WithAllocation(buffers[k], [&] { WithAllocations(buffers, k + 1, body); });
  }

  // Elements a buffer spans: the shape's product, or with strides the furthest element + 1.
  llvm::Value* BufferSpan(const tir::Buffer& buffer) {
    llvm::Value* span = b_.getInt64(1);
    for (int d = 0; d < buffer.ndim(); ++d) {
      llvm::Value* dim = CastToI64(Lower(buffer->shape[d]), buffer->shape[d].dtype());
      if (buffer->strides.empty()) {
        span = b_.CreateMul(span, dim);
      } else {
        llvm::Value* stride = CastToI64(Lower(buffer->strides[d]), buffer->strides[d].dtype());
        span = b_.CreateAdd(span, b_.CreateMul(b_.CreateSub(dim, b_.getInt64(1)), stride));
      }
    }
    return span;
  }

  void WithAllocation(const tir::Buffer& buffer, const std::function<void()>& body) {
    llvm::Type* elem = StorageType(buffer->dtype);
    int64_t elem_bytes = (buffer->dtype.bits() + 7) / 8;
    if (buffer->dtype.is_bool()) elem_bytes = 1;
    llvm::Value* span = BufferSpan(buffer);
    if (!status_.ok()) return;
    if (buffer->dtype.is_sub_byte()) {  // packed: the span in bytes
      span = b_.CreateUDiv(b_.CreateAdd(b_.CreateMul(span, b_.getInt64(buffer->dtype.bits())), b_.getInt64(7)),
                           b_.getInt64(8));
    }
    llvm::Value* ptr;
    llvm::Value* workspace = nullptr;
    auto* constant = llvm::dyn_cast<llvm::ConstantInt>(span);
    if (constant != nullptr && constant->getSExtValue() * elem_bytes <= kMaxStackAllocationBytes) {
      int64_t count = std::max<int64_t>(constant->getSExtValue(), 1);
      llvm::AllocaInst* a = EntryAlloca(llvm::ArrayType::get(elem, count), nullptr, 64, buffer->name);
      ptr = b_.CreatePointerCast(a, elem->getPointerTo(), buffer->name);
    } else {
      llvm::Value* bytes = b_.CreateMul(span, b_.getInt64(elem_bytes), absl::StrCat(buffer->name, "_bytes"));
      llvm::Value* alloc = LoadField(abi_.context, fs_.ctx, kCtxWorkspaceAlloc, "workspace_alloc");
      workspace = b_.CreateCall(abi_.workspace_alloc, alloc, {fs_.ctx, bytes}, buffer->name);
      Check(b_.CreateIsNotNull(workspace),
            absl::StrCat("kernel ", EscapeFormat(name_), ": cannot allocate %lld bytes of workspace for buffer ",
                         EscapeFormat(buffer->name)),
            {bytes});
      ptr = b_.CreatePointerCast(workspace, elem->getPointerTo());
      fs_.workspaces.push_back(workspace);
    }
    auto it = buffers_.find(buffer.get());
    std::optional<llvm::Value*> saved;
    if (it != buffers_.end()) saved = it->second;
    buffers_[buffer.get()] = ptr;
    body();
    if (saved) {
      buffers_[buffer.get()] = *saved;
    } else {
      buffers_.erase(buffer.get());
    }
    if (workspace != nullptr) {
      fs_.workspaces.pop_back();
      llvm::Value* free_fn = LoadField(abi_.context, fs_.ctx, kCtxWorkspaceFree, "workspace_free");
      b_.CreateCall(abi_.workspace_free, free_fn, {fs_.ctx, workspace});
    }
  }

  // ------------------------------------------------------------------ buffer access

  // The element offset of `indices` (an i64, or a vector of i64 when an index is a vector).
  llvm::Value* FlatOffset(const tir::BufferNode* buffer, const std::vector<PrimExpr>& indices) {
    int lanes = 1;
    for (const PrimExpr& idx : indices) lanes = std::max(lanes, idx.dtype().lanes());
    auto widen = [&](llvm::Value* v) {
      if (lanes > 1 && !v->getType()->isVectorTy()) return b_.CreateVectorSplat(lanes, v);
      return v;
    };
    llvm::Value* offset = nullptr;
    for (size_t k = 0; k < indices.size(); ++k) {
      if (!indices[k].dtype().is_integer()) {
        return Fail(absl::StrCat("index ", tir::ToString(indices[k]), " of ", buffer->name, " is not an integer"),
                    b_.getInt64Ty());
      }
      llvm::Value* idx = widen(CastToI64(Lower(indices[k]), indices[k].dtype()));
      if (!buffer->strides.empty()) {
        llvm::Value* stride = widen(CastToI64(Lower(buffer->strides[k]), buffer->strides[k].dtype()));
        llvm::Value* term = b_.CreateNSWMul(idx, stride);
        offset = offset == nullptr ? term : b_.CreateNSWAdd(offset, term);
      } else if (offset == nullptr) {
        offset = idx;
      } else {
        llvm::Value* dim = widen(CastToI64(Lower(buffer->shape[k]), buffer->shape[k].dtype()));
        offset = b_.CreateNSWAdd(b_.CreateNSWMul(offset, dim), idx);
      }
    }
    if (offset == nullptr) offset = b_.getInt64(0);
    return widen(offset);
  }

  llvm::Value* BufferPointer(const tir::BufferNode* buffer) {
    auto it = buffers_.find(buffer);
    if (it == buffers_.end()) {
      return Fail(absl::StrCat("buffer ", buffer->name, " is used outside the function's parameters and allocations"));
    }
    return it->second;
  }

  // A vector access whose last index is ramp(base, 1, lanes) and whose other indices are
  // scalars touches consecutive elements: one vector load or store at base's offset.
  // broadcast(x) + ramp(b, 1, L) and ramp(b, 1, L) + broadcast(x) count as ramp(x + b, 1, L).
  std::optional<std::vector<PrimExpr>> ContiguousBase(const std::vector<PrimExpr>& indices) {
    if (indices.empty()) return std::nullopt;
    for (size_t k = 0; k + 1 < indices.size(); ++k) {
      if (indices[k].dtype().lanes() != 1) return std::nullopt;
    }
    auto unit_ramp = [](const PrimExpr& e) -> const tir::RampNode* {
      const auto* ramp = e.as<tir::RampNode>();
      return ramp != nullptr && ramp->stride.as_int() == 1 ? ramp : nullptr;
    };
    const PrimExpr& last = indices.back();
    PrimExpr base;
    if (const tir::RampNode* ramp = unit_ramp(last)) {
      base = ramp->base;
    } else if (const auto* add = last.as<tir::BinaryNode>(); add != nullptr && add->kind() == ExprKind::kAdd) {
      const auto* bx = add->a.as<tir::BroadcastNode>();
      const auto* by = add->b.as<tir::BroadcastNode>();
      if (bx != nullptr && unit_ramp(add->b) != nullptr) base = tir::Add(bx->value, unit_ramp(add->b)->base);
      if (by != nullptr && unit_ramp(add->a) != nullptr) base = tir::Add(unit_ramp(add->a)->base, by->value);
    }
    if (!base.defined()) return std::nullopt;
    std::vector<PrimExpr> result(indices.begin(), indices.end() - 1);
    result.push_back(base);
    return result;
  }

  llvm::Value* FromStorage(llvm::Value* v, DataType dtype) {
    if (!dtype.is_bool()) return v;
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }

  llvm::Value* ToStorage(llvm::Value* v, DataType dtype) {
    if (!dtype.is_bool()) return v;
    llvm::Type* byte = b_.getInt8Ty();
    llvm::Type* type = dtype.lanes() > 1 ? llvm::FixedVectorType::get(byte, dtype.lanes()) : byte;
    return b_.CreateZExt(v, type);
  }

  // One element of a packed sub-byte buffer (tir/data_type.h): element i is bits
  // [i * b % 8, ...) of byte i * b / 8, low bits first. `offset` is an i64 element offset.
  llvm::Value* PackedLoad(const tir::BufferNode* buffer, llvm::Value* base_ptr, llvm::Value* offset) {
    const int bits = buffer->dtype.bits();
    llvm::Value* bit = b_.CreateNSWMul(offset, b_.getInt64(bits));
    llvm::Value* byte_ptr = b_.CreateInBoundsGEP(b_.getInt8Ty(), base_ptr, b_.CreateLShr(bit, 3));
    llvm::Value* byte = b_.CreateAlignedLoad(b_.getInt8Ty(), byte_ptr, llvm::Align(1), buffer->name);
    llvm::Value* shift = b_.CreateTrunc(b_.CreateAnd(bit, b_.getInt64(7)), b_.getInt8Ty());
    return b_.CreateTrunc(b_.CreateLShr(byte, shift), ScalarType(buffer->dtype));
  }

  // Read-modify-write of the element's byte: not atomic, so no other thread may write a
  // neighbour in the same byte meanwhile (tir/data_type.h).
  void PackedStore(const tir::BufferNode* buffer, llvm::Value* base_ptr, llvm::Value* offset, llvm::Value* value) {
    const int bits = buffer->dtype.bits();
    llvm::Value* bit = b_.CreateNSWMul(offset, b_.getInt64(bits));
    llvm::Value* byte_ptr = b_.CreateInBoundsGEP(b_.getInt8Ty(), base_ptr, b_.CreateLShr(bit, 3));
    llvm::Value* shift = b_.CreateTrunc(b_.CreateAnd(bit, b_.getInt64(7)), b_.getInt8Ty());
    llvm::Value* mask = b_.CreateShl(b_.getInt8(static_cast<uint8_t>((1u << bits) - 1)), shift);
    llvm::Value* old = b_.CreateAlignedLoad(b_.getInt8Ty(), byte_ptr, llvm::Align(1));
    llvm::Value* placed = b_.CreateShl(b_.CreateZExt(value, b_.getInt8Ty()), shift);
    b_.CreateAlignedStore(b_.CreateOr(b_.CreateAnd(old, b_.CreateNot(mask)), placed), byte_ptr, llvm::Align(1));
  }

  llvm::Value* LoadBuffer(const tir::BufferLoadNode* op) {
    const tir::BufferNode* buffer = op->buffer.get();
    DataType dtype = op->dtype();
    llvm::Type* result = LlvmType(dtype);
    llvm::Value* base_ptr = BufferPointer(buffer);
    if (base_ptr == nullptr) return llvm::UndefValue::get(result);
    if (buffer->dtype.is_sub_byte()) {
      llvm::Value* offsets = FlatOffset(buffer, op->indices);
      if (dtype.lanes() == 1) {
        if (offsets->getType()->isVectorTy()) {
          return Fail(absl::StrCat("load from ", buffer->name, ": only the last index may be a vector"), result);
        }
        return PackedLoad(buffer, base_ptr, offsets);
      }
      if (!offsets->getType()->isVectorTy()) offsets = b_.CreateVectorSplat(dtype.lanes(), offsets);
      llvm::Value* out = llvm::UndefValue::get(result);
      for (int l = 0; l < dtype.lanes(); ++l) {
        out = b_.CreateInsertElement(out, PackedLoad(buffer, base_ptr, b_.CreateExtractElement(offsets, l)), l);
      }
      return out;
    }
    llvm::Type* elem = StorageType(buffer->dtype);
    llvm::Align align(std::max<uint64_t>(1, elem->getPrimitiveSizeInBits() / 8));
    int lanes = dtype.lanes();
    if (lanes == 1) {
      llvm::Value* offset = FlatOffset(buffer, op->indices);
      if (offset->getType()->isVectorTy()) {
        return Fail(absl::StrCat("load from ", buffer->name, ": only the last index may be a vector"), result);
      }
      llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, offset);
      return FromStorage(b_.CreateAlignedLoad(elem, ptr, align, buffer->name), dtype);
    }
    if (std::optional<std::vector<PrimExpr>> base = ContiguousBase(op->indices)) {
      llvm::Type* vec = llvm::FixedVectorType::get(elem, lanes);
      llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, FlatOffset(buffer, *base));
      ptr = b_.CreatePointerCast(ptr, vec->getPointerTo());
      return FromStorage(b_.CreateAlignedLoad(vec, ptr, align, buffer->name), dtype);
    }
    llvm::Value* offsets = FlatOffset(buffer, op->indices);
    if (!offsets->getType()->isVectorTy()) offsets = b_.CreateVectorSplat(lanes, offsets);
    llvm::Value* out = llvm::UndefValue::get(llvm::FixedVectorType::get(elem, lanes));
    for (int l = 0; l < lanes; ++l) {
      llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, b_.CreateExtractElement(offsets, l));
      out = b_.CreateInsertElement(out, b_.CreateAlignedLoad(elem, ptr, align), l);
    }
    return FromStorage(out, dtype);
  }

  void StoreBuffer(const tir::BufferNode* buffer, const std::vector<PrimExpr>& indices, llvm::Value* value,
                   DataType dtype) {
    if (!status_.ok()) return;
    llvm::Value* base_ptr = BufferPointer(buffer);
    if (base_ptr == nullptr) return;
    int index_lanes = 1;
    for (const PrimExpr& idx : indices) index_lanes = std::max(index_lanes, idx.dtype().lanes());
    int lanes = dtype.lanes();
    if (lanes != index_lanes) {
      Fail(absl::StrCat("store to ", buffer->name, ": a value of ", lanes, " lanes at an index of ", index_lanes,
                        " lanes"));
      return;
    }
    if (buffer->dtype.is_sub_byte()) {
      llvm::Value* offsets = FlatOffset(buffer, indices);
      if (lanes == 1) {
        PackedStore(buffer, base_ptr, offsets, value);
        return;
      }
      for (int l = 0; l < lanes; ++l) {
        PackedStore(buffer, base_ptr, b_.CreateExtractElement(offsets, l), b_.CreateExtractElement(value, l));
      }
      return;
    }
    llvm::Type* elem = StorageType(buffer->dtype);
    llvm::Align align(std::max<uint64_t>(1, elem->getPrimitiveSizeInBits() / 8));
    value = ToStorage(value, dtype);
    if (lanes == 1) {
      b_.CreateAlignedStore(value, b_.CreateInBoundsGEP(elem, base_ptr, FlatOffset(buffer, indices)), align);
      return;
    }
    if (std::optional<std::vector<PrimExpr>> base = ContiguousBase(indices)) {
      llvm::Type* vec = llvm::FixedVectorType::get(elem, lanes);
      llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, FlatOffset(buffer, *base));
      b_.CreateAlignedStore(value, b_.CreatePointerCast(ptr, vec->getPointerTo()), align);
      return;
    }
    llvm::Value* offsets = FlatOffset(buffer, indices);
    for (int l = 0; l < lanes; ++l) {
      llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, b_.CreateExtractElement(offsets, l));
      b_.CreateAlignedStore(b_.CreateExtractElement(value, l), ptr, align);
    }
  }

  // ------------------------------------------------------------------ expressions

  llvm::Value* CastToI64(llvm::Value* v, DataType from) {
    llvm::Type* target = b_.getInt64Ty();
    if (v->getType()->isVectorTy()) {
      target = llvm::FixedVectorType::get(target, llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements());
    }
    if (v->getType() == target) return v;
    if (!from.is_integer() && !from.is_bool()) {
      return Fail(absl::StrCat("a ", from.ToString(), " value is used as an index or extent"), target);
    }
    return b_.CreateIntCast(v, target, from.is_int());
  }

  llvm::Value* CastValue(llvm::Value* v, DataType from, DataType to) {
    if (from == to) return v;
    llvm::Type* dst = LlvmType(to);
    if (to.is_bool()) {
      if (from.is_floating()) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
      if (from.is_handle()) return b_.CreateIsNotNull(v);
      return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    }
    if (from.is_handle() || to.is_handle()) {
      if (from.is_handle() && to.is_integer()) return b_.CreatePtrToInt(v, dst);
      if (to.is_handle() && from.is_integer()) return b_.CreateIntToPtr(v, dst);
      return Fail(absl::StrCat("cannot cast ", from.ToString(), " to ", to.ToString()), dst);
    }
    bool from_signed = from.is_int();
    if (from.is_bool()) {
      return to.is_floating() ? b_.CreateUIToFP(v, dst) : b_.CreateZExt(v, dst);
    }
    if (from.is_integer() && to.is_integer()) return b_.CreateIntCast(v, dst, from_signed);
    if (from.is_integer() && to.is_floating()) return from_signed ? b_.CreateSIToFP(v, dst) : b_.CreateUIToFP(v, dst);
    if (from.is_floating() && to.is_integer()) return to.is_int() ? b_.CreateFPToSI(v, dst) : b_.CreateFPToUI(v, dst);
    return b_.CreateFPCast(v, dst);
  }

  llvm::Value* Lower(const PrimExpr& e) {
    if (!status_.ok()) return llvm::UndefValue::get(SafeType(e.dtype()));
    switch (e.kind()) {
      case ExprKind::kIntImm: {
        const auto* imm = e.as<tir::IntImmNode>();
        return llvm::ConstantInt::get(LlvmType(e.dtype()), static_cast<uint64_t>(imm->value), /*isSigned=*/true);
      }
      case ExprKind::kFloatImm:
        return llvm::ConstantFP::get(LlvmType(e.dtype()), e.as<tir::FloatImmNode>()->value);
      case ExprKind::kVar: {
        const auto* var = e.as<tir::VarNode>();
        auto it = vars_.find(var);
        if (it == vars_.end()) return Fail(absl::StrCat("variable ", var->name, " is used where it is not defined"), LlvmType(e.dtype()));
        return it->second;
      }
      case ExprKind::kNot: return b_.CreateNot(Lower(e.as<tir::NotNode>()->a));
      case ExprKind::kBitNot: return b_.CreateNot(Lower(e.as<tir::BitNotNode>()->a));
      case ExprKind::kReinterpret:
        return b_.CreateBitCast(Lower(e.as<tir::ReinterpretNode>()->value), LlvmType(e.dtype()));
      case ExprKind::kSelect: {
        const auto* s = e.as<tir::SelectNode>();
        llvm::Value* cond = Lower(s->condition);
        llvm::Value* t = Lower(s->true_value);
        llvm::Value* f = Lower(s->false_value);
        return b_.CreateSelect(cond, t, f);
      }
      case ExprKind::kCast: {
        const auto* c = e.as<tir::CastNode>();
        return CastValue(Lower(c->value), c->value.dtype(), e.dtype());
      }
      case ExprKind::kCall: return LowerCall(e.as<tir::CallNode>());
      case ExprKind::kBufferLoad: return LoadBuffer(e.as<tir::BufferLoadNode>());
      case ExprKind::kRamp: {
        const auto* r = e.as<tir::RampNode>();
        llvm::Value* base = b_.CreateVectorSplat(r->lanes, Lower(r->base));
        llvm::Value* stride = b_.CreateVectorSplat(r->lanes, Lower(r->stride));
        DataType t = r->base.dtype();
        std::vector<llvm::Constant*> steps;
        for (int l = 0; l < r->lanes; ++l) {
          steps.push_back(t.is_floating() ? llvm::ConstantFP::get(ScalarType(t), l)
                                          : llvm::ConstantInt::get(ScalarType(t), l));
        }
        llvm::Value* lane = llvm::ConstantVector::get(steps);
        if (t.is_floating()) return b_.CreateFAdd(base, b_.CreateFMul(stride, lane));
        return b_.CreateAdd(base, b_.CreateMul(stride, lane));
      }
      case ExprKind::kBroadcast: {
        const auto* bc = e.as<tir::BroadcastNode>();
        return b_.CreateVectorSplat(bc->lanes, Lower(bc->value));
      }
      case ExprKind::kLet: {
        const auto* let = e.as<tir::LetNode>();
        llvm::Value* value = Lower(let->value);
        llvm::Value* result = nullptr;
        Bind(let->var.get(), value, [&] { result = Lower(let->body); });
        return result;
      }
      default: return LowerBinary(e.as<tir::BinaryNode>());
    }
  }

  // A type that never fails, for placeholders after an error.
  llvm::Type* SafeType(DataType t) {
    if (t.is_bfloat()) return b_.getInt16Ty();
    return LlvmType(t);
  }

  llvm::Value* LowerBinary(const tir::BinaryNode* op) {
    KILN_CHECK(op != nullptr);
    DataType t = op->a.dtype();
    llvm::Value* a = Lower(op->a);
    llvm::Value* b = Lower(op->b);
    bool is_float = t.is_floating();
    bool is_signed = t.is_int();
    switch (op->kind()) {
      case ExprKind::kAdd:
        return is_float ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, is_signed);
      case ExprKind::kSub:
        return is_float ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, is_signed);
      case ExprKind::kMul:
        return is_float ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, is_signed);
      case ExprKind::kDiv:
        if (is_float) return b_.CreateFDiv(a, b);
        return is_signed ? b_.CreateSDiv(a, b) : b_.CreateUDiv(a, b);
      case ExprKind::kFloorDiv: {
        if (is_float) return Intrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(a, b));
        if (!is_signed) return b_.CreateUDiv(a, b);
        // Truncating division, minus one when the remainder is nonzero and has the
        // opposite sign of the divisor.
        llvm::Value* q = b_.CreateSDiv(a, b);
        llvm::Value* r = b_.CreateSRem(a, b);
        llvm::Value* zero = llvm::Constant::getNullValue(a->getType());
        llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
        return b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()));
      }
      case ExprKind::kFloorMod: {
        if (is_float) {
          llvm::Value* q = Intrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(a, b));
          return b_.CreateFSub(a, b_.CreateFMul(q, b));
        }
        if (!is_signed) return b_.CreateURem(a, b);
        llvm::Value* r = b_.CreateSRem(a, b);
        llvm::Value* zero = llvm::Constant::getNullValue(a->getType());
        llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
        return b_.CreateAdd(r, b_.CreateSelect(adjust, b, zero));
      }
      case ExprKind::kMin:
        if (is_float) return FloatMinMax(/*is_max=*/false, a, b);
        return b_.CreateSelect(is_signed ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b), a, b);
      case ExprKind::kMax:
        if (is_float) return FloatMinMax(/*is_max=*/true, a, b);
        return b_.CreateSelect(is_signed ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b), a, b);
      case ExprKind::kEQ: return is_float ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
      case ExprKind::kNE: return is_float ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
      case ExprKind::kLT:
        return is_float ? b_.CreateFCmpOLT(a, b) : is_signed ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
      case ExprKind::kLE:
        return is_float ? b_.CreateFCmpOLE(a, b) : is_signed ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
      case ExprKind::kGT:
        return is_float ? b_.CreateFCmpOGT(a, b) : is_signed ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
      case ExprKind::kGE:
        return is_float ? b_.CreateFCmpOGE(a, b) : is_signed ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
      case ExprKind::kAnd: case ExprKind::kBitAnd: return b_.CreateAnd(a, b);
      case ExprKind::kOr: case ExprKind::kBitOr: return b_.CreateOr(a, b);
      case ExprKind::kBitXor: return b_.CreateXor(a, b);
      case ExprKind::kShl: case ExprKind::kShr: {
        // LLVM's shifts are poison for an amount outside [0, bits); TIR's shift every bit
        // out (tir/expr.h). An unsigned compare also sends negative amounts out of range.
        // With a constant amount all of this folds away.
        llvm::Value* bits = llvm::ConstantInt::get(a->getType(), t.bits());
        llvm::Value* in_range = b_.CreateICmpULT(b, bits);
        if (op->kind() == ExprKind::kShr && is_signed) {
          llvm::Value* last = llvm::ConstantInt::get(a->getType(), t.bits() - 1);
          return b_.CreateAShr(a, b_.CreateSelect(in_range, b, last));
        }
        // A poison shift in the arm select does not choose does not make the result poison.
        llvm::Value* shifted = op->kind() == ExprKind::kShl ? b_.CreateShl(a, b) : b_.CreateLShr(a, b);
        return b_.CreateSelect(in_range, shifted, llvm::Constant::getNullValue(a->getType()));
      }
      default: break;
    }
    return Fail(absl::StrCat("cannot lower expression kind ", tir::KindName(op->kind())), LlvmType(op->dtype()));
  }

  // NaN-propagating float min/max (tir/expr.h). `b > a ? b : a` (ordered compare) is one
  // maxps/vmaxps on x86 and already yields a when either operand is NaN; only a NaN in b
  // needs a second select (cmpunord + blend), skipped when b is a constant that is not NaN
  // (relu's 0, a clip bound). llvm.maximum would say the same, but LLVM 14 does not lower
  // it to vector code on x86.
  llvm::Value* FloatMinMax(bool is_max, llvm::Value* a, llvm::Value* b) {
    auto not_nan = [](llvm::Value* v) {
      auto* c = llvm::dyn_cast<llvm::Constant>(v);
      if (c != nullptr && c->getType()->isVectorTy()) c = c->getSplatValue();
      const auto* f = llvm::dyn_cast_or_null<llvm::ConstantFP>(c);
      return f != nullptr && !f->getValueAPF().isNaN();
    };
    if (not_nan(a) && !not_nan(b)) std::swap(a, b);
    llvm::Value* r = b_.CreateSelect(is_max ? b_.CreateFCmpOGT(b, a) : b_.CreateFCmpOLT(b, a), b, a);
    if (not_nan(b)) return r;
    return b_.CreateSelect(b_.CreateFCmpUNO(b, b), b, r);
  }

  llvm::Value* Intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) { return b_.CreateUnaryIntrinsic(id, x); }

  // A libm function on every lane: scalar f32 and f64 have their own entry points; half
  // goes through float.
  llvm::Value* LibmCall(const std::string& name, llvm::Value* x) {
    llvm::Type* type = x->getType();
    if (auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(type)) {
      llvm::Value* out = llvm::UndefValue::get(type);
      for (unsigned l = 0; l < vec->getNumElements(); ++l) {
        out = b_.CreateInsertElement(out, LibmCall(name, b_.CreateExtractElement(x, l)), l);
      }
      return out;
    }
    if (type->isHalfTy()) return b_.CreateFPTrunc(LibmCall(name, b_.CreateFPExt(x, b_.getFloatTy())), type);
    std::string symbol = type->isFloatTy() ? name + "f" : name;
    llvm::FunctionCallee fn = module_->getOrInsertFunction(symbol, llvm::FunctionType::get(type, {type}, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
      f->setDoesNotThrow();
      f->setDoesNotAccessMemory();
      f->setWillReturn();
    }
    return b_.CreateCall(fn, {x});
  }

  llvm::Value* FastMath(const std::string& op, llvm::Value* x) {
    using Emitter = llvm::Value* (*)(llvm::IRBuilderBase&, llvm::Value*);
    Emitter emit = op == "exp"       ? EmitFastExpF32
                   : op == "erf"     ? EmitFastErfF32
                   : op == "tanh"    ? EmitFastTanhF32
                   : op == "sigmoid" ? EmitFastSigmoidF32
                   : op == "log"     ? EmitFastLogF32
                                     : nullptr;
    if (emit == nullptr) return nullptr;
    llvm::Type* type = x->getType();
    if (IsFloat32OrVector(type)) return emit(b_, x);
    if (type->getScalarType()->isHalfTy()) {
      llvm::Type* f32 = b_.getFloatTy();
      if (auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(type)) f32 = llvm::FixedVectorType::get(f32, vec->getNumElements());
      return b_.CreateFPTrunc(emit(b_, b_.CreateFPExt(x, f32)), type);
    }
    return nullptr;
  }

  llvm::Value* LowerCall(const tir::CallNode* call) {
    DataType t = call->dtype();
    llvm::Type* type = LlvmType(t);
    const std::string& op = call->op;
    size_t arity = op == "pow" ? 2 : 1;
    if (call->args.size() != arity) {
      return Fail(absl::StrCat(op, " takes ", arity, " argument(s), got ", call->args.size()), type);
    }
    for (const PrimExpr& arg : call->args) {
      if (!arg.dtype().is_float() || arg.dtype() != t) {
        return Fail(absl::StrCat(op, "(", tir::ToString(call->args[0]), "): math intrinsics take float arguments of one type, got ",
                                 arg.dtype().ToString()),
                    type);
      }
    }
    llvm::Value* x = Lower(call->args[0]);
    llvm::Value* one = llvm::ConstantFP::get(type, 1.0);
    // float32 (and float16, through float32): inline polynomial code that stays SIMD in
    // vector loops, where llvm.exp or libm would be called lane by lane.
    if (llvm::Value* fast = FastMath(op, x)) return fast;
    if (op == "exp") return Intrinsic(llvm::Intrinsic::exp, x);
    if (op == "log") return Intrinsic(llvm::Intrinsic::log, x);
    if (op == "sqrt") return Intrinsic(llvm::Intrinsic::sqrt, x);
    if (op == "rsqrt") return b_.CreateFDiv(one, Intrinsic(llvm::Intrinsic::sqrt, x));
    if (op == "fabs") return Intrinsic(llvm::Intrinsic::fabs, x);
    if (op == "floor") return Intrinsic(llvm::Intrinsic::floor, x);
    if (op == "ceil") return Intrinsic(llvm::Intrinsic::ceil, x);
    if (op == "round") return Intrinsic(llvm::Intrinsic::roundeven, x);
    if (op == "sin") return Intrinsic(llvm::Intrinsic::sin, x);
    if (op == "cos") return Intrinsic(llvm::Intrinsic::cos, x);
    if (op == "pow") return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, Lower(call->args[1]));
    if (op == "sigmoid") {
      llvm::Value* e = Intrinsic(llvm::Intrinsic::exp, b_.CreateFNeg(x));
      return b_.CreateFDiv(one, b_.CreateFAdd(one, e));
    }
    if (op == "tanh") return LibmCall("tanh", x);
    if (op == "erf") return LibmCall("erf", x);
    return Fail(absl::StrCat("unknown math intrinsic ", op), type);
  }

  llvm::Module* module_;
  llvm::LLVMContext& ctx_;
  const AbiTypes& abi_;
  const llvm::TargetMachine& machine_;
  std::string name_;
  const tir::PrimFunc& func_;
  llvm::IRBuilder<> b_;
  FunctionState fs_;
  std::unordered_map<const tir::VarNode*, llvm::Value*> vars_;
  std::unordered_map<const tir::BufferNode*, llvm::Value*> buffers_;
  absl::Status status_;
};

}  // namespace

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
