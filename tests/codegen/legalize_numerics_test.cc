// Legalization end to end, numerically: for every tensor operator a one-op Relax function
// with symbolic shapes is legalized (relax/transform/legalize_ops.h), its PrimFuncs are
// compiled with the CPU backend and run through the kernel ABI for several concrete sizes
// (1, primes, and one above 1000 where cheap), and the results are compared with the
// independent reference evaluator (tests/reference), which shares no code with TIR lowering
// or LLVM.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/cpu_shared_object.h"
#include "codegen/cpu_target.h"
#include "relax/block_builder.h"
#include "relax/ir_module.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/legalize_ops.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "tests/reference/host_tensor.h"
#include "tests/reference/prim_eval.h"
#include "tests/reference/ref_value.h"
#include "tests/reference/reference_evaluator.h"
#include "vm/kernel_abi.h"
#include "vm/kernel_object.h"

namespace kiln {
namespace {

using reference::HostTensor;
using reference::RefValue;
using relax::IRModule;
using tir::DataType;

// ------------------------------------------------------------------ kernel calls

struct Context {
  KilnCallContext ctx;  // first member: the callbacks cast the pointer back
  std::string error;
};

int32_t SerialFor(KilnCallContext*, int64_t num_tasks, KilnParallelBody body, void* closure) {
  for (int64_t i = 0; i < num_tasks; ++i) {
    int32_t rc = body(i, num_tasks, closure);
    if (rc != 0) return rc;
  }
  return 0;
}
void* Alloc(KilnCallContext*, uint64_t bytes) { return std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64); }
void Free(KilnCallContext*, void* p) { std::free(p); }
void SetError(KilnCallContext* ctx, const char* message) { reinterpret_cast<Context*>(ctx)->error = message; }

// A HostTensor's bytes seen as a DLTensor (row-major, CPU). The HostTensor owns the memory.
struct DlView {
  std::vector<int64_t> shape;
  DLTensor dl{};
};

std::unique_ptr<DlView> View(HostTensor& t) {
  auto v = std::make_unique<DlView>();
  v->shape = t.shape();
  // An empty tensor still has a non-null data pointer, as a runtime allocation would.
  static uint8_t empty_storage[64];
  v->dl.data = t.numel() == 0 ? empty_storage : const_cast<uint8_t*>(t.bytes().data());
  v->dl.device = {kDLCPU, 0};
  v->dl.ndim = t.ndim();
  v->dl.dtype = {static_cast<uint8_t>(t.dtype().code()), static_cast<uint8_t>(t.dtype().bits()), 1};
  v->dl.shape = v->shape.data();
  v->dl.strides = nullptr;
  v->dl.byte_offset = 0;
  return v;
}

// ------------------------------------------------------------------ cases

// How a parameter's random values are drawn.
struct Gen {
  double lo = -2.0;
  double hi = 2.0;
};

struct Param {
  std::string name;
  std::vector<std::string> dims;  // integer literals or symbolic variable names
  std::string dtype = "float32";
  Gen gen;
};

struct Case {
  std::string name;
  std::vector<Param> params;
  std::string expr;  // the op call, e.g. "R.add(x, y)"
  std::vector<std::map<std::string, int64_t>> sizes;
  double rtol = 1e-5;
  double atol = 1e-5;
  std::string prelude = "";  // bindings before `r = expr`, each ending in "\n"
};

std::string ParamText(const Param& p) {
  return absl::StrCat(p.name, ": Tensor((", absl::StrJoin(p.dims, ", "), p.dims.size() == 1 ? "," : "", "), ",
                      p.dtype, ")");
}

std::string ModuleText(const Case& c) {
  std::vector<std::string> params;
  for (const Param& p : c.params) params.push_back(ParamText(p));
  return absl::StrCat("module {\n  func @main(", absl::StrJoin(params, ", "), ") -> Object {\n", c.prelude,
                      "    r = ", c.expr, "\n    return r\n  }\n}\n");
}

HostTensor RandomTensor(const Param& p, const std::map<std::string, int64_t>& size, std::mt19937& rng) {
  std::vector<int64_t> shape;
  for (const std::string& d : p.dims) {
    auto it = size.find(d);
    shape.push_back(it != size.end() ? it->second : std::stoll(d));
  }
  absl::StatusOr<DataType> dtype = DataType::Parse(p.dtype);
  KILN_CHECK(dtype.ok()) << p.dtype;
  HostTensor t(*dtype, shape);
  std::uniform_real_distribution<double> uniform(p.gen.lo, p.gen.hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype->is_float()) {
      t.SetDouble(i, uniform(rng));
    } else if (dtype->is_bool()) {
      t.SetInt(i, uniform(rng) > 0 ? 1 : 0);
    } else {
      t.SetInt(i, static_cast<int64_t>(std::floor(uniform(rng))));
    }
  }
  return t;
}

