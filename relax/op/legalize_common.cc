#include "relax/op/legalize_common.h"

#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "relax/block_builder.h"
#include "relax/op/op_common.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "tir/structural_equal.h"

namespace kiln::relax::op {

Expr CallTir(Expr callee, std::vector<Expr> operands, StructInfo out, std::vector<PrimExpr> tir_vars) {
  std::vector<StructInfo> field_sinfos;
  for (const Expr& e : operands) field_sinfos.push_back(e.struct_info());
  Expr args = Tuple(std::move(operands), TupleSInfo(std::move(field_sinfos)));
  std::vector<Expr> call_args = {std::move(callee), std::move(args)};
  if (!tir_vars.empty()) call_args.push_back(ShapeExpr(std::move(tir_vars)));
  return Call(Op("call_tir"), std::move(call_args), {}, {out}, out);
}

absl::StatusOr<Expr> CallKernel(LegalizeContext& context, const CallNode& call, tir::PrimFunc func) {
  // Operands, flattened the way the legalizations number their buffers.
  std::vector<Expr> operands;
  for (const Expr& arg : call.args) {
    const StructInfo& sinfo = arg.struct_info();
    if (!sinfo.defined()) continue;
    if (sinfo.kind() == StructInfoKind::kTensor) {
      operands.push_back(arg);
    } else if (const auto* tuple_sinfo = sinfo.as<TupleStructInfoNode>()) {
      if (const auto* tuple = arg.as<TupleNode>()) {
        for (const Expr& field : tuple->fields) operands.push_back(field);
        continue;
      }
      for (size_t i = 0; i < tuple_sinfo->fields.size(); ++i) {
        KILN_ASSIGN_OR_RETURN(Var field, context.builder().Emit(TupleGetItem(arg, static_cast<int>(i)),
                                                                absl::StrCat(context.binding_name(), "_in", i)));
        operands.push_back(field);
      }
    }
  }
  // Scalar parameters are symbolic variables of this call's scope (the kernel could not
  // bind them from shapes): they travel as tir_vars. Read them before AddPrimFunc, which
  // may substitute an equal kernel with other variables.
  std::vector<PrimExpr> tir_vars;
  for (const tir::PrimFuncParam& param : func->params) {
    if (!param.is_buffer()) tir_vars.push_back(param.var);
  }
  const auto* op = call.op.as<OpNode>();
  Expr callee = context.AddPrimFunc(op != nullptr ? op->name : "kernel", std::move(func));
  return CallTir(std::move(callee), std::move(operands), call.struct_info(), std::move(tir_vars));
}

absl::StatusOr<const TensorStructInfoNode*> KnownTensor(const CallNode& call, const StructInfo& sinfo,
                                                        const std::string& what) {
  const auto* tensor = sinfo.defined() ? sinfo.as<TensorStructInfoNode>() : nullptr;
  if (tensor == nullptr) {
    return OpError(call, "cannot legalize: ", what, " is not a tensor (",
                   sinfo.defined() ? ToString(sinfo) : "no struct info", ")");
  }
  if (!tensor->shape.has_value()) {
    return OpError(call, "cannot legalize: ", what, " has an unknown shape (", ToString(sinfo), ")");
  }
  if (!tensor->dtype.has_value()) {
    return OpError(call, "cannot legalize: ", what, " has an unknown dtype (", ToString(sinfo), ")");
  }
  for (const PrimExpr& dim : *tensor->shape) {
    if (dim.dtype() != DataType::Int64()) {
      return OpError(call, "cannot legalize: ", what, " has a non-int64 dim ", DimStr(dim));
    }
  }
  return tensor;
}

absl::StatusOr<std::vector<const TensorStructInfoNode*>> TensorOperands(const CallNode& call) {
  std::vector<const TensorStructInfoNode*> result;
  for (size_t i = 0; i < call.args.size(); ++i) {
    const StructInfo& sinfo = call.args[i].struct_info();
    if (!sinfo.defined()) continue;
    if (sinfo.kind() == StructInfoKind::kTensor) {
      KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* t,
                            KnownTensor(call, sinfo, absl::StrCat("argument ", i)));
      result.push_back(t);
    } else if (const auto* tuple = sinfo.as<TupleStructInfoNode>()) {
      for (size_t f = 0; f < tuple->fields.size(); ++f) {
        KILN_ASSIGN_OR_RETURN(
            const TensorStructInfoNode* t,
            KnownTensor(call, tuple->fields[f], absl::StrCat("argument ", i, " field ", f)));
        result.push_back(t);
      }
    }
  }
  return result;
}

