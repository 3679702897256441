// Relations between symbolic dims that inference assumed (relax/op/assumed_relations.h) are
// checked at run time before the function's first kernel (relax/transform/
// insert_shape_checks.h). Every operator whose inference accepts an unprovable relation is
// compiled with symbolic inputs by the real pipeline and run through the VM: matching shapes
// run, a mismatched shape fails with an error naming the function, the binding, the operator
// and the run-time values - never garbage, an out-of-bounds read or a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/insert_shape_checks.h"
#include "relax/transform/pipeline.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace kiln::codegen {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const vm::Executable> CompileAndLoad(const std::string& text) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, "shape_check.kir");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return nullptr;
  relax::PipelineOptions options;
  options.check_well_formed = true;
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, options, &parsed->locations);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (!lowered.ok()) return nullptr;
  absl::StatusOr<std::string> bytes = BuildExecutable(*lowered, CpuTarget::Host());
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  if (!bytes.ok()) return nullptr;
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? *exe : nullptr;
}

// An argument: a tensor of `shape` (float32 unless `dtype` says otherwise), or a Shape value.
struct Arg {
  std::vector<int64_t> shape;
  DLDataType dtype = vm::DTypeFloat32();
  bool is_shape = false;
};
Arg F32(std::vector<int64_t> shape) { return {std::move(shape)}; }
Arg I64(std::vector<int64_t> shape) { return {std::move(shape), vm::DTypeInt64()}; }
Arg Bool(std::vector<int64_t> shape) { return {std::move(shape), DLDataType{vm::kDTypeBool, 8, 1}}; }
Arg ShapeValue(std::vector<int64_t> values) { return {std::move(values), {}, true}; }

std::vector<vm::Value> Values(const std::vector<Arg>& args) {
  std::vector<vm::Value> out;
  for (const Arg& a : args) {
    if (a.is_shape) {
      out.push_back(vm::Value::FromShape(a.shape));
      continue;
    }
    vm::Tensor t = *vm::Tensor::Empty(a.shape, a.dtype);
    // Small valid values of any type: zero bytes (index 0, false, 0.0).
    std::fill_n(static_cast<uint8_t*>(t.data()), static_cast<size_t>(vm::DTypeStorageBytes(a.dtype, t.numel())), 0);
    out.push_back(vm::Value(std::move(t)));
  }
  return out;
}

struct Case {
  std::string name;
  std::string module;
  std::vector<Arg> good;  // shapes for which the relation holds: the call runs
  std::vector<Arg> bad;   // shapes for which it does not
  std::string error;      // what the error must say (after the VM's "in function 'main' ...")
};

