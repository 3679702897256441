// kiln.ml.tree_ensemble: ai.onnx.ml's decision-tree ensembles (TreeEnsemble 5,
// TreeEnsembleRegressor and TreeEnsembleClassifier 1 / 3) evaluated on the host. Walking a tree
// is a data-dependent loop per row and tree (which child to visit depends on the features), so
// one plain loop here is simpler and cheaper than gathers over every node in generated code. The
// ONNX importer (frontends/onnx/converters/tree_ensemble_converters.cc) turns each operator's
// attributes into the one normalized form below, as constants:
//
//   x             [N, F] features (any float or integer type; compared as double).
//   nodes         int64 [nodes, 6]: feature, mode, true child, false child,
//                 missing-goes-true, first member. A child c >= 0 is node c; c < 0 is leaf -c-1.
//                 Modes: 0 <=, 1 <, 2 >=, 3 >, 4 ==, 5 !=, 6 member of a set.
//   thresholds    float64 [nodes]: each node's split value.
//   members       float64 [M]: the sets of the member nodes, each ended by a NaN.
//   leaf_offsets  int64 [leaves + 1]: leaf l adds the (target, weight) pairs
//   leaf_targets  int64 [E]          [leaf_offsets[l], leaf_offsets[l + 1]).
//   leaf_weights  float64 [E]
//   roots         int64 [trees]: each tree's root, a child code as above.
//   base          float64 [targets]: added to every row after aggregation.
//   aggregate     0 AVERAGE, 1 SUM, 2 MIN, 3 MAX (over the leaves reached in all trees).
//   post          0 NONE, 1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO, 4 PROBIT, on each row.
//   nan_rule      what a NaN feature does: 0 (TreeEnsemble 5) goes true when the
//                 comparison holds or the node tracks missing values as true (so != is true);
//                 1 (the older operators) goes true exactly when the node tracks missing as true.
//   out_dtype     the packed output dtype (a float type); the result is [N, targets].
//   binary        1 for TreeEnsembleClassifier's binary case (every leaf adds to class 0 of
//                 two): before the post transform, score 1 takes score 0's value and score 0
//                 becomes 1 - it (post NONE or PROBIT) or -it (otherwise), as ONNX's reference.
//
// MIN / MAX start each target at the output type's largest / lowest finite value, as ONNX's
// reference does, so a target no leaf reached keeps it. Sums are accumulated in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/builtin_args.h"
#include "builtins/default_builtins.h"
#include "support/status_macros.h"

