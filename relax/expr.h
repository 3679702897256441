// Relax expressions: the graph-level IR, in A-normal form once normalized.
//
// Semantics:
//  - Nodes are immutable and shared. A Var's identity is its node: two Vars named "x" are
//    different variables. Vars are defined exactly once (SSA): as a function parameter or
//    by one binding.
//  - Every expression carries StructInfo. Nodes built by the parser or by hand may carry an
//    undefined StructInfo until the block builder normalizes them; a Var always carries one
//    (its annotation, or what was inferred at its binding).
//  - Bindings in a BindingBlock run in order. A dataflow block holds only pure bindings
//    (no side effects, no control flow), so passes may reorder or drop them; its
//    DataflowVars are invisible outside the block.
//  - A Call's callee is an Op (registered operator, see op_registry.h), a GlobalVar
//    (function of the module), an ExternFunc (runtime symbol), or a Var holding a closure.
//    Operator attributes (axis, keepdims, dtype, ...) are in Call::attrs; sinfo_args carry
//    struct info an op cannot infer (e.g. call_tir's output).
//  - MatchCast checks a value against a StructInfo at run time and defines the symbolic
//    variables that first appear in that StructInfo.
//  - If evaluates its condition (a bool Prim) and then exactly one branch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "relax/struct_info.h"
#include "tir/expr.h"

namespace kiln::relax {

enum class ExprKind : uint8_t {
  kVar,
  kDataflowVar,
  kConstant,
  kShapeExpr,
  kPrimValue,
  kStringImm,
  kTuple,
  kTupleGetItem,
  kCall,
  kIf,
  kSeqExpr,
  kFunction,
  kGlobalVar,
  kOp,
  kExternFunc,
};

// An operator attribute value. Attributes are compared structurally and printed as
// `name=value` in the text format.
// A list of numbers is std::vector<double> when any element is not an integer (resize's
// scales), else std::vector<int64_t>.
using AttrValue =
    std::variant<int64_t, double, bool, std::string, DataType, std::vector<int64_t>, std::vector<double>>;
using Attrs = std::map<std::string, AttrValue>;

class ExprNode {
 public:
  virtual ~ExprNode() = default;
  ExprKind kind() const { return kind_; }
  const StructInfo& struct_info() const { return struct_info_; }

 protected:
  ExprNode(ExprKind kind, StructInfo struct_info) : kind_(kind), struct_info_(std::move(struct_info)) {}

 private:
  ExprKind kind_;
  StructInfo struct_info_;
};

class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  ExprKind kind() const { return node_->kind(); }
  const StructInfo& struct_info() const { return node_->struct_info(); }
  bool same_as(const Expr& other) const { return node_ == other.node_; }
  const std::shared_ptr<const ExprNode>& node() const { return node_; }
  template <typename T>
  const T* as() const {
    return dynamic_cast<const T*>(node_.get());
  }

 private:
  std::shared_ptr<const ExprNode> node_;
};

// --- Leaves ---

class VarNode : public ExprNode {
 public:
  VarNode(std::string name_hint, StructInfo struct_info, bool dataflow)
      : ExprNode(dataflow ? ExprKind::kDataflowVar : ExprKind::kVar, std::move(struct_info)),
        name_hint(std::move(name_hint)) {}
  bool is_dataflow() const { return kind() == ExprKind::kDataflowVar; }
  const std::string name_hint;
};

// A reference known to hold a VarNode (a Var or a DataflowVar).
class Var : public Expr {
 public:
  Var() = default;
  Var(std::string name_hint, StructInfo struct_info, bool dataflow = false);
  explicit Var(std::shared_ptr<const VarNode> node) : Expr(std::move(node)) {}
  const VarNode* get() const { return static_cast<const VarNode*>(Expr::get()); }
  const VarNode* operator->() const { return get(); }
  const std::string& name_hint() const { return get()->name_hint; }
  bool is_dataflow() const { return get()->is_dataflow(); }
};

