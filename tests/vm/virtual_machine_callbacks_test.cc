// Objects, builtins with state, closures and builtins that call back into the VM.
#include <atomic>
#include <climits>

#include "builtins/default_builtins.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vm/executable_builder.h"
#include "vm/virtual_machine.h"

namespace kiln::vm {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class Counter final : public TypedObject<Counter> {
 public:
  static constexpr char kTypeName[] = "test.counter";
  std::atomic<int64_t> count{0};
};

// (int) -> int: adds to the counter the builtin was registered with; returns the new count.
absl::Status CounterAdd(BuiltinContext& ctx, const Value* const* args, int, Value* result) {
  absl::StatusOr<Counter*> counter = ctx.state_as<Counter>();
  if (!counter.ok()) return counter.status();
  *result = Value(static_cast<int64_t>((*counter)->count += args[0]->as_int()));
  return absl::OkStatus();
}

// () -> object:test.counter
absl::Status CounterNew(BuiltinContext&, const Value* const*, int, Value* result) {
  *result = Value::FromObject(std::make_shared<Counter>());
  return absl::OkStatus();
}

// (object:test.counter, int) -> int: the counter as an argument instead of state.
absl::Status CounterBump(BuiltinContext&, const Value* const* args, int, Value* result) {
  Counter& counter = args[0]->as_object<Counter>();
  *result = Value(static_cast<int64_t>(counter.count += args[1]->as_int()));
  return absl::OkStatus();
}

// (closure, any...) -> any: calls the closure with the remaining arguments, re-entering the
// VM; then checks that its own arguments are intact.
absl::Status Apply(BuiltinContext& ctx, const Value* const* args, int num_args, Value* result) {
  std::vector<Value> rest;
  for (int i = 1; i < num_args; ++i) rest.push_back(*args[i]);
  const Value* closure_before = args[0];
  absl::StatusOr<Value> r = ctx.vm->InvokeClosure(*args[0], rest.data(), rest.size());
  if (!r.ok()) return r.status();
  if (args[0] != closure_before || args[0]->kind() != Value::Kind::kClosure) {
    return absl::InternalError("arguments changed under a nested call");
  }
  *result = *r;
  return absl::OkStatus();
}

// kernel (h, t): writes the counter the handle points at into element 0 of an int64 tensor.
int32_t CounterToTensor(const KilnArg* args, int32_t num_args, KilnCallContext* ctx) {
  if (num_args != 2 || args[0].type_code != kKilnArgHandle || args[1].type_code != kKilnArgTensor) {
    ctx->set_error(ctx, "takes (handle, tensor)");
    return 1;
  }
  auto* object = static_cast<Object*>(args[0].value.handle);
  if (object->type_index() != Counter::TypeIndex()) {
    ctx->set_error(ctx, "not a counter");
    return 1;
  }
  DLTensor* out = args[1].value.tensor;
  static_cast<int64_t*>(out->data)[0] = static_cast<Counter*>(object)->count;
  return 0;
}

struct Fixture {
  std::shared_ptr<Counter> counter = std::make_shared<Counter>();
  BuiltinRegistry registry;
  Fixture() {
    builtins::RegisterMemoryBuiltins(registry);
    registry.RegisterBuiltin("test.counter_add", "(int) -> int", CounterAdd, counter);
    registry.RegisterBuiltin("test.counter_new", "() -> object:test.counter", CounterNew);
    registry.RegisterBuiltin("test.counter_bump", "(object:test.counter, int) -> int", CounterBump);
    registry.RegisterBuiltin("test.apply", "(closure, any...) -> any", Apply);
    registry.RegisterKernel("test.counter_to_tensor", "ht", CounterToTensor);
  }
  std::shared_ptr<const Executable> Load(ExecutableBuilder& b) {
    absl::StatusOr<std::string> bytes = b.Build();
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    if (!bytes.ok()) return nullptr;
    absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(*bytes, registry);
    EXPECT_TRUE(exe.ok()) << exe.status();
    return exe.ok() ? *exe : nullptr;
  }
};

TEST(VirtualMachineObjects, BuiltinBoundToStateCountsAcrossCalls) {
  Fixture fx;
  ExecutableBuilder b;
  int32_t add = b.DeclareBuiltin("test.counter_add", "(int) -> int");
  FunctionBuilder& f = b.AddFunction("tick", {IntParam("k")});
  int32_t r1 = f.NewRegister(), r2 = f.NewRegister();
  f.CallBuiltin(r1, add, {Operand::Reg(f.param(0))});
  f.CallBuiltin(r2, add, {Operand::Imm(1)});
  f.Ret(r2);
  auto exe = fx.Load(b);
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  EXPECT_EQ(vm.Invoke("tick", {Value(int64_t{10})})->as_int(), 11);
  EXPECT_EQ(vm.Invoke("tick", {Value(int64_t{5})})->as_int(), 17);
  VirtualMachine other(exe);  // the state belongs to the registry's builtin, shared by VMs
  EXPECT_EQ(other.Invoke("tick", {Value(int64_t{0})})->as_int(), 18);
  EXPECT_EQ(fx.counter->count, 18);

  // A wrong argument kind is refused before the builtin runs, naming it and the argument.
  ExecutableBuilder c;
  int32_t add2 = c.DeclareBuiltin("test.counter_add", "(any) -> int");
  FunctionBuilder& g = c.AddFunction("bad", {AnyParam("x")});
  int32_t r = g.NewRegister();
  g.CallBuiltin(r, add2, {Operand::Reg(g.param(0))});
  g.Ret(r);
  auto bad = fx.Load(c);
  ASSERT_NE(bad, nullptr);
  VirtualMachine vm2(bad);
  absl::StatusOr<Value> wrong = vm2.Invoke("bad", {Value::FromString("x")});
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(std::string(wrong.status().message()),
              HasSubstr("builtin 'test.counter_add' argument 0: expected int, got string \"x\""));
  EXPECT_EQ(fx.counter->count, 18);
}

// A builtin or library function the registry lacks is refused at load, naming it and the
// registered name it is a typo of; CheckRuntimeProvides says the same without loading, for
// the names of one namespace only (kiln compile checks Kiln's own).
TEST(VirtualMachineObjects, AMisspeltBuiltinIsNamedWithTheNearestRegisteredOne) {
  Fixture fx;
  ExecutableBuilder b;
  int32_t add = b.DeclareBuiltin("test.counter_ad", "(int) -> int");
  int32_t other = b.DeclareBuiltin("app.elsewhere", "(int) -> int");
  FunctionBuilder& f = b.AddFunction("tick", {IntParam("k")});
  int32_t r = f.NewRegister();
  f.CallBuiltin(r, add, {Operand::Reg(f.param(0))});
  f.CallBuiltin(r, other, {Operand::Reg(r)});
  f.Ret(r);
  absl::StatusOr<std::string> bytes = b.Build();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(*bytes, fx.registry);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().message(),
            "executable needs builtin 'test.counter_ad', which this runtime does not provide (did you mean "
            "'test.counter_add'?)");
  absl::StatusOr<Executable::Contents> contents = Executable::Decode(*bytes);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_EQ(Executable::CheckRuntimeProvides(*contents, fx.registry, "test.").message(), exe.status().message());
  EXPECT_TRUE(Executable::CheckRuntimeProvides(*contents, fx.registry, "kiln.").ok());
  EXPECT_THAT(std::string(Executable::CheckRuntimeProvides(*contents, fx.registry, "app.").message()),
              AllOf(HasSubstr("builtin 'app.elsewhere', which this runtime does not provide"), Not(HasSubstr("mean"))));

