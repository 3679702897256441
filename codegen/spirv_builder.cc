#include "codegen/spirv_builder.h"

#include <bit>
#include <cstring>

#include "support/check.h"
#include "support/float16.h"

namespace kiln::codegen {

void AppendInstruction(SpirvWords* out, spv::Op op, const std::vector<uint32_t>& operands) {
  const auto count = static_cast<uint32_t>(operands.size() + 1);
  out->push_back((count << spv::WordCountShift) | static_cast<uint32_t>(op));
  out->insert(out->end(), operands.begin(), operands.end());
}

void AppendString(std::vector<uint32_t>* operands, std::string_view text) {
  // Little-endian bytes in each word; at least one NUL ends the string.
  for (size_t i = 0; i <= text.size(); i += 4) {
    uint32_t word = 0;
    for (size_t b = 0; b < 4 && i + b < text.size(); ++b) {
      word |= static_cast<uint32_t>(static_cast<unsigned char>(text[i + b])) << (8 * b);
    }
    operands->push_back(word);
  }
}

SpirvBuilder::SpirvBuilder() { RequireCapability(spv::Capability::Shader); }

uint32_t SpirvBuilder::GlslStd450() {
  if (glsl_ == 0) glsl_ = NewId();
  return glsl_;
}

uint32_t SpirvBuilder::Type(spv::Op op, const std::vector<uint32_t>& operands) {
  std::vector<uint32_t> key{static_cast<uint32_t>(op)};
  key.insert(key.end(), operands.begin(), operands.end());
  auto it = types_.find(key);
  if (it != types_.end()) return it->second;
  uint32_t id = NewId();
  std::vector<uint32_t> words{id};
  words.insert(words.end(), operands.begin(), operands.end());
  AppendInstruction(&globals_, op, words);
  types_[key] = id;
  return id;
}

uint32_t SpirvBuilder::TypeVoid() { return Type(spv::Op::OpTypeVoid, {}); }
uint32_t SpirvBuilder::TypeBool() { return Type(spv::Op::OpTypeBool, {}); }

uint32_t SpirvBuilder::TypeInt(int bits) {
  if (bits == 8) RequireCapability(spv::Capability::Int8);
  if (bits == 16) RequireCapability(spv::Capability::Int16);
  if (bits == 64) RequireCapability(spv::Capability::Int64);
  return Type(spv::Op::OpTypeInt, {static_cast<uint32_t>(bits), 0u});
}

uint32_t SpirvBuilder::TypeFloat(int bits) {
  if (bits == 16) RequireCapability(spv::Capability::Float16);
  if (bits == 64) RequireCapability(spv::Capability::Float64);
  return Type(spv::Op::OpTypeFloat, {static_cast<uint32_t>(bits)});
}

uint32_t SpirvBuilder::TypeVector(uint32_t component, int count) {
  return Type(spv::Op::OpTypeVector, {component, static_cast<uint32_t>(count)});
}

uint32_t SpirvBuilder::TypePointer(spv::StorageClass storage, uint32_t pointee) {
  return Type(spv::Op::OpTypePointer, {static_cast<uint32_t>(storage), pointee});
}

uint32_t SpirvBuilder::TypeFunction(uint32_t result, const std::vector<uint32_t>& params) {
  std::vector<uint32_t> operands{result};
  operands.insert(operands.end(), params.begin(), params.end());
  return Type(spv::Op::OpTypeFunction, operands);
}

uint32_t SpirvBuilder::TypeArray(uint32_t element, uint32_t length) {
  return Type(spv::Op::OpTypeArray, {element, length});
}

uint32_t SpirvBuilder::TypeRuntimeArray(uint32_t element, uint32_t stride) {
  // Keyed with its stride: the decoration is part of what makes it this type.
  std::vector<uint32_t> key{static_cast<uint32_t>(spv::Op::OpTypeRuntimeArray), element, stride};
  auto it = types_.find(key);
  if (it != types_.end()) return it->second;
  uint32_t id = NewId();
  AppendInstruction(&globals_, spv::Op::OpTypeRuntimeArray, {id, element});
  Decorate(id, spv::Decoration::ArrayStride, {stride});
  types_[key] = id;
  return id;
}

uint32_t SpirvBuilder::TypeBlock(const std::vector<uint32_t>& members, const std::vector<uint32_t>& offsets) {
  KILN_CHECK(members.size() == offsets.size());
  uint32_t id = NewId();
  std::vector<uint32_t> words{id};
  words.insert(words.end(), members.begin(), members.end());
  AppendInstruction(&globals_, spv::Op::OpTypeStruct, words);
  Decorate(id, spv::Decoration::Block);
  for (size_t i = 0; i < members.size(); ++i) {
    MemberDecorate(id, static_cast<uint32_t>(i), spv::Decoration::Offset, {offsets[i]});
  }
  return id;
}

uint32_t SpirvBuilder::ConstantBool(bool value) {
  uint32_t& slot = value ? true_ : false_;
  if (slot == 0) {
    slot = NewId();
    AppendInstruction(&globals_, value ? spv::Op::OpConstantTrue : spv::Op::OpConstantFalse, {TypeBool(), slot});
  }
  return slot;
}

uint32_t SpirvBuilder::ConstantInt(int width, uint64_t bits) {
  const uint32_t type = TypeInt(width);
  if (width < 64) bits &= (uint64_t{1} << width) - 1;
  return Constant(type, width, bits);
}

uint32_t SpirvBuilder::Constant(uint32_t type, int width, uint64_t bits) {
  auto key = std::make_tuple(type, bits);
  auto it = constants_.find(key);
  if (it != constants_.end()) return it->second;
  uint32_t id = NewId();
  // Narrow values sit zero-extended in one word; 64-bit ones take two words, low first.
  std::vector<uint32_t> operands{type, id, static_cast<uint32_t>(bits)};
  if (width == 64) operands.push_back(static_cast<uint32_t>(bits >> 32));
  AppendInstruction(&globals_, spv::Op::OpConstant, operands);
  constants_[key] = id;
  return id;
}

uint32_t SpirvBuilder::ConstantFloat(int width, double value) {
  const uint32_t type = TypeFloat(width);
  uint64_t bits;
  if (width == 64) {
    bits = std::bit_cast<uint64_t>(value);
  } else if (width == 32) {
    bits = std::bit_cast<uint32_t>(static_cast<float>(value));
  } else {
    bits = support::DoubleToHalf(value);
  }
  return Constant(type, width, bits);
}

uint32_t SpirvBuilder::GlobalVariable(uint32_t pointer_type, spv::StorageClass storage) {
  uint32_t id = NewId();
  AppendInstruction(&globals_, spv::Op::OpVariable, {pointer_type, id, static_cast<uint32_t>(storage)});
  return id;
}

void SpirvBuilder::Name(uint32_t id, std::string_view name) {
  std::vector<uint32_t> operands{id};
  AppendString(&operands, name);
  AppendInstruction(&names_, spv::Op::OpName, operands);
}

void SpirvBuilder::Decorate(uint32_t id, spv::Decoration d, const std::vector<uint32_t>& literals) {
  std::vector<uint32_t> operands{id, static_cast<uint32_t>(d)};
  operands.insert(operands.end(), literals.begin(), literals.end());
  AppendInstruction(&decorations_, spv::Op::OpDecorate, operands);
}

void SpirvBuilder::MemberDecorate(uint32_t id, uint32_t member, spv::Decoration d,
                                  const std::vector<uint32_t>& literals) {
  std::vector<uint32_t> operands{id, member, static_cast<uint32_t>(d)};
  operands.insert(operands.end(), literals.begin(), literals.end());
  AppendInstruction(&decorations_, spv::Op::OpMemberDecorate, operands);
}

void SpirvBuilder::AddEntryPoint(uint32_t function, std::string_view name, const std::vector<uint32_t>& interface) {
  std::vector<uint32_t> operands{static_cast<uint32_t>(spv::ExecutionModel::GLCompute), function};
  AppendString(&operands, name);
  operands.insert(operands.end(), interface.begin(), interface.end());
  AppendInstruction(&entry_points_, spv::Op::OpEntryPoint, operands);
}

void SpirvBuilder::AddLocalSize(uint32_t function, uint32_t x, uint32_t y, uint32_t z) {
  AppendInstruction(&execution_modes_, spv::Op::OpExecutionMode,
                    {function, static_cast<uint32_t>(spv::ExecutionMode::LocalSize), x, y, z});
}

SpirvWords SpirvBuilder::Finish() const {
  // Version 1.3 (what Vulkan 1.1 consumes); generator 0: not a registered tool.
  SpirvWords out{spv::MagicNumber, 0x00010300u, 0u, next_id_, 0u};
  for (spv::Capability c : capabilities_) AppendInstruction(&out, spv::Op::OpCapability, {static_cast<uint32_t>(c)});
  for (const std::string& e : extensions_) {
    std::vector<uint32_t> operands;
    AppendString(&operands, e);
    AppendInstruction(&out, spv::Op::OpExtension, operands);
  }
  if (glsl_ != 0) {
    std::vector<uint32_t> operands{glsl_};
    AppendString(&operands, "GLSL.std.450");
    AppendInstruction(&out, spv::Op::OpExtInstImport, operands);
  }
  AppendInstruction(&out, spv::Op::OpMemoryModel,
                    {static_cast<uint32_t>(spv::AddressingModel::Logical), static_cast<uint32_t>(spv::MemoryModel::GLSL450)});
  for (const SpirvWords* section : {&entry_points_, &execution_modes_, &names_, &decorations_, &globals_, &functions_}) {
    out.insert(out.end(), section->begin(), section->end());
  }
  return out;
}

void SpirvFunctionWriter::Instruction(spv::Op op, const std::vector<uint32_t>& operands) {
  AppendInstruction(&code_, op, operands);
  if (op == spv::Op::OpReturn || op == spv::Op::OpBranch || op == spv::Op::OpBranchConditional) terminated_ = true;
}

uint32_t SpirvFunctionWriter::Value(spv::Op op, uint32_t type, const std::vector<uint32_t>& operands) {
  uint32_t id = b_.NewId();
  std::vector<uint32_t> all{type, id};
  all.insert(all.end(), operands.begin(), operands.end());
  AppendInstruction(&code_, op, all);
  // Float arithmetic is TIR's: each operation rounded once, as written. Without NoContraction
  // a driver may fuse a * b + c or reassociate (Mesa's NIR folds (x + c) - c to x, which
  // broke ggml's exp: its rounding to an integer is exactly that).
  switch (op) {
    case spv::Op::OpFAdd:
    case spv::Op::OpFSub:
    case spv::Op::OpFMul:
    case spv::Op::OpFDiv:
    case spv::Op::OpFRem:
    case spv::Op::OpFNegate:
      b_.Decorate(id, spv::Decoration::NoContraction);
      break;
    default:
      break;
  }
  return id;
}

uint32_t SpirvFunctionWriter::Glsl(uint32_t type, GLSLstd450 inst, const std::vector<uint32_t>& args) {
  std::vector<uint32_t> operands{b_.GlslStd450(), static_cast<uint32_t>(inst)};
  operands.insert(operands.end(), args.begin(), args.end());
  const uint32_t id = Value(spv::Op::OpExtInst, type, operands);
  // GLSL.std.450: an Fma decorated NoContraction is one operation (one rounding).
  if (inst == GLSLstd450Fma) b_.Decorate(id, spv::Decoration::NoContraction);
  return id;
}

void SpirvFunctionWriter::StartBlock(uint32_t label) {
  AppendInstruction(&code_, spv::Op::OpLabel, {label});
  terminated_ = false;
}

void SpirvFunctionWriter::BranchTo(uint32_t label) {
  if (!terminated_) Instruction(spv::Op::OpBranch, {label});
}

uint32_t SpirvFunctionWriter::LocalVariable(uint32_t pointee) {
  uint32_t id = b_.NewId();
  AppendInstruction(&variables_, spv::Op::OpVariable,
                    {b_.TypePointer(spv::StorageClass::Function, pointee), id,
                     static_cast<uint32_t>(spv::StorageClass::Function)});
  return id;
}

SpirvWords SpirvFunctionWriter::Finish(uint32_t function, uint32_t function_type, uint32_t return_type) const {
  KILN_CHECK(code_.size() >= 2) << "a function without an entry block";
  SpirvWords words;
  AppendInstruction(&words, spv::Op::OpFunction,
                    {return_type, function, static_cast<uint32_t>(spv::FunctionControlMask::MaskNone), function_type});
  words.insert(words.end(), code_.begin(), code_.begin() + 2);  // the entry block's OpLabel
  words.insert(words.end(), variables_.begin(), variables_.end());
  words.insert(words.end(), code_.begin() + 2, code_.end());
  AppendInstruction(&words, spv::Op::OpFunctionEnd, {});
  return words;
}

}  // namespace kiln::codegen
