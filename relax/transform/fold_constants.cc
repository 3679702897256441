#include "relax/transform/fold_constants.h"

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "relax/expr_functor.h"
#include "relax/op_registry.h"
#include "support/status_macros.h"
#include "tir/interpreter.h"

namespace kiln::relax {
namespace {

// The dims of a tensor struct info when all are integer literals.
std::optional<std::vector<int64_t>> StaticShape(const TensorStructInfoNode& t) {
  if (!t.shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const PrimExpr& d : *t.shape) {
    std::optional<int64_t> v = d.as_int();
    if (!v || *v < 0) return std::nullopt;
    dims.push_back(*v);
  }
  return dims;
}

class Folder : public ExprMutator {
 public:
  explicit Folder(const FoldConstantsOptions& options) : options_(options) {}

  absl::Status status() const { return status_; }
  void set_function(std::string name) { function_ = std::move(name); }

  BindingBlock VisitBindingBlock(const BindingBlock& block) override {
    BindingBlock out;
    out.dataflow = block.dataflow;
    out.bindings.reserve(block.bindings.size());
    for (const Binding& binding : block.bindings) {
      Binding visited = VisitBinding(binding);
      if (status_.ok() && !visited.is_match_cast()) {
        absl::StatusOr<Expr> folded = Fold(visited.value);
        if (!folded.ok()) {
          status_ = absl::Status(folded.status().code(),
                                 absl::StrCat("function '", function_, "', binding '", visited.var.name_hint(),
                                              "': ", folded.status().message()));
        } else {
          visited.value = *folded;
          if (Expr known = Known(visited.value); known.defined()) known_[visited.var.get()] = known;
        }
      }
      out.bindings.push_back(std::move(visited));
    }
    return out;
  }

 private:
  // The constant value of `expr`: a Constant node, or a Tuple (built here, not part of the
  // IR) whose fields are known values; undefined when it is not a known constant.
  Expr Known(const Expr& expr) const {
    switch (expr.kind()) {
      case ExprKind::kConstant: return expr;
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: {
        auto it = known_.find(expr.as<VarNode>());
        return it == known_.end() ? Expr() : it->second;
      }
      case ExprKind::kTuple: {
        std::vector<Expr> fields;
        for (const Expr& field : expr.as<TupleNode>()->fields) {
          Expr known = Known(field);
          if (!known.defined()) return Expr();
          fields.push_back(std::move(known));
        }
        if (AllSame(fields, expr.as<TupleNode>()->fields)) return expr;  // fields are Constants already
        std::vector<StructInfo> sinfos;
        for (const Expr& f : fields) sinfos.push_back(f.struct_info());
        return Tuple(std::move(fields), TupleSInfo(std::move(sinfos)));
      }
      case ExprKind::kTupleGetItem: {
        const auto* item = expr.as<TupleGetItemNode>();
        Expr tuple = Known(item->tuple);
        const auto* fields = tuple.defined() ? tuple.as<TupleNode>() : nullptr;
        if (fields == nullptr || item->index < 0 || item->index >= static_cast<int>(fields->fields.size())) {
          return Expr();
        }
        return fields->fields[item->index];
      }
      default: return Expr();
    }
  }