// Runs the legalized `main` (bindings of tuples, tuple items and call_tir) on `inputs`.
// Kernels are named after operators ("exp"), which are C library names the code generator
// refuses as symbols; the shared object exports them with a suffix, as executables do.
std::string KernelSymbol(const std::string& name) { return name + "_kernel"; }

class LegalizedRunner {
 public:
  LegalizedRunner(IRModule module, std::shared_ptr<vm::KernelObject> object)
      : module_(std::move(module)), object_(std::move(object)) {}

  absl::StatusOr<RefValue> Run(std::vector<RefValue> inputs) {
    const relax::FunctionNode* main = module_.Find("main")->relax_function();
    std::map<const relax::ExprNode*, RefValue> values;
    reference::SymbolEnv symbols;
    for (size_t i = 0; i < main->params.size(); ++i) {
      values[main->params[i].get()] = inputs[i];
      const auto* t = main->params[i].struct_info().as<relax::TensorStructInfoNode>();
      for (size_t d = 0; d < t->shape->size(); ++d) {
        if (const auto* v = (*t->shape)[d].as<tir::VarNode>()) {
          symbols[v] = reference::PrimScalar{DataType::Int64(), inputs[i].tensor().shape()[d], 0};
        }
      }
    }
    auto value_of = [&](const relax::Expr& e) -> absl::StatusOr<RefValue> {
      auto it = values.find(e.get());
      if (it == values.end()) return absl::InternalError("runner: unknown value");
      return it->second;
    };
    const auto* seq = main->body.as<relax::SeqExprNode>();
    for (const relax::BindingBlock& block : seq->blocks) {
      for (const relax::Binding& b : block.bindings) {
        RefValue result;
        if (const auto* tuple = b.value.as<relax::TupleNode>()) {
          std::vector<RefValue> fields;
          for (const relax::Expr& f : tuple->fields) {
            KILN_ASSIGN_OR_RETURN(RefValue v, value_of(f));
            fields.push_back(v);
          }
          result = RefValue::Tuple(fields);
        } else if (const auto* item = b.value.as<relax::TupleGetItemNode>()) {
          KILN_ASSIGN_OR_RETURN(RefValue v, value_of(item->tuple));
          result = v.fields()[static_cast<size_t>(item->index)];
        } else if (const auto* call = b.value.as<relax::CallNode>()) {
          const auto* op = call->op.as<relax::OpNode>();
          if (op == nullptr || op->name != "call_tir") return absl::InternalError("runner: not a call_tir");
          KILN_ASSIGN_OR_RETURN(result, CallTir(*call, value_of, symbols));
        } else {
          return absl::InternalError("runner: unexpected binding");
        }
        values[b.var.get()] = result;
      }
    }
    return value_of(seq->body);
  }

