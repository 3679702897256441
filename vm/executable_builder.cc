#include "vm/executable_builder.h"

#include "absl/strings/str_cat.h"
#include "support/check.h"

namespace kiln::vm {

ParamSpec TensorParam(std::string name, DLDataType dtype, std::vector<Dim> dims) {
  ParamSpec p;
  p.name = std::move(name);
  p.kind = Value::Kind::kTensor;
  p.check_dtype = true;
  p.dtype = dtype;
  p.ndim = static_cast<int32_t>(dims.size());
  p.dims = std::move(dims);
  return p;
}

ParamSpec IntParam(std::string name) {
  ParamSpec p;
  p.name = std::move(name);
  p.kind = Value::Kind::kInt;
  return p;
}

ParamSpec AnyParam(std::string name) {
  ParamSpec p;
  p.name = std::move(name);
  return p;
}

FunctionBuilder::FunctionBuilder(std::string name, const std::vector<ParamSpec>& params) {
  fn_.name = std::move(name);
  fn_.num_registers = static_cast<int32_t>(params.size());
  for (const ParamSpec& spec : params) {
    ParamSignature sig;
    sig.name = spec.name;
    sig.kind = spec.kind;
    sig.check_dtype = spec.check_dtype;
    sig.dtype = spec.dtype;
    sig.ndim = spec.ndim;
    sig.device = spec.device;
    for (const Dim& d : spec.dims) sig.dims.push_back(DimOperand(d));
    fn_.params.push_back(std::move(sig));
  }
}

int32_t FunctionBuilder::NewRegister() { return fn_.num_registers++; }

int32_t FunctionBuilder::sym(const std::string& name) {
  auto it = syms_.find(name);
  KILN_CHECK(it != syms_.end()) << "symbolic variable " << name << " is not bound yet in " << fn_.name;
  return it->second;
}

Operand FunctionBuilder::DimOperand(const Dim& d) {
  switch (d.kind) {
    case Dim::Kind::kFixed: return Operand::Imm(d.value);
    case Dim::Kind::kAny: return Operand::Any();
    case Dim::Kind::kRegister: return Operand::Reg(static_cast<int32_t>(d.value), String(d.name));
    case Dim::Kind::kSymbolic: {
      auto it = syms_.find(d.name);
      if (it != syms_.end()) return Operand::Reg(it->second, String(d.name));
      int32_t reg = NewRegister();
      syms_[d.name] = reg;
      return Operand::Bind(reg, String(d.name));
    }
  }
  return Operand::Any();
}

int32_t FunctionBuilder::String(const std::string& s) {
  auto it = string_index_.find(s);
  if (it != string_index_.end()) return it->second;
  fn_.strings.push_back(s);
  int32_t index = static_cast<int32_t>(fn_.strings.size()) - 1;
  string_index_[s] = index;
  return index;
}

int32_t FunctionBuilder::Operands(const std::vector<Operand>& ops) {
  int32_t begin = static_cast<int32_t>(fn_.operands.size());
  fn_.operands.insert(fn_.operands.end(), ops.begin(), ops.end());
  return begin;
}

void FunctionBuilder::Emit(Instruction in) {
  fn_.code.push_back(in);
  fn_.instruction_names.push_back(pending_name_.empty() ? -1 : String(pending_name_));
  pending_name_.clear();
}

FunctionBuilder::Label FunctionBuilder::NewLabel() {
  label_pc_.push_back(-1);
  return Label{static_cast<int32_t>(label_pc_.size()) - 1};
}

void FunctionBuilder::Bind(Label label) { label_pc_[label.id] = static_cast<int32_t>(fn_.code.size()); }

void FunctionBuilder::CallFunction(int32_t dst, int32_t function, const std::vector<Operand>& args) {
  Emit({Opcode::kCall, static_cast<uint8_t>(CalleeKind::kFunction), dst, function, Operands(args), static_cast<int32_t>(args.size())});
}

void FunctionBuilder::CallKernel(int32_t kernel, const std::vector<Operand>& args) {
  Emit({Opcode::kCall, static_cast<uint8_t>(CalleeKind::kKernel), kNoRegister, kernel, Operands(args), static_cast<int32_t>(args.size())});
}

void FunctionBuilder::CallBuiltin(int32_t dst, int32_t builtin, const std::vector<Operand>& args) {
  Emit({Opcode::kCall, static_cast<uint8_t>(CalleeKind::kBuiltin), dst, builtin, Operands(args), static_cast<int32_t>(args.size())});
}

void FunctionBuilder::CallClosure(int32_t dst, int32_t closure, const std::vector<Operand>& args) {
  Emit({Opcode::kCall, static_cast<uint8_t>(CalleeKind::kClosure), dst, closure, Operands(args), static_cast<int32_t>(args.size())});
}

void FunctionBuilder::MakeClosure(int32_t dst, int32_t function, const std::vector<Operand>& captured) {
  Emit({Opcode::kMakeClosure, 0, dst, function, Operands(captured), static_cast<int32_t>(captured.size())});
}

void FunctionBuilder::Ret(int32_t reg) { Emit({Opcode::kRet, 0, kNoRegister, reg, 0, 0}); }

void FunctionBuilder::Goto(Label target) {
  fixups_.emplace_back(fn_.code.size(), target.id);
  Emit({Opcode::kGoto, 0, kNoRegister, 0, 0, 0});
}

void FunctionBuilder::If(int32_t cond, Label else_target) {
  fixups_.emplace_back(fn_.code.size(), else_target.id);
  Emit({Opcode::kIf, 0, kNoRegister, cond, 0, 0});
}

void FunctionBuilder::LoadConst(int32_t dst, int32_t constant) { Emit({Opcode::kLoadConst, 0, dst, constant, 0, 0}); }

void FunctionBuilder::Move(int32_t dst, int32_t src) { Emit({Opcode::kMove, 0, dst, src, 0, 0}); }

void FunctionBuilder::IntOp(int32_t dst, IntOpKind op, Operand a, Operand b) {
  Emit({Opcode::kIntOp, static_cast<uint8_t>(op), dst, 0, Operands({a, b}), 2});
}

void FunctionBuilder::MatchShape(int32_t value, const std::vector<Dim>& dims, const std::string& context) {
  std::vector<Operand> pattern{Operand::Imm(static_cast<int64_t>(dims.size()))};
  for (const Dim& d : dims) pattern.push_back(DimOperand(d));
  Emit({Opcode::kMatchShape, 0, String(context), value, Operands(pattern), static_cast<int32_t>(pattern.size())});
}

void FunctionBuilder::MakeShape(int32_t dst, const std::vector<Operand>& dims) {
  Emit({Opcode::kMakeShape, 0, dst, 0, Operands(dims), static_cast<int32_t>(dims.size())});
}

void FunctionBuilder::AllocStorage(int32_t dst, Operand bytes, int32_t device) {
  Emit({Opcode::kAllocStorage, 0, dst, device, Operands({bytes}), 1});
}

void FunctionBuilder::CopyToDevice(int32_t dst, int32_t tensor, int32_t device) {
  Emit({Opcode::kCopyToDevice, 0, dst, tensor, 0, device});
}

void FunctionBuilder::AllocTensor(int32_t dst, int32_t storage, Operand byte_offset, int32_t shape, DLDataType dtype) {
  Emit({Opcode::kAllocTensor, 0, dst, storage, Operands({byte_offset, Operand::Imm(PackDType(dtype))}), shape});
}

void FunctionBuilder::Kill(int32_t reg) { Emit({Opcode::kKill, 0, kNoRegister, reg, 0, 0}); }

absl::Status FunctionBuilder::Finish() {
  for (const auto& [pc, label] : fixups_) {
    int32_t target = label_pc_[label];
    if (target < 0) return absl::InternalError(absl::StrCat("function '", fn_.name, "': jump to an unbound label"));
    int32_t offset = target - static_cast<int32_t>(pc);
    if (fn_.code[pc].op == Opcode::kGoto) {
      fn_.code[pc].a = offset;
    } else {
      fn_.code[pc].b = offset;
    }
  }
  return absl::OkStatus();
}

int32_t ExecutableBuilder::AddConstant(Value value) {
  contents_.constants.push_back(std::move(value));
  return static_cast<int32_t>(contents_.constants.size()) - 1;
}

int32_t ExecutableBuilder::AddExternalConstant(const std::string& name, DLDataType dtype, std::vector<int64_t> shape) {
  int32_t index = AddConstant(Value());
  contents_.external_weights.push_back({index, name, dtype, std::move(shape)});
  return index;
}

int32_t ExecutableBuilder::DeclareBuiltin(const std::string& name, const std::string& signature) {
  for (size_t i = 0; i < contents_.builtins.size(); ++i) {
    if (contents_.builtins[i].name == name && contents_.builtins[i].signature == signature) return static_cast<int32_t>(i);
  }
  contents_.builtins.push_back({name, signature});
  return static_cast<int32_t>(contents_.builtins.size()) - 1;
}

int32_t ExecutableBuilder::DeclareKernel(const std::string& name, const std::string& arg_signature,
                                         KernelDecl::Source source, int32_t device) {
  for (size_t i = 0; i < contents_.kernels.size(); ++i) {
    if (contents_.kernels[i].name == name && contents_.kernels[i].device == device) return static_cast<int32_t>(i);
  }
  contents_.kernels.push_back({name, source, arg_signature, device});
  return static_cast<int32_t>(contents_.kernels.size()) - 1;
}

int32_t ExecutableBuilder::DeclareDevice(const std::string& name) {
  for (size_t i = 0; i < contents_.devices.size(); ++i) {
    if (contents_.devices[i] == name) return static_cast<int32_t>(i);
  }
  contents_.devices.push_back(name);
  return static_cast<int32_t>(contents_.devices.size()) - 1;
}

FunctionBuilder& ExecutableBuilder::AddFunction(const std::string& name, const std::vector<ParamSpec>& params) {
  functions_.push_back(std::unique_ptr<FunctionBuilder>(new FunctionBuilder(name, params)));
  return *functions_.back();
}

int32_t ExecutableBuilder::FunctionIndex(const std::string& name) const {
  for (size_t i = 0; i < functions_.size(); ++i) {
    if (functions_[i]->fn_.name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

absl::StatusOr<std::string> ExecutableBuilder::Build() {
  Executable::Contents contents = contents_;
  for (const auto& fb : functions_) {
    absl::Status status = fb->Finish();
    if (!status.ok()) return status;
    contents.functions.push_back(fb->fn_);
  }
  absl::Status verified = Executable::Verify(contents);
  if (!verified.ok()) return verified;
  return Executable::Encode(contents);
}

}  // namespace kiln::vm