absl::StatusOr<std::vector<const TensorStructInfoNode*>> CallOutputs(const CallNode& call) {
  std::vector<const TensorStructInfoNode*> result;
  const StructInfo& sinfo = call.struct_info();
  if (const auto* tuple = sinfo.defined() ? sinfo.as<TupleStructInfoNode>() : nullptr) {
    for (size_t f = 0; f < tuple->fields.size(); ++f) {
      KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* t,
                            KnownTensor(call, tuple->fields[f], absl::StrCat("result field ", f)));
      result.push_back(t);
    }
    return result;
  }
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* t, KnownTensor(call, sinfo, "the result"));
  result.push_back(t);
  return result;
}

namespace {

// Ops that only move elements, or convert them (astype): the ones a bfloat16 tensor may
// go through on the CPU, whose code generator holds bfloat16 as bits and computes in
// float32 only (a GGUF's BF16 weights are taken, transposed and converted to float32).
bool MovesOrConverts(const std::string& op) {
  static const auto* const kOps = new std::set<std::string>{
      "astype",  "take",        "reshape",       "permute_dims", "concat",        "split",
      "squeeze", "expand_dims", "broadcast_to",  "flip",         "strided_slice", "dynamic_strided_slice",
      "tile",    "gather_elements", "gather_nd"};
  return kOps->count(op) > 0;
}

}  // namespace

absl::Status CheckDType(const CallNode& call, DataType dtype) {
  if (dtype.is_scalar() && dtype.is_bfloat() && dtype.bits() == 16) {
    if (MovesOrConverts(std::string(OpName(call)))) return absl::OkStatus();
    return absl::UnimplementedError(absl::StrCat(OpName(call),
                                                 ": no CPU lowering for dtype bfloat16 (bfloat16 tensors are only moved "
                                                 "and converted; astype them to float32 first)"));
  }
  const bool ok = dtype.is_scalar() &&
                  ((dtype.is_float() && (dtype.bits() == 16 || dtype.bits() == 32 || dtype.bits() == 64)) ||
                   (dtype.is_integer() && (dtype.bits() == 8 || dtype.bits() == 16 || dtype.bits() == 32 ||
                                           dtype.bits() == 64)) ||
                   dtype.is_bool());
  if (!ok) {
    return absl::UnimplementedError(
        absl::StrCat(OpName(call), ": no CPU lowering for dtype ", dtype.ToString()));
  }
  return absl::OkStatus();
}

namespace {

void CollectVars(const PrimExpr& e, std::vector<const tir::VarNode*>& out) {
  if (!e.defined()) return;
  if (const auto* v = e.as<tir::VarNode>()) {
    out.push_back(v);
  } else if (const auto* b = e.as<tir::BinaryNode>()) {
    CollectVars(b->a, out);
    CollectVars(b->b, out);
  } else if (const auto* n = e.as<tir::NotNode>()) {
    CollectVars(n->a, out);
  } else if (const auto* s = e.as<tir::SelectNode>()) {
    CollectVars(s->condition, out);
    CollectVars(s->true_value, out);
    CollectVars(s->false_value, out);
  } else if (const auto* c = e.as<tir::CastNode>()) {
    CollectVars(c->value, out);
  } else if (const auto* call = e.as<tir::CallNode>()) {
    for (const PrimExpr& a : call->args) CollectVars(a, out);
  } else if (e.kind() != tir::ExprKind::kIntImm && e.kind() != tir::ExprKind::kFloatImm) {
    out.push_back(nullptr);  // something unusual: treat as unbindable
  }
}

std::string BufferName(size_t i) {
  if (i < 26) return std::string(1, static_cast<char>('A' + i));
  return absl::StrCat("A", i);
}

}  // namespace

