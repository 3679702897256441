#include "codegen/llvm_kernel_lowering.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Metadata.h"
#include "tir/local_address_attr.h"

namespace kiln::codegen {

// ------------------------------------------------------------------ buffer access

// The element offset of a flattened access (tir/transform/flatten_buffers.h): its one index
// as an i64, or a vector of i64 for a vector index.
llvm::Value* KernelLowering::FlatOffset(const tir::BufferNode* buffer, const std::vector<PrimExpr>& indices) {
  if (indices.size() != 1) {
    return Fail(absl::StrCat("buffer ", buffer->name, " is accessed with ", indices.size(),
                             " indices; flatten_buffers must run before the emitter"),
                b_.getInt64Ty());
  }
  if (!indices[0].dtype().is_integer()) {
    return Fail(absl::StrCat("index ", tir::ToString(indices[0]), " of ", buffer->name, " is not an integer"),
                b_.getInt64Ty());
  }
  return CastToI64(Lower(indices[0]), indices[0].dtype());
}

// The address of a scalar or contiguous access at `indices` (flattened): one GEP of the
// flat offset, or, for a local buffer that a function's kLocalAddressPerTermAttr names (the
// packed wide tiles' 4 x 3 steps), a chain of GEPs, one per trailing term of the offset's
// sum (flatten_buffers' linear form, 1536 * i + 384 * r + 24 * t + 8 * g for vector g of row
// r), at most kMostGeps: with one GEP InstCombine factored 24 * t + 8 * g into
// 8 * (3 * t + g), and alias analysis (one scaled variable plus a constant per GEP index)
// could not tell the step's accumulators apart. Two GEPs (the last term alone) were not
// enough (mm20, docs/schedule.md).
llvm::Value* KernelLowering::ElementPointer(llvm::Type* elem, llvm::Value* base_ptr, const tir::BufferNode* buffer,
                                            const std::vector<PrimExpr>& indices) {
  auto per_term = func_->attrs.find(tir::kLocalAddressPerTermAttr);
  if (per_term != func_->attrs.end() && buffer->scope == "local" && indices.size() == 1 &&
      indices[0].dtype().is_integer() && indices[0].dtype().lanes() == 1 &&
      absl::c_linear_search(absl::StrSplit(per_term->second, ','), buffer->name)) {
    std::vector<PrimExpr> terms;
    std::function<void(const PrimExpr&)> flatten = [&](const PrimExpr& e) {
      const auto* add = e.as<tir::BinaryNode>();
      if (add && add->kind() == tir::ExprKind::kAdd) {
        flatten(add->a);
        flatten(add->b);
      } else {
        terms.push_back(e);
      }
    };
    flatten(indices[0]);
    if (terms.size() > 1) {
      constexpr size_t kMostGeps = 5;
      const size_t first = terms.size() > kMostGeps ? terms.size() - kMostGeps + 1 : 1;
      PrimExpr head = terms[0];
      for (size_t i = 1; i < first; ++i) head = tir::Add(head, terms[i]);
      llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, CastToI64(Lower(head), head.dtype()));
      for (size_t i = first; i < terms.size(); ++i) {
        ptr = b_.CreateInBoundsGEP(elem, ptr, CastToI64(Lower(terms[i]), terms[i].dtype()));
      }
      return ptr;
    }
  }
  return b_.CreateInBoundsGEP(elem, base_ptr, FlatOffset(buffer, indices));
}

llvm::Value* KernelLowering::BufferPointer(const tir::BufferNode* buffer) {
  auto it = buffers_.find(buffer);
  if (it == buffers_.end()) {
    return Fail(absl::StrCat("buffer ", buffer->name, " is used outside its decl_buffer or allocation"));
  }
  return it->second;
}

