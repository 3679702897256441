#include "tir/structural_equal.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "support/check.h"

namespace kiln::tir {

namespace {

uint64_t FloatBits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

std::string BoundText(const std::optional<int64_t>& bound) {
  return bound ? absl::StrCat(*bound) : std::string("none");
}

std::string VarText(const VarNode* v) {
  return absl::StrCat("var ", v->name, ": ", v->dtype().ToString(), " [", BoundText(v->lower_bound),
                      ", ", BoundText(v->upper_bound), "]");
}

}  // namespace

std::string StructuralEqualizer::Diff(std::string_view root) const {
  if (!has_reason_ && path_.empty()) return "";
  std::string out(root);
  for (auto it = path_.rbegin(); it != path_.rend(); ++it) {
    if (!out.empty()) out += ".";
    out += it->first;
    if (it->second >= 0) absl::StrAppend(&out, "[", it->second, "]");
  }
  if (out.empty()) out = "<root>";
  return absl::StrCat(out, ": ", has_reason_ ? reason_ : std::string("differs"));
}

bool StructuralEqualizer::ExprEqual(const PrimExpr& a, const PrimExpr& b) { return Expr(a, b, false); }
bool StructuralEqualizer::DefExprEqual(const PrimExpr& a, const PrimExpr& b) { return Expr(a, b, true); }

bool StructuralEqualizer::DefineVar(const VarNode* a, const VarNode* b) {
  auto it = var_lhs_to_rhs_.find(a);
  if (it != var_lhs_to_rhs_.end()) {
    if (it->second == b) return true;
    return Mismatch([&] {
      return absl::StrCat(VarText(a), " is already mapped to ", it->second->name, ", not ", b->name);
    });
  }
  auto rit = var_rhs_to_lhs_.find(b);
  if (rit != var_rhs_to_lhs_.end()) {
    return Mismatch([&] {
      return absl::StrCat("rhs ", VarText(b), " is already mapped to ", rit->second->name, ", not ", a->name);
    });
  }
  if (a->dtype() != b->dtype() || a->lower_bound != b->lower_bound || a->upper_bound != b->upper_bound) {
    return Mismatch([&] { return absl::StrCat(VarText(a), " vs ", VarText(b)); });
  }
  var_lhs_to_rhs_.emplace(a, b);
  var_rhs_to_lhs_.emplace(b, a);
  return true;
}

bool StructuralEqualizer::VarEqual(const VarNode* a, const VarNode* b, bool define) {
  auto it = var_lhs_to_rhs_.find(a);
  if (it != var_lhs_to_rhs_.end()) {
    if (it->second == b) return true;
    return Mismatch([&] {
      return absl::StrCat(VarText(a), " is mapped to ", it->second->name, ", but meets ", b->name);
    });
  }
  if (define) return DefineVar(a, b);
  if (var_rhs_to_lhs_.count(b) != 0) {
    return Mismatch([&] {
      return absl::StrCat("free ", VarText(a), " meets bound rhs ", VarText(b));
    });
  }
  if (a == b) return true;
  return Mismatch([&] {
    return absl::StrCat("free variables differ: ", VarText(a), " vs ", VarText(b));
  });
}

bool StructuralEqualizer::Exprs(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b,
                                const char* field, bool define) {
  if (a.size() != b.size()) {
    At(field);
    return Mismatch([&] { return absl::StrCat("length ", a.size(), " vs ", b.size()); });
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (!Expr(a[i], b[i], define)) return At(field, static_cast<int>(i));
  }
  return true;
}

bool StructuralEqualizer::Expr(const PrimExpr& a, const PrimExpr& b, bool define) {
  if (!a.defined() || !b.defined()) {
    if (a.defined() == b.defined()) return true;
    return Mismatch([&] {
      return absl::StrCat(a.defined() ? ToString(a) : "undefined", " vs ",
                          b.defined() ? ToString(b) : "undefined");
    });
  }
  if (a.kind() != b.kind()) {
    return Mismatch([&] { return absl::StrCat(ToString(a), " vs ", ToString(b)); });
  }
  if (a.dtype() != b.dtype()) {
    return Mismatch([&] {
      return absl::StrCat("dtype ", a.dtype().ToString(), " vs ", b.dtype().ToString(), " (",
                          ToString(a), " vs ", ToString(b), ")");
    });
  }
  switch (a.kind()) {
    case ExprKind::kIntImm:
      if (a.as<IntImmNode>()->value == b.as<IntImmNode>()->value) return true;
      return Mismatch([&] { return absl::StrCat(ToString(a), " vs ", ToString(b)); });
    case ExprKind::kFloatImm:
      if (FloatBits(a.as<FloatImmNode>()->value) == FloatBits(b.as<FloatImmNode>()->value)) return true;
      return Mismatch([&] { return absl::StrCat(ToString(a), " vs ", ToString(b)); });
    case ExprKind::kVar:
      return VarEqual(a.as<VarNode>(), b.as<VarNode>(), define);
    case ExprKind::kNot:
      return Expr(a.as<NotNode>()->a, b.as<NotNode>()->a, define) || At("a");
    case ExprKind::kBitNot:
      return Expr(a.as<BitNotNode>()->a, b.as<BitNotNode>()->a, define) || At("a");
    case ExprKind::kReinterpret:
      return Expr(a.as<ReinterpretNode>()->value, b.as<ReinterpretNode>()->value, define) || At("value");
    case ExprKind::kSelect: {
      const auto* x = a.as<SelectNode>();
      const auto* y = b.as<SelectNode>();
      if (!Expr(x->condition, y->condition, define)) return At("condition");
      if (!Expr(x->true_value, y->true_value, define)) return At("true_value");
      return Expr(x->false_value, y->false_value, define) || At("false_value");
    }
    case ExprKind::kCast:
      return Expr(a.as<CastNode>()->value, b.as<CastNode>()->value, define) || At("value");
    case ExprKind::kCall: {
      const auto* x = a.as<CallNode>();
      const auto* y = b.as<CallNode>();
      if (x->op != y->op) return Mismatch([&] { return absl::StrCat("call ", x->op, " vs ", y->op); });
      return Exprs(x->args, y->args, "args", define);
    }
    case ExprKind::kBufferLoad: {
      const auto* x = a.as<BufferLoadNode>();
      const auto* y = b.as<BufferLoadNode>();
      if (!BufferUseEqual(x->buffer.get(), y->buffer.get())) return At("buffer");
      return Exprs(x->indices, y->indices, "indices", define);
    }
    case ExprKind::kRamp: {
      const auto* x = a.as<RampNode>();
      const auto* y = b.as<RampNode>();
      if (x->lanes != y->lanes) return Mismatch([&] { return absl::StrCat("lanes ", x->lanes, " vs ", y->lanes); });
      if (!Expr(x->base, y->base, define)) return At("base");
      return Expr(x->stride, y->stride, define) || At("stride");
    }
    case ExprKind::kBroadcast: {
      const auto* x = a.as<BroadcastNode>();
      const auto* y = b.as<BroadcastNode>();
      if (x->lanes != y->lanes) return Mismatch([&] { return absl::StrCat("lanes ", x->lanes, " vs ", y->lanes); });
      return Expr(x->value, y->value, define) || At("value");
    }
    case ExprKind::kLet: {
      const auto* x = a.as<LetNode>();
      const auto* y = b.as<LetNode>();
      if (!Expr(x->value, y->value, define)) return At("value");
      if (!DefineVar(x->var.get(), y->var.get())) return At("var");
      return Expr(x->body, y->body, define) || At("body");
    }
    default: {
      KILN_CHECK(IsBinary(a.kind())) << KindName(a.kind());
      const auto* x = a.as<BinaryNode>();
      const auto* y = b.as<BinaryNode>();
      if (!Expr(x->a, y->a, define)) return At("a");
      return Expr(x->b, y->b, define) || At("b");
    }
  }
}

bool StructuralEqualizer::DefineBuffer(const BufferNode* a, const BufferNode* b, bool define_shape_vars) {
  auto it = buffer_lhs_to_rhs_.find(a);
  if (it != buffer_lhs_to_rhs_.end()) {
    if (it->second == b) return true;
    return Mismatch([&] {
      return absl::StrCat("buffer ", a->name, " is already mapped to ", it->second->name, ", not ", b->name);
    });
  }
  if (buffer_rhs_to_lhs_.count(b) != 0) {
    return Mismatch([&] { return absl::StrCat("rhs buffer ", b->name, " is already mapped"); });
  }
  if (a->dtype != b->dtype) {
    return Mismatch([&] {
      return absl::StrCat("buffer dtype ", a->dtype.ToString(), " vs ", b->dtype.ToString());
    });
  }
  if (a->scope != b->scope) {
    return Mismatch([&] { return absl::StrCat("buffer scope ", a->scope, " vs ", b->scope); });
  }
  if (!Exprs(a->shape, b->shape, "shape", define_shape_vars)) return false;
  if (!Exprs(a->strides, b->strides, "strides", define_shape_vars)) return false;
  buffer_lhs_to_rhs_.emplace(a, b);
  buffer_rhs_to_lhs_.emplace(b, a);
  return true;
}

bool StructuralEqualizer::BufferUseEqual(const BufferNode* a, const BufferNode* b) {
  auto it = buffer_lhs_to_rhs_.find(a);
  if (it != buffer_lhs_to_rhs_.end()) {
    if (it->second == b) return true;
    return Mismatch([&] {
      return absl::StrCat("buffer ", a->name, " is mapped to ", it->second->name, ", but meets ", b->name);
    });
  }
  if (buffer_rhs_to_lhs_.count(b) != 0) {
    return Mismatch([&] { return absl::StrCat("free buffer ", a->name, " meets bound rhs buffer ", b->name); });
  }
  if (a == b) return true;
  return Mismatch([&] { return absl::StrCat("free buffers differ: ", a->name, " vs ", b->name); });
}

bool StructuralEqualizer::StmtEqual(const Stmt& a, const Stmt& b) {
  if (!a.defined() || !b.defined()) {
    if (a.defined() == b.defined()) return true;
    return Mismatch([&] { return std::string(a.defined() ? "defined vs undefined" : "undefined vs defined"); });
  }
  if (a.kind() != b.kind()) {
    return Mismatch([&] {
      return absl::StrCat("statement kind ", static_cast<int>(a.kind()), " vs ", static_cast<int>(b.kind()));
    });
  }
  switch (a.kind()) {
    case StmtKind::kBufferStore: {
      const auto* x = a.as<BufferStoreNode>();
      const auto* y = b.as<BufferStoreNode>();
      if (!BufferUseEqual(x->buffer.get(), y->buffer.get())) return At("buffer");
      if (!ExprEqual(x->value, y->value)) return At("value");
      return Exprs(x->indices, y->indices, "indices", false);
    }
    case StmtKind::kFor: {
      const auto* x = a.as<ForNode>();
      const auto* y = b.as<ForNode>();
      if (!ExprEqual(x->min, y->min)) return At("min");
      if (!ExprEqual(x->extent, y->extent)) return At("extent");
      if (x->for_kind != y->for_kind || x->thread_tag != y->thread_tag) {
        return Mismatch([&] {
          return absl::StrCat("loop kind ", ForKindName(x->for_kind), " ", x->thread_tag, " vs ",
                              ForKindName(y->for_kind), " ", y->thread_tag);
        });
      }
      if (!DefineVar(x->loop_var.get(), y->loop_var.get())) return At("loop_var");
      return StmtEqual(x->body, y->body) || At("body");
    }
    case StmtKind::kBlock: {
      const auto* x = a.as<BlockNode>();
      const auto* y = b.as<BlockNode>();
      if (x->name != y->name) return Mismatch([&] { return absl::StrCat("block ", x->name, " vs ", y->name); });
      if (x->iter_vars.size() != y->iter_vars.size()) {
        At("iter_vars");
        return Mismatch([&] { return absl::StrCat("length ", x->iter_vars.size(), " vs ", y->iter_vars.size()); });
      }
      for (size_t i = 0; i < x->iter_vars.size(); ++i) {
        const IterVar& u = x->iter_vars[i];
        const IterVar& v = y->iter_vars[i];
        int index = static_cast<int>(i);
        if (u.type != v.type) {
          At("iter_vars", index);
          return Mismatch([] { return std::string("iteration type (spatial vs reduction)"); });
        }
        if (!ExprEqual(u.extent, v.extent)) return At("extent") || At("iter_vars", index);
        if (!ExprEqual(u.value, v.value)) return At("value") || At("iter_vars", index);
        if (!DefineVar(u.var.get(), v.var.get())) return At("var") || At("iter_vars", index);
      }
      if (!ExprEqual(x->predicate, y->predicate)) return At("predicate");
      if (x->alloc_buffers.size() != y->alloc_buffers.size()) {
        At("alloc_buffers");
        return Mismatch([&] {
          return absl::StrCat("length ", x->alloc_buffers.size(), " vs ", y->alloc_buffers.size());
        });
      }
      for (size_t i = 0; i < x->alloc_buffers.size(); ++i) {
        if (!DefineBuffer(x->alloc_buffers[i].get(), y->alloc_buffers[i].get(), false)) {
          return At("alloc_buffers", static_cast<int>(i));
        }
      }
      if (!StmtEqual(x->init, y->init)) return At("init");
      return StmtEqual(x->body, y->body) || At("body");
    }
    case StmtKind::kIfThenElse: {
      const auto* x = a.as<IfThenElseNode>();
      const auto* y = b.as<IfThenElseNode>();
      if (!ExprEqual(x->condition, y->condition)) return At("condition");
      if (!StmtEqual(x->then_case, y->then_case)) return At("then_case");
      return StmtEqual(x->else_case, y->else_case) || At("else_case");
    }
    case StmtKind::kSeqStmt: {
      const auto* x = a.as<SeqStmtNode>();
      const auto* y = b.as<SeqStmtNode>();
      if (x->seq.size() != y->seq.size()) {
        At("seq");
        return Mismatch([&] { return absl::StrCat("length ", x->seq.size(), " vs ", y->seq.size()); });
      }
      for (size_t i = 0; i < x->seq.size(); ++i) {
        if (!StmtEqual(x->seq[i], y->seq[i])) return At("seq", static_cast<int>(i));
      }
      return true;
    }
    case StmtKind::kAllocate: {
      const auto* x = a.as<AllocateNode>();
      const auto* y = b.as<AllocateNode>();
      if (!DefineBuffer(x->buffer.get(), y->buffer.get(), false)) return At("buffer");
      return StmtEqual(x->body, y->body) || At("body");
    }
    case StmtKind::kDeclBuffer: {
      const auto* x = a.as<DeclBufferNode>();
      const auto* y = b.as<DeclBufferNode>();
      if (!ExprEqual(x->data, y->data)) return At("data");
      if (!DefineBuffer(x->buffer.get(), y->buffer.get(), false)) return At("buffer");
      return StmtEqual(x->body, y->body) || At("body");
    }
    case StmtKind::kLetStmt: {
      const auto* x = a.as<LetStmtNode>();
      const auto* y = b.as<LetStmtNode>();
      if (!ExprEqual(x->value, y->value)) return At("value");
      if (!DefineVar(x->var.get(), y->var.get())) return At("var");
      return StmtEqual(x->body, y->body) || At("body");
    }
    case StmtKind::kEvaluate:
      return ExprEqual(a.as<EvaluateNode>()->value, b.as<EvaluateNode>()->value) || At("value");
    case StmtKind::kAssert: {
      const auto* x = a.as<AssertNode>();
      const auto* y = b.as<AssertNode>();
      if (!ExprEqual(x->condition, y->condition)) return At("condition");
      if (x->message != y->message) {
        At("message");
        return Mismatch([&] { return absl::StrCat("\"", x->message, "\" vs \"", y->message, "\""); });
      }
      if (x->values.size() != y->values.size()) return At("values");
      for (size_t i = 0; i < x->values.size(); ++i) {
        if (!ExprEqual(x->values[i], y->values[i])) return At("values", static_cast<int>(i));
      }
      return true;
    }
  }
  KILN_UNREACHABLE();
  return false;
}

bool StructuralEqualizer::PrimFuncEqual(const PrimFunc& a, const PrimFunc& b) {
  if (!a.defined() || !b.defined()) {
    if (a.defined() == b.defined()) return true;
    return Mismatch([] { return std::string("one PrimFunc is undefined"); });
  }
  if (a->params.size() != b->params.size()) {
    At("params");
    return Mismatch([&] { return absl::StrCat("length ", a->params.size(), " vs ", b->params.size()); });
  }
  for (size_t i = 0; i < a->params.size(); ++i) {
    const PrimFuncParam& x = a->params[i];
    const PrimFuncParam& y = b->params[i];
    int index = static_cast<int>(i);
    if (x.is_buffer() != y.is_buffer()) {
      At("params", index);
      return Mismatch([] { return std::string("buffer parameter vs scalar parameter"); });
    }
    bool ok = x.is_buffer() ? DefineBuffer(x.buffer.get(), y.buffer.get(), true)
                            : DefineVar(x.var.get(), y.var.get());
    if (!ok) return At("params", index);
  }
  if (a->attrs != b->attrs) {
    return Mismatch([&] {
      for (const auto& [key, value] : a->attrs) {
        auto it = b->attrs.find(key);
        if (it == b->attrs.end()) return absl::StrCat("attribute ", key, " only on the lhs");
        if (it->second != value) return absl::StrCat("attribute ", key, ": ", value, " vs ", it->second);
      }
      return std::string("attributes only on the rhs");
    });
  }
  return StmtEqual(a->body, b->body) || At("body");
}

bool StructuralEqual(const PrimExpr& a, const PrimExpr& b) { return StructuralEqualizer().ExprEqual(a, b); }
bool StructuralEqual(const Stmt& a, const Stmt& b) { return StructuralEqualizer().StmtEqual(a, b); }
bool StructuralEqual(const PrimFunc& a, const PrimFunc& b) { return StructuralEqualizer().PrimFuncEqual(a, b); }

std::string StructuralDiff(const PrimExpr& a, const PrimExpr& b) {
  StructuralEqualizer eq(true);
  return eq.ExprEqual(a, b) ? "" : eq.Diff();
}

std::string StructuralDiff(const Stmt& a, const Stmt& b) {
  StructuralEqualizer eq(true);
  return eq.StmtEqual(a, b) ? "" : eq.Diff();
}

std::string StructuralDiff(const PrimFunc& a, const PrimFunc& b) {
  StructuralEqualizer eq(true);
  return eq.PrimFuncEqual(a, b) ? "" : eq.Diff();
}

}  // namespace kiln::tir