 private:
  template <typename ValueOf>
  absl::StatusOr<RefValue> CallTir(const relax::CallNode& call, ValueOf& value_of,
                                   const reference::SymbolEnv& symbols) {
    const std::string& name = call.args[0].as<relax::GlobalVarNode>()->name;
    std::vector<HostTensor> tensors;
    for (const relax::Expr& arg : call.args[1].as<relax::TupleNode>()->fields) {
      KILN_ASSIGN_OR_RETURN(RefValue v, value_of(arg));
      tensors.push_back(v.tensor());
    }
    const size_t num_inputs = tensors.size();
    std::vector<relax::StructInfo> outs;
    const relax::StructInfo& sinfo = call.sinfo_args[0];
    if (const auto* tuple = sinfo.as<relax::TupleStructInfoNode>()) {
      outs = tuple->fields;
    } else {
      outs = {sinfo};
    }
    for (const relax::StructInfo& o : outs) {
      const auto* t = o.as<relax::TensorStructInfoNode>();
      std::vector<int64_t> shape;
      for (const tir::PrimExpr& dim : *t->shape) {
        KILN_ASSIGN_OR_RETURN(reference::PrimScalar v, reference::EvalPrimExpr(dim, symbols));
        shape.push_back(v.int_value);
      }
      tensors.emplace_back(*t->dtype, shape);
    }
    std::vector<std::unique_ptr<DlView>> views;
    std::vector<KilnArg> args;
    for (HostTensor& t : tensors) {
      views.push_back(View(t));
      KilnArg a{};
      a.value.tensor = &views.back()->dl;
      a.type_code = kKilnArgTensor;
      args.push_back(a);
    }
    // tir_vars: trailing scalar int64 parameters.
    if (call.args.size() == 3) {
      for (const tir::PrimExpr& e : call.args[2].as<relax::ShapeExprNode>()->values) {
        KILN_ASSIGN_OR_RETURN(reference::PrimScalar v, reference::EvalPrimExpr(e, symbols));
        KilnArg a{};
        a.value.i64 = v.int_value;
        a.type_code = kKilnArgInt;
        args.push_back(a);
      }
    }
    KILN_ASSIGN_OR_RETURN(KilnKernelFn fn, object_->Find(KernelSymbol(name)));
    Context ctx;
    ctx.ctx.runtime = nullptr;
    ctx.ctx.parallel_for = SerialFor;
    ctx.ctx.workspace_alloc = Alloc;
    ctx.ctx.workspace_free = Free;
    ctx.ctx.set_error = SetError;
    ctx.ctx.num_threads = 1;
    if (fn(args.data(), static_cast<int32_t>(args.size()), &ctx.ctx) != 0) {
      return absl::InternalError(absl::StrCat("kernel ", name, " failed: ", ctx.error));
    }
    if (outs.size() == 1 && !sinfo.as<relax::TupleStructInfoNode>()) return RefValue(tensors[num_inputs]);
    std::vector<RefValue> fields;
    for (size_t i = num_inputs; i < tensors.size(); ++i) fields.emplace_back(tensors[i]);
    return RefValue::Tuple(fields);
  }

  IRModule module_;
  std::shared_ptr<vm::KernelObject> object_;
};

// Returns whether they agree (adding failures where not).
bool ExpectClose(const RefValue& expected, const RefValue& actual, const Case& c, const std::string& where) {
  if (expected.kind() != actual.kind()) {
    ADD_FAILURE() << where << ": expected " << expected.TypeString() << ", got " << actual.TypeString();
    return false;
  }
  if (!expected.is_tensor()) {
    if (expected.fields().size() != actual.fields().size()) {
      ADD_FAILURE() << where << ": expected " << expected.TypeString() << ", got " << actual.TypeString();
      return false;
    }
    bool ok = true;
    for (size_t i = 0; i < expected.fields().size(); ++i) {
      ok = ExpectClose(expected.fields()[i], actual.fields()[i], c, absl::StrCat(where, " field ", i)) && ok;
    }
    return ok;
  }
  const HostTensor& e = expected.tensor();
  const HostTensor& a = actual.tensor();
  if (e.shape() != a.shape() || e.dtype() != a.dtype()) {
    ADD_FAILURE() << where << ": expected " << e.TypeString() << ", got " << a.TypeString();
    return false;
  }
  int failures = 0;
  for (int64_t i = 0; i < e.numel() && failures < 5; ++i) {
    if (e.dtype().is_float()) {
      const double x = e.GetDouble(i);
      const double y = a.GetDouble(i);
      const bool ok = (std::isinf(x) && x == y) || std::abs(x - y) <= c.atol + c.rtol * std::abs(x);
      if (!ok) ++failures;
      EXPECT_TRUE(ok) << where << " element " << i << ": expected " << x << ", got " << y;
    } else {
      if (e.GetInt(i) != a.GetInt(i)) ++failures;
      EXPECT_EQ(e.GetInt(i), a.GetInt(i)) << where << " element " << i;
    }
  }
  return failures == 0;
}