std::vector<Case> Cases() {
  auto func = [](const std::string& params, const std::string& ret, const std::string& body) {
    return "module {\n  func @main(" + params + ") -> " + ret + " {\n    dataflow {\n" + body +
           "    }\n    return y\n  }\n}\n";
  };
  return {
      {"matmul inner dims",
       func("a: Tensor((n, k), float32), b: Tensor((m, p), float32)", "Tensor((n, p), float32)",
            "      y = R.matmul(a, b)\n"),
       {F32({3, 4}), F32({4, 2})},
       {F32({3, 5}), F32({4, 2})},
       "binding 'y': matmul: inner dimensions differ at run time: lhs dim 1 is 5, rhs dim 0 is 4"},
      {"matmul batch dims",
       func("a: Tensor((s, n, k), float32), b: Tensor((t, k, p), float32)", "Tensor((s, n, p), float32)",
            "      y = R.matmul(a, b)\n"),
       {F32({2, 3, 4}), F32({2, 4, 2})},
       {F32({2, 3, 4}), F32({3, 4, 2})},
       "binding 'y': matmul: shapes do not broadcast at run time: lhs dim 0 is 2, rhs dim 0 is 3"},
      {"add symbolic against symbolic",
       func("a: Tensor((n,), float32), b: Tensor((m,), float32)", "Tensor((n,), float32)",
            "      y = R.add(a, b)\n"),
       {F32({7}), F32({7})},
       {F32({3}), F32({1000})},
       "binding 'y': add: shapes do not broadcast at run time: lhs dim 0 is 3, rhs dim 0 is 1000"},
      {"multiply symbolic against constant",
       func("a: Tensor((n, 4), float32), b: Tensor((m,), float32)", "Tensor((n, 4), float32)",
            "      y = R.multiply(a, b)\n"),
       {F32({2, 4}), F32({4})},
       {F32({2, 4}), F32({9})},
       "binding 'y': multiply: shapes do not broadcast at run time: lhs dim 1 is 4, rhs dim 0 is 9"},
      {"comparison",
       func("a: Tensor((n,), float32), b: Tensor((m,), float32)", "Tensor((n,), bool)",
            "      y = R.less(a, b)\n"),
       {F32({5}), F32({5})},
       {F32({5}), F32({6})},
       "binding 'y': less: shapes do not broadcast at run time: lhs dim 0 is 5, rhs dim 0 is 6"},
      {"where x against y",
       func("c: Tensor((n,), bool), a: Tensor((m,), float32), b: Tensor((k,), float32)", "Tensor((n,), float32)",
            "      y = R.where(c, a, b)\n"),
       {Bool({4}), F32({4}), F32({4})},
       {Bool({4}), F32({4}), F32({8})},
       "binding 'y': where: shapes do not broadcast at run time: x dim 0 is 4, y dim 0 is 8"},
      {"where condition",
       func("c: Tensor((n,), bool), a: Tensor((m,), float32), b: Tensor((m,), float32)", "Tensor((n,), float32)",
            "      y = R.where(c, a, b)\n"),
       {Bool({4}), F32({4}), F32({4})},
       {Bool({2}), F32({4}), F32({4})},
       "binding 'y': where: shapes do not broadcast at run time: condition dim 0 is 2, x/y dim 0 is 4"},
      {"broadcast_to",
       func("a: Tensor((n,), float32), s: Shape((r, m))", "Tensor((r, m), float32)",
            "      y = R.broadcast_to(a, s)\n"),
       {F32({3}), ShapeValue({2, 3})},
       {F32({3}), ShapeValue({2, 5})},
       "binding 'y': broadcast_to: cannot broadcast at run time: data dim 0 is 3, target dim 1 is 5"},
      {"concat off-axis dims",
       func("a: Tensor((n, c), float32), b: Tensor((m, d), float32)", "Tensor((n + m, c), float32)",
            "      y = R.concat((a, b), axis=0)\n"),
       {F32({2, 3}), F32({4, 3})},
       {F32({2, 3}), F32({4, 2})},
       "binding 'y': concat: dims off the axis differ at run time: field 1 dim 1 is 2, field 0 dim 1 is 3"},
      {"layer_norm gamma",
       func("x: Tensor((n, d), float32), g: Tensor((e,), float32), b: Tensor((d,), float32)",
            "Tensor((n, d), float32)", "      y = R.layer_norm(x, g, b, axes=[-1], epsilon=1e-05)\n"),
       {F32({2, 8}), F32({8}), F32({8})},
       {F32({2, 8}), F32({16}), F32({8})},
       "binding 'y': layer_norm: gamma dim 0 is 16 at run time, data dim 1 (a normalized axis) is 8"},
      {"layer_norm beta",
       func("x: Tensor((n, d), float32), g: Tensor((d,), float32), b: Tensor((e,), float32)",
            "Tensor((n, d), float32)", "      y = R.layer_norm(x, g, b, axes=[-1], epsilon=1e-05)\n"),
       {F32({2, 8}), F32({8}), F32({8})},
       {F32({2, 8}), F32({8}), F32({3})},
       "binding 'y': layer_norm: beta dim 0 is 3 at run time, data dim 1 (a normalized axis) is 8"},
      {"rms_norm weight",
       func("x: Tensor((n, d), float32), w: Tensor((e,), float32)", "Tensor((n, d), float32)",
            "      y = R.rms_norm(x, w, axes=[-1], epsilon=1e-05)\n"),
       {F32({2, 8}), F32({8})},
       {F32({2, 8}), F32({7})},
       "binding 'y': rms_norm: weight dim 0 is 7 at run time, data dim 1 (a normalized axis) is 8"},
      {"conv2d channels",
       func("x: Tensor((1, c, 6, 6), float32), w: Tensor((4, i, 3, 3), float32)", "Tensor((1, 4, 4, 4), float32)",
            "      y = R.conv2d(x, w)\n"),
       {F32({1, 3, 6, 6}), F32({4, 3, 3, 3})},
       {F32({1, 3, 6, 6}), F32({4, 2, 3, 3})},
       "binding 'y': conv2d: data channels (dim 1) are 3 at run time, weight in_channels (dim 1) * groups (1) is 2"},
      {"max_pool2d window",
       func("x: Tensor((1, 1, h, w), float32)", "Tensor(ndim=4, float32)",
            "      y = R.max_pool2d(x, pool_size=[3, 3])\n"),
       {F32({1, 1, 6, 6}), },
       {F32({1, 1, 2, 6})},
       "binding 'y': max_pool2d: the window spans 3 at run time, more than the padded height dim (h + 0 = 2)"},
      {"rotary_embedding positions",
       func("x: Tensor((n, 2, 8), float32), p: Tensor((m,), int64)", "Tensor((n, 2, 8), float32)",
            "      y = R.rotary_embedding(x, p)\n"),
       {F32({3, 2, 8}), I64({3})},
       {F32({3, 2, 8}), I64({2})},
       "binding 'y': rotary_embedding: x has 3 rows at run time but positions has 2"},
      {"reshape to symbolic dims",
       func("x: Tensor((n, m), float32), s: Shape((a, b))", "Tensor((a, b), float32)",
            "      y = R.reshape(x, s)\n"),
       {F32({4, 6}), ShapeValue({3, 8})},
       {F32({4, 6}), ShapeValue({5, 5})},
       "binding 'y': reshape: element counts differ at run time: data (n, m) has 24 elements, the new shape (a, b) has 25"},
      {"reshape with -1",
       func("x: Tensor((n,), float32)", "Tensor(ndim=2, float32)",
            "      y = R.reshape(x, R.shape([-1, 3]))\n"),
       {F32({12})},
       {F32({13})},
       "binding 'y': reshape: cannot infer the -1 dim at run time: data (n) has 13 elements, which the other "
       "dims of (-1, 3) (3 elements) do not divide"},
      {"split into sections",
       func("x: Tensor((n, 2), float32)", "Tensor(ndim=2, float32)",
            "      parts = R.split(x, indices_or_sections=3, axis=0)\n      y = parts[0]\n"),
       {F32({9, 2})},
       {F32({7, 2})},
       "binding 'parts': split: dim 0 is 7 at run time, which does not split into 3 equal sections"},
      {"split at indices",
       func("x: Tensor((n,), float32)", "Tensor(ndim=1, float32)",
            "      parts = R.split(x, indices_or_sections=[2, 5])\n      y = parts[0]\n"),
       {F32({6})},
       {F32({4})},
       "binding 'parts': split: split index 5 is past the end of dim 0 (n is 4 at run time)"},
      // Before, an empty axis returned indices the kernel never wrote (0, 3, -1, 0).
      {"argmax over an empty axis",
       func("x: Tensor((n, 4), float32)", "Tensor((4,), int64)", "      y = R.argmax(x, axis=0)\n"),
       {F32({1, 4})},
       {F32({0, 4})},
       "binding 'y': argmax: an empty axis has no index to return: at least 1 element needed along data dim 0 (n), "
       "got 0 at run time"},
      // Before, a symbolic step of 0 failed as "floordiv(9, 0): division by zero" and a
      // reversed range as "negative dimension in shape [-5]", naming neither binding nor op.
      {"arange with a symbolic step",
       func("s: Shape((k,))", "Tensor(ndim=1, int64)", "      y = R.arange(R.prim(0), R.prim(10), R.prim(k))\n"),
       {ShapeValue({3})},
       {ShapeValue({0})},
       "binding 'y': arange: a symbolic step must be at least 1, but it is 0 at run time"},
      {"arange over a reversed range",
       func("s: Shape((k,))", "Tensor(ndim=1, int64)", "      y = R.arange(R.prim(5), R.prim(k))\n"),
       {ShapeValue({5})},
       {ShapeValue({3})},
       "binding 'y': arange: the range is reversed at run time: its length k - 5 must be at least 0, but it is -2"},
      {"argmin over empty data",
       func("x: Tensor((n, m), float32)", "Tensor((), int64)", "      y = R.argmin(x)\n"),
       {F32({2, 3})},
       {F32({2, 0})},
       "binding 'y': argmin: an empty axis has no index to return: at least 1 element needed along the data (m * n), "
       "got 0 at run time"},
  };
}

