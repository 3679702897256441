#include "codegen/llvm_kernel_lowering.h"
#include "codegen/hoist_index_divisions.h"
#include "codegen/parallel_work.h"
#include "tir/stmt_functor.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Metadata.h"

namespace kiln::codegen {

// ------------------------------------------------------------------ statements

void KernelLowering::LowerStmt(const Stmt& s) {
  if (!status_.ok()) return;
  switch (s.kind()) {
    case StmtKind::kBufferStore: {
      const auto* op = s.as<tir::BufferStoreNode>();
      StoreBuffer(op->buffer.get(), op->indices, Lower(op->value), op->value.dtype());
      return;
    }
    case StmtKind::kFor: LowerFor(s.as<tir::ForNode>()); return;
    case StmtKind::kBlock:
      Fail(absl::StrCat("block \"", s.as<tir::BlockNode>()->name,
                        "\" must be lowered first (tir/transform/lower_blocks.h)"));
      return;
    case StmtKind::kIfThenElse: {
      const auto* op = s.as<tir::IfThenElseNode>();
      llvm::Value* cond = ScalarCondition(op->condition, "if");
      llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "if_then", fs_.fn);
      llvm::BasicBlock* else_bb = op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "if_else", fs_.fn) : nullptr;
      llvm::BasicBlock* end_bb = llvm::BasicBlock::Create(ctx_, "if_end", fs_.fn);
      b_.CreateCondBr(cond, then_bb, else_bb ? else_bb : end_bb);
      const bool outline = OutlinesBranches(op);
      auto lower_side = [&](const Stmt& side, const PrimExpr& holds) {
        WithFact(holds, [&] { outline ? LowerOutlinedBranch(side) : LowerStmt(side); });
      };
      b_.SetInsertPoint(then_bb);
      lower_side(op->then_case, op->condition);
      b_.CreateBr(end_bb);
      if (else_bb) {
        b_.SetInsertPoint(else_bb);
        lower_side(op->else_case, tir::Not(op->condition));
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
      // The facts its body learns name the variable: they end with it. Its declared bounds
      // are facts (the kernel's prologue checked them before binding it,
      // tir/transform/make_kernel_abi.h).
      const size_t facts = facts_.size();
      const tir::Var& var = op->var;
      if (var->dtype().is_int() && var->lower_bound) facts_.push_back(tir::GE(var, tir::IntImm(var->dtype(), *var->lower_bound)));
      if (var->dtype().is_int() && var->upper_bound) facts_.push_back(tir::LE(var, tir::IntImm(var->dtype(), *var->upper_bound)));
      Bind(var.get(), value, [&] { LowerStmt(op->body); });
      facts_.resize(facts);
      return;
    }
    case StmtKind::kEvaluate: {
      const PrimExpr& value = s.as<tir::EvaluateNode>()->value;
      if (const auto* call = value.as<tir::CallNode>(); call != nullptr && call->op == "launch_kernel") {
        LowerLaunch(call);
        return;
      }
      if (const auto* call = value.as<tir::CallNode>(); call != nullptr && call->op == "prefetch") {
        LowerPrefetch(call);
        return;
      }
      // Expressions are pure, so the value is computed for nothing; kept for symmetry
      // with other targets and optimized away.
      Lower(value);
      return;
    }
    case StmtKind::kAssert: LowerAssert(s.as<tir::AssertNode>()); return;
    case StmtKind::kDeclBuffer: {
      const auto* op = s.as<tir::DeclBufferNode>();
      llvm::Value* data = Lower(op->data);
      llvm::Value* ptr =
          b_.CreatePointerCast(data, StorageType(op->buffer->dtype)->getPointerTo(), op->buffer->name);
      BindBuffer(op->buffer.get(), ptr, [&] { LowerStmt(op->body); });
      return;
    }
  }
}

// A failed assert reports "kernel NAME: message" (values formatted by snprintf, computed
// only on the failing path) and returns 1.
void KernelLowering::LowerAssert(const tir::AssertNode* op) {
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
  // What follows in this scope runs only where it held.
  if (IsScalarFact(op->condition)) facts_.push_back(op->condition);
}