void RunCase(const Case& c) {
  SCOPED_TRACE(c.name);
  const std::string text = ModuleText(c);
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  absl::StatusOr<IRModule> normalized = relax::NormalizeModule(parsed->module);
  ASSERT_TRUE(normalized.ok()) << normalized.status() << "\n" << text;
  absl::StatusOr<IRModule> legalized = relax::LegalizeOps(*normalized);
  ASSERT_TRUE(legalized.ok()) << legalized.status() << "\n" << text;
  std::vector<std::pair<std::string, tir::PrimFunc>> kernels;
  for (const IRModule::Entry& e : legalized->entries()) {
    if (!e.is_relax()) kernels.emplace_back(KernelSymbol(e.name), *e.prim_func());
  }
  ASSERT_FALSE(kernels.empty()) << relax::PrintModule(*legalized);
  absl::StatusOr<std::string> so = codegen::BuildCpuSharedObject(kernels, codegen::CpuTarget::Host());
  ASSERT_TRUE(so.ok()) << so.status() << "\n" << relax::PrintModule(*legalized);
  absl::StatusOr<std::shared_ptr<vm::KernelObject>> object = vm::KernelObject::Load(*so);
  ASSERT_TRUE(object.ok()) << object.status();
  LegalizedRunner runner(*legalized, *object);
  std::mt19937 rng(1234);
  for (const auto& size : c.sizes) {
    std::string where;
    for (const auto& [k, v] : size) absl::StrAppend(&where, k, "=", v, " ");
    std::vector<RefValue> inputs;
    for (const Param& p : c.params) inputs.emplace_back(RandomTensor(p, size, rng));
    absl::StatusOr<RefValue> expected = reference::Evaluate(*normalized, "main", inputs);
    ASSERT_TRUE(expected.ok()) << where << expected.status();
    absl::StatusOr<RefValue> actual = runner.Run(inputs);
    ASSERT_TRUE(actual.ok()) << where << actual.status() << "\n" << relax::PrintModule(*legalized);
    if (!ExpectClose(*expected, *actual, c, where)) {
      ADD_FAILURE() << "legalized module:\n" << relax::PrintModule(*legalized);
      return;
    }
  }
}

// Sizes: 1, primes, and one above 1000 for the cheap ops.
const std::vector<std::map<std::string, int64_t>> kNm = {{{"n", 1}, {"m", 1}}, {{"n", 7}, {"m", 13}}, {{"n", 1031}, {"m", 3}}};
const std::vector<std::map<std::string, int64_t>> kN = {{{"n", 1}}, {{"n", 13}}, {{"n", 1031}}};

Param P(std::string name, std::vector<std::string> dims, std::string dtype = "float32", Gen gen = {}) {
  return Param{std::move(name), std::move(dims), std::move(dtype), gen};
}

// ------------------------------------------------------------------ elementwise

TEST(LegalizeNumericsTest, BinaryBroadcastOps) {
  for (const char* op : {"add", "subtract", "multiply", "maximum", "minimum"}) {
    RunCase({op, {P("x", {"n", "m"}), P("y", {"1", "m"})}, absl::StrCat("R.", op, "(x, y)"), kNm});
  }
  RunCase({"divide", {P("x", {"n", "m"}), P("y", {"m"}, "float32", {0.5, 3})}, "R.divide(x, y)", kNm});
  RunCase({"power", {P("x", {"n", "4"}, "float32", {0.1, 3}), P("y", {"n", "1"})}, "R.power(x, y)", kNm, 1e-5, 1e-5});
  RunCase({"power_int", {P("x", {"n"}, "int64", {1, 6}), P("y", {"n"}, "int64", {-3, 5})}, "R.power(x, y)", kN});
  RunCase({"power_int32_neg_base", {P("x", {"n"}, "int32", {-4, 0}), P("y", {"n"}, "int32", {0, 5})}, "R.power(x, y)", kN});
  RunCase({"add_int32", {P("x", {"n"}, "int32", {-50, 50}), P("y", {"n"}, "int32", {-50, 50})}, "R.add(x, y)", kN});
  RunCase({"divide_int64", {P("x", {"n"}, "int64", {-50, 50}), P("y", {"1"}, "int64", {1, 9})}, "R.divide(x, y)", kN});
}

TEST(LegalizeNumericsTest, Comparisons) {
  for (const char* op : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
    RunCase({op, {P("x", {"n", "m"}, "int32", {-3, 3}), P("y", {"m"}, "int32", {-3, 3})},
             absl::StrCat("R.", op, "(x, y)"), kNm});
  }
}

