// Unique (opset 11): the distinct elements of X (flattened), or the distinct slices along
// `axis`, sorted ascending (slices lexicographically) or, with sorted = 0, in order of first
// occurrence; with the index of each one's first occurrence, every element's (slice's)
// position among them (inverse_indices) and their counts.
//
// As tensor operations over the R rows (elements, or slices flattened to S columns):
//   1. a stable lexicographic argsort of the rows: one stable argsort per column, from the
//      last column to the first (S static);
//   2. in that order a row starts a run when it differs from the row before; its run id is
//      the running count of starts; U = the number of runs, known only at run time;
//   3. per run (kept first by a stable argsort of "not a start", the rest after them): its
//      first row (the sort is stable, so the smallest original index), its count (the next
//      run's start minus its own);
//   4. sorted = 0 reorders the runs by first occurrence (an argsort of the first indices,
//      the unused tail kept last);
//   5. Y, indices and counts are cut to U rows with dynamic_strided_slice, all three named
//      by one fresh symbolic dim; inverse_indices keeps X's R rows.
#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// Columns of a slice at most: the lexicographic sort is one argsort per column.
constexpr int64_t kMaxColumns = 256;

Expr Int64Data(const std::vector<double>& values, std::vector<int64_t> shape) {
  return relax::Constant(DataFromDoubles(values, DataType::Int64(), std::move(shape)));
}