  static bool AllSame(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].same_as(b[i])) return false;
    }
    return true;
  }

  // The folded replacement of a binding's value, or the value itself.
  absl::StatusOr<Expr> Fold(const Expr& value) {
    if (value.kind() == ExprKind::kTupleGetItem) {
      // Only a Constant replaces it: a field that is itself a tuple stays an item of the
      // tuple variable (it is still known, through Known, to what uses it).
      Expr known = Known(value);
      return known.defined() && known.kind() == ExprKind::kConstant ? known : value;
    }
    if (const auto* call = value.as<CallNode>()) return FoldCall(value, *call);
    return value;
  }

  absl::StatusOr<Expr> FoldCall(const Expr& value, const CallNode& call) {
    const auto* op = call.op.as<OpNode>();
    if (op == nullptr) return value;
    const OpInfo* info = OpRegistry::Global().Find(op->name);
    if (info == nullptr || !info->pure || !info->legalize_kernel || !call.struct_info().defined()) return value;

    // The outputs: static, modest in size.
    std::vector<const TensorStructInfoNode*> outputs;
    const bool tuple_result = call.struct_info().kind() == StructInfoKind::kTuple;
    if (tuple_result) {
      for (const StructInfo& field : call.struct_info().as<TupleStructInfoNode>()->fields) {
        const auto* t = field.defined() ? field.as<TensorStructInfoNode>() : nullptr;
        if (t == nullptr) return value;
        outputs.push_back(t);
      }
    } else if (const auto* t = call.struct_info().as<TensorStructInfoNode>()) {
      outputs.push_back(t);
    } else {
      return value;
    }
    std::vector<std::vector<int64_t>> output_shapes;
    int64_t total = 0;
    for (const TensorStructInfoNode* t : outputs) {
      std::optional<std::vector<int64_t>> shape = StaticShape(*t);
      if (!shape || !t->dtype || !t->device.empty()) return value;
      int64_t n = 1;
      for (int64_t d : *shape) {
        if (d != 0 && n > options_.max_elements / d) return value;
        n *= d;
      }
      total += n;
      if (total > options_.max_elements) return value;
      output_shapes.push_back(*std::move(shape));
    }

    // The tensor operands, flattened as legalizations number their buffers.
    std::vector<const ConstantNode*> inputs;
    for (const Expr& arg : call.args) {
      const StructInfo& sinfo = arg.struct_info();
      if (!sinfo.defined()) return value;
      if (sinfo.kind() == StructInfoKind::kTensor) {
        Expr known = Known(arg);
        if (!known.defined() || known.kind() != ExprKind::kConstant) return value;
        if (known.as<ConstantNode>()->data.is_external()) return value;  // bytes known only at load
        inputs.push_back(known.as<ConstantNode>());
      } else if (sinfo.kind() == StructInfoKind::kTuple) {
        Expr known = Known(arg);
        if (!known.defined() || known.kind() != ExprKind::kTuple) return value;
        for (const Expr& field : known.as<TupleNode>()->fields) {
          if (field.kind() != ExprKind::kConstant || field.as<ConstantNode>()->data.is_external()) return value;
          inputs.push_back(field.as<ConstantNode>());
        }
      }
    }

    // A creation op (zeros, full, arange: no tensor operand) computes its value from almost
    // nothing at run time; only a small result is worth carrying in the executable.
    if (inputs.empty() && total > options_.max_created_elements) return value;

    // The same lowering the legalize pass uses. A call it cannot lower is not folded here;
    // the legalize pass reports it, in its own words, later.
    absl::StatusOr<tir::PrimFunc> lowered = info->legalize_kernel(call);
    if (!lowered.ok()) return value;
    const tir::PrimFunc& func = *lowered;
    if (func->params.size() != inputs.size() + outputs.size()) return value;
    for (const tir::PrimFuncParam& param : func->params) {
      if (!param.is_buffer()) return value;  // needs a symbolic value known only at run time
    }

    std::vector<tir::HostBuffer> buffers;
    buffers.reserve(func->params.size());
    for (const ConstantNode* input : inputs) {
      buffers.push_back(tir::HostBuffer::ReadOnly(input->data.dtype, input->data.shape, input->data.bytes->data()));
    }
    std::vector<std::shared_ptr<std::vector<uint8_t>>> storage;
    for (size_t i = 0; i < outputs.size(); ++i) {
      int64_t n = 1;
      for (int64_t d : output_shapes[i]) n *= d;
      storage.push_back(std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n * outputs[i]->dtype->bytes())));
      buffers.push_back(tir::HostBuffer::Writable(*outputs[i]->dtype, output_shapes[i], storage.back()->data()));
    }
    std::vector<tir::InterpreterArg> args;
    for (tir::HostBuffer& b : buffers) args.push_back(&b);
    tir::InterpreterOptions run_options;
    run_options.max_steps = options_.max_steps;
    absl::Status run = tir::RunPrimFunc(func, args, run_options);
    // Beyond the interpreter or its budget, or undefined (an integer division by zero): left
    // to run time, which reports the undefined case if the binding is ever reached (it may
    // sit in a branch that never runs, so it is no reason to refuse the program).
    if (!run.ok()) return value;

    std::vector<Expr> constants;
    for (size_t i = 0; i < outputs.size(); ++i) {
      constants.push_back(Constant(ConstantData{*outputs[i]->dtype, output_shapes[i], storage[i], ""}));
    }
    if (!tuple_result) return constants[0];
    std::vector<StructInfo> sinfos;
    for (const Expr& c : constants) sinfos.push_back(c.struct_info());
    return Tuple(std::move(constants), TupleSInfo(std::move(sinfos)));
  }

  const FoldConstantsOptions& options_;
  std::string function_;
  absl::Status status_;
  // Variables bound to constants (or tuples of them), with their value.
  std::unordered_map<const VarNode*, Expr> known_;
};

}  // namespace

absl::StatusOr<IRModule> FoldConstants(const IRModule& module, const FoldConstantsOptions& options) {
  IRModule result = module;
  bool changed = false;
  Folder folder(options);
  for (const IRModule::Entry& entry : module.entries()) {
    if (!entry.is_relax()) continue;
    folder.set_function(entry.name);
    const Expr& func = std::get<Expr>(entry.func);
    Expr folded = folder.VisitExpr(func);
    KILN_RETURN_IF_ERROR(folder.status());
    if (!folded.same_as(func)) {
      result.Update(entry.name, folded);
      changed = true;
    }
  }
  return changed ? result : module;
}

}  // namespace kiln::relax
