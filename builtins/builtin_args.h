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

// Decodes a dtype passed as an int: code | bits << 8 | lanes << 16 (as AllocTensor does).
inline DLDataType DTypeFromInt(int64_t code) {
  return DLDataType{static_cast<uint8_t>(code & 0xff), static_cast<uint8_t>((code >> 8) & 0xff),
                    static_cast<uint16_t>((code >> 16) & 0xffff)};
}
inline int64_t DTypeToInt(DLDataType t) {
  return int64_t{t.code} | (int64_t{t.bits} << 8) | (int64_t{t.lanes} << 16);
}

}  // namespace kiln::builtins
