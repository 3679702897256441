// TIR statements and PrimFunc: the loop-level IR in the TensorIR style.
//
// Semantics:
//  - Nodes are immutable and shared, like PrimExpr. A loop variable, block iteration
//    variable or let variable is defined by exactly one statement and visible only inside
//    its body.
//  - Statements run in order; SeqStmt runs its children in order. There is no `break` or
//    early return: control flow is loops and IfThenElse only.
//  - For runs `body` for loop_var = min, min + 1, ..., min + extent - 1. The kind says how
//    it may run: serial, parallel (iterations independent, any order, any thread),
//    vectorized (lowered to SIMD lanes), unrolled, or thread-bound (a GPU thread index named
//    by thread_tag, e.g. "threadIdx.x"; the loop is the launch dimension).
//  - A Block is the unit that schedules reason about. Its iteration variables range over
//    [0, extent) and are bound, at each execution, to `value` (an expression of the
//    enclosing loop variables). Spatial variables index independent output elements; a
//    reduction variable makes the block a reduction, whose `init` runs the first time each
//    output element is visited (when all reduction variables are 0) before `body`. When
//    `predicate` is defined and false the block does nothing (used after split with a
//    non-dividing factor). `alloc_buffers` live for the block's execution.
//  - Allocate makes a buffer (of its scope) that lives for `body`.
//  - Buffers are written by BufferStore and read by BufferLoad; an index out of the buffer's
//    shape is undefined behaviour, so lowering must prove or guard it.
//  - A PrimFunc's parameters are buffers (tensor arguments, in destination-passing style:
//    inputs first, then the outputs it writes) or scalar Vars. The symbolic variables in the
//    parameter buffers' shapes are defined by the shapes of the tensors passed in.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tir/buffer.h"
#include "tir/expr.h"

namespace kiln::tir {

enum class StmtKind : uint8_t {
  kBufferStore,
  kFor,
  kBlock,
  kIfThenElse,
  kSeqStmt,
  kAllocate,
  kLetStmt,
  kEvaluate,
  kAssert,
  kDeclBuffer,
};

class StmtNode {
 public:
  virtual ~StmtNode() = default;
  StmtKind kind() const { return kind_; }

 protected:
  explicit StmtNode(StmtKind kind) : kind_(kind) {}

 private:
  StmtKind kind_;
};

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const StmtNode* get() const { return node_.get(); }
  const StmtNode* operator->() const { return node_.get(); }
  StmtKind kind() const { return node_->kind(); }
  bool same_as(const Stmt& other) const { return node_ == other.node_; }
  const std::shared_ptr<const StmtNode>& node() const { return node_; }
  template <typename T>
  const T* as() const {
    return dynamic_cast<const T*>(node_.get());
  }

 private:
  std::shared_ptr<const StmtNode> node_;
};

// `buffer[indices] = value`. A vector index (Ramp) stores a vector.
class BufferStoreNode : public StmtNode {
 public:
  BufferStoreNode(Buffer buffer, PrimExpr value, std::vector<PrimExpr> indices)
      : StmtNode(StmtKind::kBufferStore),
        buffer(std::move(buffer)),
        value(std::move(value)),
        indices(std::move(indices)) {}
  const Buffer buffer;
  const PrimExpr value;
  const std::vector<PrimExpr> indices;
};

enum class ForKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled, kThreadBinding };
// "serial", "parallel", "vectorized", "unroll", "thread_binding" (the text format's names).
const char* ForKindName(ForKind kind);

class ForNode : public StmtNode {
 public:
  ForNode(Var loop_var, PrimExpr min, PrimExpr extent, ForKind for_kind, std::string thread_tag,
          Stmt body)
      : StmtNode(StmtKind::kFor),
        loop_var(std::move(loop_var)),
        min(std::move(min)),
        extent(std::move(extent)),
        for_kind(for_kind),
        thread_tag(std::move(thread_tag)),
        body(std::move(body)) {}
  const Var loop_var;
  const PrimExpr min;
  const PrimExpr extent;
  const ForKind for_kind;
  const std::string thread_tag;  // only for kThreadBinding: "blockIdx.x", "threadIdx.y", ...
  const Stmt body;
};

enum class IterType : uint8_t { kSpatial, kReduction };

// A block iteration variable: ranges over [0, extent), bound to `value` when the block runs.
struct IterVar {
  Var var;
  PrimExpr extent;
  IterType type = IterType::kSpatial;
  PrimExpr value;
};

class BlockNode : public StmtNode {
 public:
  BlockNode(std::string name, std::vector<IterVar> iter_vars, PrimExpr predicate,
            std::vector<Buffer> alloc_buffers, Stmt init, Stmt body)
      : StmtNode(StmtKind::kBlock),
        name(std::move(name)),
        iter_vars(std::move(iter_vars)),
        predicate(std::move(predicate)),
        alloc_buffers(std::move(alloc_buffers)),
        init(std::move(init)),
        body(std::move(body)) {}
  const std::string name;
  const std::vector<IterVar> iter_vars;
  const PrimExpr predicate;                 // undefined: always true
  const std::vector<Buffer> alloc_buffers;  // live for the block's execution
  const Stmt init;                          // undefined unless the block reduces
  const Stmt body;
  bool is_reduction() const;
};

class IfThenElseNode : public StmtNode {
 public:
  IfThenElseNode(PrimExpr condition, Stmt then_case, Stmt else_case)
      : StmtNode(StmtKind::kIfThenElse),
        condition(std::move(condition)),
        then_case(std::move(then_case)),
        else_case(std::move(else_case)) {}
  const PrimExpr condition;
  const Stmt then_case;
  const Stmt else_case;  // may be undefined
};

