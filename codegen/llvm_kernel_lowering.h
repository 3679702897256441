// KernelLowering: the LLVM emitter of one lowered PrimFunc (codegen/llvm_codegen.h), private
// to codegen/. Its definitions are split by concern: llvm_codegen.cc (the function, errors,
// types), llvm_stmt_lowering.cc (statements, loops, allocations), llvm_buffer_lowering.cc
// (buffer access), llvm_expr_lowering.cc (expressions), llvm_abi_lowering.cc (the kernel
// ABI's intrinsics and device launches).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"
#include "tir/intrinsics.h"
#include "tir/stmt.h"

namespace kiln::codegen {

using tir::DataType;
using tir::ExprKind;
using tir::PrimExpr;
using tir::Stmt;
using tir::StmtKind;

// Field indices of the LLVM struct types.
enum DLTensorField { kTensorData = 0, kTensorDevice, kTensorNdim, kTensorDtype, kTensorShape, kTensorStrides, kTensorByteOffset };
enum ContextField {
  kCtxRuntime = 0,
  kCtxParallelFor,
  kCtxWorkspaceAlloc,
  kCtxWorkspaceFree,
  kCtxSetError,
  kCtxNumThreads,
  kCtxDevice,
  kCtxStream,
  kCtxLaunch,
};

// Allocations of at most this many bytes with a constant size live on the stack (of the
// calling thread, or of a pool worker inside a parallel loop).
constexpr int64_t kMaxStackAllocationBytes = 32 * 1024;
constexpr int64_t kErrorMessageBytes = 512;
// Below this many bytes of stack buffers between the two sides of a top-level branch, the
// sides stay inline (OutlinesBranches): a few small buffers side by side cost nothing
// measurable, and inline the call, its closure and the re-stated facts are not needed
// (kernels of 100 ns at n = 1, where 10 ns would be 10 %).
constexpr int64_t kOutlinedStackBytes = 4096;

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
    launch_dims = llvm::StructType::create(
        c, {llvm::ArrayType::get(i32, 3), llvm::ArrayType::get(i32, 3), i32}, "KilnLaunchDims");
    launch = llvm::FunctionType::get(i32, {ctxp, i32, launch_dims->getPointerTo(), kiln_arg->getPointerTo(), i32},
                                     false);
    context->setBody({i8p, parallel_for->getPointerTo(), workspace_alloc->getPointerTo(),
                      workspace_free->getPointerTo(), set_error->getPointerTo(), i32, dl_device, i8p,
                      launch->getPointerTo()});
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
  llvm::StructType* launch_dims;
  llvm::FunctionType* launch;
  llvm::FunctionType* kernel;
  llvm::FunctionType* snprintf;
};

std::string EscapeFormat(const std::string& text);