  ExecutableBuilder c;
  c.DeclareKernel("test.counter_to_tensr", "ht", KernelDecl::Source::kLibrary);
  FunctionBuilder& g = c.AddFunction("main", {});
  g.Ret(g.NewRegister());
  absl::StatusOr<std::string> kernel_bytes = c.Build();
  ASSERT_TRUE(kernel_bytes.ok()) << kernel_bytes.status();
  absl::StatusOr<std::shared_ptr<const Executable>> kernel_exe = Executable::Load(*kernel_bytes, fx.registry);
  ASSERT_FALSE(kernel_exe.ok());
  EXPECT_THAT(std::string(kernel_exe.status().message()),
              HasSubstr("library function 'test.counter_to_tensr', which this runtime does not provide (did you mean "
                        "'test.counter_to_tensor'?)"));
}

TEST(VirtualMachineObjects, ObjectsPassThroughRegistersToBuiltinsAndKernels) {
  Fixture fx;
  ExecutableBuilder b;
  int32_t make = b.DeclareBuiltin("test.counter_new", "() -> object");
  int32_t bump = b.DeclareBuiltin("test.counter_bump", "(object, int) -> int");
  int32_t alloc = b.DeclareBuiltin("kiln.alloc_tensor", "(shape, int) -> tensor");
  int32_t read = b.DeclareKernel("test.counter_to_tensor", "ht", KernelDecl::Source::kLibrary);
  FunctionBuilder& f = b.AddFunction("main", {IntParam("k")});
  int32_t c = f.NewRegister(), x = f.NewRegister(), shape = f.NewRegister(), out = f.NewRegister();
  f.CallBuiltin(c, make, {});
  f.CallBuiltin(x, bump, {Operand::Reg(c), Operand::Reg(f.param(0))});
  f.CallBuiltin(x, bump, {Operand::Reg(c), Operand::Imm(2)});
  f.MakeShape(shape, {Operand::Imm(1)});
  f.CallBuiltin(out, alloc, {Operand::Reg(shape), Operand::Imm(PackDType(DTypeInt64()))});
  f.CallKernel(read, {Operand::Reg(c), Operand::Reg(out)});
  f.Ret(out);
  auto exe = fx.Load(b);
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  absl::StatusOr<Value> r = vm.Invoke("main", {Value(int64_t{40})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->as_tensor().data_as<int64_t>()[0], 42);
}

TEST(VirtualMachineObjects, LoadRefusesAnIncompatibleSignatureNamingBoth) {
  Fixture fx;
  ExecutableBuilder b;
  int32_t bump = b.DeclareBuiltin("test.counter_bump", "(object:storage, int) -> int");
  FunctionBuilder& f = b.AddFunction("main", {AnyParam("s")});
  int32_t r = f.NewRegister();
  f.CallBuiltin(r, bump, {Operand::Reg(f.param(0)), Operand::Imm(1)});
  f.Ret(r);
  absl::StatusOr<std::string> bytes = b.Build();
  ASSERT_TRUE(bytes.ok());
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(*bytes, fx.registry);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().message(),
            "builtin 'test.counter_bump' has signature (object:test.counter, int) -> int in this runtime but the "
            "executable expects (object:storage, int) -> int");
}

