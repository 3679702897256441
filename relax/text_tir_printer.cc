// PrimExprs, TIR statements and PrimFuncs in the text format. The PrimExpr spelling is
// tir::ToString's (tir/expr.cc); it is repeated here only so that variable and buffer names
// can be made unique per function.
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "relax/text_lexer.h"
#include "relax/text_printer.h"
#include "relax/text_printer_impl.h"
#include "support/check.h"

namespace kiln::relax::text_internal {

using tir::DataType;
using tir::ExprKind;

namespace {

const std::unordered_set<std::string>& Reserved() {
  static const auto* kReserved = new std::unordered_set<std::string>{
      "module", "func",   "impure",   "prim_func", "attr",   "where",  "dataflow", "block",  "return",
      "yield",  "if",     "else",     "match_cast", "R",     "true",   "false",    "nan",    "inf",
      "let",    "in",     "for",      "allocate",  "evaluate", "alloc", "init",    "Buffer", "Object",
      "Prim",   "Shape",  "Tensor",   "Tuple",     "Func",   "ndim",   "device",   "value",  "strides",
      "scope",  "spatial", "reduce"};
  return *kReserved;
}

int Precedence(const PrimExpr& e) {
  switch (e.kind()) {
    case ExprKind::kOr: return 1;
    case ExprKind::kAnd: return 2;
    case ExprKind::kEQ: case ExprKind::kNE: case ExprKind::kLT:
    case ExprKind::kLE: case ExprKind::kGT: case ExprKind::kGE: return 3;
    case ExprKind::kAdd: case ExprKind::kSub: return 4;
    case ExprKind::kMul: case ExprKind::kDiv: return 5;
    case ExprKind::kNot: return 6;
    case ExprKind::kLet: return 0;
    case ExprKind::kIntImm: {
      const auto* imm = e.as<tir::IntImmNode>();
      return imm->value < 0 && imm->dtype() == DataType::Int64() ? 6 : 7;
    }
    case ExprKind::kFloatImm: {
      const auto* imm = e.as<tir::FloatImmNode>();
      return imm->value < 0 && imm->dtype() == DataType::Float32() ? 6 : 7;
    }
    default: return 7;
  }
}

}  // namespace

std::string FloatLiteral(double value, int bits) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), bits <= 32 ? "%.9g" : "%.17g", value);
  std::string text = buffer;
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

// ---------------------------------------------------------------- names

std::string Printer::Unique(const std::string& hint, std::unordered_set<std::string>* used) {
  std::string base;
  for (char c : hint) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    base.push_back(ok ? c : '_');
  }
  if (base.empty() || (base[0] >= '0' && base[0] <= '9')) base = "v" + base;
  if (Reserved().count(base) || DataType::Parse(base).ok()) base += "_";
  std::string name = base;
  for (int i = 1; used->count(name); ++i) name = absl::StrCat(base, "_", i);
  used->insert(name);
  return name;
}

void Printer::ResetNames() {
  names_.clear();
  relax_used_.clear();
  tir_used_.clear();
  tir_order_.clear();
  let_vars_.clear();
}

const std::string& Printer::RelaxName(const void* node, const std::string& hint) {
  auto it = names_.find(node);
  if (it != names_.end()) return it->second;
  return names_.emplace(node, Unique(hint, &relax_used_)).first->second;
}

const std::string& Printer::TirName(const void* node, const std::string& hint) {
  auto it = names_.find(node);
  if (it != names_.end()) return it->second;
  return names_.emplace(node, Unique(hint, &tir_used_)).first->second;
}

void Printer::Line(std::string_view text) {
  out_ += Indent();
  out_.append(text.data(), text.size());
  out_ += '\n';
}

// ---------------------------------------------------------------- PrimExpr

void Printer::PrimOperand(const PrimExpr& e, bool parenthesize, std::string* out) {
  if (parenthesize) out->push_back('(');
  PrintPrimExpr(e, out);
  if (parenthesize) out->push_back(')');
}

