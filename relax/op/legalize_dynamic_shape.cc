// Legalization of dynamic_strided_slice (semantics in relax/op/dynamic_shape.cc): the
// minimal mechanism for a result whose shape is data-dependent. It lowers to
//     check_slice_strides(strides, axes=...)                       # no stride is 0 (host)
//     shape = call_tir(dynamic_strided_slice_shape, (data, begin, end, strides))  # (ndim,) int64
//     s = tensor_to_shape(shape)                                   # Shape(ndim = r)
//     s1 = match_cast(s, Shape([v0, ..., v{r-1}]))                 # fresh symbolic variables
//     out = call_tir(dynamic_strided_slice, (data, begin, end, strides), out_sinfo=Tensor((v0, ...)))
// so the VM computes the shape, binds the fresh variables when the match_cast runs, and
// allocates the output from them like any symbolic shape. Both kernels clamp begin/end the
// same way (ONNX Slice). Before them check_slice_strides stops the call when a stride is 0,
// on the host: no kernel reads begin/end/strides outside its device code, so
// the same legalization runs on GPUs (tensor_to_shape copies the shape to the host).
#include <string>

#include "relax/block_builder.h"
#include "relax/op/legalize_common.h"
#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {
namespace {

struct SliceBuffers {
  Buffer data, begin, end, strides;
  std::vector<int> axes;  // the data axis each entry of begin/end/strides slices
};

// A buffer for a tensor operand whose compound dims (n + 1) become fresh variables the
// kernel can bind from the buffer itself.
absl::StatusOr<Buffer> OperandBuffer(const CallNode& call, size_t i, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const TensorStructInfoNode* t, KnownTensor(call, call.args[i].struct_info(), name));
  std::vector<PrimExpr> shape;
  for (size_t d = 0; d < t->shape->size(); ++d) {
    const PrimExpr& dim = (*t->shape)[d];
    shape.push_back(dim.as_int() || dim.as<tir::VarNode>() ? dim : PrimExpr(tir::Var(absl::StrCat(name, "_d", d))));
  }
  return Buffer(name, *t->dtype, std::move(shape));
}

absl::StatusOr<SliceBuffers> Buffers(const CallNode& call) {
  SliceBuffers b;
  KILN_ASSIGN_OR_RETURN(b.data, OperandBuffer(call, 0, "data"));
  KILN_ASSIGN_OR_RETURN(b.begin, OperandBuffer(call, 1, "begin"));
  KILN_ASSIGN_OR_RETURN(b.end, OperandBuffer(call, 2, "end"));
  KILN_ASSIGN_OR_RETURN(b.strides, OperandBuffer(call, 3, "strides"));
  KILN_RETURN_IF_ERROR(CheckDType(call, b.data->dtype));
  const std::optional<int64_t> count = b.begin->shape[0].as_int();
  if (!count) return OpError(call, "cannot legalize: the length of begin must be a constant");
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, IntsAttr(call, "axes"));
  std::vector<int64_t> raw;
  for (int64_t i = 0; i < *count; ++i) raw.push_back(axes ? (*axes)[static_cast<size_t>(i)] : i);
  KILN_ASSIGN_OR_RETURN(b.axes, NormalizeAxes(call, raw, b.data.ndim()));
  return b;
}

// Entry i's clamped start and its stride (int64), read from the tensors.
struct Clamped {
  PrimExpr start, stop, stride;
};
Clamped ClampEntry(const SliceBuffers& b, int64_t i) {
  const PrimExpr d = b.data->shape[static_cast<size_t>(b.axes[static_cast<size_t>(i)])];
  auto load = [&](const Buffer& buf) { return CastTo(DataType::Int64(), buf.Load({Int(i)})); };
  const PrimExpr stride = load(b.strides);
  auto wrap = [&](const PrimExpr& v) { return tir::Select(tir::LT(v, Int(0)), tir::Add(v, d), v); };
  auto clamp = [](const PrimExpr& v, const PrimExpr& lo, const PrimExpr& hi) { return tir::Min(tir::Max(v, lo), hi); };
  const PrimExpr positive = tir::GT(stride, Int(0));
  const PrimExpr last = tir::Sub(d, Int(1));
  const PrimExpr begin = wrap(load(b.begin));
  const PrimExpr end = wrap(load(b.end));
  return {tir::Select(positive, clamp(begin, Int(0), d), clamp(begin, Int(0), last)),
          tir::Select(positive, clamp(end, Int(0), d), clamp(end, Int(-1), last)), stride};
}

