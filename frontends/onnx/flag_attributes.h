// The ONNX attributes that are yes/no flags (Reshape's allowzero, the reductions' keepdims,
// Gemm's transA, ...): 0 or 1 and nothing else. Converters read them as `value != 0`, while
// other runtimes read `value == 1`, so a flag of -100 or 2 would mean different things in
// different places: the importer refuses it before converting the node.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace kiln::frontends::onnx {

// InvalidArgument naming the node (`label`), the attribute and its value when a flag
// attribute of `node` is an integer other than 0 or 1.
absl::Status CheckFlagAttributes(const ::onnx::NodeProto& node, const std::string& label);

}  // namespace kiln::frontends::onnx
