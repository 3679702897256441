// One ONNX backend node test case (a folder with model.onnx and test_data_set_*/ holding
// input_<i>.pb and output_<i>.pb), run in the calling process: import, compile for the CPU,
// run every data set, compare with ONNX's backend-test tolerance.
//
// Comparison (numpy.testing.assert_allclose with rtol 1e-3, atol 1e-7 by default, as ONNX's
// backend tests): |actual - expected| <= atol + rtol * |expected| per element; NaN equals NaN,
// infinities must match; the output count, each shape and each dtype must match exactly.
// A bfloat16 output gets rtol of at least 2^-6 (two bfloat16 ulps), as ONNX's runner gives it.
//
// Graph inputs whose data an operator needs at import time are bound to the first data
// set's values (ImportOptions::bind_lookup; they stay parameters and get the same values
// at run time); a data set whose values for them differ is imported again.
#pragma once

#include <string>

namespace kiln::tools {

enum class CaseOutcome { kPass, kFail, kUnsupported };

struct CaseResult {
  CaseOutcome outcome = CaseOutcome::kFail;
  std::string message;         // FAIL / UNSUPPORTED reason
  double max_abs_error = 0;    // over every compared element
};

// The comparison's tolerance: ONNX's backend tests use these; a model's own check may ask
// for tighter (the encoder test: 1e-4 against ONNX Runtime).
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

CaseResult RunOnnxTestCase(const std::string& dir, const Tolerance& tolerance = {});

// Whether `dir` holds a case (model.onnx).
bool IsOnnxTestCase(const std::string& dir);

}  // namespace kiln::tools
