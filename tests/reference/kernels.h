// Operator kernels of the reference evaluator: one plain-loop function per Relax operator
// (semantics as stated in the header comments of relax/op/*.cc), grouped by family in
// kernels_*.cc. Arithmetic is done in double, or in int64 for integer and bool dtypes, and
// the result is stored in the output dtype. Run-time errors (shapes that do not broadcast,
// an index out of range) are InvalidArgument statuses starting with the operator's name.
//
// Internal to tests/reference: the evaluator dispatches calls here by operator name.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "relax/expr.h"
#include "tests/reference/ref_value.h"

namespace kiln::reference {

// The most elements a kernel creates from a shape given at run time: far beyond any test,
// small enough that a wrong shape is an error instead of an allocation failure.
inline constexpr int64_t kMaxElements = int64_t{1} << 31;

// One operator call: its IR node (for attributes) and its evaluated arguments.
struct KernelCall {
  const relax::CallNode& call;
  const std::string& op;
  const std::vector<RefValue>& args;

  template <typename... Parts>
  absl::Status Error(const Parts&... parts) const {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", parts...));
  }
  // Argument `i` as a tensor / shape / prim; `what` names it in errors.
  absl::StatusOr<const HostTensor*> Tensor(size_t i, const char* what) const;
  // A shape argument's dims must be >= 0 (reshape alone passes allow_minus_one) and
  // describe at most kMaxElements elements.
  absl::StatusOr<std::vector<int64_t>> Shape(size_t i, const char* what,
                                             bool allow_minus_one = false) const;

  // An error unless `shape` has at most kMaxElements elements (dims >= 0).
  absl::Status CheckElementCount(const std::vector<int64_t>& shape) const;
  // An error unless HostTensor supports `dtype`.
  absl::Status CheckDType(DataType dtype, const char* what) const;

  // Attributes: absent -> nullopt, present with the wrong kind -> error.
  absl::StatusOr<std::optional<int64_t>> IntAttr(const std::string& name) const;
  absl::StatusOr<std::optional<bool>> BoolAttr(const std::string& name) const;
  absl::StatusOr<std::optional<double>> FloatAttr(const std::string& name) const;  // or an int
  absl::StatusOr<std::optional<DataType>> DTypeAttr(const std::string& name) const;  // or a string
  absl::StatusOr<std::optional<std::vector<int64_t>>> IntsAttr(const std::string& name) const;  // or one int
  absl::StatusOr<std::optional<std::vector<double>>> FloatsAttr(const std::string& name) const;  // or an int list
};

using Kernel = absl::StatusOr<RefValue> (*)(const KernelCall& call);
using KernelTable = std::map<std::string, Kernel, std::less<>>;

void AddElementwiseKernels(KernelTable& table);
void AddMathKernels(KernelTable& table);
void AddMatmulKernels(KernelTable& table);
void AddManipulateKernels(KernelTable& table);
void AddReduceKernels(KernelTable& table);
void AddCreateKernels(KernelTable& table);
void AddNnKernels(KernelTable& table);
void AddNormalizationKernels(KernelTable& table);
void AddResizeKernels(KernelTable& table);
void AddQuantizeKernels(KernelTable& table);
void AddPositionalKernels(KernelTable& table);
void AddIndexingKernels(KernelTable& table);
void AddRearrangeKernels(KernelTable& table);
void AddSortKernels(KernelTable& table);
void AddEinsumKernels(KernelTable& table);
void AddDynamicShapeKernels(KernelTable& table);

// nullptr when the operator has no kernel.
Kernel FindKernel(std::string_view op);

// --- Index helpers (row-major). ---
std::vector<int64_t> Unravel(int64_t flat, const std::vector<int64_t>& shape);
int64_t Ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& shape);
int64_t NumElements(const std::vector<int64_t>& shape);
// The flat index into a tensor of `in_shape` that numpy broadcasting reads for `out_index`
// (dims aligned from the right; size-1 dims are read at 0).
int64_t BroadcastIndex(const std::vector<int64_t>& out_index, const std::vector<int64_t>& in_shape);
// numpy broadcasting of two shapes; mismatches are errors naming both shapes.
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const KernelCall& call,
                                                     const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b);
// A possibly negative axis into [0, ndim).
absl::StatusOr<int> NormalizeAxis(const KernelCall& call, int64_t axis, int ndim);
// Axes normalized; repeats are errors. nullopt -> every axis.
absl::StatusOr<std::vector<int>> NormalizeAxes(const KernelCall& call,
                                               const std::optional<std::vector<int64_t>>& axes,
                                               int ndim);

// Integer-valued (int, uint, bool): computed in int64.
inline bool ComputesInInt(DataType t) { return !t.is_floating(); }

// np.maximum / np.minimum on doubles: NaN if either operand is NaN.
inline double NanMax(double a, double b) { return a != a || b != b ? a + b : (a < b ? b : a); }
inline double NanMin(double a, double b) { return a != a || b != b ? a + b : (b < a ? b : a); }

}  // namespace kiln::reference
