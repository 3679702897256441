#include "relax/op/window.h"

#include <optional>
#include <string>

#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

constexpr int64_t kMaxWindowValue = int64_t{1} << 24;

absl::Status CheckValue(const CallNode& call, const std::string& name, int64_t x, int64_t min_value) {
  if (x < min_value) {
    return OpError(call, "attribute '", name, "' values must be ", min_value > 0 ? "positive" : "non-negative",
                   ", got ", x);
  }
  if (x > kMaxWindowValue) return OpError(call, "attribute '", name, "' values must be at most 2^24, got ", x);
  return absl::OkStatus();
}

// An int-list attribute of `rank` values given as 1 value (repeated) or `rank` values.
absl::StatusOr<std::vector<int64_t>> PerDim(const CallNode& call, const std::string& name, int rank,
                                            std::optional<std::vector<int64_t>> fallback, int64_t min_value) {
  KILN_ASSIGN_OR_RETURN(auto v, IntsAttr(call, name));
  if (!v || v->empty()) {
    if (!fallback) return OpError(call, "attribute '", name, "' is required");
    v = fallback;
  }
  if (v->size() == 1) v->assign(static_cast<size_t>(rank), (*v)[0]);
  if (v->size() != static_cast<size_t>(rank)) {
    return OpError(call, "attribute '", name, "' needs 1 or ", rank, " values, got ", v->size());
  }
  for (int64_t x : *v) KILN_RETURN_IF_ERROR(CheckValue(call, name, x, min_value));
  return *v;
}

}  // namespace

absl::StatusOr<WindowAttrs> ReadWindowAttrs(const CallNode& call, int rank, WindowKind kind) {
  WindowAttrs w;
  w.rank = rank;
  const bool pool = kind == WindowKind::kMaxPool || kind == WindowKind::kAvgPool;
  if (pool) {
    KILN_ASSIGN_OR_RETURN(w.pool_size, PerDim(call, "pool_size", rank, std::nullopt, 1));
  }
  const std::vector<int64_t> one = {1};
  KILN_ASSIGN_OR_RETURN(w.strides, PerDim(call, "strides", rank, pool ? w.pool_size : one, 1));
  KILN_ASSIGN_OR_RETURN(w.dilation, PerDim(call, "dilation", rank, one, 1));
  KILN_ASSIGN_OR_RETURN(auto padding, IntsAttr(call, "padding"));
  std::vector<int64_t> p = padding && !padding->empty() ? *padding : std::vector<int64_t>{0};
  const size_t r = static_cast<size_t>(rank);
  if (p.size() == 1) p.assign(r, p[0]);
  if (p.size() == r) p.insert(p.end(), p.begin(), p.end());
  if (p.size() != 2 * r) {
    if (rank == 1) return OpError(call, "attribute 'padding' needs 1 or 2 values, got ", p.size());
    return OpError(call, "attribute 'padding' needs 1, ", rank, " or ", 2 * rank, " values, got ", p.size());
  }
  for (int64_t x : p) KILN_RETURN_IF_ERROR(CheckValue(call, "padding", x, 0));
  w.pad_begin.assign(p.begin(), p.begin() + rank);
  w.pad_end.assign(p.begin() + rank, p.end());
  w.output_padding.assign(r, 0);
  if (kind == WindowKind::kConvTranspose) {
    KILN_ASSIGN_OR_RETURN(w.output_padding, PerDim(call, "output_padding", rank, std::vector<int64_t>{0}, 0));
    for (size_t d = 0; d < r; ++d) {
      if (w.output_padding[d] >= w.strides[d] && w.output_padding[d] >= w.dilation[d]) {
        return OpError(call, "output_padding (", w.output_padding[d], ") must be smaller than the stride (",
                       w.strides[d], ") or the dilation (", w.dilation[d], ") of spatial dim ", d);
      }
    }
  }
  if (pool) {
    KILN_ASSIGN_OR_RETURN(auto ceil_mode, BoolAttr(call, "ceil_mode"));
    w.ceil_mode = ceil_mode.value_or(false);
  }
  if (kind == WindowKind::kAvgPool) {
    KILN_ASSIGN_OR_RETURN(auto include, BoolAttr(call, "count_include_pad"));
    w.count_include_pad = include.value_or(false);
  }
  return w;
}

}  // namespace kiln::relax::op