// A condition over scalar variables and constants only: it reads no memory and calls
// nothing, so an outlined function can assume it again over the variables it captured.
bool KernelLowering::IsScalarFact(const PrimExpr& condition) {
  struct Scalar : tir::StmtExprVisitor {
    bool scalar = true;
    void VisitExpr_(const tir::CallNode*, const PrimExpr&) override { scalar = false; }
    void VisitExpr_(const tir::BufferLoadNode*, const PrimExpr&) override { scalar = false; }
    void VisitExpr_(const tir::LetNode*, const PrimExpr&) override { scalar = false; }
  } visitor;
  visitor.VisitExpr(condition);
  return visitor.scalar && condition.dtype().is_bool() && condition.dtype().is_scalar();
}

void KernelLowering::WithFact(const PrimExpr& condition, const std::function<void()>& body) {
  const size_t facts = facts_.size();
  if (IsScalarFact(condition)) facts_.push_back(condition);
  body();
  facts_.resize(facts);
}

// Names instructions after the variable they bind, for readable IR dumps.
void KernelLowering::NameValue(llvm::Value* value, const std::string& name) {
  if (llvm::isa<llvm::Instruction>(value) && !value->hasName()) value->setName(name);
}

llvm::Value* KernelLowering::ScalarCondition(const PrimExpr& cond, const char* what) {
  if (!cond.dtype().is_bool() || !cond.dtype().is_scalar()) {
    return Fail(absl::StrCat("the ", what, " condition ", tir::ToString(cond), " must be a scalar bool"), b_.getInt1Ty());
  }
  return Lower(cond);
}

namespace {

// Runs `body` with map[key] = value, then restores whatever it shadowed.
template <typename Key>
void WithBinding(std::unordered_map<Key, llvm::Value*>& map, Key key, llvm::Value* value,
                 const std::function<void()>& body) {
  auto it = map.find(key);
  std::optional<llvm::Value*> saved;
  if (it != map.end()) saved = it->second;
  map[key] = value;
  body();
  if (saved) {
    map[key] = *saved;
  } else {
    map.erase(key);
  }
}

}  // namespace

void KernelLowering::Bind(const tir::VarNode* var, llvm::Value* value, const std::function<void()>& body) {
  WithBinding(vars_, var, value, body);
}

void KernelLowering::BindBuffer(const tir::BufferNode* buffer, llvm::Value* ptr, const std::function<void()>& body) {
  WithBinding(buffers_, buffer, ptr, body);
}

// for (var = begin; var < end; ++var) body(var), in the current function.
void KernelLowering::SerialLoop(const tir::VarNode* var, llvm::Value* begin, llvm::Value* end, LoopHint hint,
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

llvm::MDNode* KernelLowering::LoopMetadata(LoopHint hint) {
  llvm::SmallVector<llvm::Metadata*, 4> ops;
  llvm::TempMDTuple self = llvm::MDNode::getTemporary(ctx_, llvm::None);
  ops.push_back(self.get());
  auto flag = [&](const char* name, llvm::Constant* value) {
    ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name), llvm::ConstantAsMetadata::get(value)}));
  };
  if (hint == LoopHint::kVectorize || hint == LoopHint::kVectorizeMasked) {
    flag("llvm.loop.vectorize.enable", b_.getTrue());
    if (hint == LoopHint::kVectorizeMasked) {
      flag("llvm.loop.vectorize.predicate.enable", b_.getTrue());
      flag("llvm.loop.interleave.count", b_.getInt32(1));
    }
  } else {
    ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.full")}));
  }
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, ops);
  id->replaceOperandWith(0, id);
  return id;
}

// An unrolled copy loop built as straight-line code: innermost (no loop or allocation in
// it), of at most kUnrollAsBuiltMost constant iterations, every store in it storing a load.
// Built as a loop, LLVM's loop idiom pass runs before its unroller and turns a row of vector
// copies (a packed panel's run of a weight row, 24 vectors of 8 lanes) into a call to memcpy
// per row. Other unrolled loops stay loops that LLVM unrolls (the register tiles' code was
// measured that way; the idiom pass leaves them alone).
constexpr int64_t kUnrollAsBuiltMost = 64;

bool KernelLowering::UnrollsAsItIsBuilt(const tir::ForNode* op) {
  std::optional<int64_t> extent = op->extent.as_int();
  if (!extent || *extent < 1 || *extent > kUnrollAsBuiltMost) return false;
  struct CopyOnly : tir::StmtExprVisitor {
    bool copy = true;
    void VisitStmt_(const tir::ForNode*, const tir::Stmt&) override { copy = false; }
    void VisitStmt_(const tir::AllocateNode*, const tir::Stmt&) override { copy = false; }
    void VisitStmt_(const tir::BufferStoreNode* store, const tir::Stmt&) override {
      copy &= store->value.as<tir::BufferLoadNode>() != nullptr;
    }
  } body;
  body.VisitStmt(op->body);
  return body.copy;
}