// inc(k) = k + 1; add(a, b) = a + b; main(k) = apply(closure inc, k) + apply(closure add[10], k)
// + (closure add[100])(k) called from bytecode.
TEST(VirtualMachineClosures, BytecodeAndBuiltinsInvokeClosures) {
  Fixture fx;
  ExecutableBuilder b;
  int32_t apply = b.DeclareBuiltin("test.apply", "(closure, any...) -> any");
  FunctionBuilder& inc = b.AddFunction("inc", {IntParam("k")});
  int32_t one = inc.NewRegister();
  inc.IntOp(one, IntOpKind::kAdd, Operand::Reg(inc.param(0)), Operand::Imm(1));
  inc.Ret(one);
  FunctionBuilder& add = b.AddFunction("add", {IntParam("a"), IntParam("b")});
  int32_t sum = add.NewRegister();
  add.IntOp(sum, IntOpKind::kAdd, Operand::Reg(add.param(0)), Operand::Reg(add.param(1)));
  add.Ret(sum);
  FunctionBuilder& f = b.AddFunction("main", {IntParam("k")});
  int32_t c_inc = f.NewRegister(), c_add = f.NewRegister(), c_add100 = f.NewRegister(), x = f.NewRegister(),
          y = f.NewRegister(), z = f.NewRegister(), t = f.NewRegister();
  f.MakeClosure(c_inc, b.FunctionIndex("inc"), {});
  f.MakeClosure(c_add, b.FunctionIndex("add"), {Operand::Imm(10)});
  f.MakeClosure(c_add100, b.FunctionIndex("add"), {Operand::Imm(100)});
  f.CallBuiltin(x, apply, {Operand::Reg(c_inc), Operand::Reg(f.param(0))});
  f.CallBuiltin(y, apply, {Operand::Reg(c_add), Operand::Reg(f.param(0))});
  f.CallClosure(z, c_add100, {Operand::Reg(f.param(0))});
  f.IntOp(t, IntOpKind::kAdd, Operand::Reg(x), Operand::Reg(y));
  f.IntOp(t, IntOpKind::kAdd, Operand::Reg(t), Operand::Reg(z));
  f.Ret(t);
  auto exe = fx.Load(b);
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  absl::StatusOr<Value> r = vm.Invoke("main", {Value(int64_t{5})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->as_int(), (5 + 1) + (10 + 5) + (100 + 5));

  // Embedders make and call closures too; a wrong arity is an error naming the function.
  absl::StatusOr<Value> closure = vm.MakeClosure("add", {Value(int64_t{7})});
  ASSERT_TRUE(closure.ok());
  Value arg(int64_t{3});
  EXPECT_EQ(vm.InvokeClosure(*closure, &arg, 1)->as_int(), 10);
  absl::StatusOr<Value> wrong = vm.InvokeClosure(*closure, nullptr, 0);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(std::string(wrong.status().message()),
              HasSubstr("closure of function 'add' called with 0 arguments; it takes 1 besides its 1 captured"));
  EXPECT_THAT(std::string(vm.InvokeClosure(Value(int64_t{1}), nullptr, 0).status().message()),
              HasSubstr("expected a closure to call, got int 1"));
}

// down(k) = k == 0 ? 0 : 1 + apply(closure down, k - 1): recursion through a builtin.
std::shared_ptr<const Executable> RecursionThroughBuiltin(Fixture& fx) {
  ExecutableBuilder b;
  int32_t apply = b.DeclareBuiltin("test.apply", "(closure, any...) -> any");
  FunctionBuilder& f = b.AddFunction("down", {IntParam("k")});
  int32_t zero = f.NewRegister(), self = f.NewRegister(), km1 = f.NewRegister(), r = f.NewRegister();
  FunctionBuilder::Label recurse = f.NewLabel();
  f.IntOp(zero, IntOpKind::kEQ, Operand::Reg(f.param(0)), Operand::Imm(0));
  f.If(zero, recurse);
  f.Ret(f.param(0));
  f.Bind(recurse);
  f.MakeClosure(self, 0, {});
  f.IntOp(km1, IntOpKind::kSub, Operand::Reg(f.param(0)), Operand::Imm(1));
  f.SetDebugName("r");
  f.CallBuiltin(r, apply, {Operand::Reg(self), Operand::Reg(km1)});
  f.IntOp(r, IntOpKind::kAdd, Operand::Reg(r), Operand::Imm(1));
  f.Ret(r);
  return fx.Load(b);
}

TEST(VirtualMachineClosures, RecursionThroughABuiltinAndItsDepthLimit) {
  Fixture fx;
  auto exe = RecursionThroughBuiltin(fx);
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  for (int64_t k : {0, 1, 7, 200}) {
    absl::StatusOr<Value> r = vm.Invoke("down", {Value(k)});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->as_int(), k);
  }
  absl::StatusOr<Value> deep = vm.Invoke("down", {Value(int64_t{100000})});
  ASSERT_FALSE(deep.ok());
  const std::string message(deep.status().message());
  EXPECT_EQ(deep.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(message,
            "call depth limit of 256 nested calls exceeded calling function 'down' (unbounded recursion?) in "
            "function 'down' at instruction 5 (r)");
  EXPECT_THAT(message, Not(HasSubstr("\n")));
  // The VM is usable afterwards.
  EXPECT_EQ(vm.Invoke("down", {Value(int64_t{3})})->as_int(), 3);
}

TEST(VirtualMachineClosures, DirectRecursionHitsTheLimitInOneLine) {
  ExecutableBuilder b;
  FunctionBuilder& f = b.AddFunction("forever", {IntParam("k")});
  int32_t r = f.NewRegister();
  f.CallFunction(r, 0, {Operand::Reg(f.param(0))});
  f.Ret(r);
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(*b.Build(), builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok());
  VirtualMachine vm(*exe);
  absl::StatusOr<Value> result = vm.Invoke("forever", {Value(int64_t{1})});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "call depth limit of 256 nested calls exceeded calling function 'forever' (unbounded recursion?) in "
            "function 'forever' at instruction 0");
}

