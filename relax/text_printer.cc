// The module and Relax parts of the text printer (see text_printer.h); PrimFuncs, statements
// and PrimExprs print through the TIR printer (tir/text_printer.cc).
#include "relax/text_printer.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "relax/text_printer_impl.h"
#include "tir/text_lexer.h"

namespace kiln::relax::text_internal {

namespace {

std::string ConstantElement(const ConstantData& data, int64_t index) {
  const DataType dtype = data.dtype;
  int width = dtype.bytes();
  uint64_t bits = 0;
  for (int i = 0; i < width; ++i) {
    bits |= static_cast<uint64_t>((*data.bytes)[static_cast<size_t>(index * width + i)]) << (8 * i);
  }
  if (dtype.is_floating()) {
    if (dtype.bits() == 16) return absl::StrFormat("0x%04x", bits);
    if (dtype.bits() == 32) {
      uint32_t b32 = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b32, 4);
      if (std::isnan(f)) return absl::StrFormat("0x%08x", b32);
      return tir::FloatLiteralText(f, 32);
    }
    double d;
    std::memcpy(&d, &bits, 8);
    if (std::isnan(d)) return absl::StrFormat("0x%016x", bits);
    return tir::FloatLiteralText(d, 64);
  }
  if (dtype.is_bool()) {
    if (bits == 0) return "false";
    if (bits == 1) return "true";
    return absl::StrCat(bits);
  }
  if (dtype.is_int() && dtype.bits() < 64 && (bits >> (dtype.bits() - 1)) & 1) {
    bits |= ~uint64_t{0} << dtype.bits();  // sign-extend
  }
  if (dtype.is_int()) return absl::StrCat(static_cast<int64_t>(bits));
  return absl::StrCat(bits);
}

}  // namespace

std::string AttrValueText(const AttrValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return absl::StrCat(*i);
  if (const auto* d = std::get_if<double>(&value)) return tir::FloatLiteralText(*d, 64);
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&value)) return tir::QuoteString(*s);
  if (const auto* t = std::get_if<DataType>(&value)) return t->ToString();
  if (const auto* f = std::get_if<std::vector<double>>(&value)) {
    std::string out = "[";
    for (size_t i = 0; i < f->size(); ++i) absl::StrAppend(&out, i ? ", " : "", tir::FloatLiteralText((*f)[i], 64));
    return out + "]";
  }
  const auto& v = std::get<std::vector<int64_t>>(value);
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) absl::StrAppend(&out, i ? ", " : "", v[i]);
  return out + "]";
}

void Printer::ResetNames() {
  TirPrinter::ResetNames();
  relax_used_.clear();
}

const std::string& Printer::RelaxName(const void* node, const std::string& hint) {
  auto it = names_.find(node);
  if (it != names_.end()) return it->second;
  return names_.emplace(node, Unique(hint, &relax_used_)).first->second;
}

std::string Printer::VarRef(const Var& var) {
  return absl::StrCat(var.is_dataflow() ? "%" : "", RelaxName(var.get(), var.name_hint()));
}

void Printer::PrintStructInfo(const StructInfo& sinfo, std::string* out) {
  if (!sinfo.defined()) {
    out->append("<unknown>");
    return;
  }
  auto dims = [&](const std::vector<PrimExpr>& values) {
    out->push_back('(');
    PrimList(values, out);
    if (values.size() == 1) out->push_back(',');
    out->push_back(')');
  };
  auto list = [&](const std::vector<StructInfo>& items) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out->append(", ");
      PrintStructInfo(items[i], out);
    }
  };
  switch (sinfo.kind()) {
    case StructInfoKind::kObject: out->append("Object"); return;
    case StructInfoKind::kPrim: {
      const auto* prim = sinfo.as<PrimStructInfoNode>();
      absl::StrAppend(out, "Prim(", prim->dtype.ToString());
      if (prim->value.defined()) {
        out->append(", value=");
        PrintPrimExpr(prim->value, out);
      }
      out->push_back(')');
      return;
    }
    case StructInfoKind::kShape: {
      const auto* shape = sinfo.as<ShapeStructInfoNode>();
      if (shape->values) {
        out->append("Shape(");
        dims(*shape->values);
        out->push_back(')');
      } else if (shape->ndim == kUnknownNdim) {
        out->append("Shape");
      } else {
        absl::StrAppend(out, "Shape(ndim=", shape->ndim, ")");
      }
      return;
    }
    case StructInfoKind::kTensor: {
      const auto* tensor = sinfo.as<TensorStructInfoNode>();
      bool any = tensor->shape || tensor->ndim != kUnknownNdim || tensor->dtype || !tensor->device.empty();
      if (!any) {
        out->append("Tensor");
        return;
      }
      out->append("Tensor(");
      bool first = true;
      auto sep = [&]() {
        if (!first) out->append(", ");
        first = false;
      };
      if (tensor->shape) {
        sep();
        dims(*tensor->shape);
      } else if (tensor->ndim != kUnknownNdim) {
        sep();
        absl::StrAppend(out, "ndim=", tensor->ndim);
      }
      if (tensor->dtype) {
        sep();
        out->append(tensor->dtype->ToString());
      }
      if (!tensor->device.empty()) {
        sep();
        absl::StrAppend(out, "device=", tir::QuoteString(tensor->device));
      }
      out->push_back(')');
      return;
    }
    case StructInfoKind::kTuple:
      out->append("Tuple(");
      list(sinfo.as<TupleStructInfoNode>()->fields);
      out->push_back(')');
      return;
    case StructInfoKind::kFunc: {
      const auto* func = sinfo.as<FuncStructInfoNode>();
      out->append("Func(");
      if (func->params) {
        out->push_back('[');
        list(*func->params);
        out->push_back(']');
      } else {
        out->append("...");
      }
      out->append(" -> ");
      PrintStructInfo(func->ret, out);
      if (!func->pure) out->append(", impure");
      out->push_back(')');
      return;
    }
  }
}

