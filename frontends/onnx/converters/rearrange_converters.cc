// ONNX operators that only rearrange elements, as reshape + permute_dims: DepthToSpace
// (modes DCR and CRD) and SpaceToDepth; and EyeLike, a constant built at import time.
#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "frontends/onnx/tensor_proto.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using relax::Expr;
using tir::DataType;

absl::StatusOr<Expr> Permute(NodeContext& c, Expr x, std::vector<int64_t> axes) {
  return c.Call("permute_dims", {std::move(x)}, {{"axes", std::move(axes)}});
}

absl::StatusOr<std::vector<Value>> ConvertDepthToSpace(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> s, c.InputShape(0));
  if (s.size() != 4) return c.Error("needs a 4-D input, got ", s.size(), " dims");
  KILN_ASSIGN_OR_RETURN(int64_t b, c.RequiredInt("blocksize"));
  if (b < 1) return c.Error("blocksize ", b, " must be positive");
  const std::string mode = c.AttrString("mode", "DCR");
  const PrimExpr n = s[0], ch = Simplify(tir::FloorDiv(s[1], PrimExpr(b * b))), h = s[2], w = s[3];
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  if (mode == "DCR") {
    KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {n, b, b, ch, h, w}));
    KILN_ASSIGN_OR_RETURN(x, Permute(c, x, {0, 3, 4, 1, 5, 2}));
  } else if (mode == "CRD") {
    KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {n, ch, b, b, h, w}));
    KILN_ASSIGN_OR_RETURN(x, Permute(c, x, {0, 1, 4, 2, 5, 3}));
  } else {
    return c.Error("unknown mode '", mode, "' (DCR or CRD)");
  }
  KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {n, ch, Simplify(h * b), Simplify(w * b)}));
  return Outputs(x);
}

absl::StatusOr<std::vector<Value>> ConvertSpaceToDepth(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> s, c.InputShape(0));
  if (s.size() != 4) return c.Error("needs a 4-D input, got ", s.size(), " dims");
  KILN_ASSIGN_OR_RETURN(int64_t b, c.RequiredInt("blocksize"));
  if (b < 1) return c.Error("blocksize ", b, " must be positive");
  const PrimExpr h = Simplify(tir::FloorDiv(s[2], PrimExpr(b))), w = Simplify(tir::FloorDiv(s[3], PrimExpr(b)));
  KILN_ASSIGN_OR_RETURN(Expr x, c.Input(0));
  KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {s[0], s[1], h, b, w, b}));
  KILN_ASSIGN_OR_RETURN(x, Permute(c, x, {0, 3, 5, 1, 2, 4}));
  KILN_ASSIGN_OR_RETURN(x, Reshape(c, x, {s[0], Simplify(s[1] * (b * b)), h, w}));
  return Outputs(x);
}

// Ones on the k-th diagonal of a static 2-D shape: a constant.
absl::StatusOr<std::vector<Value>> ConvertEyeLike(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> s, c.InputShape(0));
  std::vector<int64_t> dims;
  if (s.size() != 2) return c.Error("needs a 2-D input, got ", s.size(), " dims");
  if (!AllConstant(s, &dims)) return c.Unsupported("needs a static shape");
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (c.HasAttr("dtype")) {
    absl::StatusOr<DataType> t = DataTypeFromOnnx(static_cast<int32_t>(c.AttrInt("dtype", 1)));
    if (!t.ok()) return c.Unsupported(t.status().message());
    dtype = *t;
  }
  const int64_t k = c.AttrInt("k", 0);
  if (dims[0] * dims[1] > (int64_t{1} << 26)) return c.Unsupported("the shape is too large for a constant");
  std::vector<double> values(static_cast<size_t>(dims[0] * dims[1]), 0.0);
  for (int64_t i = 0; i < dims[0]; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < dims[1]) values[i * dims[1] + j] = 1.0;
  }
  return std::vector<Value>{Value::OfData(DataFromDoubles(values, dtype, dims))};
}

}  // namespace

void RegisterRearrangeConverters(ConverterRegistry& r) {
  r.Register("DepthToSpace", ConvertDepthToSpace);
  r.Register("SpaceToDepth", ConvertSpaceToDepth);
  r.Register("EyeLike", ConvertEyeLike, 9);
}

}  // namespace kiln::frontends::onnx