TEST(ShapeCheck, EveryAssumedRelationIsCheckedBeforeTheFirstKernel) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::shared_ptr<const vm::Executable> exe = CompileAndLoad(c.module);
    if (exe == nullptr) continue;
    vm::VirtualMachine machine(exe);
    absl::StatusOr<vm::Value> good = machine.Invoke("main", Values(c.good));
    EXPECT_TRUE(good.ok()) << good.status();
    absl::StatusOr<vm::Value> bad = machine.Invoke("main", Values(c.bad));
    ASSERT_FALSE(bad.ok()) << "a mismatched shape ran";
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr("in function 'main'"));
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr("(shape check): "));
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(c.error));
  }
}

// The checks come first: before any kernel, even one that does not depend on them.
TEST(ShapeCheck, ChecksAreHoistedToWhereTheirVariablesAreBound) {
  const std::string text = R"(module {
  func @main(a: Tensor((n, k), float32), b: Tensor((m, p), float32), z: Tensor(ndim=1, float32)) -> Tensor(ndim=2, float32) {
    dataflow {
      e = R.exp(a)
      w = match_cast(z, Tensor((q,), float32))
      u = R.add(w, w)
      y0 = R.matmul(e, b)
      y1 = R.reshape(y0, R.shape([q, -1]))
      y = R.multiply(y1, y1)
    }
    return y
  }
})";
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, "hoist.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed->module, &parsed->locations);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  absl::StatusOr<relax::IRModule> checked = relax::InsertShapeChecks(*normalized);
  ASSERT_TRUE(checked.ok()) << checked.status();
  const std::string printed = relax::PrintModule(*checked);
  // The matmul's check (variables from the parameters) precedes the first binding; the
  // reshape's (q comes from the match_cast) follows the match_cast.
  const size_t matmul_check = printed.find("inner dimensions differ");
  const size_t first_kernel = printed.find("R.exp(");
  const size_t match = printed.find("match_cast(");
  const size_t reshape_check = printed.find("binding 'y1': reshape");
  ASSERT_NE(matmul_check, std::string::npos) << printed;
  ASSERT_NE(reshape_check, std::string::npos) << printed;
  EXPECT_LT(matmul_check, first_kernel) << printed;
  EXPECT_LT(match, reshape_check) << printed;
  EXPECT_LT(reshape_check, printed.find("R.add(")) << printed;

  std::shared_ptr<const vm::Executable> exe = CompileAndLoad(text);
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  EXPECT_TRUE(machine.Invoke("main", Values({F32({3, 4}), F32({4, 2}), F32({3})})).ok());
  absl::StatusOr<vm::Value> bad = machine.Invoke("main", Values({F32({3, 4}), F32({4, 2}), F32({4})}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("binding 'y1': reshape: cannot infer the -1 dim at run time: data (n, p) has 6 elements"));
}