void KernelLowering::LowerFor(const tir::ForNode* op) {
  ++loop_depth_;
  const size_t facts = facts_.size();  // a check inside may name the loop variable
  LowerLoop(op);
  facts_.resize(facts);
  --loop_depth_;
}

void KernelLowering::LowerLoop(const tir::ForNode* op) {
  const tir::VarNode* var = op->loop_var.get();
  if (!var->dtype().is_integer() || !var->dtype().is_scalar()) {
    Fail(absl::StrCat("loop variable ", var->name, " must be a scalar integer"));
    return;
  }
  switch (op->for_kind) {
    case tir::ForKind::kThreadBinding:
      // split_host_device moves these into device kernels (or refuses them on a CPU).
      Fail(absl::StrCat("loop ", var->name, " is bound to the GPU thread index ", op->thread_tag,
                        ", which host code cannot run"));
      return;
    case tir::ForKind::kParallel:
      LowerParallelFor(op);
      return;
    default:
      // vectorize_loops made straight-line SIMD code of the loops it could; the others
      // carry LLVM's vectorize hint.
      break;
  }
  if (op->for_kind == tir::ForKind::kUnrolled && UnrollsAsItIsBuilt(op)) {
    llvm::Value* begin = Lower(op->min);
    for (int64_t i = 0; i < *op->extent.as_int(); ++i) {
      Bind(var, b_.CreateAdd(begin, llvm::ConstantInt::get(begin->getType(), i)), [&] { LowerStmt(op->body); });
    }
    return;
  }
  llvm::Value* begin = Lower(op->min);
  llvm::Value* end = b_.CreateAdd(begin, Lower(op->extent), absl::StrCat(var->name, "_end"));
  LoopHint hint = op->for_kind == tir::ForKind::kVectorized
                      ? (op->extent.as_int() ? LoopHint::kVectorize : LoopHint::kVectorizeMasked)
                  : op->for_kind == tir::ForKind::kUnrolled ? LoopHint::kUnroll
                                                            : LoopHint::kNone;
  SerialLoop(var, begin, end, hint, [&] { LowerStmt(op->body); });
}