absl::StatusOr<Expr> LegalizeDynamicStridedSlice(LegalizeContext& context, const CallNode& call) {
  KILN_ASSIGN_OR_RETURN(SliceBuffers b, Buffers(call));
  const size_t ndim = b.data->shape.size();
  const int64_t count = static_cast<int64_t>(b.axes.size());
  // 0. No stride is 0: checked on the host (check_slice_strides; on a GPU the strides live
  // in device memory, which a kernel's host part cannot read).
  std::vector<int64_t> axes(b.axes.begin(), b.axes.end());
  KILN_RETURN_IF_ERROR(context.builder()
                           .Emit(Call(Op("check_slice_strides"), {call.args[3]}, {{"axes", axes}}),
                                 context.binding_name() + "_strides_checked")
                           .status());
  // 1. The shape kernel (with stride 0 it would still compute in-range dims: |0| counts as 1).
  Buffer shape_out("shape", DataType::Int64(), {Int(static_cast<int64_t>(ndim))});
  Stmt shape_body = ComputeBlock("dynamic_strided_slice_shape", shape_out, [&](const std::vector<PrimExpr>& o) {
    PrimExpr value = Int(0);
    // The dim of axis o[0]: the sliced length if an entry slices it, else data's dim.
    for (size_t a = ndim; a-- > 0;) {
      PrimExpr dim = b.data->shape[a];
      for (int64_t i = 0; i < count; ++i) {
        if (b.axes[static_cast<size_t>(i)] != static_cast<int>(a)) continue;
        Clamped c = ClampEntry(b, i);
        const PrimExpr step = tir::Max(tir::Select(tir::GT(c.stride, Int(0)), c.stride, tir::Sub(Int(0), c.stride)),
                                       Int(1));
        const PrimExpr span = tir::Select(tir::GT(c.stride, Int(0)), tir::Sub(c.stop, c.start), tir::Sub(c.start, c.stop));
        dim = tir::Max(tir::FloorDiv(tir::Add(span, tir::Sub(step, Int(1))), step), Int(0));
      }
      value = a == ndim - 1 ? dim : tir::Select(tir::EQ(o[0], Int(static_cast<int64_t>(a))), dim, value);
    }
    return value;
  });
  KernelParams shape_params{{b.data, b.begin, b.end, b.strides}, {shape_out}, {}};
  Expr shape_kernel =
      context.AddPrimFunc("dynamic_strided_slice_shape", MakePrimFunc(shape_params, shape_body, "opaque"));
  std::vector<Expr> operands(call.args.begin(), call.args.end());
  const std::string& name = context.binding_name();
  const auto* out_sinfo = call.struct_info().as<TensorStructInfoNode>();
  const std::string device = out_sinfo != nullptr ? out_sinfo->device : std::string();
  KILN_ASSIGN_OR_RETURN(Var shape_tensor,
                        context.builder().Emit(CallTir(shape_kernel, operands,
                                                       TensorSInfo({Int(static_cast<int64_t>(ndim))}, DataType::Int64(), device)),
                                               name + "_shape_tensor"));
  // 2. The shape, and fresh variables for its dims.
  KILN_ASSIGN_OR_RETURN(Var shape, context.builder().Emit(Call(Op("tensor_to_shape"), {shape_tensor}), name + "_shape"));
  std::vector<PrimExpr> dims;
  for (size_t a = 0; a < ndim; ++a) dims.push_back(tir::Var(absl::StrCat(name, "_dim", a)));
  KILN_RETURN_IF_ERROR(context.builder().EmitMatchCast(shape, ShapeSInfo(dims), name + "_dims").status());
  // 3. The slice kernel, writing an output of those dims.
  Buffer out("out", b.data->dtype, dims);
  Stmt body = ComputeBlock("dynamic_strided_slice", out, [&](const std::vector<PrimExpr>& o) {
    std::vector<PrimExpr> index = o;
    for (int64_t i = 0; i < count; ++i) {
      const size_t a = static_cast<size_t>(b.axes[static_cast<size_t>(i)]);
      Clamped c = ClampEntry(b, i);
      index[a] = tir::Add(c.start, tir::Mul(o[a], c.stride));
    }
    return b.data.Load(index);
  });
  KernelParams params{{b.data, b.begin, b.end, b.strides}, {out}, {}};
  Expr kernel = context.AddPrimFunc("dynamic_strided_slice", MakePrimFunc(params, body, "injective"));
  return CallTir(kernel, operands, TensorSInfo(dims, b.data->dtype, device));
}

}  // namespace

void RegisterDynamicShapeLegalize(OpRegistry& registry) {
  registry.SetLegalize("dynamic_strided_slice", LegalizeFn(LegalizeDynamicStridedSlice));
}

}  // namespace kiln::relax::op
