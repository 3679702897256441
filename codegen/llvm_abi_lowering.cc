#include "codegen/llvm_kernel_lowering.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/Constants.h"

namespace kiln::codegen {

// ------------------------------------------------------------------ kernel ABI intrinsics

// address_of(B[i]) and prefetch(B[i]) name an element without reading it: the buffer's
// pointer plus its offset, as an i8*. A prefetch's element may lie past the buffer's end
// (PrefetchAhead's last pairs ask beyond their stream), so its address is not `inbounds`.
llvm::Value* KernelLowering::ElementAddress(const tir::CallNode* call, bool in_bounds) {
  const auto* element = call->args[0].as<tir::BufferLoadNode>();
  if (element == nullptr || element->dtype().lanes() != 1 || element->buffer->dtype.is_sub_byte()) {
    return Fail(absl::StrCat(call->op, "(", tir::ToString(call->args[0]),
                             "): the argument must be a scalar element of a byte-addressable buffer"),
                b_.getInt8PtrTy());
  }
  const tir::BufferNode* buffer = element->buffer.get();
  llvm::Value* base = BufferPointer(buffer);
  llvm::Value* offset = FlatOffset(buffer, element->indices);
  if (!status_.ok()) return llvm::UndefValue::get(b_.getInt8PtrTy());
  llvm::Value* address = in_bounds ? b_.CreateInBoundsGEP(StorageType(buffer->dtype), base, offset, "address")
                                   : b_.CreateGEP(StorageType(buffer->dtype), base, offset, "address");
  return b_.CreatePointerCast(address, b_.getInt8PtrTy());
}

// prefetch(B[i]): LLVM's prefetch of that address for a read, locality 2 (x86's
// prefetcht1: into L2, which holds the next panel while L1 serves the current one), data.
void KernelLowering::LowerPrefetch(const tir::CallNode* call) {
  llvm::Value* address = ElementAddress(call, /*in_bounds=*/false);
  if (!status_.ok()) return;
  llvm::Function* prefetch = llvm::Intrinsic::getDeclaration(module_, llvm::Intrinsic::prefetch, {b_.getInt8PtrTy()});
  b_.CreateCall(prefetch, {address, b_.getInt32(0), b_.getInt32(2), b_.getInt32(1)});
}

llvm::Value* KernelLowering::LowerAbiCall(const tir::CallNode* call) {
  const std::string& op = call->op;
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* i32 = b_.getInt32Ty();
  auto arg = [&](size_t k) { return Lower(call->args[k]); };
  if (op == "address_of") return ElementAddress(call);
  if (op == "arg_type_code" || op == "arg_int" || op == "arg_float" || op == "arg_handle") {
    llvm::Value* args = b_.CreatePointerCast(arg(0), abi_.kiln_arg->getPointerTo());
    llvm::Value* slot = b_.CreateInBoundsGEP(abi_.kiln_arg, args, arg(1));
    if (op == "arg_type_code") return LoadField(abi_.kiln_arg, slot, 1, "type_code");
    llvm::Value* payload = b_.CreateStructGEP(abi_.kiln_arg, slot, 0);
    llvm::Type* type = op == "arg_int" ? i64 : op == "arg_float" ? b_.getDoubleTy() : b_.getInt8PtrTy();
    return b_.CreateLoad(type, b_.CreatePointerCast(payload, type->getPointerTo()), "arg");
  }
  if (op == "is_null") return b_.CreateIsNull(arg(0));
  llvm::Value* tensor = b_.CreatePointerCast(arg(0), abi_.dl_tensor->getPointerTo());
  if (op == "tensor_data") {
    llvm::Value* data = LoadField(abi_.dl_tensor, tensor, kTensorData, "data");
    llvm::Value* byte_offset = LoadField(abi_.dl_tensor, tensor, kTensorByteOffset, "byte_offset");
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), data, byte_offset);
  }
  if (op == "tensor_ndim") return LoadField(abi_.dl_tensor, tensor, kTensorNdim, "ndim");
  if (op == "tensor_device_type") {
    llvm::Value* device = b_.CreateStructGEP(abi_.dl_tensor, tensor, kTensorDevice);
    return LoadField(abi_.dl_device, device, 0, "device_type");
  }
  if (op == "tensor_dtype_code" || op == "tensor_dtype_bits" || op == "tensor_dtype_lanes") {
    llvm::Value* dtype = b_.CreateStructGEP(abi_.dl_tensor, tensor, kTensorDtype);
    unsigned field = op == "tensor_dtype_code" ? 0 : op == "tensor_dtype_bits" ? 1 : 2;
    return b_.CreateZExt(LoadField(abi_.dl_dtype, dtype, field, op.substr(7)), i32);
  }
  if (op == "tensor_shape") {
    llvm::Value* shape = LoadField(abi_.dl_tensor, tensor, kTensorShape, "shape");
    return b_.CreateLoad(i64, b_.CreateInBoundsGEP(i64, shape, arg(1)), "dim");
  }
  if (op == "tensor_stride") {
    llvm::Value* d = arg(1);
    llvm::Value* compact = arg(2);
    llvm::Value* strides = LoadField(abi_.dl_tensor, tensor, kTensorStrides, "strides");
    // Loaded only when the tensor has strides; `select` over a load would read NULL.
    llvm::BasicBlock* before = b_.GetInsertBlock();
    llvm::BasicBlock* load_bb = llvm::BasicBlock::Create(ctx_, "load_stride", fs_.fn);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "stride", fs_.fn);
    b_.CreateCondBr(b_.CreateIsNotNull(strides), load_bb, join);
    b_.SetInsertPoint(load_bb);
    llvm::Value* loaded = b_.CreateLoad(i64, b_.CreateInBoundsGEP(i64, strides, d));
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    llvm::PHINode* stride = b_.CreatePHI(i64, 2, "stride");
    stride->addIncoming(compact, before);
    stride->addIncoming(loaded, load_bb);
    return stride;
  }
  return Fail(absl::StrCat("intrinsic ", op, " is not supported by the CPU code generator"), LlvmType(call->dtype()));
}