namespace kiln::builtins {
namespace {

using vm::BuiltinContext;
using vm::Tensor;
using vm::Value;

constexpr const char* kName = "kiln.ml.tree_ensemble";
constexpr int kNodeFields = 6;

absl::Status Bad(const std::string& what) { return absl::InvalidArgumentError(absl::StrCat(kName, ": ", what)); }

absl::StatusOr<Tensor> TypedArg(const Value& v, int index, DLDataType dtype, int rank) {
  const Tensor& t = v.as_tensor();
  if (!vm::operator==(t.dtype(), dtype) || static_cast<int>(t.shape().size()) != rank || !t.is_contiguous()) {
    return Bad(absl::StrCat("argument ", index, " must be a compact ", rank, "-d ", vm::DTypeToString(dtype),
                            " tensor, got ", t.Describe()));
  }
  return t;
}

// The inverse of the standard normal CDF at p: sqrt(2) * erfinv(2p - 1), by Newton's method
// on erf from a rough start (PROBIT).
double Probit(double p) {
  if (!(p > 0 && p < 1)) return p == 0 ? -INFINITY : p == 1 ? INFINITY : NAN;
  const double y = 2 * p - 1;
  // A closed-form approximation of erfinv, then Newton steps to full precision.
  constexpr double kA = 0.147;  // the approximation's constant; 2 / (pi a) = 4.3307...
  const double w = -std::log((1 - y) * (1 + y));
  const double h = 2 / (M_PI * kA) + w / 2;
  double x = std::copysign(std::sqrt(std::sqrt(h * h - w / kA) - h), y);
  for (int i = 0; i < 4; ++i) {
    const double err = std::erf(x) - y;
    x -= err / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  }
  return std::sqrt(2.0) * x;
}

void PostTransform(int64_t post, std::vector<double>& row) {
  switch (post) {
    case 1:
    case 3: {  // SOFTMAX; SOFTMAX_ZERO leaves zeros at zero and leaves them out of the sum
      const bool skip_zero = post == 3;
      double max = -INFINITY;
      for (double v : row) {
        if (!(skip_zero && v == 0)) max = std::max(max, v);
      }
      double sum = 0;
      for (double& v : row) {
        if (skip_zero && v == 0) continue;
        v = std::exp(v - max);
        sum += v;
      }
      for (double& v : row) {
        if (!(skip_zero && v == 0)) v /= sum;
      }
      break;
    }
    case 2:
      for (double& v : row) v = 1 / (1 + std::exp(-v));
      break;
    case 4:
      for (double& v : row) v = Probit(v);
      break;
    default:
      break;
  }
}

// (x, nodes, thresholds, members, leaf_offsets, leaf_targets, leaf_weights, roots, base,
//  aggregate, post, nan_rule, out_dtype, binary) -> [N, targets]
absl::Status TreeEnsemble(BuiltinContext& ctx, const Value* const* args, int, Value* out) {
  const DLDataType i64 = vm::DTypeInt64(), f64{kDLFloat, 64, 1};
  const Tensor& x = args[0]->as_tensor();
  if (x.shape().size() != 2 || !x.is_contiguous()) return Bad(absl::StrCat("X must be a compact 2-d tensor, got ", x.Describe()));
  if (x.dtype().code != kDLFloat && x.dtype().code != kDLInt && x.dtype().code != kDLUInt) {
    return Bad(absl::StrCat("X must be a number tensor, got ", x.Describe()));
  }
  KILN_ASSIGN_OR_RETURN(Tensor nodes, TypedArg(*args[1], 1, i64, 2));
  KILN_ASSIGN_OR_RETURN(Tensor thresholds, TypedArg(*args[2], 2, f64, 1));
  KILN_ASSIGN_OR_RETURN(Tensor members, TypedArg(*args[3], 3, f64, 1));
  KILN_ASSIGN_OR_RETURN(Tensor leaf_offsets, TypedArg(*args[4], 4, i64, 1));
  KILN_ASSIGN_OR_RETURN(Tensor leaf_targets, TypedArg(*args[5], 5, i64, 1));
  KILN_ASSIGN_OR_RETURN(Tensor leaf_weights, TypedArg(*args[6], 6, f64, 1));
  KILN_ASSIGN_OR_RETURN(Tensor roots, TypedArg(*args[7], 7, i64, 1));
  KILN_ASSIGN_OR_RETURN(Tensor base, TypedArg(*args[8], 8, f64, 1));
  const int64_t aggregate = args[9]->as_int(), post = args[10]->as_int(), nan_rule = args[11]->as_int();
  const DLDataType out_dtype = vm::UnpackDType(args[12]->as_int());
  const bool binary = args[13]->as_int() != 0;

  const int64_t rows = x.shape()[0], features = x.shape()[1];
  const int64_t node_count = nodes.shape()[0], leaf_count = leaf_offsets.shape()[0] - 1;
  const int64_t targets = base.shape()[0], entries = leaf_targets.shape()[0];
  if (nodes.shape()[1] != kNodeFields || thresholds.shape()[0] != node_count || leaf_count < 0 ||
      leaf_weights.shape()[0] != entries) {
    return Bad("inconsistent tree tables");
  }
  const int64_t* node = nodes.data_as<int64_t>();
  const double* threshold = thresholds.data_as<double>();
  const double* member = members.data_as<double>();
  const int64_t member_count = members.shape()[0];
  const int64_t* offset = leaf_offsets.data_as<int64_t>();
  const int64_t* target = leaf_targets.data_as<int64_t>();
  const double* weight = leaf_weights.data_as<double>();
  // Check the tables once so that the walk below cannot read out of bounds.
  auto valid_child = [&](int64_t c) { return c >= 0 ? c < node_count : -c - 1 < leaf_count; };
  for (int64_t i = 0; i < node_count; ++i) {
    const int64_t* n = node + i * kNodeFields;
    if (n[0] < 0 || n[0] >= features) {
      return Bad(absl::StrCat("node ", i, " reads feature ", n[0], " but X has ", features, " features"));
    }
    if (n[1] < 0 || n[1] > 6 || !valid_child(n[2]) || !valid_child(n[3]) || (n[1] == 6 && (n[5] < 0 || n[5] >= member_count))) {
      return Bad(absl::StrCat("node ", i, " is malformed"));
    }
  }
  for (int64_t l = 0; l < leaf_count; ++l) {
    if (offset[l] < 0 || offset[l] > offset[l + 1] || offset[l + 1] > entries) return Bad("malformed leaf offsets");
  }
  for (int64_t e = 0; e < entries; ++e) {
    if (target[e] < 0 || target[e] >= targets) {
      return Bad(absl::StrCat("a leaf adds to target ", target[e], " of ", targets));
    }
  }
  const int64_t tree_count = roots.shape()[0];
  const int64_t* root = roots.data_as<int64_t>();
  for (int64_t t = 0; t < tree_count; ++t) {
    if (!valid_child(root[t])) return Bad(absl::StrCat("tree ", t, "'s root is out of range"));
  }
  if (aggregate < 0 || aggregate > 3 || post < 0 || post > 4) return Bad("unknown aggregate or post transform");
  if (out_dtype.code != kDLFloat) return Bad("the output must be a float type");
  if (binary && targets != 2) return Bad("binary scores need two targets");
  const double highest = out_dtype.bits == 16 ? 65504.0
                         : out_dtype.bits == 32 ? std::numeric_limits<float>::max()
                                                : std::numeric_limits<double>::max();

  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Empty({rows, targets}, out_dtype, ctx.device));
  // Rows go in blocks, trees outer within a block: one tree's nodes stay in cache while the
  // block's rows walk it (row-outer order re-reads the whole forest from memory per row).
  constexpr int64_t kBlockRows = 256;
  const double start = aggregate == 2 ? highest : aggregate == 3 ? -highest : 0.0;
  // The block's features widened to double once (the typed load dispatches on the dtype).
  std::vector<double> block_x(static_cast<size_t>(kBlockRows * features));
  std::vector<double> block_scores(static_cast<size_t>(kBlockRows * targets));
  std::vector<double> row(static_cast<size_t>(targets));
  for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
    const int64_t block = std::min(kBlockRows, rows - r0);
    for (int64_t i = 0; i < block * features; ++i) {
      block_x[i] = vm::LoadElementAsDouble(x.data(), x.dtype(), r0 * features + i);
    }
    std::fill(block_scores.begin(), block_scores.end(), start);
    for (int64_t t = 0; t < tree_count; ++t) {
      for (int64_t r = 0; r < block; ++r) {
        const double* xr = block_x.data() + r * features;
        int64_t c = root[t];
        // A well-formed tree visits each node at most once; more steps mean a cycle.
        for (int64_t steps = 0; c >= 0; ++steps) {
          if (steps > node_count) return Bad(absl::StrCat("tree ", t, " has a cycle"));
          const int64_t* n = node + c * kNodeFields;
          const double v = xr[n[0]];
          const double th = threshold[c];
          bool go_true = false;
          switch (n[1]) {
            case 0: go_true = v <= th; break;
            case 1: go_true = v < th; break;
            case 2: go_true = v >= th; break;
            case 3: go_true = v > th; break;
            case 4: go_true = v == th; break;
            case 5: go_true = v != th; break;
            default:
              for (int64_t m = n[5]; m < member_count && !std::isnan(member[m]); ++m) go_true = go_true || v == member[m];
              break;
          }
          if (std::isnan(v)) go_true = nan_rule == 1 ? n[4] != 0 : go_true || n[4] != 0;
          c = go_true ? n[2] : n[3];
        }
        const int64_t leaf = -c - 1;
        double* scores = block_scores.data() + r * targets;
        for (int64_t e = offset[leaf]; e < offset[leaf + 1]; ++e) {
          double& acc = scores[target[e]];
          if (aggregate == 2) {
            acc = std::min(acc, weight[e]);
          } else if (aggregate == 3) {
            acc = std::max(acc, weight[e]);
          } else {
            acc += weight[e];
          }
        }
      }
    }
    for (int64_t r = 0; r < block; ++r) {
      for (int64_t k = 0; k < targets; ++k) {
        row[k] = block_scores[r * targets + k];
        if (aggregate == 0 && tree_count > 0) row[k] /= static_cast<double>(tree_count);
        row[k] += base.data_as<double>()[k];
      }
      if (binary) {
        row[1] = row[0];
        row[0] = post == 0 || post == 4 ? 1 - row[1] : -row[1];
      }
      PostTransform(post, row);
      for (int64_t k = 0; k < targets; ++k) {
        vm::StoreElementFromDouble(y.data(), out_dtype, (r0 + r) * targets + k, row[k]);
      }
    }
  }
  *out = Value(std::move(y));
  return absl::OkStatus();
}

}  // namespace

void RegisterTreeEnsembleBuiltins(vm::BuiltinRegistry& r) {
  r.RegisterBuiltin(kName,
                    "(tensor, tensor, tensor, tensor, tensor, tensor, tensor, tensor, tensor, int, int, int, int, int) -> tensor",
                    TreeEnsemble);
}

}  // namespace kiln::builtins
