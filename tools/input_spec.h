// Inputs for `kiln run`, given on the command line:
//   path/to/array.npy         a NumPy file
//   path/to/tensor.pb         an ONNX TensorProto file
//   random:7x784:f32[:SEED]   uniform in [-1, 1) (floats) or [0, 10) (ints), {0, 1} (bool),
//                             seeded; any of bool, int/uint 8-64, float16/32/64, bfloat16
//   zeros:7x784:f32, ones:7x784:f32   (the shape 'scalar' is a 0-d tensor: ones:scalar:f32)
//   int:42                    an int64 scalar (e.g. a symbolic size)
//   float:0.5                 a float64 scalar (a Prim(float64) parameter)
//   bool:true, bool:false     a bool scalar (a Prim(bool) parameter)
//   shape:2x3                 a Shape value (a Shape((n, m)) parameter); shape:scalar is ()
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "vm/value.h"

namespace kiln::tools {

absl::StatusOr<vm::Value> ParseInputSpec(const std::string& spec);

}  // namespace kiln::tools
