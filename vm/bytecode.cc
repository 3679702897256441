#include "vm/bytecode.h"

#include <cstddef>

namespace kiln::vm {

const char* OpcodeName(Opcode op) {
  switch (op) {
    case Opcode::kCall: return "call";
    case Opcode::kRet: return "ret";
    case Opcode::kGoto: return "goto";
    case Opcode::kIf: return "if";
    case Opcode::kLoadConst: return "load_const";
    case Opcode::kMove: return "move";
    case Opcode::kIntOp: return "int";
    case Opcode::kMatchShape: return "match_shape";
    case Opcode::kMakeShape: return "make_shape";
    case Opcode::kAllocStorage: return "alloc_storage";
    case Opcode::kAllocTensor: return "alloc_tensor";
    case Opcode::kKill: return "kill";
    case Opcode::kMakeClosure: return "make_closure";
    case Opcode::kCopyToDevice: return "copy_to_device";
    case Opcode::kNumOpcodes: break;
  }
  return "?";
}

const char* IntOpName(IntOpKind kind) {
  static constexpr const char* kNames[] = {"add", "sub", "mul", "floordiv", "floormod", "min", "max",
                                           "eq",  "ne",  "lt",  "le",       "gt",       "ge"};
  auto i = static_cast<std::size_t>(kind);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "?";
}

const char* CalleeKindName(CalleeKind kind) {
  switch (kind) {
    case CalleeKind::kFunction: return "function";
    case CalleeKind::kKernel: return "kernel";
    case CalleeKind::kBuiltin: return "builtin";
    case CalleeKind::kClosure: return "closure";
  }
  return "?";
}

}  // namespace kiln::vm
