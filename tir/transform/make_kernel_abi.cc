#include "tir/transform/make_kernel_abi.h"

#include <optional>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/intrinsics.h"
#include "tir/stmt_functor.h"
#include "tir/target.h"

namespace kiln::tir::transform {
namespace {

std::string Literal(const std::string& text) { return EscapeAssertText(text); }

PrimExpr I32(int64_t v) { return IntImm(DataType::Int32(), v); }
PrimExpr I64(int64_t v) { return PrimExpr(v); }
PrimExpr ToI64(const PrimExpr& e) { return e.dtype() == DataType::Int64() ? e : Cast(DataType::Int64(), e); }

class VarCollector : public StmtExprVisitor {
 public:
  void VisitExpr_(const VarNode*, const PrimExpr& self) override {
    vars.push_back(Var(std::static_pointer_cast<const VarNode>(self.node())));
  }
  std::vector<Var> vars;
};

class AbiBuilder {
 public:
  AbiBuilder(const PrimFunc& func, TargetKind kind) : func_(func), kind_(kind) {}

  absl::StatusOr<PrimFunc> Run() {
    const auto& params = func_->params;
    Check(EQ(num_args_, I32(static_cast<int64_t>(params.size()))),
          absl::StrCat("expected ", params.size(), " arguments, got {}"), {num_args_});
    // Scalar parameters first: they define their variables outright.
    for (size_t i = 0; i < params.size(); ++i) {
      if (!params[i].is_buffer()) KILN_RETURN_IF_ERROR(Scalar(i, params[i].var));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].is_buffer()) KILN_RETURN_IF_ERROR(Tensor(i, params[i].buffer));
    }
    for (const Deferred& d : deferred_) {
      VarCollector used;
      used.VisitExpr(d.expected);
      for (const Var& v : used.vars) {
        if (bound_.count(v.get()) == 0) {
          return absl::InvalidArgumentError(absl::StrCat(d.where, ": the shape expression ", ToString(d.expected),
                                                         " uses ", v.name(), ", which no argument defines"));
        }
      }
      PrimExpr expected = ToI64(d.expected);
      Check(EQ(d.actual, expected),
            absl::StrCat(Literal(d.where), ": expected {} (", Literal(ToString(d.expected)), "), got {}"),
            {expected, d.actual});
    }
    for (const auto& [buffer, data] : decls_) items_.push_back({Item::kDecl, Stmt(), Var(), data, buffer});

    Stmt body = func_->body;
    for (auto it = items_.rbegin(); it != items_.rend(); ++it) {
      switch (it->kind) {
        case Item::kCheck: body = SeqStmt({it->check, body}); break;
        case Item::kLet: body = LetStmt(it->var, it->value, body); break;
        case Item::kDecl: body = DeclBuffer(it->buffer, it->value, body); break;
      }
    }
    std::map<std::string, std::string> attrs = func_->attrs;
    attrs[kCallingConvAttr] = kKernelAbi;
    return PrimFunc({PrimFuncParam{Buffer(), args_}, PrimFuncParam{Buffer(), num_args_}}, body, std::move(attrs));
  }

 private:
  struct Item {
    enum Kind { kCheck, kLet, kDecl } kind;
    Stmt check;
    Var var;
    PrimExpr value;  // the let's value, or the declared buffer's data
    Buffer buffer;
  };
  struct Deferred {
    PrimExpr expected;
    PrimExpr actual;
    std::string where;  // "argument 1 (B) dimension 0"
  };

  void Check(PrimExpr ok, const std::string& message, std::vector<PrimExpr> values = {}) {
    items_.push_back({Item::kCheck, Assert(std::move(ok), message, std::move(values)), Var(), PrimExpr(), Buffer()});
  }
  void Bind(const Var& var, PrimExpr value) {
    items_.push_back({Item::kLet, Stmt(), var, std::move(value), Buffer()});
    bound_.insert(var.get());
  }

  PrimExpr ArgCall(const char* op, size_t i) { return Call(op, {args_, I64(static_cast<int64_t>(i))}); }