// Dense host data of a Constant. Kept independent of the runtime's Tensor so the compiler
// side does not depend on vm/. Row-major, little-endian, bytes.size() == numel * dtype bytes.
//
// An *external* constant (external_name non-empty) has no bytes: it names a weight that the
// executable declares and the loader resolves by name (vm/weight_provider.h), e.g. a tensor of
// a GGUF file. Its dtype and shape are the declaration the loader checks. Text:
// `R.const(uint8, [1536, 360], external="blk.0.ffn_up.weight")`. It is never folded.
struct ConstantData {
  DataType dtype;
  std::vector<int64_t> shape;
  std::shared_ptr<const std::vector<uint8_t>> bytes;  // null when external
  std::string external_name;
  int64_t numel() const;
  bool is_external() const { return !external_name.empty(); }
};

class ConstantNode : public ExprNode {
 public:
  ConstantNode(ConstantData data, StructInfo struct_info)
      : ExprNode(ExprKind::kConstant, std::move(struct_info)), data(std::move(data)) {}
  const ConstantData data;
};

class ShapeExprNode : public ExprNode {
 public:
  ShapeExprNode(std::vector<PrimExpr> values, StructInfo struct_info)
      : ExprNode(ExprKind::kShapeExpr, std::move(struct_info)), values(std::move(values)) {}
  const std::vector<PrimExpr> values;
};

class PrimValueNode : public ExprNode {
 public:
  PrimValueNode(PrimExpr value, StructInfo struct_info)
      : ExprNode(ExprKind::kPrimValue, std::move(struct_info)), value(std::move(value)) {}
  const PrimExpr value;
};

class StringImmNode : public ExprNode {
 public:
  StringImmNode(std::string value, StructInfo struct_info)
      : ExprNode(ExprKind::kStringImm, std::move(struct_info)), value(std::move(value)) {}
  const std::string value;
};

// A function of the enclosing IRModule, by name (Relax function or PrimFunc).
class GlobalVarNode : public ExprNode {
 public:
  GlobalVarNode(std::string name, StructInfo struct_info)
      : ExprNode(ExprKind::kGlobalVar, std::move(struct_info)), name(std::move(name)) {}
  const std::string name;
};

// A registered operator, by name ("add", "matmul", "call_tir", ...).
class OpNode : public ExprNode {
 public:
  explicit OpNode(std::string name) : ExprNode(ExprKind::kOp, StructInfo()), name(std::move(name)) {}
  const std::string name;
};

// A function provided by the runtime (builtin or library) under a global symbol.
class ExternFuncNode : public ExprNode {
 public:
  ExternFuncNode(std::string symbol, StructInfo struct_info)
      : ExprNode(ExprKind::kExternFunc, std::move(struct_info)), symbol(std::move(symbol)) {}
  const std::string symbol;
};

// --- Composite ---

class TupleNode : public ExprNode {
 public:
  TupleNode(std::vector<Expr> fields, StructInfo struct_info)
      : ExprNode(ExprKind::kTuple, std::move(struct_info)), fields(std::move(fields)) {}
  const std::vector<Expr> fields;
};

class TupleGetItemNode : public ExprNode {
 public:
  TupleGetItemNode(Expr tuple, int index, StructInfo struct_info)
      : ExprNode(ExprKind::kTupleGetItem, std::move(struct_info)), tuple(std::move(tuple)), index(index) {}
  const Expr tuple;
  const int index;
};

class CallNode : public ExprNode {
 public:
  CallNode(Expr op, std::vector<Expr> args, Attrs attrs, std::vector<StructInfo> sinfo_args,
           StructInfo struct_info)
      : ExprNode(ExprKind::kCall, std::move(struct_info)),
        op(std::move(op)),
        args(std::move(args)),
        attrs(std::move(attrs)),
        sinfo_args(std::move(sinfo_args)) {}
  const Expr op;
  const std::vector<Expr> args;
  const Attrs attrs;
  const std::vector<StructInfo> sinfo_args;
};