absl::StatusOr<KernelParams> MakeParams(const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(std::vector<const TensorStructInfoNode*> inputs, TensorOperands(call));
  KILN_ASSIGN_OR_RETURN(std::vector<const TensorStructInfoNode*> outputs, CallOutputs(call));
  std::set<const tir::VarNode*> bound;
  for (const auto* list : {&inputs, &outputs}) {
    for (const TensorStructInfoNode* t : *list) {
      KILN_RETURN_IF_ERROR(CheckDType(call, *t->dtype));
      for (const PrimExpr& dim : *t->shape) {
        if (const auto* v = dim.as<tir::VarNode>()) bound.insert(v);
      }
    }
  }
  std::vector<std::pair<PrimExpr, tir::Var>> fresh;
  auto dim_of = [&](const PrimExpr& dim) -> PrimExpr {
    if (dim.kind() == tir::ExprKind::kIntImm || dim.kind() == tir::ExprKind::kVar) return dim;
    std::vector<const tir::VarNode*> vars;
    CollectVars(dim, vars);
    bool all_bound = true;
    for (const tir::VarNode* v : vars) all_bound = all_bound && v != nullptr && bound.count(v) > 0;
    if (all_bound) return dim;
    for (const auto& [expr, var] : fresh) {
      if (tir::StructuralEqual(expr, dim)) return var;
    }
    tir::Var var = tir::Var::Shape(absl::StrCat("d", fresh.size()));
    fresh.emplace_back(dim, var);
    return var;
  };
  KernelParams params;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<PrimExpr> shape;
    for (const PrimExpr& dim : *inputs[i]->shape) shape.push_back(dim_of(dim));
    params.inputs.emplace_back(BufferName(i), *inputs[i]->dtype, std::move(shape));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::vector<PrimExpr> shape;
    for (const PrimExpr& dim : *outputs[i]->shape) shape.push_back(dim_of(dim));
    params.outputs.emplace_back(i == 0 ? std::string("out") : absl::StrCat("out", i), *outputs[i]->dtype,
                                std::move(shape));
  }
  return params;
}

namespace {
void CollectVarRefs(const PrimExpr& e, std::vector<tir::Var>& out) {
  if (!e.defined()) return;
  if (e.as<tir::VarNode>() != nullptr) {
    out.emplace_back(std::static_pointer_cast<const tir::VarNode>(e.node()));
  } else if (const auto* b = e.as<tir::BinaryNode>()) {
    CollectVarRefs(b->a, out);
    CollectVarRefs(b->b, out);
  } else if (const auto* n = e.as<tir::NotNode>()) {
    CollectVarRefs(n->a, out);
  } else if (const auto* s = e.as<tir::SelectNode>()) {
    CollectVarRefs(s->condition, out);
    CollectVarRefs(s->true_value, out);
    CollectVarRefs(s->false_value, out);
  } else if (const auto* c = e.as<tir::CastNode>()) {
    CollectVarRefs(c->value, out);
  } else if (const auto* call = e.as<tir::CallNode>()) {
    for (const PrimExpr& a : call->args) CollectVarRefs(a, out);
  }
}
}  // namespace

