// TfIdfVectorizer (9): counts, per row of X (C,) or (B, C), how often each n-gram of the
// pool occurs, and writes the counts (TF), their presence times a weight (IDF) or their
// product with a weight (TFIDF) into the columns ngram_indexes names.
//
// As ONNX's reference (onnx.reference.ops.op_tfidf_vectorizer): n-grams of length n in
// [min_gram_length, max_gram_length] are read with skip distances s = 1 .. max_skip_count + 1
// (items i, i + s, ..., i + (n - 1) s); unigrams are counted once, whatever the skip. The
// pool is an attribute, so every n-gram is known at import time: its matches at every start
// i are one comparison per item of the contiguous slice X[..., k s : k s + L] (L = C - (n - 1) s)
// with the n-gram's k-th item, ANDed and summed along the row. The counts (B, n-grams) meet
// a one-hot (n-grams, columns) matrix in a matmul, as several n-grams may share a column.
// Integer pools only (pool_strings: STRING tensors are not supported); static C.
#include <algorithm>
#include <string>
#include <vector>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

// Comparisons emitted at most (n-grams x skips x items).
constexpr int64_t kMaxComparisons = 1 << 14;

absl::StatusOr<std::vector<Value>> ConvertTfIdfVectorizer(NodeContext& c) {
  if (c.HasAttr("pool_strings")) return c.Unsupported("pool_strings (STRING tensors) are not supported");
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (!dtype.is_int()) return c.Error("X must be an int32 or int64 tensor");
  if (shape.size() != 1 && shape.size() != 2) return c.Error("X must have shape [C] or [B, C]");
  const int64_t length = StaticDim(shape.back());
  if (length < 0) return c.Unsupported("needs a static row length");
  const std::string mode = c.AttrString("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") return c.Error("mode must be TF, IDF or TFIDF, got '", mode, "'");
  const int64_t min_n = c.AttrInt("min_gram_length", 0), max_n = c.AttrInt("max_gram_length", 0);
  const int64_t max_skip = c.AttrInt("max_skip_count", 0);
  if (min_n < 1 || max_n < min_n || max_skip < 0) {
    return c.Error("needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  }
  const std::vector<int64_t> pool = c.AttrInts("pool_int64s");
  const std::vector<int64_t> counts = c.AttrInts("ngram_counts");
  const std::vector<int64_t> indexes = c.AttrInts("ngram_indexes");
  const std::vector<double> weights = c.AttrFloats("weights");
  if (indexes.empty()) return c.Error("ngram_indexes is empty");
  int64_t columns = 0;
  for (int64_t i : indexes) {
    if (i < 0) return c.Error("ngram_indexes has the negative ", i);
    columns = std::max(columns, i + 1);
  }
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < columns) {
    return c.Error("weights has ", weights.size(), " values for ", columns, " columns");
  }

  // The pool's n-grams in order (their number is their ngram_indexes entry): ngram_counts[n - 1]
  // is where those of length n start.
  struct Gram {
    std::vector<int64_t> items;
    int64_t column;
  };
  std::vector<Gram> grams;
  int64_t number = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const int64_t n = static_cast<int64_t>(k) + 1;
    const int64_t begin = counts[k];
    const int64_t end = k + 1 < counts.size() ? counts[k + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % n != 0) {
      return c.Error("ngram_counts does not split pool_int64s into n-grams");
    }
    for (int64_t at = begin; at < end; at += n, ++number) {
      if (n < min_n || n > max_n) continue;
      if (number >= static_cast<int64_t>(indexes.size())) return c.Error("ngram_indexes has too few entries");
      grams.push_back({std::vector<int64_t>(pool.begin() + at, pool.begin() + at + n), indexes[number]});
    }
  }

  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  const bool batched = shape.size() == 2;
  if (!batched) {
    KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {PrimExpr(1), PrimExpr(length)}));
  }
  const PrimExpr rows = batched ? shape[0] : PrimExpr(1);
  int64_t comparisons = 0;
  std::vector<Expr> gram_counts;  // (rows, 1) float32 each
  std::vector<double> to_column;  // (grams, columns), one-hot rows
  for (const Gram& gram : grams) {
    const int64_t n = static_cast<int64_t>(gram.items.size());
    Expr total;
    for (int64_t s = 1; s <= (n == 1 ? 1 : max_skip + 1); ++s) {
      const int64_t starts = length - (n - 1) * s;
      if (starts <= 0) break;
      comparisons += n;
      if (comparisons > kMaxComparisons) return c.Unsupported("too many n-gram comparisons to unroll");
      Expr match;
      for (int64_t k = 0; k < n; ++k) {
        KILN_ASSIGN_OR_RETURN(Expr items, c.Call("strided_slice", {x},
                                                 {{"begin", std::vector<int64_t>{k * s}},
                                                  {"end", std::vector<int64_t>{k * s + starts}},
                                                  {"axes", std::vector<int64_t>{1}},
                                                  {"strides", std::vector<int64_t>{1}}}));
        KILN_ASSIGN_OR_RETURN(Expr same, c.Call("equal", {items, ScalarConstant(static_cast<double>(gram.items[k]), dtype)}));
        if (match.defined()) {
          KILN_ASSIGN_OR_RETURN(match, c.Call("logical_and", {match, same}));
        } else {
          match = same;
        }
      }
      KILN_ASSIGN_OR_RETURN(Expr ones, c.Call("astype", {match}, {{"dtype", DataType::Float32()}}));
      KILN_ASSIGN_OR_RETURN(Expr found, c.Call("sum", {ones}, {{"axis", std::vector<int64_t>{1}}, {"keepdims", true}}));
      if (total.defined()) {
        KILN_ASSIGN_OR_RETURN(total, c.Call("add", {total, found}));
      } else {
        total = found;
      }
    }
    if (!total.defined()) continue;  // longer than a row: never found
    gram_counts.push_back(total);
    std::vector<double> row(static_cast<size_t>(columns), 0.0);
    row[static_cast<size_t>(gram.column)] = 1.0;
    to_column.insert(to_column.end(), row.begin(), row.end());
  }

  Expr y;
  if (gram_counts.empty()) {
    KILN_ASSIGN_OR_RETURN(y, c.Call("zeros", {relax::ShapeExpr({rows, PrimExpr(columns)})},
                                    {{"dtype", DataType::Float32()}}));
  } else {
    Expr matrix = gram_counts[0];
    if (gram_counts.size() > 1) {
      KILN_ASSIGN_OR_RETURN(matrix, c.Call("concat", {relax::Tuple(gram_counts)}, {{"axis", int64_t{1}}}));
    }
    const int64_t found = static_cast<int64_t>(gram_counts.size());
    KILN_ASSIGN_OR_RETURN(y, c.Call("matmul", {matrix, relax::Constant(DataFromDoubles(to_column, DataType::Float32(),
                                                                                         {found, columns}))}));
  }
  if (mode == "IDF") {
    KILN_ASSIGN_OR_RETURN(Expr present, c.Call("greater", {y, ScalarConstant(0, DataType::Float32())}));
    KILN_ASSIGN_OR_RETURN(y, c.Call("astype", {present}, {{"dtype", DataType::Float32()}}));
  }
  if (mode != "TF" && !weights.empty()) {
    std::vector<double> w(weights.begin(), weights.begin() + columns);
    KILN_ASSIGN_OR_RETURN(y, c.Call("multiply", {y, relax::Constant(DataFromDoubles(w, DataType::Float32(), {columns}))}));
  }
  if (!batched) {
    KILN_ASSIGN_OR_RETURN(y, Reshape(c, y, {PrimExpr(columns)}));
  }
  return Outputs(y);
}

}  // namespace

void RegisterTfIdfConverters(ConverterRegistry& r) { r.Register("TfIdfVectorizer", ConvertTfIdfVectorizer, 9); }

}  // namespace kiln::frontends::onnx