class SeqStmtNode : public StmtNode {
 public:
  explicit SeqStmtNode(std::vector<Stmt> seq) : StmtNode(StmtKind::kSeqStmt), seq(std::move(seq)) {}
  const std::vector<Stmt> seq;
};

class AllocateNode : public StmtNode {
 public:
  AllocateNode(Buffer buffer, Stmt body)
      : StmtNode(StmtKind::kAllocate), buffer(std::move(buffer)), body(std::move(body)) {}
  const Buffer buffer;
  const Stmt body;
};

class LetStmtNode : public StmtNode {
 public:
  LetStmtNode(Var var, PrimExpr value, Stmt body)
      : StmtNode(StmtKind::kLetStmt), var(std::move(var)), value(std::move(value)), body(std::move(body)) {}
  const Var var;
  const PrimExpr value;
  const Stmt body;
};

class EvaluateNode : public StmtNode {
 public:
  explicit EvaluateNode(PrimExpr value) : StmtNode(StmtKind::kEvaluate), value(std::move(value)) {}
  const PrimExpr value;
};

// `assert condition, "message {}", values...`: when `condition` is false the kernel stops
// and reports `message`, each `{}` replaced by the next int64 value in decimal ("{{" and "}}"
// stand for braces). For what a user can get wrong at run time inside a kernel (an index
// out of range, a division by zero): the call fails with the message, it never reads out of
// bounds. The values are evaluated only when the check fails.
class AssertNode : public StmtNode {
 public:
  AssertNode(PrimExpr condition, std::string message, std::vector<PrimExpr> values)
      : StmtNode(StmtKind::kAssert),
        condition(std::move(condition)),
        message(std::move(message)),
        values(std::move(values)) {}
  const PrimExpr condition;  // scalar bool
  const std::string message;
  const std::vector<PrimExpr> values;  // scalar integers, one per `{}` of the message
};

// `decl_buffer A: Buffer(...) = data { body }`: inside `body`, buffer A names the memory that
// starts at the handle `data` (a pointer computed before, e.g. a tensor argument's data).
// Nothing is allocated or freed. Lowered TIR uses it for the kernel's tensor arguments once
// the kernel ABI is explicit (tir/transform/make_kernel_abi.h).
class DeclBufferNode : public StmtNode {
 public:
  DeclBufferNode(Buffer buffer, PrimExpr data, Stmt body)
      : StmtNode(StmtKind::kDeclBuffer), buffer(std::move(buffer)), data(std::move(data)), body(std::move(body)) {}
  const Buffer buffer;
  const PrimExpr data;  // a scalar handle
  const Stmt body;
};

// An assert's message with the i-th `{}` replaced by value(i) and "{{" / "}}" by a brace;
// every executor formats through it so they all say the same (the LLVM emitter turns the
// placeholders into printf conversions).
std::string ExpandAssertMessage(const std::string& message, const std::function<std::string(size_t)>& value);
// The message of a failed assert, the values in decimal.
std::string FormatAssertMessage(const std::string& message, const std::vector<int64_t>& values);
// `text` as literal text of an assert message: braces doubled.
std::string EscapeAssertText(const std::string& text);
// How many `{}` placeholders `message` holds, or -1 if a brace is unmatched.
int CountAssertPlaceholders(const std::string& message);

// --- Constructors. They check what a caller building IR by hand could get wrong
// (KILN_CHECK); the parser validates user text first and reports a Status. ---

Stmt BufferStore(Buffer buffer, PrimExpr value, std::vector<PrimExpr> indices);
Stmt For(Var loop_var, PrimExpr min, PrimExpr extent, ForKind kind, Stmt body,
         std::string thread_tag = "");
Stmt Block(std::string name, std::vector<IterVar> iter_vars, Stmt body, Stmt init = Stmt(),
           PrimExpr predicate = PrimExpr(), std::vector<Buffer> alloc_buffers = {});
Stmt IfThenElse(PrimExpr condition, Stmt then_case, Stmt else_case = Stmt());
// A single statement stays itself; nested SeqStmts are flattened.
Stmt SeqStmt(std::vector<Stmt> seq);
Stmt Allocate(Buffer buffer, Stmt body);
Stmt LetStmt(Var var, PrimExpr value, Stmt body);
Stmt Evaluate(PrimExpr value);
Stmt Assert(PrimExpr condition, std::string message, std::vector<PrimExpr> values = {});
Stmt DeclBuffer(Buffer buffer, PrimExpr data, Stmt body);

// One PrimFunc parameter: a buffer (tensor argument) or a scalar variable.
struct PrimFuncParam {
  Buffer buffer;  // defined for a tensor parameter
  Var var;        // defined for a scalar parameter
  bool is_buffer() const { return buffer.defined(); }
};

class PrimFuncNode {
 public:
  PrimFuncNode(std::vector<PrimFuncParam> params, Stmt body, std::map<std::string, std::string> attrs)
      : params(std::move(params)), body(std::move(body)), attrs(std::move(attrs)) {}
  const std::vector<PrimFuncParam> params;
  const Stmt body;
  // Free-form string attributes, e.g. "op_pattern" = "elementwise", "target" = "cpu".
  const std::map<std::string, std::string> attrs;
};

class PrimFunc {
 public:
  PrimFunc() = default;
  PrimFunc(std::vector<PrimFuncParam> params, Stmt body, std::map<std::string, std::string> attrs = {});
  explicit PrimFunc(std::shared_ptr<const PrimFuncNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const PrimFuncNode* get() const { return node_.get(); }
  const PrimFuncNode* operator->() const { return node_.get(); }
  const std::shared_ptr<const PrimFuncNode>& node() const { return node_; }
  bool same_as(const PrimFunc& other) const { return node_ == other.node_; }

 private:
  std::shared_ptr<const PrimFuncNode> node_;
};

}  // namespace kiln::tir