TEST(LegalizeNumericsTest, UnaryOps) {
  for (const char* op : {"negative", "relu", "exp", "tanh", "sigmoid", "gelu", "silu"}) {
    RunCase({op, {P("x", {"n", "m"})}, absl::StrCat("R.", op, "(x)"), kNm, 2e-6, 1e-6});
  }
  for (const char* op : {"log", "sqrt", "rsqrt"}) {
    RunCase({op, {P("x", {"n", "m"}, "float32", {0.05, 5})}, absl::StrCat("R.", op, "(x)"), kNm, 2e-6, 1e-6});
  }
  RunCase({"relu_int", {P("x", {"n"}, "int64", {-9, 9})}, "R.relu(x)", kN});
  RunCase({"exp_f64", {P("x", {"n"}, "float64")}, "R.exp(x)", kN, 1e-12, 1e-12});
}

TEST(LegalizeNumericsTest, Where) {
  RunCase({"where", {P("c", {"n", "1"}, "bool"), P("x", {"n", "m"}), P("y", {"m"})}, "R.where(c, x, y)", kNm});
}

// ------------------------------------------------------------------ matmul

TEST(LegalizeNumericsTest, Matmul) {
  const std::vector<std::map<std::string, int64_t>> sizes = {
      {{"n", 1}, {"k", 1}, {"m", 1}}, {{"n", 7}, {"k", 13}, {"m", 5}}, {{"n", 1031}, {"k", 3}, {"m", 2}}};
  RunCase({"matmul_2d", {P("a", {"n", "k"}), P("b", {"k", "m"})}, "R.matmul(a, b)", sizes, 1e-5, 1e-5});
  RunCase({"matmul_batched", {P("a", {"2", "n", "k"}), P("b", {"1", "k", "m"})}, "R.matmul(a, b)", sizes, 1e-5, 1e-5});
  RunCase({"matmul_vec_mat", {P("a", {"k"}), P("b", {"n", "k", "m"})}, "R.matmul(a, b)", sizes, 1e-5, 1e-5});
  RunCase({"matmul_mat_vec", {P("a", {"n", "k"}), P("b", {"k"})}, "R.matmul(a, b)", sizes, 1e-5, 1e-5});
  RunCase({"matmul_vec_vec", {P("a", {"k"}), P("b", {"k"})}, "R.matmul(a, b)", sizes, 1e-5, 1e-5});
  RunCase({"matmul_out_dtype", {P("a", {"n", "k"}, "float32"), P("b", {"k", "m"}, "float32")},
           "R.matmul(a, b, out_dtype=float64)", sizes, 1e-6, 1e-6});
}

// ------------------------------------------------------------------ reductions

TEST(LegalizeNumericsTest, Reductions) {
  for (const char* op : {"sum", "mean", "max", "min"}) {
    RunCase({absl::StrCat(op, "_axis1"), {P("x", {"n", "m"})}, absl::StrCat("R.", op, "(x, axis=[1])"), kNm, 1e-5, 1e-5});
    RunCase({absl::StrCat(op, "_all_keepdims"), {P("x", {"n", "m"})},
             absl::StrCat("R.", op, "(x, keepdims=true)"), kNm, 1e-4, 1e-4});
    RunCase({absl::StrCat(op, "_axis0_3d"), {P("x", {"n", "3", "m"})}, absl::StrCat("R.", op, "(x, axis=[0, 2])"),
             kNm, 1e-4, 1e-4});
  }
  // Reductions over zero elements (a symbolic extent of 0 at run time). max/min of nothing
  // is an error for the reference (as in numpy); the kernel gives -inf / inf.
  const std::vector<std::map<std::string, int64_t>> empty = {{{"n", 3}, {"m", 0}}, {{"n", 0}, {"m", 5}}};
  RunCase({"sum_empty", {P("x", {"n", "m"})}, "R.sum(x, axis=[1])", empty});
  RunCase({"matmul_empty_k", {P("a", {"n", "m"}), P("b", {"m", "2"})}, "R.matmul(a, b)", empty});
  RunCase({"sum_int", {P("x", {"n", "m"}, "int32", {-9, 9})}, "R.sum(x, axis=[0])", kNm});
  RunCase({"max_int", {P("x", {"n", "m"}, "int64", {-9, 9})}, "R.max(x, axis=[1], keepdims=true)", kNm});
}