  void ExpectTypeCode(size_t i, const std::string& arg, int code, const char* what) {
    PrimExpr type_code = ArgCall("arg_type_code", i);
    Check(EQ(type_code, I32(code)),
          absl::StrCat(arg, ": expected ", what, ", got argument type code {} (0 tensor, 1 int, 2 float, 3 handle)"),
          {type_code});
  }

  absl::Status Scalar(size_t i, const Var& var) {
    DataType t = var.dtype();
    std::string arg = Literal(absl::StrCat("argument ", i, " (", var.name(), ")"));
    if (!t.is_scalar()) return absl::InvalidArgumentError(absl::StrCat(arg, ": scalar parameters must not be vectors"));
    if (t.is_integer() || t.is_bool()) {
      ExpectTypeCode(i, arg, kArgTypeInt, "an int");
      PrimExpr raw = ArgCall("arg_int", i);
      if (t.is_int() && var->lower_bound) {
        Check(GE(raw, I64(*var->lower_bound)),
              absl::StrCat(arg, ": {} is below its declared lower bound ", *var->lower_bound), {raw});
      }
      if (t.is_int() && var->upper_bound) {
        Check(LE(raw, I64(*var->upper_bound)),
              absl::StrCat(arg, ": {} is above its declared upper bound ", *var->upper_bound), {raw});
      }
      Bind(var, t.is_bool() ? NE(raw, I64(0)) : t == DataType::Int64() ? raw : Cast(t, raw));
    } else if (t.is_float()) {
      ExpectTypeCode(i, arg, kArgTypeFloat, "a float");
      PrimExpr raw = ArgCall("arg_float", i);
      Bind(var, t == DataType::Float(64) ? raw : Cast(t, raw));
    } else if (t.is_handle()) {
      ExpectTypeCode(i, arg, kArgTypeHandle, "a handle");
      Bind(var, ArgCall("arg_handle", i));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(arg, ": parameters of type ", t.ToString(), " are not supported"));
    }
    return absl::OkStatus();
  }

  // A dimension or stride: constants are checked now, a variable is bound at its first
  // occurrence and checked at later ones, compound expressions once every variable is bound.
  absl::Status Match(const PrimExpr& expected, const PrimExpr& actual, const std::string& where) {
    const std::string at = Literal(where);
    if (std::optional<int64_t> c = expected.as_int()) {
      Check(EQ(actual, I64(*c)), absl::StrCat(at, ": expected ", *c, ", got {}"), {actual});
      return absl::OkStatus();
    }
    const auto* var = expected.as<VarNode>();
    if (var == nullptr) {
      deferred_.push_back({expected, actual, where});
      return absl::OkStatus();
    }
    if (!var->dtype().is_integer() || !var->dtype().is_scalar()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": symbolic dimension ", var->name, " must be an integer"));
    }
    Var v(std::static_pointer_cast<const VarNode>(expected.node()));
    std::string name = Literal(var->name);
    if (bound_.count(var) == 0) {
      if (var->lower_bound) {
        Check(GE(actual, I64(*var->lower_bound)),
              absl::StrCat(at, ": ", name, " = {} is below its declared lower bound ", *var->lower_bound), {actual});
      }
      if (var->upper_bound) {
        Check(LE(actual, I64(*var->upper_bound)),
              absl::StrCat(at, ": ", name, " = {} is above its declared upper bound ", *var->upper_bound), {actual});
      }
      Bind(v, var->dtype() == DataType::Int64() ? actual : Cast(var->dtype(), actual));
      return absl::OkStatus();
    }
    PrimExpr value = ToI64(v);
    Check(EQ(actual, value), absl::StrCat(at, ": expected {} (", name, "), got {}"), {value, actual});
    return absl::OkStatus();
  }

  absl::Status Tensor(size_t i, const Buffer& buffer) {
    std::string arg = Literal(absl::StrCat("argument ", i, " (", buffer->name, ")"));
    std::string plain = absl::StrCat("argument ", i, " (", buffer->name, ")");
    ExpectTypeCode(i, arg, kArgTypeTensor, "a tensor");
    Var tensor(buffer->name + "_tensor", DataType::Handle());
    Bind(tensor, ArgCall("arg_handle", i));
    Check(Not(Call("is_null", {tensor})), absl::StrCat(arg, ": the tensor is null"));

    PrimExpr device = Call("tensor_device_type", {tensor});
    switch (kind_) {
      case TargetKind::kCpu:
        Check(Or(EQ(device, I32(kDeviceTypeCpu)), EQ(device, I32(kDeviceTypeCudaHost))),
              absl::StrCat(arg, ": expected a tensor in CPU memory, got DLPack device type {}"), {device});
        break;
      case TargetKind::kCuda:
        Check(EQ(device, I32(kDeviceTypeCuda)),
              absl::StrCat(arg, ": expected a tensor in CUDA memory, got DLPack device type {}"), {device});
        break;
      case TargetKind::kVulkan:
        Check(EQ(device, I32(kDeviceTypeVulkan)),
              absl::StrCat(arg, ": expected a tensor in Vulkan memory, got DLPack device type {}"), {device});
        break;
    }
    PrimExpr ndim = Call("tensor_ndim", {tensor});
    Check(EQ(ndim, I32(buffer.ndim())), absl::StrCat(arg, ": expected ", buffer.ndim(), " dimensions, got {}"), {ndim});
    DataType dtype = buffer->dtype;
    PrimExpr code = Call("tensor_dtype_code", {tensor});
    PrimExpr bits = Call("tensor_dtype_bits", {tensor});
    PrimExpr lanes = Call("tensor_dtype_lanes", {tensor});
    Check(And(EQ(code, I32(static_cast<int>(dtype.code()))),
              And(EQ(bits, I32(dtype.bits())), EQ(lanes, I32(dtype.lanes())))),
          absl::StrCat(arg, ": expected dtype ", dtype.ToString(), " (code ", static_cast<int>(dtype.code()), " bits ",
                       dtype.bits(), " lanes ", dtype.lanes(), "), got code {} bits {} lanes {}"),
          {code, bits, lanes});

    std::vector<PrimExpr> dims;
    for (int d = 0; d < buffer.ndim(); ++d) {
      dims.push_back(Call("tensor_shape", {tensor, I64(d)}));
      KILN_RETURN_IF_ERROR(Match(buffer->shape[d], dims.back(), absl::StrCat(plain, " dimension ", d)));
    }
    // The compact row-major strides of the tensor's actual shape.
    std::vector<PrimExpr> compact(buffer.ndim());
    PrimExpr running = I64(1);
    for (int d = buffer.ndim() - 1; d >= 0; --d) {
      compact[d] = running;
      running = running.as_int() == 1 ? dims[d] : Mul(running, dims[d]);
    }
    for (int d = 0; d < buffer.ndim(); ++d) {
      PrimExpr stride = Call("tensor_stride", {tensor, I64(d), compact[d]});
      if (buffer->strides.empty()) {
        // The stride of a dimension of extent 1 never matters.
        Check(Or(EQ(stride, compact[d]), EQ(dims[d], I64(1))),
              absl::StrCat(arg, " dimension ", d, ": expected a compact row-major tensor (stride {}), got stride {}"),
              {compact[d], stride});
      } else {
        KILN_RETURN_IF_ERROR(Match(buffer->strides[d], stride, absl::StrCat(plain, " stride ", d)));
      }
    }
    decls_.emplace_back(buffer, Call("tensor_data", {tensor}));
    return absl::OkStatus();
  }

  const PrimFunc& func_;
  TargetKind kind_;
  Var args_{"args", DataType::Handle()};
  Var num_args_{"num_args", DataType::Int32()};
  std::vector<Item> items_;
  std::vector<Deferred> deferred_;
  std::vector<std::pair<Buffer, PrimExpr>> decls_;
  std::unordered_set<const VarNode*> bound_;
};

}  // namespace

absl::StatusOr<PrimFunc> MakeKernelAbi(const PrimFunc& func) {
  KILN_ASSIGN_OR_RETURN(std::optional<Target> target, TargetOf(func));
  return AbiBuilder(func, target ? target->kind : TargetKind::kCpu).Run();
}

}  // namespace kiln::tir::transform
