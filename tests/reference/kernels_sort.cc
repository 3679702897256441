// Sorting and scan kernels: cumsum, sort, argsort, topk. Rows along the axis are sorted with
// std::stable_sort under the order of relax/op/sort.cc (NaN largest, ties by index), an
// algorithm unrelated to the legalization's ranks; cumsum runs a sequential sum in double.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

// Calls fn(flat indices of one row along `axis`) for every row.
template <typename Fn>
void ForEachRow(const std::vector<int64_t>& shape, int axis, Fn fn) {
  std::vector<int64_t> outer = shape;
  outer[static_cast<size_t>(axis)] = 1;
  const int64_t n = shape[static_cast<size_t>(axis)];
  for (int64_t o = 0; o < NumElements(outer); ++o) {
    std::vector<int64_t> index = Unravel(o, outer);
    std::vector<int64_t> row;
    for (int64_t j = 0; j < n; ++j) {
      index[static_cast<size_t>(axis)] = j;
      row.push_back(Ravel(index, shape));
    }
    fn(row);
  }
}

absl::StatusOr<RefValue> Cumsum(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axis_attr, call.IntAttr("axis"));
  KILN_ASSIGN_OR_RETURN(auto exclusive, call.BoolAttr("exclusive"));
  KILN_ASSIGN_OR_RETURN(auto reverse, call.BoolAttr("reverse"));
  if (!axis_attr) return call.Error("axis is required");
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, *axis_attr, x->ndim()));
  HostTensor out(x->dtype(), x->shape());
  const bool in_int = ComputesInInt(x->dtype());
  ForEachRow(x->shape(), axis, [&](std::vector<int64_t> row) {
    if (reverse.value_or(false)) std::reverse(row.begin(), row.end());
    double sum = 0;
    // Integer sums wrap around as the kernels' two's-complement adds do (unsigned: no UB).
    uint64_t isum = 0;
    auto store = [&](int64_t at) {
      in_int ? out.SetInt(at, static_cast<int64_t>(isum)) : out.SetDouble(at, sum);
    };
    for (int64_t at : row) {
      if (exclusive.value_or(false)) store(at);
      if (in_int) {
        isum += static_cast<uint64_t>(x->GetInt(at));
      } else {
        sum += x->GetDouble(at);
      }
      if (!exclusive.value_or(false)) store(at);
    }
  });
  return RefValue(std::move(out));
}

// The positions of one row in sorted order.
std::vector<int64_t> SortedOrder(const HostTensor& x, const std::vector<int64_t>& row, bool descending) {
  std::vector<int64_t> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](int64_t i) { return x.GetDouble(row[static_cast<size_t>(i)]); };
  auto ikey = [&](int64_t i) { return x.GetInt(row[static_cast<size_t>(i)]); };
  const bool floating = x.dtype().is_floating();
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    if (!floating) return descending ? ikey(a) > ikey(b) : ikey(a) < ikey(b);
    const double va = key(a), vb = key(b);
    if (std::isnan(va) || std::isnan(vb)) {
      // NaN is the largest value.
      return descending ? (std::isnan(va) && !std::isnan(vb)) : (std::isnan(vb) && !std::isnan(va));
    }
    return descending ? va > vb : va < vb;
  });
  return order;
}

absl::StatusOr<DataType> IndexDType(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(auto dtype, call.DTypeAttr("dtype"));
  return dtype.value_or(DataType::Int64());
}

// sort, argsort and topk: the first `k` sorted positions of each row.
absl::StatusOr<RefValue> SortImpl(const KernelCall& call, const char* order_attr, bool order_default, bool topk,
                                  bool want_values, bool want_indices) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* x, call.Tensor(0, "data"));
  KILN_ASSIGN_OR_RETURN(auto axis_attr, call.IntAttr("axis"));
  KILN_ASSIGN_OR_RETURN(auto flag, call.BoolAttr(order_attr));
  KILN_ASSIGN_OR_RETURN(DataType index_dtype, IndexDType(call));
  if (x->ndim() == 0) return call.Error("data must have at least 1 dimension");
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr.value_or(-1), x->ndim()));
  const auto a = static_cast<size_t>(axis);
  int64_t k = x->shape()[a];
  if (topk) {
    KILN_ASSIGN_OR_RETURN(auto k_attr, call.IntAttr("k"));
    if (!k_attr || *k_attr < 0 || *k_attr > k) return call.Error("k must be in [0, ", k, "]");
    k = *k_attr;
  }
  std::vector<int64_t> shape = x->shape();
  shape[a] = k;
  HostTensor values(x->dtype(), shape);
  HostTensor indices(index_dtype, shape);
  ForEachRow(shape, axis, [&](const std::vector<int64_t>& out_row) {
    // The input row with the same outer position.
    std::vector<int64_t> index = out_row.empty() ? std::vector<int64_t>() : Unravel(out_row[0], shape);
    std::vector<int64_t> row;
    if (out_row.empty()) return;
    for (int64_t j = 0; j < x->shape()[a]; ++j) {
      index[a] = j;
      row.push_back(Ravel(index, x->shape()));
    }
    std::vector<int64_t> order = SortedOrder(*x, row, flag.value_or(order_default));
    for (size_t r = 0; r < out_row.size(); ++r) {
      values.CopyElement(out_row[r], *x, row[static_cast<size_t>(order[r])]);
      indices.SetInt(out_row[r], order[r]);
    }
  });
  if (want_values && want_indices) return RefValue::Tuple({RefValue(std::move(values)), RefValue(std::move(indices))});
  return want_values ? RefValue(std::move(values)) : RefValue(std::move(indices));
}

absl::StatusOr<RefValue> Sort(const KernelCall& call) { return SortImpl(call, "descending", false, false, true, false); }
absl::StatusOr<RefValue> Argsort(const KernelCall& call) {
  return SortImpl(call, "descending", false, false, false, true);
}
absl::StatusOr<RefValue> Topk(const KernelCall& call) { return SortImpl(call, "largest", true, true, true, true); }

}  // namespace

void AddSortKernels(KernelTable& t) {
  t["cumsum"] = Cumsum;
  t["sort"] = Sort;
  t["argsort"] = Argsort;
  t["topk"] = Topk;
}

}  // namespace kiln::reference