TEST(LegalizeNumericsTest, ArgReductions) {
  for (const char* op : {"argmax", "argmin"}) {
    RunCase({absl::StrCat(op, "_axis"), {P("x", {"n", "m"}, "int32", {-3, 3})}, absl::StrCat("R.", op, "(x, axis=1)"), kNm});
    RunCase({absl::StrCat(op, "_all"), {P("x", {"n", "m"})}, absl::StrCat("R.", op, "(x)"), kNm});
    RunCase({absl::StrCat(op, "_keepdims"), {P("x", {"n", "m"})}, absl::StrCat("R.", op, "(x, axis=0, keepdims=true)"), kNm});
  }
}

TEST(LegalizeNumericsTest, SoftmaxAndNorms) {
  RunCase({"softmax", {P("x", {"n", "m"}, "float32", {-5, 5})}, "R.softmax(x)", kNm, 1e-5, 1e-6});
  RunCase({"softmax_axis0", {P("x", {"n", "m"}, "float32", {-5, 5})}, "R.softmax(x, axis=0)", kNm, 1e-5, 1e-6});
  RunCase({"layer_norm", {P("x", {"n", "m"}), P("g", {"m"}), P("b", {"m"})}, "R.layer_norm(x, g, b, axes=[-1])",
           kNm, 1e-4, 1e-4});
  RunCase({"layer_norm_2axes", {P("x", {"2", "n", "m"}), P("g", {"n", "m"}), P("b", {"n", "m"})},
           "R.layer_norm(x, g, b, axes=[1, 2], epsilon=0.001)", kNm, 1e-4, 1e-4});
  RunCase({"rms_norm", {P("x", {"n", "m"}), P("w", {"m"})}, "R.rms_norm(x, w)", kNm, 1e-4, 1e-5});
}

TEST(LegalizeNumericsTest, Astype) {
  RunCase({"astype_f32_i32", {P("x", {"n"}, "float32", {-9, 9})}, "R.astype(x, dtype=int32)", kN});
  RunCase({"astype_i64_f32", {P("x", {"n"}, "int64", {-9, 9})}, "R.astype(x, dtype=float32)", kN});
  RunCase({"astype_f32_bool", {P("x", {"n"}, "int32", {-2, 2})}, "R.astype(x, dtype=bool)", kN});
  RunCase({"astype_f32_f16", {P("x", {"n"})}, "R.astype(x, dtype=float16)", kN});
}

// ------------------------------------------------------------------ manipulation

TEST(LegalizeNumericsTest, Manipulation) {
  RunCase({"reshape", {P("x", {"n", "4", "3"})}, "R.reshape(x, R.shape([2, n * 6]))", kN});
  RunCase({"reshape_infer", {P("x", {"n", "m"})}, "R.reshape(x, R.shape([-1]))", kNm});
  RunCase({"permute_dims", {P("x", {"n", "m", "3"})}, "R.permute_dims(x, axes=[2, 0, 1])", kNm});
  RunCase({"permute_dims_reverse", {P("x", {"n", "m"})}, "R.permute_dims(x)", kNm});
  RunCase({"broadcast_to", {P("x", {"1", "m"}), P("y", {"n"})}, "R.broadcast_to(x, R.shape([n, 3, m]))", kNm});
  RunCase({"concat", {P("x", {"n", "3"}), P("y", {"m", "3"})}, "R.concat((x, y), axis=0)", kNm});
  RunCase({"concat_axis1", {P("x", {"n", "m"}), P("y", {"n", "2"}), P("z", {"n", "1"})}, "R.concat((x, y, z), axis=1)", kNm});
  const std::vector<std::map<std::string, int64_t>> even = {{{"n", 1}}, {{"n", 7}}, {{"n", 1031}}};
  RunCase({"split_sections", {P("x", {"3", "n"})}, "R.split(x, indices_or_sections=3, axis=0)", even});
  RunCase({"split_indices", {P("x", {"n", "10"})}, "R.split(x, indices_or_sections=[2, 7], axis=1)", even});
  RunCase({"strided_slice", {P("x", {"n", "10"})}, "R.strided_slice(x, axes=[1], begin=[1], end=[9], strides=[3])", kN});
  RunCase({"strided_slice_neg", {P("x", {"n", "10"})}, "R.strided_slice(x, axes=[1], begin=[-2], end=[0], strides=[-2])", kN});
  RunCase({"strided_slice_sym_neg_begin", {P("x", {"n", "3"})},
           "R.strided_slice(x, axes=[0, 1], begin=[-3, 2], end=[9223372036854775807, -9223372036854775808], strides=[1, -1])",
           kN});
  RunCase({"strided_slice_sym", {P("x", {"n", "3"})}, "R.strided_slice(x, axes=[0], begin=[0], end=[9223372036854775807], strides=[2])", kN});
  // The exp kernel sees only the compound dim n - 1, which it cannot bind: legalization
  // gives it a fresh variable.
  Case chained{"slice_then_exp", {P("x", {"n", "3"})}, "R.exp(s)", kN};
  chained.prelude = "    s = R.strided_slice(x, axes=[0], begin=[1], end=[9223372036854775807])\n";
  chained.sizes = {{{"n", 2}}, {{"n", 13}}, {{"n", 1031}}};
  RunCase(chained);
  RunCase({"take", {P("x", {"n", "5"}), P("i", {"m"}, "int64", {0, 5})}, "R.take(x, i, axis=1)", kNm});
  RunCase({"take_axis0", {P("x", {"4", "n"}), P("i", {"m", "2"}, "int32", {0, 4})}, "R.take(x, i, axis=0)", kNm});
}

