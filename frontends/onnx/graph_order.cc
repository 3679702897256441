#include "frontends/onnx/graph_order.h"

#include <queue>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/node_context.h"

namespace kiln::frontends::onnx {

absl::StatusOr<std::vector<int>> TopologicalOrder(const ::onnx::GraphProto& graph,
                                                  const std::unordered_set<std::string>& available, int64_t opset) {
  const int n = graph.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    for (const std::string& out : graph.node(i).output()) {
      if (out.empty()) continue;
      if (available.count(out) > 0) {
        return absl::InvalidArgumentError(absl::StrCat(NodeLabel(graph.node(i), opset), ": output '", out,
                                                       "' redefines a graph input or initializer"));
      }
      if (!producer.emplace(out, i).second) {
        return absl::InvalidArgumentError(absl::StrCat(NodeLabel(graph.node(i), opset), ": output '", out,
                                                       "' is also produced by ",
                                                       NodeLabel(graph.node(producer[out]), opset)));
      }
    }
  }
  // Kahn's algorithm; the ready set is ordered by position so a sorted graph stays as is.
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i) {
    for (const std::string& in : graph.node(i).input()) {
      if (in.empty() || available.count(in) > 0) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        return absl::InvalidArgumentError(absl::StrCat(NodeLabel(graph.node(i), opset), ": input '", in,
                                                       "' is not a graph input, an initializer or any node's output"));
      }
      ++pending[i];
      users[it->second].push_back(i);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int user : users[i]) {
      if (--pending[user] == 0) ready.push(user);
    }
  }
  if (static_cast<int>(order.size()) != n) {
    // Every node left waits on another left node; walking back through such producers must
    // revisit a node, and that node lies on a cycle.
    int at = 0;
    while (pending[at] == 0) ++at;
    std::vector<bool> seen(n, false);
    while (!seen[at]) {
      seen[at] = true;
      for (const std::string& in : graph.node(at).input()) {
        auto it = producer.find(in);
        if (!in.empty() && available.count(in) == 0 && it != producer.end() && pending[it->second] > 0) {
          at = it->second;
          break;
        }
      }
    }
    return absl::InvalidArgumentError(absl::StrCat("the graph has a cycle: ", NodeLabel(graph.node(at), opset),
                                                   " depends, through its inputs, on its own outputs"));
  }
  return order;
}

}  // namespace kiln::frontends::onnx