namespace {

// The scalar that a vector expression built from broadcasts by + - * holds in every lane
// (broadcast(a, L) * broadcast(32, L) + broadcast(b, L) is a * 32 + b); undefined for any
// other expression.
PrimExpr UniformValue(const PrimExpr& e) {
  if (const auto* b = e.as<tir::BroadcastNode>()) return b->value;
  const auto* op = e.as<tir::BinaryNode>();
  if (op == nullptr) return PrimExpr();
  const ExprKind kind = op->kind();
  if (kind != ExprKind::kAdd && kind != ExprKind::kSub && kind != ExprKind::kMul) return PrimExpr();
  PrimExpr a = UniformValue(op->a), b = UniformValue(op->b);
  if (!a.defined() || !b.defined()) return PrimExpr();
  return kind == ExprKind::kAdd ? tir::Add(a, b) : kind == ExprKind::kSub ? tir::Sub(a, b) : tir::Mul(a, b);
}

}  // namespace

// A vector access whose last index is ramp(base, stride, lanes) with a constant stride and
// whose other indices are scalars touches evenly spaced elements from base's offset.
// u + ramp(b, s, L) and ramp(b, s, L) + u, u the same in every lane (UniformValue x), count
// as ramp(x + b, s, L).
std::optional<std::vector<PrimExpr>> KernelLowering::RampBase(const std::vector<PrimExpr>& indices, int64_t* stride) {
  if (indices.empty()) return std::nullopt;
  for (size_t k = 0; k + 1 < indices.size(); ++k) {
    if (indices[k].dtype().lanes() != 1) return std::nullopt;
  }
  auto const_ramp = [](const PrimExpr& e) -> const tir::RampNode* {
    const auto* ramp = e.as<tir::RampNode>();
    return ramp != nullptr && ramp->stride.as_int() ? ramp : nullptr;
  };
  const PrimExpr& last = indices.back();
  PrimExpr base;
  const tir::RampNode* ramp = const_ramp(last);
  if (ramp != nullptr) {
    base = ramp->base;
  } else if (const auto* add = last.as<tir::BinaryNode>(); add != nullptr && add->kind() == ExprKind::kAdd) {
    if ((ramp = const_ramp(add->b)) != nullptr) {
      if (PrimExpr x = UniformValue(add->a); x.defined()) base = tir::Add(x, ramp->base);
    } else if ((ramp = const_ramp(add->a)) != nullptr) {
      if (PrimExpr x = UniformValue(add->b); x.defined()) base = tir::Add(ramp->base, x);
    }
  }
  if (!base.defined()) return std::nullopt;
  *stride = *ramp->stride.as_int();
  std::vector<PrimExpr> result(indices.begin(), indices.end() - 1);
  result.push_back(base);
  return result;
}

std::optional<std::vector<PrimExpr>> KernelLowering::ContiguousBase(const std::vector<PrimExpr>& indices) {
  int64_t stride = 0;
  std::optional<std::vector<PrimExpr>> base = RampBase(indices, &stride);
  if (stride != 1) return std::nullopt;
  return base;
}

llvm::Value* KernelLowering::FromStorage(llvm::Value* v, DataType dtype) {
  if (!dtype.is_bool()) return v;
  return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
}

llvm::Value* KernelLowering::ToStorage(llvm::Value* v, DataType dtype) {
  if (!dtype.is_bool()) return v;
  llvm::Type* byte = b_.getInt8Ty();
  llvm::Type* type = dtype.lanes() > 1 ? llvm::FixedVectorType::get(byte, dtype.lanes()) : byte;
  return b_.CreateZExt(v, type);
}