void Printer::PrimList(const std::vector<PrimExpr>& items, std::string* out) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out->append(", ");
    PrintPrimExpr(items[i], out);
  }
}

void Printer::PrintPrimExpr(const PrimExpr& e, std::string* out) {
  if (!e.defined()) {
    out->append("<undefined>");
    return;
  }
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      const auto* imm = e.as<tir::IntImmNode>();
      if (imm->dtype().is_bool()) {
        out->append(imm->value ? "true" : "false");
      } else if (imm->dtype() == DataType::Int64()) {
        absl::StrAppend(out, imm->value);
      } else {
        absl::StrAppend(out, imm->dtype().ToString(), "(", imm->value, ")");
      }
      return;
    }
    case ExprKind::kFloatImm: {
      const auto* imm = e.as<tir::FloatImmNode>();
      std::string text = FloatLiteral(imm->value, imm->dtype().bits());
      if (imm->dtype() == DataType::Float32() && std::isfinite(imm->value)) {
        out->append(text);
      } else {
        absl::StrAppend(out, imm->dtype().ToString(), "(", text, ")");
      }
      return;
    }
    case ExprKind::kVar: {
      const auto* var = e.as<tir::VarNode>();
      bool fresh = names_.find(var) == names_.end();
      out->append(TirName(var, var->name));
      if (fresh) tir_order_.push_back(var);
      return;
    }
    case ExprKind::kFloorDiv: case ExprKind::kFloorMod:
    case ExprKind::kMin: case ExprKind::kMax: {
      const auto* bin = e.as<tir::BinaryNode>();
      absl::StrAppend(out, tir::KindName(e.kind()), "(");
      PrimList({bin->a, bin->b}, out);
      out->push_back(')');
      return;
    }
    case ExprKind::kNot: {
      out->push_back('!');
      const PrimExpr& a = e.as<tir::NotNode>()->a;
      PrimOperand(a, Precedence(a) < 6, out);
      return;
    }
    case ExprKind::kSelect: {
      const auto* s = e.as<tir::SelectNode>();
      out->append("select(");
      PrimList({s->condition, s->true_value, s->false_value}, out);
      out->push_back(')');
      return;
    }
    case ExprKind::kCast: {
      const auto* c = e.as<tir::CastNode>();
      absl::StrAppend(out, "cast(", c->dtype().ToString(), ", ");
      PrintPrimExpr(c->value, out);
      out->push_back(')');
      return;
    }
    case ExprKind::kCall: {
      const auto* c = e.as<tir::CallNode>();
      absl::StrAppend(out, c->op, "(");
      PrimList(c->args, out);
      out->push_back(')');
      return;
    }
    case ExprKind::kBufferLoad: {
      const auto* load = e.as<tir::BufferLoadNode>();
      absl::StrAppend(out, TirName(load->buffer.get(), load->buffer->name), "[");
      PrimList(load->indices, out);
      out->push_back(']');
      return;
    }
    case ExprKind::kRamp: {
      const auto* r = e.as<tir::RampNode>();
      out->append("ramp(");
      PrimList({r->base, r->stride}, out);
      absl::StrAppend(out, ", ", r->lanes, ")");
      return;
    }
    case ExprKind::kBroadcast: {
      const auto* b = e.as<tir::BroadcastNode>();
      out->append("broadcast(");
      PrintPrimExpr(b->value, out);
      absl::StrAppend(out, ", ", b->lanes, ")");
      return;
    }
    case ExprKind::kLet: {
      const auto* let = e.as<tir::LetNode>();
      let_vars_.insert(let->var.get());
      absl::StrAppend(out, "let ", TirName(let->var.get(), let->var->name), " = ");
      PrintPrimExpr(let->value, out);
      out->append(" in ");
      PrintPrimExpr(let->body, out);
      return;
    }
    default: {
      const auto* bin = e.as<tir::BinaryNode>();
      KILN_CHECK(bin != nullptr);
      int p = Precedence(e);
      bool comparison = tir::IsComparison(e.kind());
      PrimOperand(bin->a, comparison ? Precedence(bin->a) <= p : Precedence(bin->a) < p, out);
      absl::StrAppend(out, " ", tir::KindName(e.kind()), " ");
      PrimOperand(bin->b, Precedence(bin->b) <= p, out);
      return;
    }
  }
}