PrimExpr UseSymbolic(KernelParams& params, const PrimExpr& value) {
  std::vector<tir::Var> vars;
  CollectVarRefs(value, vars);
  for (const tir::Var& v : vars) {
    bool bound = false;
    for (const auto* list : {&params.inputs, &params.outputs}) {
      for (const Buffer& b : *list) {
        for (const PrimExpr& dim : b->shape) bound = bound || dim.same_as(v);
      }
    }
    for (const tir::Var& s : params.scalars) bound = bound || s.same_as(v);
    if (!bound) params.scalars.push_back(v);
  }
  return value;
}

tir::PrimFunc MakePrimFunc(const KernelParams& params, Stmt body, const std::string& op_pattern) {
  std::vector<tir::PrimFuncParam> list;
  for (const Buffer& b : params.inputs) list.push_back({b, tir::Var()});
  for (const Buffer& b : params.outputs) list.push_back({b, tir::Var()});
  for (const tir::Var& v : params.scalars) list.push_back({Buffer(), v});
  return tir::PrimFunc(std::move(list), std::move(body), {{"op_pattern", op_pattern}});
}

std::vector<PrimExpr> BroadcastIndex(const Buffer& in, const std::vector<PrimExpr>& out_index) {
  const size_t nd = in->shape.size();
  KILN_CHECK(nd <= out_index.size()) << "broadcast of a higher-rank input";
  const size_t offset = out_index.size() - nd;
  std::vector<PrimExpr> index;
  for (size_t i = 0; i < nd; ++i) {
    const std::optional<int64_t> dim = in->shape[i].as_int();
    index.push_back(dim.has_value() && *dim == 1 ? PrimExpr(int64_t{0}) : out_index[offset + i]);
  }
  return index;
}

Stmt BlockNest(const std::string& name, const std::vector<PrimExpr>& spatial_extents,
               const std::vector<PrimExpr>& reduce_extents, const BlockBodyFn& body) {
  std::vector<tir::IterVar> iter_vars;
  std::vector<tir::Var> loops;
  std::vector<PrimExpr> spatial;
  std::vector<PrimExpr> reduce;
  const size_t total = spatial_extents.size() + reduce_extents.size();
  for (size_t i = 0; i < total; ++i) {
    const bool is_reduce = i >= spatial_extents.size();
    const PrimExpr& extent = is_reduce ? reduce_extents[i - spatial_extents.size()] : spatial_extents[i];
    tir::Var loop(absl::StrCat(is_reduce ? "k" : "i", is_reduce ? i - spatial_extents.size() : i));
    tir::Var iv(absl::StrCat(is_reduce ? "vk" : "v", is_reduce ? i - spatial_extents.size() : i));
    loops.push_back(loop);
    iter_vars.push_back({iv, extent, is_reduce ? tir::IterType::kReduction : tir::IterType::kSpatial, loop});
    (is_reduce ? reduce : spatial).push_back(iv);
  }
  BlockParts parts = body(spatial, reduce);
  Stmt stmt = tir::Block(name, std::move(iter_vars), parts.body, parts.init);
  for (size_t i = total; i-- > 0;) {
    const bool is_reduce = i >= spatial_extents.size();
    const PrimExpr& extent = is_reduce ? reduce_extents[i - spatial_extents.size()] : spatial_extents[i];
    stmt = tir::For(loops[i], PrimExpr(int64_t{0}), extent, tir::ForKind::kSerial, stmt);
  }
  return stmt;
}

Stmt ComputeBlock(const std::string& name, const Buffer& out,
                  const std::function<PrimExpr(const std::vector<PrimExpr>&)>& value) {
  return BlockNest(name, out->shape, {}, [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>&) {
    return BlockParts{tir::BufferStore(out, value(s), s), Stmt()};
  });
}

