// SpirvBuilder: a SPIR-V module written word by word, in the section order the
// specification requires (capabilities, extensions, imports, memory model, entry points,
// execution modes, names, decorations, types / constants / globals, functions).
//
// Types and constants are declared once: asking twice for `int 32` or the constant 7 of it
// gives the same id (SPIR-V forbids two declarations of one non-aggregate type). Declaring
// a type also records the capability it needs (Int8, Int16, Int64, Float16, Float64), so the
// module declares exactly what it uses. Struct types are never shared (each gets its own
// decorations). Function bodies are built by the caller with Instruction() into a
// FunctionBody, whose variables go to the entry block as SPIR-V requires.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <spirv/unified1/GLSL.std.450.h>
#include <spirv/unified1/spirv.hpp11>

namespace kiln::codegen {

using SpirvWords = std::vector<uint32_t>;

// One instruction: opcode and word count in the first word, then the operands.
void AppendInstruction(SpirvWords* out, spv::Op op, const std::vector<uint32_t>& operands);
// A literal string operand: UTF-8, NUL-terminated, padded to whole words.
void AppendString(std::vector<uint32_t>* operands, std::string_view text);

class SpirvBuilder {
 public:
  SpirvBuilder();

  uint32_t NewId() { return next_id_++; }

  void RequireCapability(spv::Capability c) { capabilities_.insert(c); }
  void RequireExtension(const std::string& name) { extensions_.insert(name); }
  // The GLSL.std.450 extended instruction set's id (imported at first use).
  uint32_t GlslStd450();

  // --- types (deduplicated; capabilities recorded)
  uint32_t TypeVoid();
  uint32_t TypeBool();
  // Integers are declared unsigned (signedness 0): one type per width; signed meaning comes
  // from the instruction (OpSDiv, OpSLessThan, ...), as SPIR-V intends.
  uint32_t TypeInt(int bits);
  uint32_t TypeFloat(int bits);
  uint32_t TypeVector(uint32_t component, int count);
  uint32_t TypePointer(spv::StorageClass storage, uint32_t pointee);
  uint32_t TypeFunction(uint32_t result, const std::vector<uint32_t>& params = {});
  // A fixed-size array (no stride decoration: for Function and Workgroup variables).
  uint32_t TypeArray(uint32_t element, uint32_t length);
  // A runtime array decorated with ArrayStride `stride`, for storage buffers.
  uint32_t TypeRuntimeArray(uint32_t element, uint32_t stride);
  // A plain struct (deduplicated; no decorations): results such as FrexpStruct's.
  uint32_t TypeStruct(const std::vector<uint32_t>& members) { return Type(spv::Op::OpTypeStruct, members); }
  // A new struct type (never shared), its members at the given byte offsets, decorated Block.
  uint32_t TypeBlock(const std::vector<uint32_t>& members, const std::vector<uint32_t>& offsets);

  // --- constants (deduplicated by type and bits)
  uint32_t ConstantBool(bool value);
  // `bits` holds the value's two's complement (its low `width` bits are used).
  uint32_t ConstantInt(int width, uint64_t bits);
  uint32_t ConstantFloat(int width, double value);

  // A module-scope variable (Input, Workgroup, StorageBuffer, PushConstant).
  uint32_t GlobalVariable(uint32_t pointer_type, spv::StorageClass storage);

  void Name(uint32_t id, std::string_view name);
  void Decorate(uint32_t id, spv::Decoration d, const std::vector<uint32_t>& literals = {});
  void MemberDecorate(uint32_t id, uint32_t member, spv::Decoration d, const std::vector<uint32_t>& literals = {});

  void AddEntryPoint(uint32_t function, std::string_view name, const std::vector<uint32_t>& interface);
  void AddLocalSize(uint32_t function, uint32_t x, uint32_t y, uint32_t z);
  void AddFunction(const SpirvWords& words) { functions_.insert(functions_.end(), words.begin(), words.end()); }

  // The finished module (header first; the id bound is the next unused id).
  SpirvWords Finish() const;

 private:
  uint32_t next_id_ = 1;
  std::set<spv::Capability> capabilities_;
  std::set<std::string> extensions_;
  uint32_t glsl_ = 0;
  SpirvWords entry_points_, execution_modes_, names_, decorations_, globals_, functions_;
  std::map<std::vector<uint32_t>, uint32_t> types_;  // (opcode, operands...) -> id
  std::map<std::tuple<uint32_t, uint64_t>, uint32_t> constants_;
  uint32_t true_ = 0, false_ = 0;

  uint32_t Type(spv::Op op, const std::vector<uint32_t>& operands);
  // The OpConstant of `type` (`width` bits) whose bit pattern is `bits`, declared once.
  uint32_t Constant(uint32_t type, int width, uint64_t bits);
};

// The body of one function being written: its blocks' instructions, and its Function
// variables apart (SPIR-V wants them at the start of the entry block, whenever they are
// declared). Tracks whether the current block has its terminator.
class SpirvFunctionWriter {
 public:
  explicit SpirvFunctionWriter(SpirvBuilder& b) : b_(b) {}
  SpirvBuilder& builder() { return b_; }

  // An instruction without a result.
  void Instruction(spv::Op op, const std::vector<uint32_t>& operands);
  // An instruction with a result of `type`: its id.
  uint32_t Value(spv::Op op, uint32_t type, const std::vector<uint32_t>& operands);
  // A GLSL.std.450 extended instruction.
  uint32_t Glsl(uint32_t type, GLSLstd450 inst, const std::vector<uint32_t>& args);
  uint32_t Select(uint32_t type, uint32_t condition, uint32_t a, uint32_t b) {
    return Value(spv::Op::OpSelect, type, {condition, a, b});
  }
  // A comparison or logical operation: a bool.
  uint32_t Bool(spv::Op op, uint32_t a, uint32_t b) { return Value(op, b_.TypeBool(), {a, b}); }

  void StartBlock(uint32_t label);
  // A branch to `label` unless the block already ended (a return).
  void BranchTo(uint32_t label);
  bool terminated() const { return terminated_; }
  uint32_t LocalVariable(uint32_t pointee);

  // OpFunction ... OpFunctionEnd: the entry block's label, the variables, the code.
  SpirvWords Finish(uint32_t function, uint32_t function_type, uint32_t return_type) const;

 private:
  SpirvBuilder& b_;
  SpirvWords code_, variables_;
  bool terminated_ = false;
};

}  // namespace kiln::codegen
