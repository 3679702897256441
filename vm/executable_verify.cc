// Verification of an executable's contents: after it passes, the interpreter may index
// registers, operands, constants and callees without checks.
#include <set>

#include "absl/strings/str_cat.h"
#include "vm/executable.h"

namespace kiln::vm {
namespace {

class FunctionVerifier {
 public:
  FunctionVerifier(const Executable::Contents& contents, const Function& fn) : contents_(contents), fn_(fn) {}

  absl::Status Run() {
    if (fn_.params.size() > static_cast<size_t>(fn_.num_registers)) {
      return Error(-1, absl::StrCat(fn_.params.size(), " parameters but only ", fn_.num_registers, " registers"));
    }
    if (fn_.code.empty()) return Error(-1, "has no code");
    if (!fn_.instruction_names.empty() && fn_.instruction_names.size() != fn_.code.size()) {
      return Error(-1, "debug names do not match the code length");
    }
    for (int32_t name : fn_.instruction_names) {
      if (!StringIndexOk(name)) return Error(-1, "debug name index out of range");
    }
    for (const Operand& o : fn_.operands) {
      if (!StringIndexOk(o.debug_name)) return Error(-1, "operand debug name out of range");
    }
    for (size_t p = 0; p < fn_.params.size(); ++p) {
      const ParamSignature& sig = fn_.params[p];
      if (sig.ndim >= 0 && sig.dims.size() != static_cast<size_t>(sig.ndim)) {
        return Error(-1, absl::StrCat("parameter ", p, " has ", sig.dims.size(), " dims for ndim ", sig.ndim));
      }
      if (sig.ndim < 0 && !sig.dims.empty()) return Error(-1, absl::StrCat("parameter ", p, " has dims but no ndim"));
      for (const Operand& d : sig.dims) {
        if (!DimOk(d) || !StringIndexOk(d.debug_name)) return Error(-1, absl::StrCat("parameter ", p, " has a bad dimension pattern"));
      }
      if (!DeviceOk(sig.device)) return Error(-1, absl::StrCat("parameter ", p, " names no device of the device table"));
    }
    const Opcode last = fn_.code.back().op;
    if (last != Opcode::kRet && last != Opcode::kGoto) return Error(static_cast<int>(fn_.code.size()) - 1, "code may run past its end");
    for (size_t pc = 0; pc < fn_.code.size(); ++pc) {
      absl::Status status = Instr(static_cast<int>(pc), fn_.code[pc]);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Error(int pc, const std::string& what) const {
    std::string where = pc >= 0 ? absl::StrCat(" instruction ", pc) : "";
    return absl::DataLossError(absl::StrCat("invalid bytecode in function '", fn_.name, "'", where, ": ", what));
  }
  bool RegOk(int64_t r) const { return r >= 0 && r < fn_.num_registers; }
  bool StringIndexOk(int64_t i) const { return i >= -1 && i < static_cast<int64_t>(fn_.strings.size()); }
  bool RangeOk(int32_t begin, int32_t count) const {
    return begin >= 0 && count >= 0 && static_cast<int64_t>(begin) + count <= static_cast<int64_t>(fn_.operands.size());
  }
  bool ValueOperandOk(const Operand& o) const {
    switch (o.kind) {
      case Operand::Kind::kReg: return RegOk(o.value);
      case Operand::Kind::kImm: return true;
      case Operand::Kind::kConst: return o.value >= 0 && o.value < static_cast<int64_t>(contents_.constants.size());
      default: return false;
    }
  }
  bool IntOperandOk(const Operand& o) const {
    return (o.kind == Operand::Kind::kReg && RegOk(o.value)) || o.kind == Operand::Kind::kImm;
  }
  bool DimOk(const Operand& o) const {
    switch (o.kind) {
      case Operand::Kind::kImm: return o.value >= 0;
      case Operand::Kind::kReg:
      case Operand::Kind::kBind: return RegOk(o.value);
      case Operand::Kind::kAny: return true;
      default: return false;
    }
  }
  bool DeviceOk(int64_t d) const { return d >= 0 && d < static_cast<int64_t>(contents_.devices.size()); }
  bool FunctionOk(int64_t f) const { return f >= 0 && f < static_cast<int64_t>(contents_.functions.size()); }
  // A jump to itself can never make progress: refused, as is any target outside the code.
  bool JumpOk(int pc, int64_t offset) const {
    if (offset == 0) return false;
    int64_t target = pc + offset;
    return target >= 0 && target < static_cast<int64_t>(fn_.code.size());
  }

  absl::Status Instr(int pc, const Instruction& in) const {
    switch (in.op) {
      case Opcode::kCall: {
        if (in.dst != kNoRegister && !RegOk(in.dst)) return Error(pc, "call result register out of range");
        if (!RangeOk(in.b, in.c)) return Error(pc, "call arguments out of range");
        for (int i = 0; i < in.c; ++i) {
          if (!ValueOperandOk(fn_.operands[in.b + i])) return Error(pc, absl::StrCat("call argument ", i, " is invalid"));
        }
        switch (static_cast<CalleeKind>(in.sub)) {
          case CalleeKind::kFunction: {
            if (in.a < 0 || in.a >= static_cast<int32_t>(contents_.functions.size())) return Error(pc, "callee function out of range");
            size_t expected = contents_.functions[in.a].params.size();
            if (static_cast<size_t>(in.c) != expected) {
              return Error(pc, absl::StrCat("calls '", contents_.functions[in.a].name, "' with ", in.c, " arguments, it takes ", expected));
            }
            return absl::OkStatus();
          }
          case CalleeKind::kKernel: {
            if (in.a < 0 || in.a >= static_cast<int32_t>(contents_.kernels.size())) return Error(pc, "callee kernel out of range");
            const KernelDecl& k = contents_.kernels[in.a];
            if (static_cast<size_t>(in.c) != k.arg_signature.size()) {
              return Error(pc, absl::StrCat("calls kernel '", k.name, "' with ", in.c, " arguments, it takes ", k.arg_signature.size()));
            }
            if (in.dst != kNoRegister) return Error(pc, "kernels return no value");
            return absl::OkStatus();
          }
          case CalleeKind::kBuiltin:
            if (in.a < 0 || in.a >= static_cast<int32_t>(contents_.builtins.size())) return Error(pc, "callee builtin out of range");
            return absl::OkStatus();
          case CalleeKind::kClosure:  // the arity is checked when called: a closure's function is not known here
            return RegOk(in.a) ? absl::OkStatus() : Error(pc, "closure register out of range");
        }
        return Error(pc, "unknown callee kind");
      }
      case Opcode::kRet:
        return RegOk(in.a) ? absl::OkStatus() : Error(pc, "return register out of range");
      case Opcode::kGoto:
        return JumpOk(pc, in.a) ? absl::OkStatus() : Error(pc, "jump target invalid");
      case Opcode::kIf:
        if (!RegOk(in.a)) return Error(pc, "condition register out of range");
        return JumpOk(pc, in.b) && JumpOk(pc, 1) ? absl::OkStatus() : Error(pc, "branch target invalid");
      case Opcode::kLoadConst:
        if (!RegOk(in.dst)) return Error(pc, "destination register out of range");
        return in.a >= 0 && in.a < static_cast<int32_t>(contents_.constants.size()) ? absl::OkStatus()
                                                                                     : Error(pc, "constant index out of range");
      case Opcode::kMove:
        return RegOk(in.dst) && RegOk(in.a) ? absl::OkStatus() : Error(pc, "register out of range");
      case Opcode::kIntOp:
        if (in.sub >= static_cast<uint8_t>(IntOpKind::kNumIntOps)) return Error(pc, "unknown integer operation");
        if (!RegOk(in.dst) || !RangeOk(in.b, 2)) return Error(pc, "operand out of range");
        return IntOperandOk(fn_.operands[in.b]) && IntOperandOk(fn_.operands[in.b + 1]) ? absl::OkStatus()
                                                                                          : Error(pc, "integer operand invalid");
      case Opcode::kMatchShape: {
        if (!RegOk(in.a) || !RangeOk(in.b, in.c) || in.c < 1) return Error(pc, "shape pattern out of range");
        if (!StringIndexOk(in.dst)) return Error(pc, "error context out of range");
        const Operand& ndim = fn_.operands[in.b];
        if (ndim.kind != Operand::Kind::kImm || ndim.value != in.c - 1) return Error(pc, "shape pattern rank mismatch");
        for (int i = 1; i < in.c; ++i) {
          if (!DimOk(fn_.operands[in.b + i])) return Error(pc, "shape pattern dimension invalid");
        }
        return absl::OkStatus();
      }
      case Opcode::kMakeShape:
        if (!RegOk(in.dst) || !RangeOk(in.b, in.c)) return Error(pc, "shape operands out of range");
        for (int i = 0; i < in.c; ++i) {
          if (!IntOperandOk(fn_.operands[in.b + i])) return Error(pc, "shape operand invalid");
        }
        return absl::OkStatus();
      case Opcode::kAllocStorage:
        if (!RegOk(in.dst) || !RangeOk(in.b, 1) || !IntOperandOk(fn_.operands[in.b])) return Error(pc, "storage operands invalid");
        return DeviceOk(in.a) ? absl::OkStatus() : Error(pc, "storage device out of range");
      case Opcode::kAllocTensor:
        if (!RegOk(in.dst) || !RegOk(in.a) || !RegOk(in.c) || !RangeOk(in.b, 2)) return Error(pc, "tensor operands out of range");
        if (!IntOperandOk(fn_.operands[in.b]) || fn_.operands[in.b + 1].kind != Operand::Kind::kImm) return Error(pc, "tensor operands invalid");
        return absl::OkStatus();
      case Opcode::kKill:
        return RegOk(in.a) ? absl::OkStatus() : Error(pc, "register out of range");
      case Opcode::kMakeClosure: {
        if (!RegOk(in.dst) || !RangeOk(in.b, in.c)) return Error(pc, "closure operands out of range");
        if (!FunctionOk(in.a)) return Error(pc, "closure function out of range");
        if (static_cast<size_t>(in.c) > contents_.functions[in.a].params.size()) {
          return Error(pc, absl::StrCat("captures ", in.c, " values for '", contents_.functions[in.a].name, "', which takes ",
                                        contents_.functions[in.a].params.size()));
        }
        for (int i = 0; i < in.c; ++i) {
          if (!ValueOperandOk(fn_.operands[in.b + i])) return Error(pc, absl::StrCat("captured value ", i, " is invalid"));
        }
        return absl::OkStatus();
      }
      case Opcode::kCopyToDevice:
        if (!RegOk(in.dst) || !RegOk(in.a)) return Error(pc, "register out of range");
        return DeviceOk(in.c) ? absl::OkStatus() : Error(pc, "copy device out of range");
      case Opcode::kNumOpcodes:
        break;
    }
    return Error(pc, "unknown opcode");
  }

  const Executable::Contents& contents_;
  const Function& fn_;
};

}  // namespace

absl::Status Executable::Verify(const Contents& contents) {
  if (contents.devices.empty() || contents.devices[0] != "cpu") {
    return absl::DataLossError("invalid executable: the device table must start with \"cpu\"");
  }
  if (std::set<std::string>(contents.devices.begin(), contents.devices.end()).size() != contents.devices.size()) {
    return absl::DataLossError("invalid executable: a device appears twice in the device table");
  }
  for (const BuiltinDecl& b : contents.builtins) {
    absl::StatusOr<BuiltinSignature> sig = BuiltinSignature::Parse(b.signature);
    if (!sig.ok()) return absl::DataLossError(absl::StrCat("invalid executable: builtin '", b.name, "': ", sig.status().message()));
  }
  std::set<std::string> names;
  for (const Function& fn : contents.functions) {
    if (!names.insert(fn.name).second) {
      return absl::DataLossError(absl::StrCat("invalid executable: function '", fn.name, "' defined twice"));
    }
    absl::Status status = FunctionVerifier(contents, fn).Run();
    if (!status.ok()) return status;
  }
  for (const KernelDecl& k : contents.kernels) {
    for (char c : k.arg_signature) {
      if (c != 't' && c != 'i' && c != 'f' && c != 'h') {
        return absl::DataLossError(absl::StrCat("invalid executable: kernel '", k.name, "' has a bad argument signature"));
      }
    }
    if (k.device < 0 || k.device >= static_cast<int32_t>(contents.devices.size())) {
      return absl::DataLossError(absl::StrCat("invalid executable: kernel '", k.name, "' names no device of the device table"));
    }
    if (k.source == KernelDecl::Source::kCpuObject && contents.cpu_object.empty()) {
      return absl::DataLossError(absl::StrCat("invalid executable: kernel '", k.name, "' needs the CPU kernel object, which is missing"));
    }
  }
  std::set<int32_t> external;
  for (const ExternalWeight& w : contents.external_weights) {
    if (w.constant < 0 || w.constant >= static_cast<int32_t>(contents.constants.size()) || !external.insert(w.constant).second) {
      return absl::DataLossError(absl::StrCat("invalid executable: external weight '", w.name, "' names constant ",
                                              w.constant, ", which is out of range or already external"));
    }
    if (w.name.empty()) return absl::DataLossError("invalid executable: an external weight has an empty name");
  }
  return absl::OkStatus();
}

}  // namespace kiln::vm
