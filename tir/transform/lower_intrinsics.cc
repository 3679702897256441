#include "tir/transform/lower_intrinsics.h"

#include "support/status_macros.h"
#include "tir/stmt_functor.h"
#include "tir/target.h"

namespace kiln::tir::transform {
namespace {

PrimExpr Const(DataType t, double v) {
  PrimExpr c = FloatImm(t.element_of(), v);
  return t.lanes() > 1 ? Broadcast(c, t.lanes()) : c;
}

// The math intrinsics codegen/fast_math.h writes out inline for float32.
bool HasFastFloat32(const std::string& name) {
  for (const char* fast : {"exp", "log", "erf", "tanh", "sigmoid", "expm1", "log1p", "sin", "cos", "tan", "asin",
                           "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"}) {
    if (name == fast) return true;
  }
  return false;
}

class CpuIntrinsics : public StmtExprMutator {
 public:
  PrimExpr VisitExpr_(const CallNode* op, const PrimExpr& self) override {
    PrimExpr visited = StmtExprMutator::VisitExpr_(op, self);
    const auto* call = visited.as<CallNode>();
    if (call == nullptr || call->args.size() != 1) return visited;
    const PrimExpr& x = call->args[0];
    DataType t = x.dtype();
    if (!t.is_float() || t != call->dtype()) return visited;
    const std::string& name = call->op;
    if (name == "rsqrt") return Div(Const(t, 1.0), Call("sqrt", {x}));
    if (!HasFastFloat32(name)) return visited;
    if (t.bits() == 32) return Call("fast_" + name, {x});
    if (t.bits() == 16) {
      DataType f32 = DataType::Float32().with_lanes(t.lanes());
      return Cast(t, Call("fast_" + name, {Cast(f32, x)}));
    }
    // float64: LLVM has exp, log, sin and cos; sigmoid is written out, the others are libm.
    if (name == "sigmoid") return Div(Const(t, 1.0), Add(Const(t, 1.0), Call("exp", {Sub(Const(t, 0.0), x)})));
    if (name == "exp" || name == "log" || name == "sin" || name == "cos") return visited;
    return Call("libm_" + name, {x});
  }
};

}  // namespace

absl::StatusOr<PrimFunc> LowerIntrinsics(const PrimFunc& func) {
  KILN_ASSIGN_OR_RETURN(std::optional<Target> target, TargetOf(func));
  if (target && target->is_gpu()) return func;
  return CpuIntrinsics().VisitPrimFunc(func);
}

}  // namespace kiln::tir::transform
