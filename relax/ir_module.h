// IRModule: the unified module of DESIGN.md section 3. It maps global names to either a
// Relax Function (graph level) or a tir::PrimFunc (loop level), in insertion order (the
// order the text format prints). A Relax GlobalVar refers to an entry by name.
//
// An IRModule is a value: copying it copies the table, sharing every function. Passes
// build a new module and share the functions they do not change.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "relax/expr.h"
#include "tir/stmt.h"

namespace kiln::relax {

// A module entry: a Relax Function (an Expr holding a FunctionNode) or a PrimFunc.
using BaseFunc = std::variant<Expr, tir::PrimFunc>;

class IRModule {
 public:
  struct Entry {
    std::string name;
    BaseFunc func;
    bool is_relax() const { return std::holds_alternative<Expr>(func); }
    const FunctionNode* relax_function() const;  // nullptr for a PrimFunc
    const tir::PrimFunc* prim_func() const;      // nullptr for a Relax function
  };

  // Adds a new entry; an error if the name is taken.
  absl::Status Add(std::string name, BaseFunc func);
  // Adds or replaces (keeping the entry's position when it exists).
  void Update(std::string name, BaseFunc func);
  void Remove(std::string_view name);

  const Entry* Find(std::string_view name) const;  // nullptr when absent
  const std::vector<Entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<Entry> entries_;
};

}  // namespace kiln::relax
