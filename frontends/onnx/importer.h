// The ONNX importer: an ONNX model (file or bytes) -> a Relax IRModule with one function
// (default "main") whose parameters are the graph inputs and whose result is the graph
// output (a Tuple when there are several). docs/onnx.md describes what is supported.
//
//  - Initializers become constants (external data read relative to the model's folder).
//  - Input shapes: dim_value -> that constant; dim_param -> one symbolic variable per name,
//    shared by every input that names it; an unnamed unknown dim -> a fresh variable. So an
//    exported model with dynamic batch and sequence axes compiles once for every size.
//  - Shape computations (Shape -> Gather -> Concat -> Reshape, ConstantOfShape, Expand,
//    Range, ...) are propagated at import time as symbolic shape values (value.h).
//  - Some operators need an input's value at import time (Reshape's shape, Expand's shape,
//    TopK's k, ...). When it is a graph input, `bind` supplies its data: bound inputs
//    become constants and leave the parameter list; `bind_lookup` is asked on demand and
//    the input stays a parameter (the conformance runner passes the same data at run time).
//  - Everything a model file can cause is a status: unsupported operators name the node,
//    its op type and opset (`node 'n0' (op Foo, opset 13): operator Foo is not supported`).
//
// This header is protobuf-free: only kiln_frontends_onnx sees ONNX's generated classes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/onnx/tensor_file.h"
#include "relax/expr.h"
#include "relax/ir_module.h"

namespace kiln::frontends::onnx {

struct ImportOptions {
  // Graph inputs given data at import: they become constants, not parameters.
  std::map<std::string, relax::ConstantData> bind;
  // Asked for a graph input's data when a converter needs it at import time and `bind` does
  // not have it; the input stays a parameter.
  std::function<std::optional<relax::ConstantData>(const std::string& input_name)> bind_lookup;
  // Asked for each sequence or optional graph input. Kiln holds a sequence at import time as
  // the list of its elements, so their count and shapes must be known then: each element
  // becomes a parameter `NAME[k]` of that static shape (its data still comes at run time);
  // a present optional tensor is the parameter NAME, an empty optional is no parameter.
  // Without an answer such an input is Unimplemented. `kiln onnx-test` answers from the data.
  std::function<std::optional<OnnxValue>(const std::string& input_name)> value_lookup;
  // Run ONNX's checker first.
  bool check = true;
  std::string function_name = "main";
};

struct ImportResult {
  relax::IRModule module;
  // The function's parameters: graph input names (`NAME[k]` for a sequence's elements), in order.
  std::vector<std::string> parameters;
  // The function's results, each a tensor: graph output names in order, a sequence output as
  // its elements `NAME[k]`, an empty optional as nothing.
  std::vector<std::string> outputs;
  std::vector<std::string> looked_up;   // graph inputs bind_lookup supplied
  // Graph inputs and outputs of ONNX type BFLOAT16, which are float32 to Kiln (docs/onnx.md).
  std::vector<std::string> bfloat16_values;
  int64_t opset = 0;
};

absl::StatusOr<ImportResult> ImportOnnxFile(const std::string& path, const ImportOptions& options = {});
// `base_dir`: where external data files are ("" allows none).
absl::StatusOr<ImportResult> ImportOnnxBytes(const std::string& bytes, const std::string& base_dir,
                                             const ImportOptions& options = {});

// What the backend test data's input_<i>.pb / output_<i>.pb files hold: the graph's inputs
// that are not initializers (names and kinds) and its outputs' kinds, in order.
struct OnnxGraphSignature {
  std::vector<std::string> input_names;
  std::vector<OnnxValueKind> input_kinds, output_kinds;
};
absl::StatusOr<OnnxGraphSignature> ReadOnnxGraphSignature(const std::string& path);

// The operator types the importer converts at `opset`, sorted (docs, `kiln import --list`).
std::vector<std::string> SupportedOperators(int64_t opset);

}  // namespace kiln::frontends::onnx
