// matmul: numpy semantics. A 1-D lhs (K) acts as (1, K) and a 1-D rhs (K) as (K, 1); the
// added dim is dropped from the result. Batch dims broadcast. Accumulates in double (int64
// for integer dtypes) and stores in out_dtype (default: the operands' dtype).
#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

template <typename T>
void MatmulLoops(const HostTensor& a, const std::vector<int64_t>& a_shape, const HostTensor& b,
                 const std::vector<int64_t>& b_shape, const std::vector<int64_t>& batch,
                 int64_t m, int64_t k, int64_t n, HostTensor& out) {
  std::vector<int64_t> a_batch(a_shape.begin(), a_shape.end() - 2);
  std::vector<int64_t> b_batch(b_shape.begin(), b_shape.end() - 2);
  std::vector<T> av(static_cast<size_t>(a.numel())), bv(static_cast<size_t>(b.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) av[static_cast<size_t>(i)] = a.Get<T>(i);
  for (int64_t i = 0; i < b.numel(); ++i) bv[static_cast<size_t>(i)] = b.Get<T>(i);
  const int64_t batches = NumElements(batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    std::vector<int64_t> index = Unravel(bi, batch);
    int64_t a_base = BroadcastIndex(index, a_batch) * m * k;
    int64_t b_base = BroadcastIndex(index, b_batch) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += av[static_cast<size_t>(a_base + i * k + p)] * bv[static_cast<size_t>(b_base + p * n + j)];
        }
        out.Set((bi * m + i) * n + j, acc);
      }
    }
  }
}

absl::StatusOr<RefValue> Matmul(const KernelCall& call) {
  KILN_ASSIGN_OR_RETURN(const HostTensor* a, call.Tensor(0, "lhs"));
  KILN_ASSIGN_OR_RETURN(const HostTensor* b, call.Tensor(1, "rhs"));
  if (a->ndim() == 0 || b->ndim() == 0) return call.Error("operands must have at least 1 dim");
  if (a->dtype() != b->dtype()) {
    return call.Error("lhs is ", a->dtype().ToString(), " but rhs is ", b->dtype().ToString());
  }
  KILN_ASSIGN_OR_RETURN(std::optional<DataType> out_dtype, call.DTypeAttr("out_dtype"));
  if (out_dtype) KILN_RETURN_IF_ERROR(call.CheckDType(*out_dtype, "out_dtype"));
  std::vector<int64_t> as = a->shape(), bs = b->shape();
  if (a->ndim() == 1) as.insert(as.begin(), 1);
  if (b->ndim() == 1) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) {
    return call.Error("inner dimensions differ: lhs ", ShapeString(a->shape()), ", rhs ",
                      ShapeString(b->shape()));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> batch,
                        BroadcastShapes(call, std::vector<int64_t>(as.begin(), as.end() - 2),
                                        std::vector<int64_t>(bs.begin(), bs.end() - 2)));
  std::vector<int64_t> out_shape = batch;
  if (a->ndim() > 1) out_shape.push_back(m);
  if (b->ndim() > 1) out_shape.push_back(n);
  HostTensor out(out_dtype.value_or(a->dtype()), out_shape);
  if (ComputesInInt(a->dtype())) {
    MatmulLoops<int64_t>(*a, as, *b, bs, batch, m, k, n, out);
  } else {
    MatmulLoops<double>(*a, as, *b, bs, batch, m, k, n, out);
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddMatmulKernels(KernelTable& t) { t["matmul"] = Matmul; }

}  // namespace kiln::reference
