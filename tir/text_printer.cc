// PrimExprs, TIR statements and PrimFuncs in the text format (see tir/text_printer.h). The
// PrimExpr spelling is tir::PrintPrimExpr's (tir/expr.cc), with names unique per function.
#include "tir/text_printer.h"

#include "absl/strings/str_cat.h"
#include "support/check.h"
#include "tir/text_lexer.h"
#include "tir/text_printer_impl.h"

namespace kiln::tir::text_internal {

namespace {

// The keywords of the whole format, module and Relax included: a PrimFunc may be printed
// inside a module.
const std::unordered_set<std::string>& Reserved() {
  static const auto* kReserved = new std::unordered_set<std::string>{
      "module", "func",   "impure",   "prim_func", "attr",   "where",  "dataflow", "block",  "return",
      "yield",  "if",     "else",     "match_cast", "R",     "true",   "false",    "nan",    "inf",
      "let",    "in",     "for",      "allocate", "decl_buffer",  "evaluate", "alloc", "init",    "Buffer", "Object",
      "Prim",   "Shape",  "Tensor",   "Tuple",     "Func",   "ndim",   "device",   "value",  "strides",
      "scope",  "spatial", "reduce"};
  return *kReserved;
}

}  // namespace

// ---------------------------------------------------------------- names

std::string TirPrinter::Unique(const std::string& hint, std::unordered_set<std::string>* used) {
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

void TirPrinter::ResetNames() {
  names_.clear();
  tir_used_.clear();
  tir_order_.clear();
  let_vars_.clear();
}

const std::string& TirPrinter::TirName(const void* node, const std::string& hint) {
  auto it = names_.find(node);
  if (it != names_.end()) return it->second;
  return names_.emplace(node, Unique(hint, &tir_used_)).first->second;
}

void TirPrinter::Line(std::string_view text) {
  out_ += Indent();
  out_.append(text.data(), text.size());
  out_ += '\n';
}

// ---------------------------------------------------------------- PrimExpr

// Names PrimExpr variables and buffers uniquely within the function for PrintPrimExpr,
// recording the order symbolic variables are first met (for the `where` clause) and which
// variables are let-bound (never symbolic).
class TirPrinter::PrimNamer : public PrimExprNamer {
 public:
  explicit PrimNamer(TirPrinter* printer) : printer_(printer) {}
  std::string VarName(const VarNode* var) override {
    bool fresh = printer_->names_.find(var) == printer_->names_.end();
    const std::string& name = printer_->TirName(var, var->name);
    if (fresh) printer_->tir_order_.push_back(var);
    return name;
  }
  std::string LetVarName(const VarNode* var) override {
    printer_->let_vars_.insert(var);
    return printer_->TirName(var, var->name);
  }
  std::string BufferName(const BufferNode* buffer) override {
    return printer_->TirName(buffer, buffer->name);
  }

 private:
  TirPrinter* printer_;
};

void TirPrinter::PrimList(const std::vector<PrimExpr>& items, std::string* out) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out->append(", ");
    PrintPrimExpr(items[i], out);
  }
}

void TirPrinter::PrintPrimExpr(const PrimExpr& e, std::string* out) {
  PrimNamer namer(this);
  tir::PrintPrimExpr(e, namer, out);
}

// ---------------------------------------------------------------- statements

