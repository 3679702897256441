#include "tir/schedule/schedule.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"

namespace kiln::tir {

namespace {

using namespace schedule_internal;  // NOLINT

// Gives loop variables that share a name fresh names: names are the schedule's handles.
class LoopRenamer : public StmtExprMutator {
 public:
  explicit LoopRenamer(NameSet used) : used_(std::move(used)) {}
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (seen_.insert(op->loop_var.name()).second) return StmtExprMutator::VisitStmt_(op, self);
    Var renamed(FreshName(op->loop_var.name(), &used_), op->loop_var.dtype(), op->loop_var->lower_bound,
                op->loop_var->upper_bound);
    seen_.insert(renamed.name());
    var_remap_[op->loop_var.get()] = renamed;
    Stmt body = VisitStmt(op->body);
    return For(renamed, VisitExpr(op->min), VisitExpr(op->extent), op->for_kind, body, op->thread_tag);
  }

 private:
  NameSet used_;
  std::set<std::string> seen_;
};

}  // namespace

Schedule::Schedule(const PrimFunc& func) {
  Stmt body = LoopRenamer(UsedNames(func)).VisitStmt(func->body);
  func_ = body.same_as(func->body) ? func : WithBody(func, body);
}

absl::StatusOr<std::string> Schedule::GetBlock(const std::string& name) {
  KILN_RETURN_IF_ERROR(FindBlock(func_, name, "get_block").status());
  trace_.Append({"get_block", {name}, {}, {name}});
  return name;
}

absl::StatusOr<std::vector<std::string>> Schedule::GetLoops(const std::string& block) {
  KILN_ASSIGN_OR_RETURN(Stmt b, FindBlock(func_, block, "get_loops"));
  std::vector<std::string> names;
  for (const Stmt& loop : LoopsAbove(func_->body, b.get())) names.push_back(loop.as<ForNode>()->loop_var.name());
  trace_.Append({"get_loops", {block}, {}, names});
  return names;
}

absl::StatusOr<std::vector<std::string>> Schedule::Split(const std::string& loop,
                                                         const std::vector<int64_t>& factors) {
  KILN_ASSIGN_OR_RETURN(schedule_primitive::SplitResult r, schedule_primitive::Split(func_, loop, factors));
  func_ = r.func;
  trace_.Append({"split", {loop}, factors, r.loops});
  return r.loops;
}

absl::StatusOr<std::string> Schedule::Fuse(const std::vector<std::string>& loops) {
  KILN_ASSIGN_OR_RETURN(schedule_primitive::FuseResult r, schedule_primitive::Fuse(func_, loops));
  func_ = r.func;
  trace_.Append({"fuse", loops, {}, {r.loop}});
  return r.loop;
}

absl::Status Schedule::Reorder(const std::vector<std::string>& loops) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::Reorder(func_, loops));
  trace_.Append({"reorder", loops, {}, {}});
  return absl::OkStatus();
}

absl::Status Schedule::Parallel(const std::string& loop) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::SetLoopKind(func_, loop, ForKind::kParallel));
  trace_.Append({"parallel", {loop}, {}, {}});
  return absl::OkStatus();
}

absl::Status Schedule::Vectorize(const std::string& loop) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::SetLoopKind(func_, loop, ForKind::kVectorized));
  trace_.Append({"vectorize", {loop}, {}, {}});
  return absl::OkStatus();
}

absl::Status Schedule::Unroll(const std::string& loop) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::SetLoopKind(func_, loop, ForKind::kUnrolled));
  trace_.Append({"unroll", {loop}, {}, {}});
  return absl::OkStatus();
}

absl::Status Schedule::Bind(const std::string& loop, const std::string& thread_tag) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::SetLoopKind(func_, loop, ForKind::kThreadBinding, thread_tag));
  trace_.Append({"bind", {loop, thread_tag}, {}, {}});
  return absl::OkStatus();
}

absl::StatusOr<std::string> Schedule::DecomposeReduction(const std::string& block, const std::string& loop) {
  KILN_ASSIGN_OR_RETURN(schedule_primitive::DecomposeResult r,
                        schedule_primitive::DecomposeReduction(func_, block, loop));
  func_ = r.func;
  trace_.Append({"decompose_reduction", {block, loop}, {}, {r.init_block}});
  return r.init_block;
}

absl::Status Schedule::ComputeInline(const std::string& block) { return ComputeInline(std::vector{block}); }

absl::Status Schedule::ComputeInline(const std::vector<std::string>& blocks) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::ComputeInline(func_, blocks));
  trace_.Append({"compute_inline", blocks, {}, {}});
  return absl::OkStatus();
}

absl::StatusOr<std::string> Schedule::CacheWrite(const std::string& block) {
  KILN_ASSIGN_OR_RETURN(schedule_primitive::CacheWriteResult r, schedule_primitive::CacheWrite(func_, block));
  func_ = r.func;
  trace_.Append({"cache_write", {block}, {}, {r.write_back_block}});
  return r.write_back_block;
}

