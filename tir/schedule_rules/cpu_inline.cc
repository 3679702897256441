// The CPU rule for fused functions: elementwise intermediates are inlined into their
// elementwise readers, in one ComputeInline of all of them.
#include <unordered_map>

#include "tir/schedule/schedule_utils.h"
#include "tir/schedule_rules/cpu_rules.h"

namespace kiln::tir::cpu_rules {

using namespace schedule_internal;  // NOLINT

void InlineIntermediates(Schedule* s) {
  // One walk: the elementwise blocks (candidates, in order) and, for every buffer, whether
  // every leaf block reading it is elementwise. Inlining a candidate into its readers keeps
  // that true for the buffers it read (its readers become theirs), so the candidates can be
  // judged on the function as it is and inlined together.
  auto elementwise = [](const BlockNode* b) { return !b->is_reduction() && !b->init.defined(); };
  std::vector<std::pair<std::string, const BufferNode*>> candidates;
  std::unordered_map<const BufferNode*, bool> readers_elementwise;  // absent: no reader
  ForEachStmt(s->func()->body, [&](const Stmt& st) {
    const auto* b = st.as<BlockNode>();
    if (!b) return;
    if (elementwise(b)) {
      if (const auto* store = b->body.as<BufferStoreNode>()) candidates.emplace_back(b->name, store->buffer.get());
    }
    if (!OutermostBlocks(b->body).empty()) return;
    for (const BufferNode* read : AccessesOf(b->body).reads) {
      auto [it, fresh] = readers_elementwise.emplace(read, true);
      it->second = it->second && elementwise(b);
    }
  });
  std::vector<std::string> names;
  for (const auto& [name, buffer] : candidates) {
    auto it = readers_elementwise.find(buffer);
    if (it != readers_elementwise.end() && it->second) names.push_back(name);
  }
  names = schedule_primitive::InlinableBlocks(s->func(), names);
  if (!names.empty()) (void)s->ComputeInline(names);
}

}  // namespace kiln::tir::cpu_rules