// One element of a packed sub-byte buffer (tir/data_type.h): element i is bits
// [i * b % 8, ...) of byte i * b / 8, low bits first. `offset` is an i64 element offset.
llvm::Value* KernelLowering::PackedLoad(const tir::BufferNode* buffer, llvm::Value* base_ptr, llvm::Value* offset) {
  const int bits = buffer->dtype.bits();
  llvm::Value* bit = b_.CreateNSWMul(offset, b_.getInt64(bits));
  llvm::Value* byte_ptr = b_.CreateInBoundsGEP(b_.getInt8Ty(), base_ptr, b_.CreateLShr(bit, 3));
  llvm::Value* byte = b_.CreateAlignedLoad(b_.getInt8Ty(), byte_ptr, llvm::Align(1), buffer->name);
  llvm::Value* shift = b_.CreateTrunc(b_.CreateAnd(bit, b_.getInt64(7)), b_.getInt8Ty());
  return b_.CreateTrunc(b_.CreateLShr(byte, shift), ScalarType(buffer->dtype));
}

// Read-modify-write of the element's byte: not atomic, so no other thread may write a
// neighbour in the same byte meanwhile (tir/data_type.h).
void KernelLowering::PackedStore(const tir::BufferNode* buffer, llvm::Value* base_ptr, llvm::Value* offset,
                                 llvm::Value* value) {
  const int bits = buffer->dtype.bits();
  llvm::Value* bit = b_.CreateNSWMul(offset, b_.getInt64(bits));
  llvm::Value* byte_ptr = b_.CreateInBoundsGEP(b_.getInt8Ty(), base_ptr, b_.CreateLShr(bit, 3));
  llvm::Value* shift = b_.CreateTrunc(b_.CreateAnd(bit, b_.getInt64(7)), b_.getInt8Ty());
  llvm::Value* mask = b_.CreateShl(b_.getInt8(static_cast<uint8_t>((1u << bits) - 1)), shift);
  llvm::Value* old = b_.CreateAlignedLoad(b_.getInt8Ty(), byte_ptr, llvm::Align(1));
  llvm::Value* placed = b_.CreateShl(b_.CreateZExt(value, b_.getInt8Ty()), shift);
  b_.CreateAlignedStore(b_.CreateOr(b_.CreateAnd(old, b_.CreateNot(mask)), placed), byte_ptr, llvm::Align(1));
}

llvm::Value* KernelLowering::MaskedLoad(const tir::SelectNode* op) {
  const auto* load = op->true_value.as<tir::BufferLoadNode>();
  const int lanes = op->dtype().lanes();
  // Scalar selects keep their plain load: a branch (or a one-lane masked load) there would
  // stop LLVM's loop vectorizer on the padding selects of injective kernels, and schedules
  // put a possibly out-of-range load only in vector lanes (a blended column edge).
  if (load == nullptr || lanes == 1) return nullptr;
  const tir::BufferNode* buffer = load->buffer.get();
  if (buffer->dtype.is_sub_byte() || buffer->dtype.lanes() != 1 || load->dtype() != buffer->dtype.with_lanes(lanes)) {
    return nullptr;
  }
  llvm::Value* base_ptr = BufferPointer(buffer);
  if (base_ptr == nullptr) return nullptr;
  llvm::Type* elem = StorageType(buffer->dtype);
  if (elem != ScalarType(buffer->dtype)) return nullptr;  // stored in another type (bfloat16)
  llvm::Align align(std::max<uint64_t>(1, elem->getPrimitiveSizeInBits() / 8));
  llvm::Type* vec = llvm::FixedVectorType::get(elem, lanes);
  llvm::Value* mask = Lower(op->condition);
  llvm::Value* other = Lower(op->false_value);
  if (!mask->getType()->isVectorTy()) mask = b_.CreateVectorSplat(lanes, mask);
  std::optional<std::vector<PrimExpr>> base = ContiguousBase(load->indices);
  if (!base) {  // other offsets: a masked gather
    llvm::Value* offsets = FlatOffset(buffer, load->indices);
    if (!offsets->getType()->isVectorTy()) offsets = b_.CreateVectorSplat(lanes, offsets);
    llvm::Value* ptrs = b_.CreateInBoundsGEP(elem, base_ptr, offsets);
    return b_.CreateMaskedGather(vec, ptrs, align, mask, other, buffer->name);
  }
  llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, FlatOffset(buffer, *base));
  ptr = b_.CreatePointerCast(ptr, vec->getPointerTo());
  return b_.CreateMaskedLoad(vec, ptr, align, mask, other, buffer->name);
}

