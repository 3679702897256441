// Helpers for the operator inference tests: build a call by hand, infer its struct info and
// print the result (or the error message).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "relax/expr.h"
#include "relax/op_registry.h"
#include "relax/struct_info.h"
#include "tir/analyzer.h"

namespace kiln::relax::testing {

inline const DataType f32 = DataType::Float32();
inline const DataType f16 = DataType::Float(16);
inline const DataType i64 = DataType::Int64();
inline const DataType i32 = DataType::Int32();
inline const DataType boolean = DataType::Bool();

inline Expr T(std::vector<PrimExpr> shape, std::optional<DataType> dtype = f32) {
  return Var("x", TensorSInfo(std::move(shape), dtype));
}
inline Expr TNdim(int ndim, std::optional<DataType> dtype = f32) {
  return Var("x", TensorSInfoOfNdim(ndim, dtype));
}

// A Tuple expression carrying its fields' struct info (as the normalizer would give it).
inline Expr TupleOf(std::vector<Expr> fields) {
  std::vector<StructInfo> sinfo;
  for (const Expr& f : fields) sinfo.push_back(f.struct_info());
  return Tuple(std::move(fields), TupleSInfo(std::move(sinfo)));
}

// The inferred struct info as text, or "error: <message>".
inline std::string Infer(const std::string& op, std::vector<Expr> args, Attrs attrs = {},
                         std::vector<StructInfo> sinfo_args = {}) {
  Expr call = Call(Op(op), std::move(args), std::move(attrs), std::move(sinfo_args));
  tir::Analyzer analyzer;
  absl::StatusOr<StructInfo> sinfo = InferCallStructInfo(*call.as<CallNode>(), analyzer);
  if (!sinfo.ok()) {
    EXPECT_EQ(sinfo.status().code(), absl::StatusCode::kInvalidArgument) << sinfo.status();
    return "error: " + std::string(sinfo.status().message());
  }
  return ToString(*sinfo);
}

}  // namespace kiln::relax::testing
