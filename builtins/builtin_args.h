// Argument checking shared by the builtins: each returns a clear error when a value has
// the wrong kind, so a bad program fails with a message instead of crashing.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "vm/value.h"

namespace kiln::builtins {

inline absl::Status CheckArity(int num_args, int expected) {
  if (num_args == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("expected ", expected, " arguments, got ", num_args));
}

inline absl::Status CheckKind(const vm::Value& v, vm::Value::Kind kind, int index) {
  if (v.kind() == kind) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("argument ", index, ": expected a ", vm::Value::KindName(kind),
                                                 ", got ", v.Describe()));
}


}  // namespace kiln::builtins