// A builtin's argument pointers stay valid while a nested call needs far more registers
// than were ever in use (the frame stack grows without moving live frames).
TEST(VirtualMachineClosures, ArgumentsSurviveNestedCallsThatGrowTheStack) {
  Fixture fx;
  ExecutableBuilder b;
  int32_t apply = b.DeclareBuiltin("test.apply", "(closure, any...) -> any");
  FunctionBuilder& big = b.AddFunction("big", {IntParam("k")});
  int32_t last = 0;
  for (int i = 0; i < 5000; ++i) last = big.NewRegister();
  big.IntOp(last, IntOpKind::kMul, Operand::Reg(big.param(0)), Operand::Imm(3));
  big.Ret(last);
  FunctionBuilder& f = b.AddFunction("main", {IntParam("k")});
  int32_t c = f.NewRegister(), r = f.NewRegister();
  f.MakeClosure(c, b.FunctionIndex("big"), {});
  f.CallBuiltin(r, apply, {Operand::Reg(c), Operand::Reg(f.param(0))});
  f.Ret(r);
  auto exe = fx.Load(b);
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  absl::StatusOr<Value> result = vm.Invoke("main", {Value(int64_t{14})});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->as_int(), 42);
}

TEST(VirtualMachineIntegers, OverflowAndDivisionErrorsAreClear) {
  ExecutableBuilder b;
  struct Case {
    IntOpKind op;
    const char* name;
  };
  for (auto [op, name] : {Case{IntOpKind::kAdd, "add"}, Case{IntOpKind::kSub, "sub"}, Case{IntOpKind::kMul, "mul"},
                          Case{IntOpKind::kFloorDiv, "floordiv"}, Case{IntOpKind::kFloorMod, "floormod"}}) {
    FunctionBuilder& f = b.AddFunction(name, {IntParam("a"), IntParam("b")});
    int32_t r = f.NewRegister();
    f.SetDebugName("r");
    f.IntOp(r, op, Operand::Reg(f.param(0)), Operand::Reg(f.param(1)));
    f.Ret(r);
  }
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(*b.Build(), builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok());
  VirtualMachine vm(*exe);
  auto run = [&](const char* fn, int64_t a, int64_t x) { return vm.Invoke(fn, {Value(a), Value(x)}); };
  auto error = [&](const char* fn, int64_t a, int64_t x) { return std::string(run(fn, a, x).status().message()); };
  EXPECT_EQ(error("add", INT64_MAX, 1), "in function 'add' at instruction 0 (r): add(9223372036854775807, 1) overflows int64");
  EXPECT_THAT(error("sub", INT64_MIN, 1), HasSubstr("sub(-9223372036854775808, 1) overflows int64"));
  EXPECT_THAT(error("mul", int64_t{1} << 40, int64_t{1} << 30), HasSubstr("overflows int64"));
  EXPECT_THAT(error("floordiv", INT64_MIN, -1), HasSubstr("floordiv(-9223372036854775808, -1) overflows int64"));
  EXPECT_THAT(error("floordiv", 5, 0), HasSubstr("floordiv(5, 0): division by zero"));
  EXPECT_THAT(error("floormod", 5, 0), HasSubstr("division by zero"));
  // Exact results at the edges.
  EXPECT_EQ(run("floormod", INT64_MIN, -1)->as_int(), 0);
  EXPECT_EQ(run("floordiv", INT64_MAX, -1)->as_int(), -INT64_MAX);
  EXPECT_EQ(run("floordiv", -7, 2)->as_int(), -4);
  EXPECT_EQ(run("floormod", -7, 2)->as_int(), 1);
  EXPECT_EQ(run("mul", -(int64_t{1} << 62), 2)->as_int(), INT64_MIN);
  EXPECT_EQ(run("add", INT64_MAX, INT64_MIN)->as_int(), -1);
}

}  // namespace
}  // namespace kiln::vm
