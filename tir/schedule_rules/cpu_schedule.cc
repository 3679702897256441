// The default CPU schedule: which rule each block gets, the few-rows and unpacked versions
// of a symbolic matmul, and the passes over the whole function (inlining first, row passes
// and tail guards last).
#include "tir/schedule_rules/cpu_schedule.h"

#include <functional>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/cpu_rules.h"
#include "tir/structural_equal.h"

namespace kiln::tir {

namespace {

using namespace schedule_internal;  // NOLINT
using namespace cpu_rules;          // NOLINT

// The blocks the rules schedule, with the options each gets; nullopt for blocks no rule
// takes.
std::optional<PlainNest> RuleNest(const PrimFunc& func, const std::string& name) {
  std::optional<PlainNest> nest = FindPlainNest(func, name);
  if (!nest || nest->loops.empty() || !WritesFollowSpatialVars(*nest)) return std::nullopt;
  return nest;
}

// A block inside another (iterating) block runs within its parent's parallel loop.
CpuScheduleOptions BlockOptions(const PrimFunc& func, const PlainNest& nest, const CpuScheduleOptions& options) {
  CpuScheduleOptions block_options = options;
  for (const Stmt& a : AncestorsOf(func->body, nest.block)) {
    const auto* parent = a.as<BlockNode>();
    if (parent && !parent->iter_vars.empty()) block_options.num_threads = 1;
  }
  return block_options;
}

std::vector<std::string> BlockNames(const PrimFunc& func) {
  std::vector<std::string> blocks;
  ForEachStmt(func->body, [&](const Stmt& s) {
    if (const auto* b = s.as<BlockNode>()) blocks.push_back(b->name);
  });
  return blocks;
}

// Whether `name` is an elementwise block whose output only matmul-like blocks read.
bool FeedsOnlyMatmuls(const PrimFunc& func, const std::string& name) {
  std::optional<PlainNest> nest = RuleNest(func, name);
  if (!nest || nest->block->is_reduction()) return false;
  const BufferNode* out = StoredBuffer(func, name);
  std::vector<std::string> readers = out ? ReadersOf(func, out) : std::vector<std::string>();
  for (const std::string& reader : readers) {
    std::optional<PlainNest> r = RuleNest(func, reader);
    if (!r || !r->block->is_reduction() || !IsMatmulLike(*r)) return false;
  }
  return !readers.empty();
}

// How ScheduleVersioned's versions of a block are scheduled.
struct BlockVersions {
  std::set<std::string> few_rows;  // matmul_few_rows (BranchOn's copy)
  std::set<std::string> packed;    // matmul_packed_wide too
  std::set<std::string> skipped;   // a version that never runs: left as plain loops
  std::set<std::string> unpacked;  // matmul_unpacked_panels (BranchOn's copy)
};

// Each block's rule, in order. Returns the many-rows conditions of the matmuls given register
// tiles.
std::vector<PrimExpr> ApplyBlockRules(Schedule* schedule, const CpuScheduleOptions& options,
                                      const BlockVersions& versions = {}) {
  std::vector<PrimExpr> many_conditions;
  // Blocks that only feed matmuls go last: the matmul rule may fold one into the packing of
  // its panel (PackPanel, cpu_matmul.cc), which it can only while the block is unscheduled.
  std::vector<std::string> names, feeding_matmuls;
  for (const std::string& name : BlockNames(schedule->func())) {
    (FeedsOnlyMatmuls(schedule->func(), name) ? feeding_matmuls : names).push_back(name);
  }
  names.insert(names.end(), feeding_matmuls.begin(), feeding_matmuls.end());
  for (const std::string& name : names) {
    if (versions.skipped.count(name)) continue;
    std::optional<PlainNest> nest = RuleNest(schedule->func(), name);
    if (!nest) continue;
    CpuScheduleOptions block_options = BlockOptions(schedule->func(), *nest, options);
    block_options.matmul_few_rows |= versions.few_rows.count(name) > 0;
    block_options.matmul_packed_wide |= versions.packed.count(name) > 0;
    block_options.matmul_unpacked_panels |= versions.unpacked.count(name) > 0;
    // Each rule runs on a copy: one that does not apply leaves the block as it was.
    Schedule attempt = *schedule;
    absl::Status status;
    if (!nest->block->is_reduction()) {
      status = ScheduleInjective(&attempt, *nest, block_options);
    } else if (IsMatmulLike(*nest)) {
      status = ScheduleMatmulRule(&attempt, *nest, block_options, &many_conditions);
    } else if (IsWindowReduction(*nest)) {
      status = ScheduleWindowReduction(&attempt, *nest, block_options);
    } else {
      status = ScheduleReduction(&attempt, *nest, block_options);
    }
    if (status.ok()) *schedule = std::move(attempt);
  }
  return many_conditions;
}

// The conditions `condition_of` (ManyRowsCondition, PackedRowsCondition,
// PackedPanelRowsCondition) gives for the matmuls of `func`, known before the rules run.
std::vector<PrimExpr> PredictMatmulConditions(
    const PrimFunc& func, const std::function<std::optional<PrimExpr>(const PlainNest&)>& condition_of) {
  std::vector<PrimExpr> conditions;
  for (const std::string& name : BlockNames(func)) {
    std::optional<PlainNest> nest = RuleNest(func, name);
    if (!nest || !nest->block->is_reduction() || !IsMatmulLike(*nest)) continue;
    if (std::optional<PrimExpr> c = condition_of(*nest)) conditions.push_back(*c);
  }
  return conditions;
}

std::vector<PrimExpr> PredictMatmulConditions(
    const PrimFunc& func, const CpuScheduleOptions& options,
    std::optional<PrimExpr> (*condition_of)(const PlainNest&, const CpuScheduleOptions&)) {
  return PredictMatmulConditions(func, [&](const PlainNest& nest) { return condition_of(nest, options); });
}

// One matmul that may have few rows and wide columns at run time: the function is
// versioned on `many` (`m >= 64 || n < 256`), the first version scheduled for many rows,
// the copy for few, so one compiled kernel streams the weight for m = 1 (GEMV) and keeps
// the 8 x 32 register tile for large m. Where the few rows take packed wide tiles from 32
// rows on (AVX2 over a constant weight: up to 64 rows, so many rows start at 65), it is
// versioned again on `m >= 32`:
//   if (m >= 32) { if (m >= 65) { register tiles } else { packed wide tiles } }
//   else { if (m >= 65) { never runs: plain loops } else { wide tiles, streaming } }
// False (and `out` untouched) when the versioning does not hold: the first version's matmul
// did not get register tiles after all.
bool ScheduleVersioned(const Schedule& s, const PrimExpr& many, const CpuScheduleOptions& options, Schedule* out) {
  Schedule attempt = s;
  absl::StatusOr<std::vector<std::string>> copy = attempt.BranchOn(many);
  if (!copy.ok()) return false;
  BlockVersions versions;
  versions.few_rows.insert(copy->begin(), copy->end());
  std::vector<PrimExpr> packed_rows = PredictMatmulConditions(s.func(), options, PackedRowsCondition);
  if (packed_rows.size() == 1) {
    const std::vector<std::string> before = BlockNames(attempt.func());
    absl::StatusOr<std::vector<std::string>> fewer = attempt.BranchOn(packed_rows[0]);
    if (!fewer.ok() || fewer->size() != before.size()) return false;
    // The copy's blocks come in the order of the originals (BranchOn copies the body).
    BlockVersions nested;
    for (size_t i = 0; i < before.size(); ++i) {
      if (versions.few_rows.count(before[i])) {
        nested.few_rows.insert({before[i], (*fewer)[i]});
        nested.packed.insert(before[i]);
      } else {
        nested.skipped.insert((*fewer)[i]);  // many rows and too few for packed tiles: no m is both
      }
    }
    versions = std::move(nested);
  }
  std::vector<PrimExpr> reported = ApplyBlockRules(&attempt, options, versions);
  if (reported.size() != 1 || !StructuralEqual(reported[0], many)) return false;
  *out = std::move(attempt);
  return true;
}

// One matmul with symbolic rows whose register tiles pack a narrow constant weight's panels:
// the function is versioned on `m >= 128` (PackedPanelRowsCondition; fewer rows on AVX2 for
// deep weights), the first version packing, the copy reading the panels in place, so a
// call with a few rows does not copy the whole weight for them. False (and `out` untouched)
// when no single matmul asks for it or the versions' rules report a many-rows condition
// (that versioning would have come first).
bool SchedulePanelsVersioned(const Schedule& s, const CpuScheduleOptions& options, Schedule* out) {
  std::vector<PrimExpr> packed = PredictMatmulConditions(
      s.func(), [&](const PlainNest& nest) { return PackedPanelRowsCondition(s.func(), nest, options); });
  if (packed.size() != 1) return false;
  Schedule attempt = s;
  absl::StatusOr<std::vector<std::string>> copy = attempt.BranchOn(packed[0]);
  if (!copy.ok()) return false;
  BlockVersions versions;
  versions.unpacked.insert(copy->begin(), copy->end());
  if (!ApplyBlockRules(&attempt, options, versions).empty()) return false;
  *out = std::move(attempt);
  return true;
}

bool HasVectorizedLoop(const PrimFunc& func) {
  bool found = false;
  ForEachStmt(func->body, [&](const Stmt& s) {
    if (const auto* f = s.as<ForNode>()) found |= f->for_kind == ForKind::kVectorized;
  });
  return found;
}

}  // namespace

absl::StatusOr<PrimFunc> ScheduleForCpu(const PrimFunc& func, const CpuScheduleOptions& options, std::string* trace) {
  if (options.vector_lanes < 1 || options.vector_lanes > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu schedule: vector_lanes must be in [1, 64], got ", options.vector_lanes));
  }
  if (options.num_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu schedule: num_threads must be >= 1, got ", options.num_threads));
  }
  Schedule inlined(func);
  InlineIntermediates(&inlined);
  // Versioned only when exactly one matmul gets register tiles with a condition. The
  // prediction is checked: when it was wrong, the other way is taken.
  std::vector<PrimExpr> predicted = PredictMatmulConditions(inlined.func(), options, ManyRowsCondition);
  Schedule schedule = inlined;
  bool versioned = predicted.size() == 1 && ScheduleVersioned(inlined, predicted[0], options, &schedule);
  if (!versioned && predicted.empty()) versioned = SchedulePanelsVersioned(inlined, options, &schedule);
  if (!versioned) {
    std::vector<PrimExpr> reported = ApplyBlockRules(&schedule, options);
    if (reported.size() == 1 && predicted.size() != 1) ScheduleVersioned(inlined, reported[0], options, &schedule);
  }
  FuseRowPasses(&schedule);
  if (HasVectorizedLoop(schedule.func())) {
    (void)schedule.GuardVectorizedTails();
    GuardPackedWideEdgeSteps(&schedule);
    StreamWideEdgeTiles(&schedule, options);
    StepRegisterEdgeRows(&schedule, options);
    // AVX2's register steps of three or more vectors keep their accumulators in registers
    // only with local addresses per term (tir/local_address_attr.h).
    if (options.vector_lanes == 8) schedule.AddressStepsPerTerm();
  }
  if (options.knobs.matmul.wide_prefetch) PrefetchPanels(&schedule, options);
  if (trace) *trace = schedule.trace().ToString();
  return schedule.func();
}

}  // namespace kiln::tir
