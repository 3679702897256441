// Helpers for the reference evaluator's tests: run text-format modules through
// ParseModule -> NormalizeModule -> Evaluate, and build small tensors.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/block_builder.h"
#include "support/status_macros.h"
#include "relax/text_parser.h"
#include "tests/reference/reference_evaluator.h"
#include "tests/source_dir.h"

namespace kiln::reference::testing {

inline absl::StatusOr<relax::IRModule> ParseAndNormalize(const std::string& text) {
  KILN_ASSIGN_OR_RETURN(relax::ParsedModule parsed, relax::ParseModule(text));
  return relax::NormalizeModule(parsed.module);
}

inline absl::StatusOr<RefValue> RunText(const std::string& text, std::vector<RefValue> args,
                                        const std::string& function = "main") {
  KILN_ASSIGN_OR_RETURN(relax::IRModule module, ParseAndNormalize(text));
  return Evaluate(module, function, std::move(args));
}

// Evaluates one call written in the text format, e.g. "R.softmax(a, axis=-1)", whose
// tensor arguments are parameters named a, b, c, ... typed after `args`.
inline absl::StatusOr<RefValue> EvalCall(const std::string& call, std::vector<RefValue> args) {
  std::string params;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::StrAppend(&params, i ? ", " : "", std::string(1, static_cast<char>('a' + i)), ": ",
                    args[i].TypeString());
  }
  std::string text = absl::StrCat("module {\n  func @main(", params, ") -> Object {\n    r = ", call,
                                  "\n    return r\n  }\n}\n");
  return RunText(text, std::move(args));
}

inline HostTensor F32(std::vector<int64_t> shape, const std::vector<double>& values) {
  return HostTensor::FromDoubles(DataType::Float32(), std::move(shape), values);
}
inline HostTensor I64(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  return HostTensor::FromInts(DataType::Int64(), std::move(shape), values);
}
inline HostTensor I32(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  return HostTensor::FromInts(DataType::Int32(), std::move(shape), values);
}

// 0, 1, 2, ... as float32.
inline HostTensor Iota(std::vector<int64_t> shape, double start = 0) {
  HostTensor t(DataType::Float32(), std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, start + static_cast<double>(i));
  return t;
}

using kiln::test::SourceDir;

inline std::string ReadSource(const std::string& relative) {
  std::ifstream in(SourceDir() + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Expects a tensor of `shape` and `dtype` whose elements are within `tol` of `values`.
inline void ExpectTensor(const absl::StatusOr<RefValue>& result, DataType dtype,
                         const std::vector<int64_t>& shape, const std::vector<double>& values,
                         double tol = 1e-6) {
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->is_tensor()) << result->TypeString();
  const HostTensor& t = result->tensor();
  EXPECT_EQ(t.dtype(), dtype) << t.TypeString();
  ASSERT_EQ(t.shape(), shape) << t.TypeString();
  ASSERT_EQ(static_cast<size_t>(t.numel()), values.size());
  for (int64_t i = 0; i < t.numel(); ++i) {
    EXPECT_NEAR(t.GetDouble(i), values[static_cast<size_t>(i)], tol) << "element " << i;
  }
}

inline void ExpectF32(const absl::StatusOr<RefValue>& result, const std::vector<int64_t>& shape,
                      const std::vector<double>& values, double tol = 1e-6) {
  ExpectTensor(result, DataType::Float32(), shape, values, tol);
}

// Expects an error whose message contains every fragment.
inline void ExpectError(const absl::StatusOr<RefValue>& result, absl::StatusCode code,
                        const std::vector<std::string>& fragments) {
  ASSERT_FALSE(result.ok()) << "expected an error, got " << result->TypeString();
  EXPECT_EQ(result.status().code(), code) << result.status();
  for (const std::string& f : fragments) {
    EXPECT_NE(std::string(result.status().message()).find(f), std::string::npos)
        << "'" << f << "' not in: " << result.status().message();
  }
}

}  // namespace kiln::reference::testing
