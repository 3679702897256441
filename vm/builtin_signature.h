// A builtin's typed signature: what it takes and returns, as Value kinds.
//
//   signature := '(' [ type { ',' type } [ '...' ] ] ')' '->' type
//   type      := 'any' | 'none' | 'int' | 'double' | 'bool' | 'shape' | 'tensor' | 'tuple'
//              | 'string' | 'closure' | 'object' [ ':' NAME ]
//
// e.g. "(tensor, int, object:kv_cache) -> tensor", "(any...) -> tuple", "() -> none".
// '...' after the last parameter makes it variadic: that type repeats zero or more times.
// `object` accepts any object, `object:NAME` only objects whose type name is NAME
// (vm/value.h). Spaces are optional; ToString() writes the canonical spelling.
//
// Three uses:
//  - the registry parses the signature a builtin is registered with;
//  - the executable records the signature the compiler derived for each builtin it calls,
//    and loading checks it against the registered one with Compatible();
//  - the VM checks every call's arguments (and the result) against the signature, so a
//    builtin may read its arguments with the plain accessors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "vm/value.h"

namespace kiln::vm {

struct BuiltinType {
  bool any = true;                        // accepts every value
  Value::Kind kind = Value::Kind::kNone;  // when !any
  uint32_t object_type = 0;               // kObject only: 0 any object, else ObjectTypeIndex(name)

  static BuiltinType Any() { return {}; }
  static BuiltinType Of(Value::Kind kind) { return {false, kind, 0}; }
  static BuiltinType ObjectOf(std::string_view type_name) {
    return {false, Value::Kind::kObject, ObjectTypeIndex(type_name)};
  }

  bool Accepts(const Value& v) const {
    if (any) return true;
    if (v.kind() != kind) return false;
    return object_type == 0 || v.object_ptr()->type_index() == object_type;
  }
  // Whether some value is accepted by both.
  bool Overlaps(const BuiltinType& other) const;
  // The narrower of two overlapping types.
  BuiltinType Meet(const BuiltinType& other) const;
  std::string ToString() const;
  bool operator==(const BuiltinType& other) const {
    return any == other.any && (any || (kind == other.kind && object_type == other.object_type));
  }
};

struct BuiltinSignature {
  std::vector<BuiltinType> params;
  bool variadic = false;  // the last of params repeats zero or more times
  BuiltinType result;

  static absl::StatusOr<BuiltinSignature> Parse(std::string_view text);
  std::string ToString() const;

  // Whether a call may pass `num_args` arguments.
  bool AcceptsArity(int num_args) const;
  // The type of argument i (i < params.size(), or any i when variadic).
  const BuiltinType& Param(int i) const { return i < static_cast<int>(params.size()) ? params[i] : params.back(); }

  // InvalidArgument naming the argument when a call's arguments do not fit.
  absl::Status CheckArgs(const Value* const* args, int num_args) const;
  bool operator==(const BuiltinSignature& other) const {
    return params == other.params && variadic == other.variadic && result == other.result;
  }
};

// Whether an executable that recorded `recorded` for a builtin may call the builtin
// registered with `registered`: every arity the recorded one uses is accepted, and at each
// position (parameters and result) some value fits both types. A recorded `any` (the
// compiler did not know) is checked when called instead.
bool Compatible(const BuiltinSignature& registered, const BuiltinSignature& recorded);
// What calls through that table entry are checked against: the narrower type of the two at
// each position. Requires Compatible(registered, recorded).
BuiltinSignature Meet(const BuiltinSignature& registered, const BuiltinSignature& recorded);

}  // namespace kiln::vm
