#include "vm/disassembler.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::vm {
namespace {

std::string OperandText(const Function& fn, const Operand& o) {
  std::string name = o.debug_name >= 0 ? absl::StrCat("(", fn.strings[o.debug_name], ")") : "";
  switch (o.kind) {
    case Operand::Kind::kReg: return absl::StrCat("%", o.value, name);
    case Operand::Kind::kImm: return absl::StrCat(o.value);
    case Operand::Kind::kConst: return absl::StrCat("c", o.value);
    case Operand::Kind::kBind: return absl::StrCat("bind %", o.value, name);
    case Operand::Kind::kAny: return "?";
  }
  return "<bad operand>";
}

std::string OperandList(const Function& fn, int32_t begin, int32_t count) {
  std::vector<std::string> parts;
  for (int32_t i = 0; i < count; ++i) parts.push_back(OperandText(fn, fn.operands[begin + i]));
  return absl::StrJoin(parts, ", ");
}

std::string Signature(const Function& fn, const ParamSignature& p) {
  std::string text = absl::StrCat(p.name, ": ", p.kind == Value::Kind::kNone ? "any" : Value::KindName(p.kind));
  if (p.check_dtype) absl::StrAppend(&text, " ", DTypeToString(p.dtype));
  if (p.device != 0) absl::StrAppend(&text, " on device ", p.device);
  if (p.ndim >= 0) {
    std::vector<std::string> dims;
    for (const Operand& d : p.dims) dims.push_back(OperandText(fn, d));
    absl::StrAppend(&text, "[", absl::StrJoin(dims, ", "), "]");
  }
  return text;
}

std::string Instr(const Executable::Contents& c, const Function& fn, const Instruction& in, size_t pc) {
  std::string dst = in.dst == kNoRegister ? "" : absl::StrCat("%", in.dst, " = ");
  switch (in.op) {
    case Opcode::kCall: {
      auto kind = static_cast<CalleeKind>(in.sub);
      std::string callee = kind == CalleeKind::kFunction ? absl::StrCat("@", c.functions[in.a].name)
                           : kind == CalleeKind::kKernel  ? absl::StrCat("kernel ", c.kernels[in.a].name)
                           : kind == CalleeKind::kBuiltin ? absl::StrCat("builtin ", c.builtins[in.a].name)
                                                          : absl::StrCat("closure %", in.a);
      return absl::StrCat(dst, "call ", callee, "(", OperandList(fn, in.b, in.c), ")");
    }
    case Opcode::kRet: return absl::StrCat("ret %", in.a);
    case Opcode::kGoto: return absl::StrCat("goto ", pc + in.a);
    case Opcode::kIf: return absl::StrCat("if %", in.a, " else goto ", pc + in.b);
    case Opcode::kLoadConst: return absl::StrCat(dst, "load_const c", in.a);
    case Opcode::kMove: return absl::StrCat(dst, "move %", in.a);
    case Opcode::kIntOp:
      return absl::StrCat(dst, IntOpName(static_cast<IntOpKind>(in.sub)), " ", OperandList(fn, in.b, 2));
    case Opcode::kMatchShape:
      return absl::StrCat("match_shape %", in.a, " [", OperandList(fn, in.b + 1, in.c - 1), "]",
                          in.dst >= 0 ? absl::StrCat("  # ", fn.strings[in.dst]) : "");
    case Opcode::kMakeShape: return absl::StrCat(dst, "make_shape [", OperandList(fn, in.b, in.c), "]");
    case Opcode::kAllocStorage:
      return absl::StrCat(dst, "alloc_storage ", OperandList(fn, in.b, 1), " bytes",
                          in.a != 0 ? absl::StrCat(" on ", c.devices[in.a]) : "");
    case Opcode::kAllocTensor: {
      DLDataType t = UnpackDType(fn.operands[in.b + 1].value);
      return absl::StrCat(dst, "alloc_tensor storage %", in.a, " offset ", OperandText(fn, fn.operands[in.b]),
                          " shape %", in.c, " ", DTypeToString(t));
    }
    case Opcode::kKill: return absl::StrCat("kill %", in.a);
    case Opcode::kMakeClosure:
      return absl::StrCat(dst, "make_closure @", c.functions[in.a].name, "(", OperandList(fn, in.b, in.c), ")");
    case Opcode::kCopyToDevice: return absl::StrCat(dst, "copy_to_device %", in.a, " ", c.devices[in.c]);
    case Opcode::kNumOpcodes: break;
  }
  return "<bad instruction>";
}

}  // namespace