absl::StatusOr<std::vector<Value>> ConvertUnique(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  std::vector<int64_t> dims;
  for (const PrimExpr& d : shape) {
    dims.push_back(StaticDim(d));
    if (dims.back() < 0) return c.Unsupported("needs a static input shape");
  }
  const bool by_axis = c.HasAttr("axis");
  int64_t axis = 0;
  if (by_axis) {
    KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(c, c.AttrInt("axis", 0), static_cast<int64_t>(dims.size())));
  }
  const bool sorted = c.AttrInt("sorted", 1) != 0;
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  auto op = [&](const std::string& name, std::vector<Expr> args, relax::Attrs attrs = {}) {
    return c.Call(name, std::move(args), std::move(attrs));
  };

  // The rows: X's slices along the axis moved first, flattened (R, S); without an axis R
  // elements of one column.
  int64_t rows = 1, columns = 1;
  std::vector<int64_t> moved_axes;  // the permutation that brings the axis first
  if (by_axis) {
    rows = dims[axis];
    moved_axes.push_back(axis);
    for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
      if (d != axis) {
        moved_axes.push_back(d);
        columns *= dims[d];
      }
    }
    KILN_ASSIGN_OR_RETURN(x, op("permute_dims", {x}, {{"axes", moved_axes}}));
  } else {
    for (int64_t d : dims) rows *= d;
  }
  if (rows == 0) return c.Unsupported("an empty input is not supported");
  if (columns > kMaxColumns) return c.Unsupported("slices of ", columns, " elements are too large (at most ", kMaxColumns, ")");
  const PrimExpr r_dim(rows), s_dim(columns), one(int64_t{1});
  KILN_ASSIGN_OR_RETURN(Expr table, Reshape(c, x, {r_dim, s_dim}));

  // 1. The stable lexicographic order of the rows.
  Expr perm;
  for (int64_t col = columns - 1; col >= 0; --col) {
    KILN_ASSIGN_OR_RETURN(Expr key, TakeIndex(c, table, {r_dim, s_dim}, 1, col));
    if (perm.defined()) {
      KILN_ASSIGN_OR_RETURN(key, op("take", {key, perm}, {{"axis", int64_t{0}}}));
    }
    KILN_ASSIGN_OR_RETURN(Expr step, op("argsort", {key}, {{"axis", int64_t{0}}}));
    if (perm.defined()) {
      KILN_ASSIGN_OR_RETURN(perm, op("take", {perm, step}, {{"axis", int64_t{0}}}));
    } else {
      perm = step;
    }
  }
  KILN_ASSIGN_OR_RETURN(Expr sorted_rows, op("take", {table, perm}, {{"axis", int64_t{0}}}));

  // 2. Run starts in sorted order: row 0, and each row that differs from the previous one.
  Expr starts;
  if (rows == 1) {
    starts = relax::Constant(DataFromDoubles({1}, DataType::Bool(), {1}));
  } else {
    auto rows_range = [&](int64_t begin, int64_t end) {
      return op("strided_slice", {sorted_rows},
                {{"begin", std::vector<int64_t>{begin}},
                 {"end", std::vector<int64_t>{end}},
                 {"axes", std::vector<int64_t>{0}},
                 {"strides", std::vector<int64_t>{1}}});
    };
    KILN_ASSIGN_OR_RETURN(Expr later, rows_range(1, rows));
    KILN_ASSIGN_OR_RETURN(Expr earlier, rows_range(0, rows - 1));
    KILN_ASSIGN_OR_RETURN(Expr differs, op("not_equal", {later, earlier}));
    KILN_ASSIGN_OR_RETURN(differs, op("astype", {differs}, {{"dtype", DataType::Int32()}}));
    KILN_ASSIGN_OR_RETURN(differs, op("max", {differs}, {{"axis", std::vector<int64_t>{1}}, {"keepdims", false}}));
    KILN_ASSIGN_OR_RETURN(differs, op("astype", {differs}, {{"dtype", DataType::Bool()}}));
    const Expr first = relax::Constant(DataFromDoubles({1}, DataType::Bool(), {1}));
    KILN_ASSIGN_OR_RETURN(starts, op("concat", {relax::Tuple({first, differs})}, {{"axis", int64_t{0}}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr start_count, op("astype", {starts}, {{"dtype", DataType::Int64()}}));
  KILN_ASSIGN_OR_RETURN(Expr run_id, op("cumsum", {start_count}, {{"axis", int64_t{0}}}));
  KILN_ASSIGN_OR_RETURN(run_id, op("subtract", {run_id, ScalarConstant(1, DataType::Int64())}));
  KILN_ASSIGN_OR_RETURN(Expr runs, op("sum", {start_count}, {{"axis", std::vector<int64_t>{0}}, {"keepdims", true}}));

  // 3. Per run, in the first U of R positions: the sorted position of its first row.
  KILN_ASSIGN_OR_RETURN(Expr not_start, op("logical_not", {starts}));
  KILN_ASSIGN_OR_RETURN(not_start, op("astype", {not_start}, {{"dtype", DataType::Int32()}}));
  KILN_ASSIGN_OR_RETURN(Expr run_start, op("argsort", {not_start}, {{"axis", int64_t{0}}}));  // (R)
  std::vector<double> positions(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) positions[i] = static_cast<double>(i);
  const Expr position = Int64Data(positions, {rows});
  KILN_ASSIGN_OR_RETURN(Expr in_range, op("less", {position, runs}));  // position k < U: run k exists
  // The next run's start (R for the last run), from the starts shifted by one.
  KILN_ASSIGN_OR_RETURN(Expr next_start, op("strided_slice", {run_start},
                                            {{"begin", std::vector<int64_t>{1}},
                                             {"end", std::vector<int64_t>{rows}},
                                             {"axes", std::vector<int64_t>{0}},
                                             {"strides", std::vector<int64_t>{1}}}));
  KILN_ASSIGN_OR_RETURN(next_start, op("concat", {relax::Tuple({next_start, Int64Data({static_cast<double>(rows)}, {1})})},
                                       {{"axis", int64_t{0}}}));
  KILN_ASSIGN_OR_RETURN(Expr last, op("subtract", {runs, ScalarConstant(1, DataType::Int64())}));
  KILN_ASSIGN_OR_RETURN(Expr last_run, op("equal", {position, last}));
  KILN_ASSIGN_OR_RETURN(next_start, op("where", {last_run, ScalarConstant(static_cast<double>(rows), DataType::Int64()),
                                                 next_start}));
  KILN_ASSIGN_OR_RETURN(Expr counts, op("subtract", {next_start, run_start}));
  KILN_ASSIGN_OR_RETURN(Expr first_index, op("take", {perm, run_start}, {{"axis", int64_t{0}}}));
  KILN_ASSIGN_OR_RETURN(Expr unique_rows, op("take", {sorted_rows, run_start}, {{"axis", int64_t{0}}}));
  // Each original row's run: run_id in sorted order, moved back through the permutation.
  KILN_ASSIGN_OR_RETURN(Expr unsort, op("argsort", {perm}, {{"axis", int64_t{0}}}));
  KILN_ASSIGN_OR_RETURN(Expr inverse, op("take", {run_id, unsort}, {{"axis", int64_t{0}}}));

  // 4. First-occurrence order: runs sorted by their first index (unused positions last).
  if (!sorted) {
    KILN_ASSIGN_OR_RETURN(Expr beyond, op("add", {position, ScalarConstant(static_cast<double>(rows), DataType::Int64())}));
    KILN_ASSIGN_OR_RETURN(Expr key, op("where", {in_range, first_index, beyond}));
    KILN_ASSIGN_OR_RETURN(Expr order, op("argsort", {key}, {{"axis", int64_t{0}}}));
    KILN_ASSIGN_OR_RETURN(first_index, op("take", {first_index, order}, {{"axis", int64_t{0}}}));
    KILN_ASSIGN_OR_RETURN(counts, op("take", {counts, order}, {{"axis", int64_t{0}}}));
    KILN_ASSIGN_OR_RETURN(unique_rows, op("take", {unique_rows, order}, {{"axis", int64_t{0}}}));
    KILN_ASSIGN_OR_RETURN(Expr renumber, op("argsort", {order}, {{"axis", int64_t{0}}}));
    KILN_ASSIGN_OR_RETURN(inverse, op("take", {renumber, inverse}, {{"axis", int64_t{0}}}));
  }

  // 5. The first U positions, U one fresh symbolic dim shared by the outputs.
  std::string var;
  const std::string name = c.node().output_size() > 0 ? c.node().output(0) : std::string("unique");
  for (char ch : absl::StrCat(name, "_count")) var += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  const tir::Var count_var = tir::Var::Shape(var);
  const Expr zero = Int64Data({0}, {1}), step = Int64Data({1}, {1});
  auto cut = [&](const Expr& t, std::vector<PrimExpr> rest, DataType t_dtype, const std::string& label)
      -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr sliced, op("dynamic_strided_slice", {t, zero, runs, step},
                                          {{"axes", std::vector<int64_t>{0}}}));
    rest.insert(rest.begin(), count_var);
    absl::StatusOr<relax::Var> named = c.builder().EmitMatchCast(sliced, relax::TensorSInfo(rest, t_dtype), label);
    if (!named.ok()) return c.Annotate(named.status());
    return Expr(*named);
  };
  // Y: the unique rows back in X's layout, the axis' dim U.
  Expr y;
  if (by_axis) {
    std::vector<PrimExpr> moved_dims = {r_dim};
    for (size_t k = 1; k < moved_axes.size(); ++k) moved_dims.push_back(shape[moved_axes[k]]);
    KILN_ASSIGN_OR_RETURN(unique_rows, Reshape(c, unique_rows, moved_dims));
    moved_dims.erase(moved_dims.begin());
    KILN_ASSIGN_OR_RETURN(y, cut(unique_rows, moved_dims, dtype, name));
    std::vector<int64_t> back(moved_axes.size());
    for (size_t k = 0; k < moved_axes.size(); ++k) back[moved_axes[k]] = static_cast<int64_t>(k);
    KILN_ASSIGN_OR_RETURN(y, op("permute_dims", {y}, {{"axes", back}}));
  } else {
    KILN_ASSIGN_OR_RETURN(unique_rows, Reshape(c, unique_rows, {r_dim}));
    KILN_ASSIGN_OR_RETURN(y, cut(unique_rows, {}, dtype, name));
  }
  std::vector<Value> out = {Value::Of(y)};
  if (const Value* input = c.InputValue(0)) out[0].narrow_type = input->narrow_type;
  if (c.has_output(1)) {
    KILN_ASSIGN_OR_RETURN(Expr indices, cut(first_index, {}, DataType::Int64(), name + "_indices"));
    out.push_back(Value::Of(indices));
  } else {
    out.push_back(Value());
  }
  out.push_back(Value::Of(inverse));
  if (c.has_output(3)) {
    KILN_ASSIGN_OR_RETURN(Expr counted, cut(counts, {}, DataType::Int64(), name + "_counts"));
    out.push_back(Value::Of(counted));
  }
  return out;
}

}  // namespace

void RegisterUniqueConverters(ConverterRegistry& r) { r.Register("Unique", ConvertUnique, 11); }

}  // namespace kiln::frontends::onnx
