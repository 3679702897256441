#include "tir/stmt.h"

#include "absl/strings/str_cat.h"
#include "support/check.h"

namespace kiln::tir {

const char* ForKindName(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kUnrolled: return "unroll";
    case ForKind::kThreadBinding: return "thread_binding";
  }
  return "?";
}

bool BlockNode::is_reduction() const {
  for (const IterVar& iv : iter_vars) {
    if (iv.type == IterType::kReduction) return true;
  }
  return false;
}

Stmt BufferStore(Buffer buffer, PrimExpr value, std::vector<PrimExpr> indices) {
  KILN_CHECK(buffer.defined() && value.defined());
  KILN_CHECK_EQ(static_cast<int>(indices.size()), buffer.ndim()) << "store to " << buffer->name;
  KILN_CHECK(value.dtype().element_of() == buffer->dtype)
      << "store of " << value.dtype().ToString() << " to " << buffer->name << " of "
      << buffer->dtype.ToString();
  return Stmt(std::make_shared<BufferStoreNode>(std::move(buffer), std::move(value), std::move(indices)));
}

Stmt For(Var loop_var, PrimExpr min, PrimExpr extent, ForKind kind, Stmt body, std::string thread_tag) {
  KILN_CHECK(loop_var.defined() && min.defined() && extent.defined() && body.defined());
  KILN_CHECK(min.dtype() == loop_var.dtype() && extent.dtype() == loop_var.dtype())
      << "loop " << loop_var.name() << ": min and extent must have the loop variable's type";
  KILN_CHECK((kind == ForKind::kThreadBinding) == !thread_tag.empty())
      << "loop " << loop_var.name() << ": a thread tag goes with thread_binding only";
  return Stmt(std::make_shared<ForNode>(std::move(loop_var), std::move(min), std::move(extent), kind,
                                        std::move(thread_tag), std::move(body)));
}

Stmt Block(std::string name, std::vector<IterVar> iter_vars, Stmt body, Stmt init,
           PrimExpr predicate, std::vector<Buffer> alloc_buffers) {
  KILN_CHECK(body.defined());
  for (const IterVar& iv : iter_vars) {
    KILN_CHECK(iv.var.defined() && iv.extent.defined() && iv.value.defined())
        << "block " << name << ": iteration variable incomplete";
  }
  KILN_CHECK(!predicate.defined() || predicate.dtype().is_bool()) << "block " << name;
  return Stmt(std::make_shared<BlockNode>(std::move(name), std::move(iter_vars), std::move(predicate),
                                          std::move(alloc_buffers), std::move(init), std::move(body)));
}

Stmt IfThenElse(PrimExpr condition, Stmt then_case, Stmt else_case) {
  KILN_CHECK(condition.defined() && condition.dtype().is_bool()) << "if condition must be bool";
  KILN_CHECK(then_case.defined());
  return Stmt(std::make_shared<IfThenElseNode>(std::move(condition), std::move(then_case),
                                               std::move(else_case)));
}

Stmt SeqStmt(std::vector<Stmt> seq) {
  std::vector<Stmt> flat;
  for (Stmt& s : seq) {
    KILN_CHECK(s.defined());
    if (const auto* inner = s.as<SeqStmtNode>()) {
      flat.insert(flat.end(), inner->seq.begin(), inner->seq.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<SeqStmtNode>(std::move(flat)));
}

Stmt Allocate(Buffer buffer, Stmt body) {
  KILN_CHECK(buffer.defined() && body.defined());
  return Stmt(std::make_shared<AllocateNode>(std::move(buffer), std::move(body)));
}

Stmt LetStmt(Var var, PrimExpr value, Stmt body) {
  KILN_CHECK(var.defined() && value.defined() && body.defined());
  KILN_CHECK(var.dtype() == value.dtype()) << "let " << var.name() << ": value type differs";
  return Stmt(std::make_shared<LetStmtNode>(std::move(var), std::move(value), std::move(body)));
}

Stmt Evaluate(PrimExpr value) {
  KILN_CHECK(value.defined());
  return Stmt(std::make_shared<EvaluateNode>(std::move(value)));
}

int CountAssertPlaceholders(const std::string& message) {
  int count = 0;
  for (size_t i = 0; i < message.size(); ++i) {
    char c = message[i];
    char next = i + 1 < message.size() ? message[i + 1] : '\0';
    if (c == '{' && next == '{') {
      ++i;
    } else if (c == '}' && next == '}') {
      ++i;
    } else if (c == '{' && next == '}') {
      ++count;
      ++i;
    } else if (c == '{' || c == '}') {
      return -1;
    }
  }
  return count;
}

std::string ExpandAssertMessage(const std::string& message, const std::function<std::string(size_t)>& value) {
  std::string out;
  size_t next_value = 0;
  for (size_t i = 0; i < message.size(); ++i) {
    char c = message[i];
    char next = i + 1 < message.size() ? message[i + 1] : '\0';
    if ((c == '{' || c == '}') && next == c) {
      out += c;
      ++i;
    } else if (c == '{' && next == '}') {
      out += value(next_value++);
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeAssertText(const std::string& text) {
  std::string out;
  for (char c : text) {
    out.push_back(c);
    if (c == '{' || c == '}') out.push_back(c);
  }
  return out;
}

std::string FormatAssertMessage(const std::string& message, const std::vector<int64_t>& values) {
  return ExpandAssertMessage(message, [&](size_t i) { return i < values.size() ? absl::StrCat(values[i]) : "?"; });
}

Stmt Assert(PrimExpr condition, std::string message, std::vector<PrimExpr> values) {
  KILN_CHECK(condition.defined() && condition.dtype() == DataType::Bool()) << "assert condition must be a scalar bool";
  KILN_CHECK_EQ(CountAssertPlaceholders(message), static_cast<int>(values.size()))
      << "assert message '" << message << "' needs one value per {}";
  for (const PrimExpr& v : values) {
    KILN_CHECK(v.defined() && v.dtype().is_integer() && v.dtype().is_scalar()) << "assert values are scalar integers";
  }
  return Stmt(std::make_shared<AssertNode>(std::move(condition), std::move(message), std::move(values)));
}

Stmt DeclBuffer(Buffer buffer, PrimExpr data, Stmt body) {
  KILN_CHECK(buffer.defined() && body.defined());
  KILN_CHECK(data.defined() && data.dtype() == DataType::Handle()) << "decl_buffer data must be a handle";
  return Stmt(std::make_shared<DeclBufferNode>(std::move(buffer), std::move(data), std::move(body)));
}

PrimFunc::PrimFunc(std::vector<PrimFuncParam> params, Stmt body, std::map<std::string, std::string> attrs)
    : node_(std::make_shared<PrimFuncNode>(std::move(params), std::move(body), std::move(attrs))) {
  for (const PrimFuncParam& p : node_->params) {
    KILN_CHECK(p.buffer.defined() != p.var.defined()) << "a PrimFunc parameter is a buffer or a var";
  }
  KILN_CHECK(node_->body.defined());
}

}  // namespace kiln::tir
