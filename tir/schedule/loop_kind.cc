// Parallel / Vectorize / Unroll: change how a serial loop runs.
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

absl::StatusOr<PrimFunc> SetLoopKind(const PrimFunc& func, const std::string& name, ForKind kind) {
  std::string primitive = kind == ForKind::kParallel     ? "parallel"
                          : kind == ForKind::kVectorized ? "vectorize"
                                                         : "unroll";
  KILN_ASSIGN_OR_RETURN(Stmt s, FindLoop(func, name, primitive));
  const auto* loop = s.as<ForNode>();
  if (loop->for_kind != ForKind::kSerial) {
    return absl::InvalidArgumentError(
        absl::StrCat(primitive, ": loop '", name, "' is already ", KindWord(loop->for_kind)));
  }
  if (kind == ForKind::kParallel || kind == ForKind::kVectorized) {
    // Iterations that accumulate into the same element would race.
    absl::Status status;
    ForEachStmt(loop->body, [&](const Stmt& st) {
      const auto* block = st.as<BlockNode>();
      if (!block || !status.ok()) return;
      for (const IterVar& iv : block->iter_vars) {
        if (iv.type == IterType::kReduction && UsesVar(iv.value, loop->loop_var.get())) {
          status = absl::InvalidArgumentError(absl::StrCat(primitive, ": loop '", name,
                                                           "' is bound to reduction variable '", iv.var.name(),
                                                           "' of block '", block->name, "'"));
          return;
        }
      }
    });
    KILN_RETURN_IF_ERROR(status);
  }
  // Both become full SIMD width / full unrolling, which needs a known trip count.
  if ((kind == ForKind::kVectorized || kind == ForKind::kUnrolled) && !loop->extent.as_int()) {
    return absl::InvalidArgumentError(absl::StrCat(primitive, ": loop '", name, "' has the non-constant extent ",
                                                   ToString(loop->extent), "; split it by a constant factor first"));
  }
  Stmt replaced = For(loop->loop_var, loop->min, loop->extent, kind, loop->body);
  return WithBody(func, ReplaceStmt(func->body, loop, replaced));
}

}  // namespace kiln::tir::schedule_primitive
