#include "frontends/onnx/graph_order.h"

#include <algorithm>
#include <queue>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/node_context.h"

namespace kiln::frontends::onnx {
namespace {

// The names `graph`'s nodes (and their subgraphs, recursively) read from enclosing graphs:
// those neither its inputs, its initializers nor its nodes' outputs define.
void CollectOuterNames(const ::onnx::GraphProto& graph, std::unordered_set<std::string>* out, int depth = 0) {
  if (depth > 64) return;  // deeper nesting is refused when converted
  std::unordered_set<std::string> defined;
  for (const auto& input : graph.input()) defined.insert(input.name());
  for (const auto& init : graph.initializer()) defined.insert(init.name());
  for (const auto& node : graph.node()) {
    for (const std::string& o : node.output()) defined.insert(o);
  }
  for (const auto& node : graph.node()) {
    std::unordered_set<std::string> used(node.input().begin(), node.input().end());
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) CollectOuterNames(attr.g(), &used, depth + 1);
      for (const auto& g : attr.graphs()) CollectOuterNames(g, &used, depth + 1);
    }
    for (const std::string& name : used) {
      if (!name.empty() && defined.count(name) == 0) out->insert(name);
    }
  }
}

// A node's inputs, with the enclosing-graph values its subgraphs (If's branches, Loop's
// body) read: the node must come after their producers too.
std::vector<std::string> NodeInputs(const ::onnx::NodeProto& node) {
  std::vector<std::string> inputs(node.input().begin(), node.input().end());
  std::unordered_set<std::string> outer;
  for (const auto& attr : node.attribute()) {
    if (attr.has_g()) CollectOuterNames(attr.g(), &outer);
    for (const auto& g : attr.graphs()) CollectOuterNames(g, &outer);
  }
  for (const std::string& name : outer) {
    if (std::find(inputs.begin(), inputs.end(), name) == inputs.end()) inputs.push_back(name);
  }
  return inputs;
}

}  // namespace

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
  std::vector<std::vector<std::string>> node_inputs;
  for (int i = 0; i < n; ++i) node_inputs.push_back(NodeInputs(graph.node(i)));
  for (int i = 0; i < n; ++i) {
    for (const std::string& in : node_inputs[i]) {
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
      for (const std::string& in : node_inputs[at]) {
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
