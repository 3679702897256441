// Named inputs for `kiln run`: `--input NAME=SPEC` gives the parameter NAME its value, as
// ONNX Runtime and PyTorch users feed inputs by name; `--input SPEC` gives the next
// parameter in order. Both may be mixed: the positional ones fill, in order, the
// parameters not given by name.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::tools {

// The input specs of `inputs` in the order of `params` (the function's parameter names).
// Without any NAME=SPEC the inputs are returned as given (the VM then checks their count).
// A NAME=SPEC whose NAME is no parameter, a parameter given twice, or one left without a
// value is an error naming the parameters. A SPEC whose text before '=' is not a parameter
// name is positional (a file may have '=' in its name).
absl::StatusOr<std::vector<std::string>> OrderInputsByName(const std::vector<std::string>& inputs,
                                                           const std::vector<std::string>& params,
                                                           const std::string& function_name);

}  // namespace kiln::tools