// The loop body becomes a closure `int32_t body(task, num_tasks, closure)` over the range
// and the scope (Outline).
void KernelLowering::LowerParallelFor(const tir::ForNode* op) {
  const tir::VarNode* var = op->loop_var.get();
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Value* begin = CastToI64(Lower(op->min), var->dtype());
  llvm::Value* extent = CastToI64(Lower(op->extent), var->dtype());

  // Skip the whole call when the range is empty.
  llvm::BasicBlock* run_bb = llvm::BasicBlock::Create(ctx_, "parallel", fs_.fn);
  llvm::BasicBlock* done_bb = llvm::BasicBlock::Create(ctx_, "parallel_end", fs_.fn);
  b_.CreateCondBr(b_.CreateICmpSGT(extent, b_.getInt64(0)), run_bb, done_bb);
  b_.SetInsertPoint(run_bb);
  llvm::Value* threads = b_.CreateSExt(LoadField(abi_.context, fs_.ctx, kCtxNumThreads, "num_threads"), i64);
  threads = b_.CreateSelect(b_.CreateICmpSLT(threads, b_.getInt64(1)), b_.getInt64(1), threads);
  // The number of tasks, from the work (ParallelIterationWork times the extent, the extents
  // known here; compared unsigned, so a product that overflowed counts as large):
  //   below kMinParallelWork, 1 (the pool runs it inline on this thread);
  //   else work / kMinTaskWork, at least 2, rounded up to a multiple of the threads when it
  //   is more than them, at most kTasksPerThread per thread (kHeavyTasksPerThread when one
  //   iteration is a task's worth of work) and one per iteration. Several tasks per thread:
  //   a worker that wakes late or is preempted leaves its unclaimed tasks to the others, so
  //   a region never waits on half the work.
  tir::PrimExpr per_iteration =
      ParallelIterationWork(op->body, [&](const tir::VarNode* v) { return vars_.count(v) > 0; });
  llvm::Value* iteration_work = CastToI64(Lower(per_iteration), per_iteration.dtype());
  llvm::Value* work = b_.CreateMul(extent, iteration_work, "work");
  llvm::Value* by_work = b_.CreateUDiv(work, b_.getInt64(kMinTaskWork));
  by_work = b_.CreateSelect(b_.CreateICmpULT(by_work, b_.getInt64(2)), b_.getInt64(2), by_work);
  // More tasks than threads: a multiple of the threads, so that equal tasks end together (5
  // tasks of n = 300 softmax rows on 2 threads ran as 3 + 2, one thread idle for a fifth of
  // the region). Fewer: one each already, and rounding up would only make them smaller.
  llvm::Value* rounded =
      b_.CreateMul(b_.CreateUDiv(b_.CreateAdd(by_work, b_.CreateSub(threads, b_.getInt64(1))), threads), threads);
  by_work = b_.CreateSelect(b_.CreateICmpUGT(by_work, threads), rounded, by_work);
  llvm::Value* heavy = b_.CreateICmpUGE(iteration_work, b_.getInt64(kMinTaskWork), "heavy_iterations");
  llvm::Value* most = b_.CreateMul(
      threads, b_.CreateSelect(heavy, b_.getInt64(kHeavyTasksPerThread), b_.getInt64(kTasksPerThread)));
  llvm::Value* num_tasks = b_.CreateSelect(b_.CreateICmpULT(by_work, most), by_work, most);
  num_tasks = b_.CreateSelect(b_.CreateICmpSLT(extent, num_tasks), extent, num_tasks);
  num_tasks = b_.CreateSelect(b_.CreateOr(b_.CreateICmpULT(work, b_.getInt64(kMinParallelWork)),
                                          b_.CreateICmpEQ(threads, b_.getInt64(1))),
                              b_.getInt64(1), num_tasks, "num_tasks");
  llvm::Value* chunk = b_.CreateSDiv(b_.CreateSub(b_.CreateAdd(extent, num_tasks), b_.getInt64(1)), num_tasks, "chunk");
  // No empty task: as many tasks as chunks of that size cover the range.
  num_tasks = b_.CreateSDiv(b_.CreateSub(b_.CreateAdd(extent, chunk), b_.getInt64(1)), chunk, "num_tasks");

  // The fused tile index's floordiv/floormod, once per iteration (codegen/hoist_index_divisions.h).
  const tir::Stmt body =
      HoistIndexDivisions(op->loop_var, op->body, [&](const tir::VarNode* v) { return vars_.count(v) > 0; });
  auto [body_fn, closure] = Outline(absl::StrCat("parallel$", var->name), {begin, extent, chunk},
                                    [&](llvm::Function* fn, const std::vector<llvm::Value*>& range) {
                                      llvm::Value* lo = b_.CreateMul(fn->getArg(0), range[2], "lo");
                                      llvm::Value* hi = b_.CreateAdd(lo, range[2]);
                                      hi = b_.CreateSelect(b_.CreateICmpSLT(hi, range[1]), hi, range[1], "hi");
                                      // The chunk's offsets, then the loop variable in its own type.
                                      llvm::Type* var_type = LlvmType(var->dtype());
                                      llvm::Value* first = b_.CreateIntCast(b_.CreateAdd(range[0], lo), var_type, true);
                                      llvm::Value* last = b_.CreateIntCast(b_.CreateAdd(range[0], hi), var_type, true);
                                      SerialLoop(var, first, last, LoopHint::kNone, [&] { LowerStmt(body); });
                                    });

  llvm::Value* parallel_for = LoadField(abi_.context, fs_.ctx, kCtxParallelFor, "parallel_for");
  llvm::Value* rc =
      b_.CreateCall(abi_.parallel_for, parallel_for, {fs_.ctx, num_tasks, body_fn, closure}, "parallel_rc");
  // A failing task already reported its error; pass its code on.
  ReturnIfNonzero(rc, done_bb);
}

