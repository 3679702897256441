// The order the importer converts a graph's nodes in: topological (every node after the
// nodes producing its inputs), keeping the file's order where it is free to. ONNX requires
// graphs to be sorted already, but the checker may be off and exporters are not perfect.
// Errors (InvalidArgument) name the node: an input nothing produces (not a graph input, not
// an initializer, no node's output), an output name produced twice, or a cycle.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace kiln::frontends::onnx {

// `available`: the names defined before any node runs (graph inputs and initializers).
absl::StatusOr<std::vector<int>> TopologicalOrder(const ::onnx::GraphProto& graph,
                                                  const std::unordered_set<std::string>& available, int64_t opset);

}  // namespace kiln::frontends::onnx
