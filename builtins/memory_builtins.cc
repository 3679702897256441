// Memory builtins: fresh tensors, planned storage and tensors inside it, copies, views.
#include "builtins/builtin_args.h"
#include "builtins/default_builtins.h"
#include "support/status_macros.h"
#include "vm/storage.h"

namespace kiln::builtins {
namespace {

using vm::BuiltinContext;
using vm::Value;

// (shape, int dtype) -> tensor
absl::Status AllocTensor(BuiltinContext& ctx, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 2));
  KILN_RETURN_IF_ERROR(CheckKind(*args[0], Value::Kind::kShape, 0));
  KILN_RETURN_IF_ERROR(CheckKind(*args[1], Value::Kind::kInt, 1));
  KILN_ASSIGN_OR_RETURN(vm::Tensor t, vm::Tensor::Empty(args[0]->as_shape(), vm::UnpackDType(args[1]->as_int()), ctx.device));
  *out = Value(std::move(t));
  return absl::OkStatus();
}

// (int bytes) -> storage
absl::Status AllocStorage(BuiltinContext& ctx, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 1));
  KILN_RETURN_IF_ERROR(CheckKind(*args[0], Value::Kind::kInt, 0));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<vm::Storage> storage, vm::Storage::Allocate(ctx.device, args[0]->as_int()));
  *out = Value::FromObject(std::move(storage));
  return absl::OkStatus();
}

// (storage, int offset, shape, int dtype) -> tensor
absl::Status StorageTensor(BuiltinContext&, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 4));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<vm::Storage> storage, args[0]->GetObject<vm::Storage>());
  KILN_RETURN_IF_ERROR(CheckKind(*args[1], Value::Kind::kInt, 1));
  KILN_RETURN_IF_ERROR(CheckKind(*args[2], Value::Kind::kShape, 2));
  KILN_RETURN_IF_ERROR(CheckKind(*args[3], Value::Kind::kInt, 3));
  KILN_ASSIGN_OR_RETURN(vm::Tensor t, storage->MakeTensor(args[1]->as_int(), args[2]->as_shape(), vm::UnpackDType(args[3]->as_int())));
  *out = Value(std::move(t));
  return absl::OkStatus();
}

// (tensor) -> tensor: a deep copy on the VM's device.
absl::Status Copy(BuiltinContext& ctx, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 1));
  KILN_RETURN_IF_ERROR(CheckKind(*args[0], Value::Kind::kTensor, 0));
  KILN_ASSIGN_OR_RETURN(vm::Tensor t, args[0]->as_tensor().CopyTo(ctx.device));
  *out = Value(std::move(t));
  return absl::OkStatus();
}

// (tensor, shape) -> tensor: a view, no copy.
absl::Status Reshape(BuiltinContext&, const Value* const* args, int n, Value* out) {
  KILN_RETURN_IF_ERROR(CheckArity(n, 2));
  KILN_RETURN_IF_ERROR(CheckKind(*args[0], Value::Kind::kTensor, 0));
  KILN_RETURN_IF_ERROR(CheckKind(*args[1], Value::Kind::kShape, 1));
  KILN_ASSIGN_OR_RETURN(vm::Tensor t, args[0]->as_tensor().Reshape(args[1]->as_shape()));
  *out = Value(std::move(t));
  return absl::OkStatus();
}

}  // namespace

void RegisterMemoryBuiltins(vm::BuiltinRegistry& r) {
  r.RegisterBuiltin("kiln.alloc_tensor", "(shape, int) -> tensor", AllocTensor);
  r.RegisterBuiltin("kiln.alloc_storage", "(int) -> object:storage", AllocStorage);
  r.RegisterBuiltin("kiln.storage_tensor", "(object:storage, int, shape, int) -> tensor", StorageTensor);
  r.RegisterBuiltin("kiln.copy", "(tensor) -> tensor", Copy);
  r.RegisterBuiltin("kiln.reshape", "(tensor, shape) -> tensor", Reshape);
}

}  // namespace kiln::builtins