// The closure is a struct of the call context, `leading` and every variable and buffer in
// scope (what the body does not use is dead after inlining the loads, and costs one store).
std::pair<llvm::Function*, llvm::Value*> KernelLowering::Outline(
    const std::string& suffix, const std::vector<llvm::Value*>& leading,
    const std::function<void(llvm::Function*, const std::vector<llvm::Value*>&)>& body) {
  // The captures in a fixed order (by name, then by the name LLVM gave the value): the maps
  // are keyed by address, and the same function must compile to the same bytes every time.
  std::vector<const tir::VarNode*> captured_vars;
  std::vector<const tir::BufferNode*> captured_buffers;
  for (const auto& [v, value] : vars_) captured_vars.push_back(v);
  for (const auto& [buf, ptr] : buffers_) captured_buffers.push_back(buf);
  auto by_name = [](const auto& map) {
    return [&map](const auto* x, const auto* y) {
      const llvm::StringRef xv = map.at(x)->getName(), yv = map.at(y)->getName();
      return std::tie(x->name, xv) < std::tie(y->name, yv);
    };
  };
  std::sort(captured_vars.begin(), captured_vars.end(), by_name(vars_));
  std::sort(captured_buffers.begin(), captured_buffers.end(), by_name(buffers_));
  std::vector<llvm::Type*> fields = {abi_.context->getPointerTo()};
  for (llvm::Value* v : leading) fields.push_back(v->getType());
  for (const tir::VarNode* v : captured_vars) fields.push_back(vars_.at(v)->getType());
  for (const tir::BufferNode* buf : captured_buffers) fields.push_back(buffers_.at(buf)->getType());
  llvm::StructType* closure_type = llvm::StructType::create(ctx_, fields, absl::StrCat(name_, "_closure"));

  llvm::AllocaInst* closure = EntryAlloca(closure_type, nullptr, 8, "closure");
  unsigned index = 0;
  auto store_field = [&](llvm::Value* value) {
    b_.CreateStore(value, b_.CreateStructGEP(closure_type, closure, index++));
  };
  store_field(fs_.ctx);
  for (llvm::Value* v : leading) store_field(v);
  for (const tir::VarNode* v : captured_vars) store_field(vars_[v]);
  for (const tir::BufferNode* buf : captured_buffers) store_field(buffers_[buf]);

  // `$` cannot appear in a kernel name, so the function never takes a kernel's symbol.
  llvm::Function* fn = llvm::Function::Create(abi_.parallel_body, llvm::Function::InternalLinkage,
                                              absl::StrCat(name_, "$", suffix), module_);
  SetCommonAttributes(fn);

  // The body is lowered in a second function, always inlined into `fn`, that takes the
  // buffers which are fresh memory here (FreshBufferPointers) as `noalias` parameters:
  // loaded from the closure, a workspace is an unknown pointer that any store may alias,
  // and a softmax over 1024 x 1024 scores on 2 threads reloaded the row's max after every
  // exp it stored, one vector per iteration, where the 1-thread code kept it in a register
  // and ran 8 vectors an iteration (240-277 us before, 211-233 after). LLVM's inliner turns
  // the parameters' `noalias` into alias scopes on the inlined loads and stores.
  const std::vector<const tir::BufferNode*> fresh = FreshBufferPointers(captured_vars, captured_buffers);
  std::vector<llvm::Type*> impl_params = {b_.getInt64Ty(), b_.getInt64Ty(), b_.getInt8PtrTy()};
  for (const tir::BufferNode* buf : fresh) impl_params.push_back(buffers_.at(buf)->getType());
  llvm::Function* impl =
      llvm::Function::Create(llvm::FunctionType::get(b_.getInt32Ty(), impl_params, false),
                             llvm::Function::InternalLinkage, absl::StrCat(name_, "$", suffix, "$body"), module_);
  SetCommonAttributes(impl);
  impl->addFnAttr(llvm::Attribute::AlwaysInline);
  for (size_t i = 0; i < fresh.size(); ++i) impl->addParamAttr(static_cast<unsigned>(3 + i), llvm::Attribute::NoAlias);

  // Lower the body inside the functions with their own environment, then come back.
  FunctionState saved_fs = fs_;
  auto saved_vars = vars_;
  auto saved_buffers = buffers_;
  llvm::BasicBlock* saved_block = b_.GetInsertBlock();
  {
    // fn: the closure's fresh buffers, then the call.
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
    llvm::Value* env = b_.CreatePointerCast(fn->getArg(2), closure_type->getPointerTo(), "env");
    const unsigned first_buffer_field = static_cast<unsigned>(1 + leading.size() + captured_vars.size());
    std::vector<llvm::Value*> impl_args = {fn->getArg(0), fn->getArg(1), fn->getArg(2)};
    for (const tir::BufferNode* buf : fresh) {
      const auto at = std::find(captured_buffers.begin(), captured_buffers.end(), buf) - captured_buffers.begin();
      impl_args.push_back(LoadField(closure_type, env, first_buffer_field + static_cast<unsigned>(at), buf->name));
    }
    b_.CreateRet(b_.CreateCall(impl, impl_args));

    // impl: everything else from the closure, then the body.
    fs_ = FunctionState{};
    fs_.fn = impl;
    fs_.entry = llvm::BasicBlock::Create(ctx_, "entry", impl);
    b_.SetInsertPoint(fs_.entry);
    env = b_.CreatePointerCast(impl->getArg(2), closure_type->getPointerTo(), "env");
    unsigned field = 0;
    fs_.ctx = LoadField(closure_type, env, field++, "ctx");
    std::vector<llvm::Value*> loaded;
    for (llvm::Value* v : leading) loaded.push_back(LoadField(closure_type, env, field++, v->getName().str()));
    vars_.clear();
    buffers_.clear();
    for (const tir::VarNode* v : captured_vars) vars_[v] = LoadField(closure_type, env, field++, v->name);
    for (size_t i = 0; i < fresh.size(); ++i) {
      llvm::Argument* param = impl->getArg(static_cast<unsigned>(3 + i));
      param->setName(fresh[i]->name);
      buffers_[fresh[i]] = param;
    }
    for (const tir::BufferNode* buf : captured_buffers) {
      if (buffers_.count(buf) == 0) buffers_[buf] = LoadField(closure_type, env, field, buf->name);
      ++field;
    }
    body(impl, loaded);
    b_.CreateRet(b_.getInt32(0));
  }
  fs_ = saved_fs;
  vars_ = std::move(saved_vars);
  buffers_ = std::move(saved_buffers);
  b_.SetInsertPoint(saved_block);
  return {fn, b_.CreatePointerCast(closure, b_.getInt8PtrTy())};
}