void Printer::PrintExprInline(const Expr& expr, std::string* out) {
  if (!expr.defined()) {
    out->append("<undefined>");
    return;
  }
  switch (expr.kind()) {
    case ExprKind::kVar:
    case ExprKind::kDataflowVar: out->append(VarRef(Var(std::static_pointer_cast<const VarNode>(expr.node())))); return;
    case ExprKind::kGlobalVar: absl::StrAppend(out, "@", expr.as<GlobalVarNode>()->name); return;
    case ExprKind::kOp: absl::StrAppend(out, "R.", expr.as<OpNode>()->name); return;
    case ExprKind::kExternFunc:
      absl::StrAppend(out, "R.extern(", tir::QuoteString(expr.as<ExternFuncNode>()->symbol), ")");
      return;
    case ExprKind::kStringImm: out->append(tir::QuoteString(expr.as<StringImmNode>()->value)); return;
    case ExprKind::kShapeExpr:
      out->append("R.shape([");
      PrimList(expr.as<ShapeExprNode>()->values, out);
      out->append("])");
      return;
    case ExprKind::kPrimValue:
      out->append("R.prim(");
      PrintPrimExpr(expr.as<PrimValueNode>()->value, out);
      out->push_back(')');
      return;
    case ExprKind::kConstant: {
      const ConstantData& data = expr.as<ConstantNode>()->data;
      absl::StrAppend(out, "R.const(", data.dtype.ToString(), ", [");
      for (size_t i = 0; i < data.shape.size(); ++i) absl::StrAppend(out, i ? ", " : "", data.shape[i]);
      if (data.is_external()) {
        absl::StrAppend(out, "], external=", tir::QuoteString(data.external_name), ")");
        return;
      }
      out->append("], [");
      int64_t n = data.numel();
      for (int64_t i = 0; i < n; ++i) absl::StrAppend(out, i ? ", " : "", ConstantElement(data, i));
      out->append("])");
      return;
    }
    case ExprKind::kTuple: {
      const auto& fields = expr.as<TupleNode>()->fields;
      out->push_back('(');
      for (size_t i = 0; i < fields.size(); ++i) {
        if (i > 0) out->append(", ");
        PrintExprInline(fields[i], out);
      }
      if (fields.size() == 1) out->push_back(',');
      out->push_back(')');
      return;
    }
    case ExprKind::kTupleGetItem: {
      const auto* item = expr.as<TupleGetItemNode>();
      PrintExprInline(item->tuple, out);
      absl::StrAppend(out, "[", item->index, "]");
      return;
    }
    case ExprKind::kCall: {
      const auto* call = expr.as<CallNode>();
      PrintExprInline(call->op, out);
      out->push_back('(');
      bool first = true;
      auto sep = [&]() {
        if (!first) out->append(", ");
        first = false;
      };
      for (const Expr& arg : call->args) {
        sep();
        PrintExprInline(arg, out);
      }
      for (const auto& [key, value] : call->attrs) {
        sep();
        absl::StrAppend(out, key, "=", AttrValueText(value));
      }
      for (const StructInfo& s : call->sinfo_args) {
        sep();
        out->append("out_sinfo=");
        PrintStructInfo(s, out);
      }
      out->push_back(')');
      return;
    }
    case ExprKind::kIf: out->append("<if: only a binding's value>"); return;
    case ExprKind::kSeqExpr: out->append("<seq: only a function or branch body>"); return;
    case ExprKind::kFunction: out->append("<function: only at module level>"); return;
  }
}