// ---------------------------------------------------------------- statements

std::string Printer::BufferType(const tir::Buffer& buffer) {
  std::string out = "Buffer((";
  PrimList(buffer->shape, &out);
  if (buffer->shape.size() == 1) out += ",";
  absl::StrAppend(&out, "), ", buffer->dtype.ToString());
  if (!buffer->strides.empty()) {
    out += ", strides=(";
    PrimList(buffer->strides, &out);
    if (buffer->strides.size() == 1) out += ",";
    out += ")";
  }
  if (buffer->scope != "global") absl::StrAppend(&out, ", scope=", QuoteString(buffer->scope));
  return out + ")";
}

void Printer::PrintBodyStmts(const tir::Stmt& body) {
  if (!body.defined()) return;
  if (const auto* seq = body.as<tir::SeqStmtNode>()) {
    for (const tir::Stmt& s : seq->seq) PrintStmt(s);
  } else {
    PrintStmt(body);
  }
}

void Printer::PrintStmt(const tir::Stmt& stmt) {
  if (!stmt.defined()) {
    Line("<undefined>");
    return;
  }
  switch (stmt.kind()) {
    case tir::StmtKind::kBufferStore: {
      const auto* s = stmt.as<tir::BufferStoreNode>();
      std::string text = absl::StrCat(TirName(s->buffer.get(), s->buffer->name), "[");
      PrimList(s->indices, &text);
      text += "] = ";
      PrintPrimExpr(s->value, &text);
      Line(text);
      return;
    }
    case tir::StmtKind::kFor: {
      const auto* f = stmt.as<tir::ForNode>();
      std::string text = absl::StrCat("for ", TirName(f->loop_var.get(), f->loop_var.name()), " in ",
                                      tir::ForKindName(f->for_kind), "(");
      PrimList({f->min, f->extent}, &text);
      if (f->for_kind == tir::ForKind::kThreadBinding) absl::StrAppend(&text, ", ", QuoteString(f->thread_tag));
      text += ") {";
      Line(text);
      ++indent_;
      PrintBodyStmts(f->body);
      --indent_;
      Line("}");
      return;
    }
    case tir::StmtKind::kBlock: {
      const auto* b = stmt.as<tir::BlockNode>();
      Line(absl::StrCat("block ", QuoteString(b->name), " {"));
      ++indent_;
      for (const tir::IterVar& iv : b->iter_vars) {
        std::string text = TirName(iv.var.get(), iv.var.name());
        if (iv.var.dtype() != DataType::Int64()) absl::StrAppend(&text, ": ", iv.var.dtype().ToString());
        absl::StrAppend(&text, " = ", iv.type == tir::IterType::kSpatial ? "spatial(" : "reduce(");
        PrimList({iv.extent, iv.value}, &text);
        text += ")";
        Line(text);
      }
      if (b->predicate.defined()) {
        std::string text = "where ";
        PrintPrimExpr(b->predicate, &text);
        Line(text);
      }
      for (const tir::Buffer& buffer : b->alloc_buffers) {
        Line(absl::StrCat("alloc ", TirName(buffer.get(), buffer->name), ": ", BufferType(buffer)));
      }
      if (b->init.defined()) {
        Line("init {");
        ++indent_;
        PrintBodyStmts(b->init);
        --indent_;
        Line("}");
      }
      PrintBodyStmts(b->body);
      --indent_;
      Line("}");
      return;
    }
    case tir::StmtKind::kIfThenElse: {
      const auto* s = stmt.as<tir::IfThenElseNode>();
      std::string text = "if ";
      PrintPrimExpr(s->condition, &text);
      Line(text + " {");
      ++indent_;
      PrintBodyStmts(s->then_case);
      --indent_;
      if (s->else_case.defined()) {
        Line("} else {");
        ++indent_;
        PrintBodyStmts(s->else_case);
        --indent_;
      }
      Line("}");
      return;
    }
    case tir::StmtKind::kSeqStmt: {
      // A nested sequence has no syntax of its own; its statements print in place.
      PrintBodyStmts(stmt);
      return;
    }
    case tir::StmtKind::kAllocate: {
      const auto* a = stmt.as<tir::AllocateNode>();
      std::string name = TirName(a->buffer.get(), a->buffer->name);
      Line(absl::StrCat("allocate ", name, ": ", BufferType(a->buffer), " {"));
      ++indent_;
      PrintBodyStmts(a->body);
      --indent_;
      Line("}");
      return;
    }
    case tir::StmtKind::kLetStmt: {
      const auto* l = stmt.as<tir::LetStmtNode>();
      std::string text = absl::StrCat("let ", TirName(l->var.get(), l->var.name()), " = ");
      PrintPrimExpr(l->value, &text);
      Line(text + " {");
      ++indent_;
      PrintBodyStmts(l->body);
      --indent_;
      Line("}");
      return;
    }
    case tir::StmtKind::kEvaluate: {
      std::string text = "evaluate ";
      PrintPrimExpr(stmt.as<tir::EvaluateNode>()->value, &text);
      Line(text);
      return;
    }
  }
}