std::vector<const tir::BufferNode*> KernelLowering::FreshBufferPointers(
    const std::vector<const tir::VarNode*>& vars, const std::vector<const tir::BufferNode*>& buffers) const {
  // Captured values per underlying object (through views' offsets, selects and phis).
  std::map<const llvm::Value*, int> values_of;
  auto count = [&](const llvm::Value* v) {
    llvm::SmallVector<const llvm::Value*, 4> objects;
    llvm::getUnderlyingObjects(v, objects, nullptr, /*MaxLookup=*/0);
    for (const llvm::Value* o : objects) ++values_of[o];
  };
  for (const tir::VarNode* v : vars) {
    if (vars_.at(v)->getType()->isPointerTy()) count(vars_.at(v));
  }
  for (const tir::BufferNode* buf : buffers) count(buffers_.at(buf));
  std::vector<const tir::BufferNode*> fresh;
  for (const tir::BufferNode* buf : buffers) {
    const llvm::Value* base = buffers_.at(buf)->stripPointerCasts();
    const auto* arg = llvm::dyn_cast<llvm::Argument>(base);
    const bool is_fresh = arg != nullptr ? arg->hasNoAliasAttr()
                                         : llvm::isa<llvm::AllocaInst>(base) || llvm::isNoAliasCall(base);
    if (is_fresh && values_of[base] == 1) fresh.push_back(buf);
  }
  return fresh;
}

bool KernelLowering::OutlinesBranches(const tir::IfThenElseNode* op) const {
  if (gpu_host_ || loop_depth_ > 0 || !op->else_case.defined()) return false;
  // Bytes of the stack buffers (constant sizes up to kMaxStackAllocationBytes) in a side.
  struct StackBytes : tir::StmtExprVisitor {
    int64_t bytes = 0;
    bool allocates = false;
    void VisitStmt_(const tir::AllocateNode* op, const tir::Stmt& self) override {
      allocates = true;
      // As WithAllocation decides: a constant size of at most kMaxStackAllocationBytes (a
      // symbolic dimension or a product past the limit is workspace; stop before it overflows).
      int64_t size = (op->buffer->dtype.bits() * op->buffer->dtype.lanes() + 7) / 8;
      for (const PrimExpr& d : op->buffer->shape) {
        std::optional<int64_t> extent = d.as_int();
        size = extent && *extent >= 0 && size <= kMaxStackAllocationBytes ? size * *extent : kMaxStackAllocationBytes + 1;
      }
      if (op->buffer->strides.empty() && size <= kMaxStackAllocationBytes) bytes += size;
      tir::StmtExprVisitor::VisitStmt_(op, self);
    }
  } then_side, else_side;
  then_side.VisitStmt(op->then_case);
  else_side.VisitStmt(op->else_case);
  return then_side.allocates && else_side.allocates && then_side.bytes + else_side.bytes > kOutlinedStackBytes;
}

