// VM bytecode: instructions and operands.
//
// A function's code is a vector of fixed-size Instructions; variable-length operand lists
// (call arguments, shape patterns) live in the function's operand pool and an instruction
// refers to them by (offset, count). Registers 0..num_params-1 hold the parameters on
// entry. Jump offsets are relative to the jumping instruction.
//
//   Call        dst = callee(operands[b .. b+c))   sub: CalleeKind, a: callee index (for
//               kClosure: the register holding the closure, called with its captured
//               values then the operands); dst == kNoRegister discards the result
//               (kernels return nothing)
//   Ret         return register a
//   Goto        pc += a
//   If          if register a is false (bool false or int 0): pc += b, else pc += 1
//   LoadConst   dst = constants[a]
//   Move        dst = register a
//   IntOp       dst = operands[b] <sub: IntOpKind> operands[b+1]   (int64 registers/immediates)
//   MatchShape  check register a (tensor or shape) against the pattern operands[b .. b+c):
//               operands[b] is Imm(ndim); then one per dimension: Imm (must equal),
//               Reg (must equal that int register), Bind (stores the dimension into the
//               register), Any. dst: index of the error context string. Failure is an
//               error naming the function, the context and the dimension.
//   MakeShape   dst = shape(operands[b .. b+c))
//   AllocStorage dst = storage of operands[b] bytes on device a (an index into the
//               executable's device table; 0 is the VM's default device, the CPU)
//   AllocTensor dst = tensor in storage register a, byte offset operands[b], shape register
//               c, dtype operands[b+1] (Imm holding code | bits << 8 | lanes << 16)
//   Kill        register a = none (releases what it held)
//   MakeClosure dst = closure of function a capturing operands[b .. b+c)
//   CopyToDevice dst = a copy of the tensor in register a on device c (device table index)
#pragma once

#include <cstdint>

namespace kiln::vm {

inline constexpr int32_t kNoRegister = -1;

enum class Opcode : uint8_t {
  kCall = 0,
  kRet,
  kGoto,
  kIf,
  kLoadConst,
  kMove,
  kIntOp,
  kMatchShape,
  kMakeShape,
  kAllocStorage,
  kAllocTensor,
  kKill,
  kMakeClosure,
  kCopyToDevice,
  kNumOpcodes,
};

enum class CalleeKind : uint8_t { kFunction = 0, kKernel = 1, kBuiltin = 2, kClosure = 3 };

enum class IntOpKind : uint8_t {
  kAdd = 0, kSub, kMul, kFloorDiv, kFloorMod, kMin, kMax, kEQ, kNE, kLT, kLE, kGT, kGE,
  kNumIntOps,
};

struct Instruction {
  Opcode op;
  uint8_t sub = 0;  // CalleeKind for Call, IntOpKind for IntOp
  int32_t dst = kNoRegister;
  int32_t a = 0;
  int32_t b = 0;
  int32_t c = 0;
};

struct Operand {
  enum class Kind : uint8_t {
    kReg = 0,    // a register
    kImm = 1,    // an int64 immediate
    kConst = 2,  // an entry of the constant pool
    kBind = 3,   // MatchShape only: store the matched dimension into register `value`
    kAny = 4,    // MatchShape only: any dimension
  };
  Kind kind = Kind::kAny;
  int32_t debug_name = -1;  // index into the function's strings, e.g. the symbolic name "n"
  int64_t value = 0;

  static Operand Reg(int32_t reg, int32_t name = -1) { return {Kind::kReg, name, reg}; }
  static Operand Imm(int64_t v) { return {Kind::kImm, -1, v}; }
  static Operand Const(int32_t index) { return {Kind::kConst, -1, index}; }
  static Operand Bind(int32_t reg, int32_t name = -1) { return {Kind::kBind, name, reg}; }
  static Operand Any() { return {Kind::kAny, -1, 0}; }
};

const char* OpcodeName(Opcode op);
const char* IntOpName(IntOpKind kind);
const char* CalleeKindName(CalleeKind kind);

}  // namespace kiln::vm