// ------------------------------------------------------------------ creation

TEST(LegalizeNumericsTest, Creation) {
  RunCase({"full_prim", {P("x", {"n"})}, "R.full(R.shape([n, 3]), R.prim(2.5), dtype=float32)", kN});
  RunCase({"full_tensor", {P("x", {"n"}), P("v", {}, "float32")}, "R.full(R.shape([n, 2]), v)", kN});
  RunCase({"zeros", {P("x", {"n"})}, "R.zeros(R.shape([n]), dtype=int32)", kN});
  RunCase({"ones", {P("x", {"n"})}, "R.ones(R.shape([2, n]))", kN});
  RunCase({"arange_attrs", {P("x", {"n"})}, "R.arange(start=2, end=17, step=3)", kN});
  RunCase({"arange_float", {P("x", {"n"})}, "R.arange(start=0.5, end=3.0, step=0.25, dtype=float32)", kN});
  RunCase({"arange_symbolic_end", {P("x", {"n"})}, "R.arange(R.prim(n))", kN});
  // The start p is no dim of the arange kernel's buffers: it is passed as a scalar.
  RunCase({"arange_symbolic_start", {P("x", {"p"}), P("y", {"n"})}, "R.arange(R.prim(p), R.prim(p + n))",
           {{{"p", 1}, {"n", 1}}, {{"p", 13}, {"n", 7}}, {{"p", 1031}, {"n", 3}}}});
  RunCase({"full_symbolic_value", {P("x", {"p"}), P("y", {"n"})}, "R.full(R.shape([n]), R.prim(p), dtype=float32)",
           {{{"p", 1}, {"n", 1}}, {{"p", 13}, {"n", 7}}}});
  RunCase({"arange_prim", {P("x", {"n"})}, "R.arange(R.prim(10), R.prim(0), R.prim(-3))", kN});
}

// ------------------------------------------------------------------ nn

TEST(LegalizeNumericsTest, WindowOps) {
  const std::vector<std::map<std::string, int64_t>> sizes = {{{"h", 1}, {"w", 1}}, {{"h", 7}, {"w", 13}}};
  RunCase({"conv2d", {P("x", {"1", "3", "h", "w"}), P("k", {"4", "3", "1", "1"})}, "R.conv2d(x, k)", sizes, 1e-5, 1e-5});
  RunCase({"conv2d_pad", {P("x", {"2", "4", "h", "w"}), P("k", {"6", "2", "3", "3"})},
           "R.conv2d(x, k, strides=[2, 1], padding=[1, 2], dilation=[1, 2], groups=2)", sizes, 1e-5, 1e-5});
  RunCase({"max_pool2d", {P("x", {"1", "2", "h", "w"})}, "R.max_pool2d(x, pool_size=[1, 1])", sizes});
  RunCase({"max_pool2d_pad", {P("x", {"1", "2", "h", "w"})},
           "R.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])", sizes});
}

}  // namespace
}  // namespace kiln