// A side that is itself such a branch (the next test of a dispatch chain) stays inline and
// outlines its own sides. The function assumes what held where it is called (the checks of
// the arguments, the conditions of the branches around it): inline, LLVM knew as much, and
// a variant for n < 2 with n >= 1 runs its loops over n once, unrolled (the scores kernel
// of the transformer block at n = 1 took 2.6x as long outlined without it).
void KernelLowering::LowerOutlinedBranch(const Stmt& branch) {
  if (const auto* chained = branch.as<tir::IfThenElseNode>(); chained != nullptr && OutlinesBranches(chained)) {
    LowerStmt(branch);
    return;
  }
  const std::vector<PrimExpr> facts = facts_;
  auto [fn, closure] = Outline(absl::StrCat("branch", outlined_branches_++), {},
                               [&](llvm::Function*, const std::vector<llvm::Value*>&) {
                                 for (const PrimExpr& fact : facts) b_.CreateAssumption(Lower(fact));
                                 LowerStmt(branch);
                               });
  // Inlined back (its only call site), the sides' buffers would share one frame again.
  fn->addFnAttr(llvm::Attribute::NoInline);
  llvm::Value* rc = b_.CreateCall(abi_.parallel_body, fn, {b_.getInt64(0), b_.getInt64(1), closure}, "branch_rc");
  ReturnIfNonzero(rc, llvm::BasicBlock::Create(ctx_, "branch_end", fs_.fn));
}

// Elements a buffer spans: the shape's product, or with strides the furthest element + 1.
llvm::Value* KernelLowering::BufferSpan(const tir::Buffer& buffer) {
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

void KernelLowering::WithAllocation(const tir::Buffer& buffer, const std::function<void()>& body) {
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
  // In the host function of a GPU target an allocation is device workspace for its kernels
  // (tir/transform/split_host_device.h): ctx->workspace_alloc on the GPU, never the stack.
  if (!gpu_host_ && constant != nullptr && constant->getSExtValue() * elem_bytes <= kMaxStackAllocationBytes) {
    int64_t count = std::max<int64_t>(constant->getSExtValue(), 1);
    llvm::AllocaInst* a = EntryAlloca(llvm::ArrayType::get(elem, count), nullptr, 64, buffer->name);
    ptr = b_.CreatePointerCast(a, elem->getPointerTo(), buffer->name);
  } else {
    llvm::Value* bytes = b_.CreateMul(span, b_.getInt64(elem_bytes), absl::StrCat(buffer->name, "_bytes"));
    llvm::Value* alloc = LoadField(abi_.context, fs_.ctx, kCtxWorkspaceAlloc, "workspace_alloc");
    llvm::CallInst* call = b_.CreateCall(abi_.workspace_alloc, alloc, {fs_.ctx, bytes}, buffer->name);
    // Fresh memory, like malloc's: telling LLVM so lets it keep a tile of the buffer in
    // registers across a loop that also reads the kernel's arguments (a large matmul
    // accumulator lives here rather than on the stack).
    call->addRetAttr(llvm::Attribute::NoAlias);
    workspace = call;
    Check(b_.CreateIsNotNull(workspace),
          absl::StrCat("kernel ", EscapeFormat(name_), ": cannot allocate %lld bytes of workspace for buffer ",
                       EscapeFormat(buffer->name)),
          {bytes});
    ptr = b_.CreatePointerCast(workspace, elem->getPointerTo());
    fs_.workspaces.push_back(workspace);
  }
  BindBuffer(buffer.get(), ptr, body);
  if (workspace != nullptr) {
    fs_.workspaces.pop_back();
    llvm::Value* free_fn = LoadField(abi_.context, fs_.ctx, kCtxWorkspaceFree, "workspace_free");
    llvm::CallInst* free_call = b_.CreateCall(abi_.workspace_free, free_fn, {fs_.ctx, workspace});
    free_call->addParamAttr(1, llvm::Attribute::NoCapture);  // freeing does not publish the pointer
  }
}

}  // namespace kiln::codegen
