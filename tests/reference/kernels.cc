#include "tests/reference/kernels.h"

#include <algorithm>
#include <variant>

#include "support/status_macros.h"

namespace kiln::reference {

absl::StatusOr<const HostTensor*> KernelCall::Tensor(size_t i, const char* what) const {
  if (i >= args.size()) return Error("missing argument ", what);
  if (!args[i].is_tensor()) return Error(what, " must be a tensor, got ", args[i].TypeString());
  return &args[i].tensor();
}

absl::StatusOr<std::vector<int64_t>> KernelCall::Shape(size_t i, const char* what,
                                                     bool allow_minus_one) const {
  if (i >= args.size()) return Error("missing argument ", what);
  if (args[i].kind() != RefValue::Kind::kShape) {
    return Error(what, " must be a shape, got ", args[i].TypeString());
  }
  const std::vector<int64_t>& dims = args[i].shape();
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0 && !(allow_minus_one && d == -1)) {
      return Error(what, " ", ShapeString(dims), " has a negative dim");
    }
    if (d > 0) count = d > kMaxElements / count ? kMaxElements + 1 : count * d;
  }
  if (count > kMaxElements) {
    return Error(what, " ", ShapeString(dims), " has more than ", kMaxElements, " elements");
  }
  return dims;
}

absl::Status KernelCall::CheckElementCount(const std::vector<int64_t>& shape) const {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return Error("result shape ", ShapeString(shape), " has a negative dim");
    if (d > 0) count = d > kMaxElements / count ? kMaxElements + 1 : count * d;
  }
  if (count > kMaxElements) return Error("result shape ", ShapeString(shape), " is too large");
  return absl::OkStatus();
}

absl::Status KernelCall::CheckDType(DataType dtype, const char* what) const {
  if (IsSupportedDType(dtype)) return absl::OkStatus();
  return Error(what, " has unsupported dtype ", dtype.ToString());
}

namespace {
template <typename T>
absl::StatusOr<std::optional<T>> TypedAttr(const KernelCall& kc, const std::string& name,
                                           const char* kind) {
  auto it = kc.call.attrs.find(name);
  if (it == kc.call.attrs.end()) return std::optional<T>();
  if (const T* v = std::get_if<T>(&it->second)) return std::optional<T>(*v);
  return kc.Error("attribute ", name, " must be ", kind);
}
}  // namespace

absl::StatusOr<std::optional<int64_t>> KernelCall::IntAttr(const std::string& name) const {
  return TypedAttr<int64_t>(*this, name, "an int");
}

absl::StatusOr<std::optional<bool>> KernelCall::BoolAttr(const std::string& name) const {
  return TypedAttr<bool>(*this, name, "a bool");
}

absl::StatusOr<std::optional<double>> KernelCall::FloatAttr(const std::string& name) const {
  auto it = call.attrs.find(name);
  if (it != call.attrs.end()) {
    if (const int64_t* v = std::get_if<int64_t>(&it->second)) {
      return std::optional<double>(static_cast<double>(*v));
    }
  }
  return TypedAttr<double>(*this, name, "a float");
}

absl::StatusOr<std::optional<DataType>> KernelCall::DTypeAttr(const std::string& name) const {
  auto it = call.attrs.find(name);
  if (it != call.attrs.end()) {
    if (const std::string* s = std::get_if<std::string>(&it->second)) {
      auto parsed = DataType::Parse(*s);
      if (!parsed.ok()) return Error("attribute ", name, ": ", parsed.status().message());
      return std::optional<DataType>(*parsed);
    }
  }
  return TypedAttr<DataType>(*this, name, "a dtype");
}

absl::StatusOr<std::optional<std::vector<int64_t>>> KernelCall::IntsAttr(
    const std::string& name) const {
  auto it = call.attrs.find(name);
  if (it != call.attrs.end()) {
    if (const int64_t* v = std::get_if<int64_t>(&it->second)) {
      return std::optional<std::vector<int64_t>>(std::vector<int64_t>{*v});
    }
  }
  return TypedAttr<std::vector<int64_t>>(*this, name, "an int list");
}

absl::StatusOr<std::optional<std::vector<double>>> KernelCall::FloatsAttr(const std::string& name) const {
  auto it = call.attrs.find(name);
  if (it != call.attrs.end()) {
    if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) {
      return std::optional<std::vector<double>>(std::vector<double>(v->begin(), v->end()));
    }
  }
  return TypedAttr<std::vector<double>>(*this, name, "a list of numbers");
}

Kernel FindKernel(std::string_view op) {
  static const KernelTable* table = [] {
    auto* t = new KernelTable();
    AddElementwiseKernels(*t);
    AddMathKernels(*t);
    AddMatmulKernels(*t);
    AddManipulateKernels(*t);
    AddReduceKernels(*t);
    AddCreateKernels(*t);
    AddNnKernels(*t);
    AddNormalizationKernels(*t);
    AddResizeKernels(*t);
    AddQuantizeKernels(*t);
    AddPositionalKernels(*t);
    AddIndexingKernels(*t);
    AddRearrangeKernels(*t);
    AddSortKernels(*t);
    AddEinsumKernels(*t);
    AddDynamicShapeKernels(*t);
    return t;
  }();
  auto it = table->find(op);
  return it == table->end() ? nullptr : it->second;
}

std::vector<int64_t> Unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    index[k] = flat % shape[k];
    flat /= shape[k];
  }
  return index;
}

int64_t Ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + index[k];
  return flat;
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t BroadcastIndex(const std::vector<int64_t>& out_index, const std::vector<int64_t>& in_shape) {
  size_t offset = out_index.size() - in_shape.size();
  int64_t flat = 0;
  for (size_t k = 0; k < in_shape.size(); ++k) {
    int64_t i = in_shape[k] == 1 ? 0 : out_index[offset + k];
    flat = flat * in_shape[k] + i;
  }
  return flat;
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const KernelCall& call,
                                                     const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t k = 0; k < n; ++k) {
    int64_t da = k < n - a.size() ? 1 : a[k - (n - a.size())];
    int64_t db = k < n - b.size() ? 1 : b[k - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      return call.Error("shapes ", ShapeString(a), " and ", ShapeString(b), " do not broadcast");
    }
    out[k] = da == 1 ? db : da;
  }
  KILN_RETURN_IF_ERROR(call.CheckElementCount(out));
  return out;
}

absl::StatusOr<int> NormalizeAxis(const KernelCall& call, int64_t axis, int ndim) {
  if (axis < -ndim || axis >= ndim) {
    return call.Error("axis ", axis, " is out of range for ", ndim, " dims");
  }
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

absl::StatusOr<std::vector<int>> NormalizeAxes(const KernelCall& call,
                                               const std::optional<std::vector<int64_t>>& axes,
                                               int ndim) {
  std::vector<int> out;
  if (!axes) {
    for (int k = 0; k < ndim; ++k) out.push_back(k);
    return out;
  }
  std::vector<bool> seen(static_cast<size_t>(ndim), false);
  for (int64_t a : *axes) {
    KILN_ASSIGN_OR_RETURN(int k, NormalizeAxis(call, a, ndim));
    if (seen[static_cast<size_t>(k)]) return call.Error("axis ", a, " is repeated");
    seen[static_cast<size_t>(k)] = true;
    out.push_back(k);
  }
  return out;
}

}  // namespace kiln::reference