// launch_kernel(k, grid x3, block x3, shared bytes, args...): the launch dimensions and a
// KilnArg array on the stack, then ctx->launch; a nonzero code (its error already set) is
// returned from the kernel.
void KernelLowering::LowerLaunch(const tir::CallNode* call) {
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Value* dims = EntryAlloca(abi_.launch_dims, nullptr, 8, "launch_dims");
  for (unsigned j = 0; j < 7; ++j) {
    llvm::Value* value = b_.CreateTrunc(Lower(call->args[1 + j]), i32);
    llvm::Value* slot = j < 6 ? b_.CreateConstInBoundsGEP2_32(abi_.launch_dims, dims, 0, j / 3)
                              : b_.CreateStructGEP(abi_.launch_dims, dims, 2);
    if (j < 6) slot = b_.CreateConstInBoundsGEP2_32(llvm::ArrayType::get(i32, 3), slot, 0, j % 3);
    b_.CreateStore(value, slot);
  }
  size_t n = call->args.size() - 8;
  llvm::Value* args = EntryAlloca(abi_.kiln_arg, b_.getInt64(std::max<size_t>(n, 1)), 8, "launch_args");
  for (size_t i = 0; i < n; ++i) {
    const PrimExpr& a = call->args[8 + i];
    llvm::Value* value = Lower(a);
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(abi_.kiln_arg, args, i);
    llvm::Value* payload = b_.CreateStructGEP(abi_.kiln_arg, slot, 0);
    int code = tir::kArgTypeInt;
    if (a.dtype().is_float()) {
      code = tir::kArgTypeFloat;
      value = b_.CreateFPCast(value, b_.getDoubleTy());
    } else if (a.dtype().is_handle()) {
      code = tir::kArgTypeHandle;
    } else {
      value = b_.CreateIntCast(value, b_.getInt64Ty(), a.dtype().is_int());
    }
    b_.CreateStore(value, b_.CreatePointerCast(payload, value->getType()->getPointerTo()));
    b_.CreateStore(b_.getInt32(code), b_.CreateStructGEP(abi_.kiln_arg, slot, 1));
  }
  llvm::Value* launch = LoadField(abi_.context, fs_.ctx, kCtxLaunch, "launch");
  Check(b_.CreateIsNotNull(launch),
        absl::StrCat("kernel ", EscapeFormat(name_),
                     ": this call context cannot launch device kernels (the function was compiled for a GPU)"));
  llvm::Value* rc = b_.CreateCall(abi_.launch, launch,
                                  {fs_.ctx, b_.CreateTrunc(Lower(call->args[0]), i32), dims, args,
                                   b_.getInt32(static_cast<int32_t>(n))},
                                  "launch_rc");
  ReturnIfNonzero(rc, llvm::BasicBlock::Create(ctx_, "launch_ok", fs_.fn));
}

}  // namespace kiln::codegen