// `var = value` (match_cast_sinfo undefined) or `var = match_cast(value, match_cast_sinfo)`.
struct Binding {
  Var var;
  Expr value;
  StructInfo match_cast_sinfo;
  bool is_match_cast() const { return match_cast_sinfo.defined(); }
};

struct BindingBlock {
  std::vector<Binding> bindings;
  bool dataflow = false;
};

// Bindings run in order, then `body` is the value.
class SeqExprNode : public ExprNode {
 public:
  SeqExprNode(std::vector<BindingBlock> blocks, Expr body, StructInfo struct_info)
      : ExprNode(ExprKind::kSeqExpr, std::move(struct_info)), blocks(std::move(blocks)), body(std::move(body)) {}
  const std::vector<BindingBlock> blocks;
  const Expr body;
};

class IfNode : public ExprNode {
 public:
  IfNode(Expr condition, Expr true_branch, Expr false_branch, StructInfo struct_info)
      : ExprNode(ExprKind::kIf, std::move(struct_info)),
        condition(std::move(condition)),
        true_branch(std::move(true_branch)),
        false_branch(std::move(false_branch)) {}
  const Expr condition;
  const Expr true_branch;   // a SeqExpr
  const Expr false_branch;  // a SeqExpr
};

// A function. `attrs` holds e.g. "global_symbol". Its struct info is Func(params, ret, pure).
class FunctionNode : public ExprNode {
 public:
  FunctionNode(std::vector<Var> params, Expr body, StructInfo ret_struct_info, bool is_pure,
               Attrs attrs, StructInfo struct_info)
      : ExprNode(ExprKind::kFunction, std::move(struct_info)),
        params(std::move(params)),
        body(std::move(body)),
        ret_struct_info(std::move(ret_struct_info)),
        is_pure(is_pure),
        attrs(std::move(attrs)) {}
  const std::vector<Var> params;
  const Expr body;  // a SeqExpr
  const StructInfo ret_struct_info;
  const bool is_pure;
  const Attrs attrs;
};

// --- Constructors. `sinfo` may be left undefined for the block builder to infer. ---

Expr Constant(ConstantData data);  // struct info: Tensor(shape, dtype)
Expr ShapeExpr(std::vector<PrimExpr> values);
Expr PrimValue(PrimExpr value);
Expr StringImm(std::string value);
Expr GlobalVar(std::string name, StructInfo sinfo = StructInfo());
Expr Op(std::string name);
// Whether `e` is the registered operator `name` (false for an undefined expression).
bool IsOp(const Expr& e, std::string_view name);
Expr ExternFunc(std::string symbol, StructInfo sinfo = StructInfo());
Expr Tuple(std::vector<Expr> fields, StructInfo sinfo = StructInfo());
Expr TupleGetItem(Expr tuple, int index, StructInfo sinfo = StructInfo());
Expr Call(Expr op, std::vector<Expr> args, Attrs attrs = {},
          std::vector<StructInfo> sinfo_args = {}, StructInfo sinfo = StructInfo());
Expr SeqExpr(std::vector<BindingBlock> blocks, Expr body, StructInfo sinfo = StructInfo());
Expr If(Expr condition, Expr true_branch, Expr false_branch, StructInfo sinfo = StructInfo());
// Struct info: Func(param struct infos, ret_struct_info, is_pure).
Expr Function(std::vector<Var> params, Expr body, StructInfo ret_struct_info, bool is_pure,
              Attrs attrs = {});

// The same node with different struct info (nodes are immutable, so this copies the node
// shallowly; children are shared). For a Var this makes a NEW variable (identity is the
// node), so only use it on Vars while building the binding that defines them.
Expr WithStructInfo(const Expr& expr, StructInfo sinfo);

}  // namespace kiln::relax