llvm::Value* KernelLowering::LoadBuffer(const tir::BufferLoadNode* op) {
  const tir::BufferNode* buffer = op->buffer.get();
  DataType dtype = op->dtype();
  llvm::Type* result = LlvmType(dtype);
  llvm::Value* base_ptr = BufferPointer(buffer);
  if (base_ptr == nullptr) return llvm::UndefValue::get(result);
  if (buffer->dtype.is_sub_byte()) {
    llvm::Value* offsets = FlatOffset(buffer, op->indices);
    if (dtype.lanes() == 1) {
      if (offsets->getType()->isVectorTy()) {
        return Fail(absl::StrCat("load from ", buffer->name, ": a scalar load at a vector index"), result);
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
    if (std::any_of(op->indices.begin(), op->indices.end(), [](const PrimExpr& i) { return i.dtype().lanes() != 1; })) {
      return Fail(absl::StrCat("load from ", buffer->name, ": a scalar load at a vector index"), result);
    }
    llvm::Value* ptr = ElementPointer(elem, base_ptr, buffer, op->indices);
    return FromStorage(b_.CreateAlignedLoad(elem, ptr, align, buffer->name), dtype);
  }
  if (std::optional<std::vector<PrimExpr>> base = ContiguousBase(op->indices)) {
    llvm::Type* vec = llvm::FixedVectorType::get(elem, lanes);
    llvm::Value* ptr = ElementPointer(elem, base_ptr, buffer, *base);
    ptr = b_.CreatePointerCast(ptr, vec->getPointerTo());
    return FromStorage(b_.CreateAlignedLoad(vec, ptr, align, buffer->name), dtype);
  }
  // A small constant stride (a stride-2 convolution's or pooling's inputs): one load of the
  // span from the first lane's element to the last's, every stride-th element picked out
  // (a shuffle); the span lies inside the buffer since both ends do.
  int64_t stride = 0;
  std::optional<std::vector<PrimExpr>> strided = RampBase(op->indices, &stride);
  if (strided && stride >= 2 && stride <= kMaxSpannedStride) {
    const int64_t span = (lanes - 1) * stride + 1;
    llvm::Type* vec = llvm::FixedVectorType::get(elem, static_cast<unsigned>(span));
    llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, FlatOffset(buffer, *strided));
    llvm::Value* all = b_.CreateAlignedLoad(vec, b_.CreatePointerCast(ptr, vec->getPointerTo()), align, buffer->name);
    llvm::SmallVector<int, 64> picks;
    for (int l = 0; l < lanes; ++l) picks.push_back(static_cast<int>(l * stride));
    return FromStorage(b_.CreateShuffleVector(all, picks), dtype);
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

void KernelLowering::StoreBuffer(const tir::BufferNode* buffer, const std::vector<PrimExpr>& indices, llvm::Value* value,
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
    b_.CreateAlignedStore(value, ElementPointer(elem, base_ptr, buffer, indices), align);
    return;
  }
  if (std::optional<std::vector<PrimExpr>> base = ContiguousBase(indices)) {
    llvm::Type* vec = llvm::FixedVectorType::get(elem, lanes);
    llvm::Value* ptr = ElementPointer(elem, base_ptr, buffer, *base);
    b_.CreateAlignedStore(value, b_.CreatePointerCast(ptr, vec->getPointerTo()), align);
    return;
  }
  llvm::Value* offsets = FlatOffset(buffer, indices);
  for (int l = 0; l < lanes; ++l) {
    llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, b_.CreateExtractElement(offsets, l));
    b_.CreateAlignedStore(b_.CreateExtractElement(value, l), ptr, align);
  }
}

}  // namespace kiln::codegen