Stmt ReduceBlock(const std::string& name, const Buffer& out, const std::vector<PrimExpr>& reduce_extents,
                 PrimExpr init, const std::function<PrimExpr(PrimExpr, PrimExpr)>& combine,
                 const std::function<PrimExpr(const std::vector<PrimExpr>&, const std::vector<PrimExpr>&)>& value) {
  Stmt reduce = BlockNest(name, out->shape, reduce_extents,
                          [&](const std::vector<PrimExpr>& s, const std::vector<PrimExpr>& r) {
                            if (reduce_extents.empty()) {
                              // Nothing to reduce: the block is spatial and has no init.
                              return BlockParts{tir::BufferStore(out, combine(init, value(s, r)), s), Stmt()};
                            }
                            return BlockParts{tir::BufferStore(out, combine(out.Load(s), value(s, r)), s),
                                              tir::BufferStore(out, init, s)};
                          });
  // A block's init runs on its first reduction step, so over an empty reduction (a symbolic
  // extent that is 0 at run time: sum over n = 0 elements, matmul with K = 0) it never runs;
  // the result is then the init value, written by a guarded spatial block.
  PrimExpr empty;
  for (const PrimExpr& extent : reduce_extents) {
    const std::optional<int64_t> c = extent.as_int();
    if (c.has_value() && *c > 0) continue;
    PrimExpr is_zero = tir::EQ(extent, PrimExpr(int64_t{0}));
    empty = empty.defined() ? tir::Or(empty, is_zero) : is_zero;
  }
  if (!empty.defined()) return reduce;
  Stmt fill = ComputeBlock(absl::StrCat(name, "_empty"), out, [&](const std::vector<PrimExpr>&) { return init; });
  if (out->shape.empty()) {
    // A scalar result: the fill gets a loop of one iteration, so that a GPU schedule has a
    // loop to bind (a block outside every loop would run on the host).
    fill = BlockNest(absl::StrCat(name, "_empty"), {PrimExpr(int64_t{1})}, {},
                     [&](const std::vector<PrimExpr>&, const std::vector<PrimExpr>&) {
                       return BlockParts{tir::BufferStore(out, init, {}), Stmt()};
                     });
  }
  return tir::SeqStmt({tir::IfThenElse(empty, fill), reduce});
}

PrimExpr Const(DataType dtype, double value) {
  if (dtype.is_floating()) return tir::FloatImm(dtype, value);
  if (dtype.is_bool()) return tir::IntImm(dtype, value != 0 ? 1 : 0);
  return tir::IntImm(dtype, static_cast<int64_t>(value));
}

PrimExpr LowestValue(DataType dtype) {
  if (dtype.is_floating()) return tir::FloatImm(dtype, -std::numeric_limits<double>::infinity());
  if (dtype.is_bool() || dtype.is_uint()) return tir::IntImm(dtype, 0);
  if (dtype.bits() == 64) return tir::IntImm(dtype, std::numeric_limits<int64_t>::min());
  return tir::IntImm(dtype, -(int64_t{1} << (dtype.bits() - 1)));
}

PrimExpr HighestValue(DataType dtype) {
  if (dtype.is_floating()) return tir::FloatImm(dtype, std::numeric_limits<double>::infinity());
  if (dtype.is_bool()) return tir::IntImm(dtype, 1);
  if (dtype.is_uint() && dtype.bits() == 64) return tir::IntImm(dtype, -1);  // all ones
  if (dtype.is_uint()) return tir::IntImm(dtype, (int64_t{1} << dtype.bits()) - 1);
  if (dtype.bits() == 64) return tir::IntImm(dtype, std::numeric_limits<int64_t>::max());
  return tir::IntImm(dtype, (int64_t{1} << (dtype.bits() - 1)) - 1);
}

Buffer ScratchBuffer(const std::string& name, DataType dtype, std::vector<PrimExpr> shape) {
  return Buffer(name, dtype, std::move(shape));
}

DataType AccumulationType(DataType dtype) {
  return dtype.is_float() && dtype.bits() == 16 ? DataType::Float(32) : dtype;
}

PrimExpr CastTo(DataType dtype, PrimExpr e) { return e.dtype() == dtype ? e : tir::Cast(dtype, std::move(e)); }

}  // namespace kiln::relax::op
