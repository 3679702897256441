#include "relax/ir_module.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::relax {

const FunctionNode* IRModule::Entry::relax_function() const {
  const Expr* expr = std::get_if<Expr>(&func);
  return expr ? expr->as<FunctionNode>() : nullptr;
}

const tir::PrimFunc* IRModule::Entry::prim_func() const { return std::get_if<tir::PrimFunc>(&func); }

absl::Status IRModule::Add(std::string name, BaseFunc func) {
  if (Find(name) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("the module already defines '", name, "'"));
  }
  entries_.push_back({std::move(name), std::move(func)});
  return absl::OkStatus();
}

void IRModule::Update(std::string name, BaseFunc func) {
  for (Entry& entry : entries_) {
    if (entry.name == name) {
      entry.func = std::move(func);
      return;
    }
  }
  entries_.push_back({std::move(name), std::move(func)});
}

void IRModule::Remove(std::string_view name) {
  std::erase_if(entries_, [&](const Entry& e) { return e.name == name; });
}

const IRModule::Entry* IRModule::Find(std::string_view name) const {
  for (const Entry& entry : entries_) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

}  // namespace kiln::relax