absl::StatusOr<std::string> Schedule::CacheRead(const std::string& block, const std::string& buffer,
                                                const std::string& loop) {
  KILN_ASSIGN_OR_RETURN(schedule_primitive::CacheReadResult r, schedule_primitive::CacheRead(func_, block, buffer, loop));
  func_ = r.func;
  trace_.Append({"cache_read", {block, buffer, loop}, {}, {r.copy_block}});
  return r.copy_block;
}

absl::StatusOr<std::string> Schedule::CacheReadShared(const std::string& block, const std::string& buffer,
                                                      const std::string& loop) {
  KILN_ASSIGN_OR_RETURN(schedule_primitive::CacheReadResult r,
                        schedule_primitive::CacheRead(func_, block, buffer, loop, "shared"));
  func_ = r.func;
  trace_.Append({"cache_read_shared", {block, buffer, loop}, {}, {r.copy_block}});
  return r.copy_block;
}

absl::Status Schedule::ReverseComputeAt(const std::string& block, const std::string& loop) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::ReverseComputeAt(func_, block, loop));
  trace_.Append({"reverse_compute_at", {block, loop}, {}, {}});
  return absl::OkStatus();
}

absl::Status Schedule::ReverseComputeInline(const std::string& block) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::ReverseComputeInline(func_, block));
  trace_.Append({"reverse_compute_inline", {block}, {}, {}});
  return absl::OkStatus();
}

absl::Status Schedule::FuseSiblings(const std::string& first, const std::string& second) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::FuseSiblings(func_, first, second));
  trace_.Append({"fuse_siblings", {first, second}, {}, {}});
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Schedule::RFactor(const std::string& block, const std::string& loop,
                                                           int64_t lanes, int64_t tail_lanes) {
  KILN_ASSIGN_OR_RETURN(schedule_primitive::RFactorResult r,
                        schedule_primitive::RFactor(func_, block, loop, lanes, tail_lanes));
  func_ = r.func;
  std::vector<std::string> names = {r.rf_block, r.init_block, r.tail_block};
  names.insert(names.end(), r.half_blocks.begin(), r.half_blocks.end());
  if (tail_lanes > 0) names.push_back(r.vector_tail_block);
  trace_.Append({"rfactor", {block, loop}, tail_lanes > 0 ? std::vector<int64_t>{lanes, tail_lanes} : std::vector<int64_t>{lanes}, names});
  return names;
}

absl::StatusOr<std::vector<std::string>> Schedule::BranchOn(const PrimExpr& condition, const std::string& loop) {
  KILN_ASSIGN_OR_RETURN(schedule_primitive::BranchResult r, schedule_primitive::BranchOn(func_, condition, loop));
  func_ = r.func;
  std::vector<std::string> inputs = {ToString(condition)};
  if (!loop.empty()) inputs.push_back(loop);
  trace_.Append({"branch_on", inputs, {}, r.else_blocks});
  return r.else_blocks;
}

absl::Status Schedule::GuardVectorizedTails() {
  func_ = schedule_primitive::GuardVectorizedTails(func_);
  trace_.Append({"guard_vectorized_tails", {}, {}, {}});
  return absl::OkStatus();
}

void Schedule::AddressStepsPerTerm() {
  PrimFunc addressed = schedule_primitive::AddressStepsPerTerm(func_);
  if (addressed.same_as(func_)) return;
  func_ = std::move(addressed);
  trace_.Append({"address_steps_per_term", {}, {}, {}});
}

absl::Status Schedule::GuardSteps(const std::string& loop) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::GuardSteps(func_, loop));
  trace_.Append({"guard_steps", {loop}, {}, {}});
  return absl::OkStatus();
}

absl::Status Schedule::PrefetchNext(const std::string& copy, const std::string& outer, const std::string& into,
                                    int64_t cycle) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::PrefetchNext(func_, copy, outer, into, cycle));
  trace_.Append({"prefetch_next", {copy, outer, into}, cycle > 0 ? std::vector<int64_t>{cycle} : std::vector<int64_t>{}, {}});
  return absl::OkStatus();
}

absl::Status Schedule::PrefetchAhead(const std::string& block, const std::string& loop, const std::string& buffer,
                                     int64_t distance, const std::string& first_of) {
  KILN_ASSIGN_OR_RETURN(func_, schedule_primitive::PrefetchAhead(func_, block, loop, buffer, distance, first_of));
  std::vector<std::string> inputs = {block, loop, buffer};
  if (!first_of.empty()) inputs.push_back(first_of);
  trace_.Append({"prefetch_ahead", std::move(inputs), {distance}, {}});
  return absl::OkStatus();
}

}  // namespace kiln::tir