void Printer::PrintBinding(const Binding& binding) {
  std::string text = VarRef(binding.var);
  if (binding.var.struct_info().defined()) {
    text += ": ";
    PrintStructInfo(binding.var.struct_info(), &text);
  }
  text += " = ";
  if (binding.is_match_cast()) {
    text += "match_cast(";
    PrintExprInline(binding.value, &text);
    text += ", ";
    PrintStructInfo(binding.match_cast_sinfo, &text);
    Line(text + ")");
    return;
  }
  if (const auto* branch = binding.value.as<IfNode>()) {
    text += "if ";
    PrintExprInline(branch->condition, &text);
    Line(text + " {");
    ++indent_;
    PrintSeqBody(branch->true_branch, "yield");
    --indent_;
    Line("} else {");
    ++indent_;
    PrintSeqBody(branch->false_branch, "yield");
    --indent_;
    Line("}");
    return;
  }
  PrintExprInline(binding.value, &text);
  Line(text);
}

void Printer::PrintSeqBody(const Expr& body, std::string_view terminator) {
  std::string text(terminator);
  text += " ";
  const auto* seq = body.as<SeqExprNode>();
  if (seq == nullptr) {
    PrintExprInline(body, &text);
    Line(text);
    return;
  }
  bool previous_plain = false;
  for (const BindingBlock& block : seq->blocks) {
    bool braces = block.dataflow || block.bindings.empty() || previous_plain;
    if (braces) {
      Line(block.dataflow ? "dataflow {" : "block {");
      ++indent_;
    }
    for (const Binding& binding : block.bindings) PrintBinding(binding);
    if (braces) {
      --indent_;
      Line("}");
    }
    previous_plain = !block.dataflow;
  }
  PrintExprInline(seq->body, &text);
  Line(text);
}

void Printer::PrintFunction(const FunctionNode& func, std::string_view name) {
  ResetNames();
  std::string header = absl::StrCat(func.is_pure ? "" : "impure ", "func @", std::string(name), "(");
  for (size_t i = 0; i < func.params.size(); ++i) {
    if (i > 0) header += ", ";
    header += VarRef(func.params[i]);
    if (func.params[i].struct_info().defined()) {
      header += ": ";
      PrintStructInfo(func.params[i].struct_info(), &header);
    }
  }
  header += ")";
  if (func.ret_struct_info.defined()) {
    header += " -> ";
    PrintStructInfo(func.ret_struct_info, &header);
  }
  // The body first: match_cast defines symbolic variables whose bounds the header declares.
  std::string saved = std::move(out_);
  out_.clear();
  ++indent_;
  for (const auto& [key, value] : func.attrs) {
    Line(absl::StrCat("attr ", tir::IsIdentifier(key) ? key : tir::QuoteString(key), " = ", AttrValueText(value)));
  }
  PrintSeqBody(func.body, "return");
  --indent_;
  std::string body = std::move(out_);
  out_ = std::move(saved);
  std::vector<std::pair<const tir::VarNode*, bool>> defined;
  for (const tir::VarNode* var : tir_order_) {
    if (!let_vars_.count(var)) defined.emplace_back(var, true);
  }
  Line(header + BoundsClause(defined) + " {");
  out_ += body;
  Line("}");
}

void Printer::PrintModule(const IRModule& module) {
  Line("module {");
  ++indent_;
  bool first = true;
  for (const IRModule::Entry& entry : module.entries()) {
    if (!first) out_ += "\n";
    first = false;
    if (const FunctionNode* f = entry.relax_function()) {
      PrintFunction(*f, entry.name);
    } else if (const tir::PrimFunc* p = entry.prim_func()) {
      PrintPrimFunc(*p, entry.name);
    }
  }
  --indent_;
  Line("}");
}

}  // namespace kiln::relax::text_internal

namespace kiln::relax {

std::string PrintModule(const IRModule& module) {
  text_internal::Printer printer;
  printer.PrintModule(module);
  return printer.Take();
}

std::string PrintExpr(const Expr& expr, std::string_view function_name) {
  text_internal::Printer printer;
  if (const auto* f = expr.as<FunctionNode>()) {
    printer.PrintFunction(*f, function_name);
    return printer.Take();
  }
  std::string out;
  printer.PrintExprInline(expr, &out);
  return out;
}

}  // namespace kiln::relax