std::string Disassemble(const Executable::Contents& c) {
  std::string out = absl::StrCat("; Kiln executable, format ", kFormatMajor, ".", kFormatMinor, "\n");
  absl::StrAppend(&out, "; ", c.functions.size(), " functions, ", c.constants.size(), " constants, ",
                  c.builtins.size(), " builtins, ", c.kernels.size(), " kernels, CPU kernel object: ",
                  c.cpu_object.empty() ? "none" : absl::StrCat(c.cpu_object.size(), " bytes"), "\n\n");
  if (c.devices.size() > 1) {
    for (size_t i = 0; i < c.devices.size(); ++i) absl::StrAppend(&out, "device ", i, " ", c.devices[i], "\n");
  }
  for (const auto& [key, value] : c.metadata) absl::StrAppend(&out, "metadata ", key, " = ", value, "\n");
  if (!c.cpu_name.empty() || !c.cpu_features.empty()) {
    absl::StrAppend(&out, "target cpu ", c.cpu_name, " features ", absl::StrJoin(c.cpu_features, ","), "\n");
  }
  std::vector<const ExternalWeight*> external(c.constants.size(), nullptr);
  for (const ExternalWeight& w : c.external_weights) {
    if (w.constant >= 0 && static_cast<size_t>(w.constant) < external.size()) external[static_cast<size_t>(w.constant)] = &w;
  }
  for (size_t i = 0; i < c.constants.size(); ++i) {
    if (const ExternalWeight* w = external[i]) {
      absl::StrAppend(&out, "const c", i, " = external '", w->name, "' ", DTypeToString(w->dtype), ShapeToString(w->shape), "\n");
      continue;
    }
    const Value& v = c.constants[i];
    bool in_weights = v.is_tensor() && v.as_tensor().nbytes() > kInlineConstantMaxBytes;
    absl::StrAppend(&out, "const c", i, " = ", v.Describe(), in_weights ? "  ; weights section" : "", "\n");
  }
  for (size_t i = 0; i < c.builtins.size(); ++i) {
    absl::StrAppend(&out, "builtin ", i, " ", c.builtins[i].name, " ", c.builtins[i].signature, "\n");
  }
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    const KernelDecl& k = c.kernels[i];
    absl::StrAppend(&out, "kernel ", i, " ", k.name, " (", k.arg_signature, ") from ",
                    k.source == KernelDecl::Source::kLibrary ? "library" : "cpu object",
                    k.device != 0 ? absl::StrCat(" on ", c.devices[k.device]) : "", "\n");
  }
  for (const Function& fn : c.functions) {
    std::vector<std::string> params;
    for (const ParamSignature& p : fn.params) params.push_back(Signature(fn, p));
    absl::StrAppend(&out, "\nfunction @", fn.name, "(", absl::StrJoin(params, ", "), ")  ; ", fn.num_registers,
                    " registers\n");
    for (size_t pc = 0; pc < fn.code.size(); ++pc) {
      std::string line = Instr(c, fn, fn.code[pc], pc);
      int32_t name = fn.instruction_names.empty() ? -1 : fn.instruction_names[pc];
      absl::StrAppend(&out, "  ", pc, ": ", line, name >= 0 ? absl::StrCat("  ; ", fn.strings[name]) : "", "\n");
    }
  }
  return out;
}

}  // namespace kiln::vm