// Checks inside If branches stay in their branch: a relation the untaken branch assumed is
// not checked.
TEST(ShapeCheck, ChecksInABranchRunOnlyWhenItIsTaken) {
  const std::string text = R"(module {
  func @main(c: Prim(bool), a: Tensor((n,), float32), b: Tensor((m,), float32)) -> Tensor((n,), float32) {
    r = if c {
      s = R.add(a, b)
      yield s
    } else {
      yield a
    }
    return r
  }
})";
  std::shared_ptr<const vm::Executable> exe = CompileAndLoad(text);
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  std::vector<vm::Value> args = Values({F32({3}), F32({4})});
  args.insert(args.begin(), vm::Value(false));
  EXPECT_TRUE(machine.Invoke("main", args).ok());
  args[0] = vm::Value(true);
  absl::StatusOr<vm::Value> bad = machine.Invoke("main", args);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("binding 's': add: shapes do not broadcast at run time: lhs dim 0 is 3, rhs dim 0 is 4"));
}

// take's indices are data: an index out of range (after negative indices count from the
// end) stops the kernel with an error instead of reading outside the table.
TEST(ShapeCheck, TakeWithAnIndexOutOfRangeIsAnError) {
  std::shared_ptr<const vm::Executable> exe = CompileAndLoad(R"(module {
  func @main(d: Tensor((n, 4), float32), i: Tensor((m,), int64)) -> Tensor((m, 4), float32) {
    dataflow {
      y = R.take(d, i, axis=0)
    }
    return y
  }
})");
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  vm::Tensor table = *vm::Tensor::Empty({3, 4}, vm::DTypeFloat32());
  for (int k = 0; k < 12; ++k) table.data_as<float>()[k] = static_cast<float>(k);
  auto run = [&](std::vector<int64_t> indices) {
    vm::Tensor t = *vm::Tensor::Empty({static_cast<int64_t>(indices.size())}, vm::DTypeInt64());
    std::copy(indices.begin(), indices.end(), t.data_as<int64_t>());
    return machine.Invoke("main", {vm::Value(table), vm::Value(std::move(t))});
  };
  absl::StatusOr<vm::Value> ok = run({2, 0, -1, -3});
  ASSERT_TRUE(ok.ok()) << ok.status();
  const float* got = ok->as_tensor().data_as<float>();
  const float want[] = {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11, 0, 1, 2, 3};
  for (int k = 0; k < 16; ++k) EXPECT_EQ(got[k], want[k]) << k;
  for (int64_t bad : {3, 1000000, -4}) {
    absl::StatusOr<vm::Value> r = run({0, bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("is out of range for dim 0 of 'A'")) << bad;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("(extent 3")) << bad;
    // The index given, not the wrapped one (-4 read as -1, itself a valid index).
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(absl::StrCat("index ", bad, " is out of range"))) << bad;
  }
}

}  // namespace
}  // namespace kiln::codegen