// Lowers one lowered PrimFunc (tir/transform/pipeline.h: calling_conv = "kernel_abi") into
// one exported kernel (plus the closures of its parallel loops).
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

  absl::Status Run();

 private:
  struct FunctionState {
    llvm::Function* fn = nullptr;
    llvm::Value* ctx = nullptr;
    llvm::BasicBlock* entry = nullptr;
    // Workspace blocks live at the current point, innermost last; an early return frees them.
    std::vector<llvm::Value*> workspaces;
  };
  void EmitReturn(llvm::Value* code);
  void SetCommonAttributes(llvm::Function* fn);
  void BeginFunction(llvm::Function* fn, llvm::Value* ctx);
  llvm::AllocaInst* EntryAlloca(llvm::Type* type, llvm::Value* count, uint64_t align, const std::string& name);
  llvm::Value* Fail(const std::string& message, llvm::Type* type = nullptr);
  static std::string BFloatArithmeticError();
  llvm::Value* LoadField(llvm::StructType* type, llvm::Value* ptr, unsigned field, const std::string& name);
  void Check(llvm::Value* ok, const std::string& format, const std::vector<llvm::Value*>& values = {});
  void ReportError(const std::string& format, const std::vector<llvm::Value*>& values);
  void ReturnIfNonzero(llvm::Value* rc, llvm::BasicBlock* done);
  llvm::Type* ScalarType(DataType t);
  llvm::Type* LlvmType(DataType t);
  llvm::Type* StorageType(DataType t);
  void LowerStmt(const Stmt& s);
  void LowerAssert(const tir::AssertNode* op);
  static void NameValue(llvm::Value* value, const std::string& name);
  llvm::Value* ScalarCondition(const PrimExpr& cond, const char* what);
  // Run `body` with the variable (buffer) bound to the value (pointer), then restore what
  // they shadowed.
  void Bind(const tir::VarNode* var, llvm::Value* value, const std::function<void()>& body);
  void BindBuffer(const tir::BufferNode* buffer, llvm::Value* ptr, const std::function<void()>& body);
  // kVectorizeMasked: a vectorized loop of symbolic extent (the lanes in range of a
  // partial vector, tir/schedule/guard_vectorized_tails.cc): LLVM folds its tail into masked
  // loads and stores and does not interleave it (it runs at most a few vectors).
  enum class LoopHint { kNone, kVectorize, kVectorizeMasked, kUnroll };
  void SerialLoop(const tir::VarNode* var, llvm::Value* begin, llvm::Value* end, LoopHint hint,
                  const std::function<void()>& body);
  llvm::MDNode* LoopMetadata(LoopHint hint);
  static bool UnrollsAsItIsBuilt(const tir::ForNode* op);
  void LowerFor(const tir::ForNode* op);  // counts loop_depth_ around LowerLoop
  void LowerLoop(const tir::ForNode* op);
  void LowerParallelFor(const tir::ForNode* op);
  // A new internal function `int32_t fn(i64, i64, i8* closure)` (the parallel body's type)
  // named `<kernel>$<suffix>`, over a closure holding the call context, `leading` and every
  // variable and buffer in scope. `body` lowers its code with that scope loaded (given the
  // function it lowers into, with the parallel body's three parameters, and the loaded
  // `leading`): a function inlined into `fn` that takes the fresh buffers
  // (FreshBufferPointers) as `noalias` parameters. The closure is filled at the current
  // point, and the function returns 0 after `body`. Returns `fn` and the closure (an i8*).
  std::pair<llvm::Function*, llvm::Value*> Outline(
      const std::string& suffix, const std::vector<llvm::Value*>& leading,
      const std::function<void(llvm::Function*, const std::vector<llvm::Value*>&)>& body);
  // Of the buffers an outlined body captures, those whose pointer is fresh memory here (a
  // stack buffer, a workspace allocation, which is malloc-like, or such a buffer an
  // enclosing outlined body took as a `noalias` parameter) and is the only captured value
  // based on that memory (a view of it under another name would alias the parameter).
  std::vector<const tir::BufferNode*> FreshBufferPointers(const std::vector<const tir::VarNode*>& vars,
                                                          const std::vector<const tir::BufferNode*>& buffers) const;
  // A branch outside every loop whose two sides both allocate, more than
  // kOutlinedStackBytes of stack buffers between them (the variants of a tuned dispatch,
  // BranchOn's versions): each allocating side is its own function, so the frame of a call
  // holds one side's buffers, not all of them side by side.
  bool OutlinesBranches(const tir::IfThenElseNode* op) const;
  void LowerOutlinedBranch(const Stmt& branch);
  // Facts: conditions known to hold at the point being lowered (facts_), for the
  // assumptions of an outlined function.
  static bool IsScalarFact(const PrimExpr& condition);
  void WithFact(const PrimExpr& condition, const std::function<void()>& body);
  llvm::Value* BufferSpan(const tir::Buffer& buffer);
  void WithAllocation(const tir::Buffer& buffer, const std::function<void()>& body);
  llvm::Value* FlatOffset(const tir::BufferNode* buffer, const std::vector<PrimExpr>& indices);
  llvm::Value* BufferPointer(const tir::BufferNode* buffer);
  llvm::Value* ElementPointer(llvm::Type* elem, llvm::Value* base_ptr, const tir::BufferNode* buffer,
                              const std::vector<PrimExpr>& indices);
  std::optional<std::vector<PrimExpr>> ContiguousBase(const std::vector<PrimExpr>& indices);
  // The indices of a vector access at its first lane when the last index is a ramp of
  // constant stride (stored in *stride) and the others scalars; nullopt otherwise.
  std::optional<std::vector<PrimExpr>> RampBase(const std::vector<PrimExpr>& indices, int64_t* stride);
  // Strides up to this load their span whole and shuffle (LoadBuffer); wider ones load lane
  // by lane.
  static constexpr int64_t kMaxSpannedStride = 4;
  llvm::Value* FromStorage(llvm::Value* v, DataType dtype);
  llvm::Value* ToStorage(llvm::Value* v, DataType dtype);
  llvm::Value* PackedLoad(const tir::BufferNode* buffer, llvm::Value* base_ptr, llvm::Value* offset);
  void PackedStore(const tir::BufferNode* buffer, llvm::Value* base_ptr, llvm::Value* offset, llvm::Value* value);
  llvm::Value* LoadBuffer(const tir::BufferLoadNode* op);
  // `select(mask, load, other)` as one masked load (or gather): the lanes the mask leaves
  // out are not read (a column edge's blended lanes past the end of a buffer,
  // tir/schedule/guard_vectorized_tails.cc; docs/ir.md). nullptr when the select has
  // another form or the buffer's elements are not whole bytes.
  llvm::Value* MaskedLoad(const tir::SelectNode* op);
  void StoreBuffer(const tir::BufferNode* buffer, const std::vector<PrimExpr>& indices, llvm::Value* value,
                   DataType dtype);
  llvm::Value* CastToI64(llvm::Value* v, DataType from);
  llvm::Value* CastValue(llvm::Value* v, DataType from, DataType to);
  llvm::Value* Lower(const PrimExpr& e);
  llvm::Type* SafeType(DataType t);
  llvm::Value* LowerBinary(const tir::BinaryNode* op);
  llvm::Value* FloatMinMax(bool is_max, llvm::Value* a, llvm::Value* b);
  llvm::Value* Intrinsic(llvm::Intrinsic::ID id, llvm::Value* x);
  llvm::Value* LibmCall(const std::string& name, llvm::Value* x);
  llvm::Value* FastMath(const std::string& op, llvm::Value* x);
  llvm::Value* LowerCall(const tir::CallNode* call);
  // tir/intrinsics.h: the kernel ABI's reads, and launch_kernel (a statement).
  llvm::Value* LowerAbiCall(const tir::CallNode* call);
  void LowerLaunch(const tir::CallNode* call);
  // address_of's and prefetch's element address (i8*); prefetch (a statement).
  llvm::Value* ElementAddress(const tir::CallNode* call, bool in_bounds = true);
  void LowerPrefetch(const tir::CallNode* call);

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
  // The function is the host part of a GPU function: its allocations are device memory.
  bool gpu_host_ = false;
  // Loops around the statement being lowered, in this function.
  int loop_depth_ = 0;
  // Branches outlined so far (their functions' names).
  int outlined_branches_ = 0;
  // Scalar conditions known to hold here, in this function: checks passed (asserts) and
  // the conditions of the branches around, dropped when their scope ends.
  std::vector<PrimExpr> facts_;
};

}  // namespace kiln::codegen