std::string Printer::BoundsClause(const std::vector<std::pair<const tir::VarNode*, bool>>& defined) {
  std::vector<std::string> items;
  for (const auto& [var, shape_default] : defined) {
    const std::string& name = names_.at(var);
    bool print_lower = shape_default ? var->lower_bound != std::optional<int64_t>(0) : var->lower_bound.has_value();
    if (print_lower && var->lower_bound) items.push_back(absl::StrCat(name, " >= ", *var->lower_bound));
    if (var->upper_bound) items.push_back(absl::StrCat(name, " <= ", *var->upper_bound));
  }
  if (items.empty()) return "";
  std::string out = " where ";
  for (size_t i = 0; i < items.size(); ++i) absl::StrAppend(&out, i ? ", " : "", items[i]);
  return out;
}

void Printer::PrintPrimFunc(const tir::PrimFunc& func, std::string_view name) {
  ResetNames();
  std::string header = absl::StrCat("prim_func @", std::string(name), "(");
  std::vector<std::pair<const tir::VarNode*, bool>> defined;
  for (size_t i = 0; i < func->params.size(); ++i) {
    const tir::PrimFuncParam& p = func->params[i];
    if (i > 0) header += ", ";
    if (p.is_buffer()) {
      size_t before = tir_order_.size();
      header += TirName(p.buffer.get(), p.buffer->name);
      header += ": ";
      header += BufferType(p.buffer);
      for (size_t k = before; k < tir_order_.size(); ++k) defined.emplace_back(tir_order_[k], true);
    } else {
      bool fresh = names_.find(p.var.get()) == names_.end();
      header += TirName(p.var.get(), p.var.name());
      if (fresh) {
        tir_order_.push_back(p.var.get());
        defined.emplace_back(p.var.get(), false);
      }
      absl::StrAppend(&header, ": ", p.var.dtype().ToString());
    }
  }
  header += ")";
  header += BoundsClause(defined);
  Line(header + " {");
  ++indent_;
  for (const auto& [key, value] : func->attrs) {
    std::string k = IsIdentifier(key) ? key : QuoteString(key);
    Line(absl::StrCat("attr ", k, " = ", QuoteString(value)));
  }
  PrintBodyStmts(func->body);
  --indent_;
  Line("}");
}

}  // namespace kiln::relax::text_internal

namespace kiln::relax {

std::string PrintPrimFunc(const tir::PrimFunc& func, std::string_view name) {
  text_internal::Printer printer;
  printer.PrintPrimFunc(func, name);
  return printer.Take();
}

std::string PrintStmt(const tir::Stmt& stmt) {
  text_internal::Printer printer;
  printer.PrintStmt(stmt);
  return printer.Take();
}

}  // namespace kiln::relax