std::string TirPrinter::BufferType(const Buffer& buffer) {
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

void TirPrinter::PrintBodyStmts(const Stmt& body) {
  if (!body.defined()) return;
  if (const auto* seq = body.as<SeqStmtNode>()) {
    for (const Stmt& s : seq->seq) PrintStmt(s);
  } else {
    PrintStmt(body);
  }
}

void TirPrinter::PrintStmt(const Stmt& stmt) {
  if (!stmt.defined()) {
    Line("<undefined>");
    return;
  }
  switch (stmt.kind()) {
    case StmtKind::kBufferStore: {
      const auto* s = stmt.as<BufferStoreNode>();
      std::string text = absl::StrCat(TirName(s->buffer.get(), s->buffer->name), "[");
      PrimList(s->indices, &text);
      text += "] = ";
      PrintPrimExpr(s->value, &text);
      Line(text);
      return;
    }
    case StmtKind::kFor: {
      const auto* f = stmt.as<ForNode>();
      std::string text = absl::StrCat("for ", TirName(f->loop_var.get(), f->loop_var.name()), " in ",
                                      ForKindName(f->for_kind), "(");
      PrimList({f->min, f->extent}, &text);
      if (f->for_kind == ForKind::kThreadBinding) absl::StrAppend(&text, ", ", QuoteString(f->thread_tag));
      text += ") {";
      Line(text);
      ++indent_;
      PrintBodyStmts(f->body);
      --indent_;
      Line("}");
      return;
    }
    case StmtKind::kBlock: {
      const auto* b = stmt.as<BlockNode>();
      Line(absl::StrCat("block ", QuoteString(b->name), " {"));
      ++indent_;
      for (const IterVar& iv : b->iter_vars) {
        std::string text = TirName(iv.var.get(), iv.var.name());
        if (iv.var.dtype() != DataType::Int64()) absl::StrAppend(&text, ": ", iv.var.dtype().ToString());
        absl::StrAppend(&text, " = ", iv.type == IterType::kSpatial ? "spatial(" : "reduce(");
        PrimList({iv.extent, iv.value}, &text);
        text += ")";
        Line(text);
      }
      if (b->predicate.defined()) {
        std::string text = "where ";
        PrintPrimExpr(b->predicate, &text);
        Line(text);
      }
      for (const Buffer& buffer : b->alloc_buffers) {
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
    case StmtKind::kIfThenElse: {
      const auto* s = stmt.as<IfThenElseNode>();
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
    case StmtKind::kSeqStmt: {
      // A nested sequence has no syntax of its own; its statements print in place.
      PrintBodyStmts(stmt);
      return;
    }
    case StmtKind::kAllocate: {
      const auto* a = stmt.as<AllocateNode>();
      std::string name = TirName(a->buffer.get(), a->buffer->name);
      Line(absl::StrCat("allocate ", name, ": ", BufferType(a->buffer), " {"));
      ++indent_;
      PrintBodyStmts(a->body);
      --indent_;
      Line("}");
      return;
    }
    case StmtKind::kLetStmt: {
      const auto* l = stmt.as<LetStmtNode>();
      std::string text = absl::StrCat("let ", TirName(l->var.get(), l->var.name()), " = ");
      PrintPrimExpr(l->value, &text);
      Line(text + " {");
      ++indent_;
      PrintBodyStmts(l->body);
      --indent_;
      Line("}");
      return;
    }
    case StmtKind::kEvaluate: {
      std::string text = "evaluate ";
      PrintPrimExpr(stmt.as<EvaluateNode>()->value, &text);
      Line(text);
      return;
    }
    case StmtKind::kDeclBuffer: {
      const auto* d = stmt.as<DeclBufferNode>();
      std::string text = absl::StrCat("decl_buffer ", TirName(d->buffer.get(), d->buffer->name), ": ",
                                      BufferType(d->buffer), " = ");
      PrintPrimExpr(d->data, &text);
      Line(text + " {");
      ++indent_;
      PrintBodyStmts(d->body);
      --indent_;
      Line("}");
      return;
    }
    case StmtKind::kAssert: {
      const auto* a = stmt.as<AssertNode>();
      std::string text = "assert ";
      PrintPrimExpr(a->condition, &text);
      absl::StrAppend(&text, ", ", QuoteString(a->message));
      for (const PrimExpr& v : a->values) {
        text += ", ";
        PrintPrimExpr(v, &text);
      }
      Line(text);
      return;
    }
  }
}

std::string TirPrinter::BoundsClause(const std::vector<std::pair<const VarNode*, bool>>& defined) {
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

void TirPrinter::PrintPrimFunc(const PrimFunc& func, std::string_view name) {
  ResetNames();
  std::string header = absl::StrCat("prim_func @", std::string(name), "(");
  std::vector<std::pair<const VarNode*, bool>> defined;
  for (size_t i = 0; i < func->params.size(); ++i) {
    const PrimFuncParam& p = func->params[i];
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

}  // namespace kiln::tir::text_internal

namespace kiln::tir {

std::string PrintPrimFunc(const PrimFunc& func, std::string_view name) {
  text_internal::TirPrinter printer;
  printer.PrintPrimFunc(func, name);
  return printer.Take();
}

std::string PrintStmt(const Stmt& stmt) {
  text_internal::TirPrinter printer;
  printer.PrintStmt(stmt);
  return printer.Take();
}

}  // namespace kiln::tir
