#include "vm/virtual_machine.h"

#include <cstring>
#include <thread>

#include "builtins/default_builtins.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/vm/test_programs.h"

namespace kiln::vm {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::shared_ptr<const Executable> LoadSample() {
  std::string bytes = testing::BuildSampleExecutable();
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(bytes, builtins::DefaultRegistry());
  EXPECT_TRUE(exe.ok()) << exe.status() << " / " << bytes.substr(0, 200);
  return exe.ok() ? *exe : nullptr;
}

Tensor Filled(std::vector<int64_t> shape, float start) {
  Tensor t = *Tensor::Empty(shape, DTypeFloat32());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = start + static_cast<float>(i);
  return t;
}

TEST(VirtualMachine, LoopsWithIfAndGoto) {
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  for (int64_t k : {0, 1, 10, 1000}) {
    absl::StatusOr<Value> r = vm.Invoke("sum_to", {Value(k)});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->as_int(), k * (k + 1) / 2);
  }
}

// A step limit bounds loops (backward jumps) and calls of one top-level call; each call
// starts with the full budget, and without a limit nothing is counted.
TEST(VirtualMachine, StepLimitStopsLongLoopsAndRecursionWithAClearError) {
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  vm.SetStepLimit(50);
  absl::StatusOr<Value> r = vm.Invoke("sum_to", {Value(int64_t{10})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->as_int(), 55);
  r = vm.Invoke("sum_to", {Value(int64_t{1000})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("step limit of 50 backward jumps and calls exceeded in function 'sum_to'"));
  r = vm.Invoke("fib", {Value(int64_t{12})});  // 465 calls
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("step limit of 50"));
  r = vm.Invoke("sum_to", {Value(int64_t{10})});  // the budget is per call
  ASSERT_TRUE(r.ok()) << r.status();
  vm.SetStepLimit(0);
  r = vm.Invoke("sum_to", {Value(int64_t{1000})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->as_int(), 500500);
}

TEST(VirtualMachine, RecursiveCallsBetweenBytecodeFunctions) {
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  int64_t expected[] = {0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144};
  for (int k = 0; k <= 12; ++k) {
    absl::StatusOr<Value> r = vm.Invoke("fib", {Value(int64_t{k})});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->as_int(), expected[k]);
  }
}

TEST(VirtualMachine, SymbolicShapesPlannedStorageAndACKernelFromTheFile) {
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  for (int64_t n : {1, 7, 300}) {
    Tensor x = Filled({n, 4}, 1.0f), y = Filled({n, 4}, -5.0f);
    absl::StatusOr<Value> r = vm.Invoke("main", {Value(x), Value(y)});
    ASSERT_TRUE(r.ok()) << r.status();
    const Tensor& out = r->as_tensor();
    ASSERT_EQ(out.shape(), (std::vector<int64_t>{n, 4}));
    for (int64_t i = 0; i < n * 4; ++i) {
      EXPECT_EQ(out.data_as<float>()[i], 3.0f * (1.0f + i) + (-5.0f + i)) << i;
    }
  }
}

TEST(VirtualMachine, LibraryKernelsAndBuiltinsMixWithGeneratedKernels) {
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  Tensor a = Filled({100000}, 0.5f), b = Filled({100000}, 2.0f);
  absl::StatusOr<Value> r = vm.Invoke("add_lib", {Value(a), Value(b)});
  ASSERT_TRUE(r.ok()) << r.status();
  for (int64_t i = 0; i < 100000; i += 997) EXPECT_EQ(r->as_tensor().data_as<float>()[i], 2.5f + 2.0f * i);

  Tensor x = Filled({3, 4}, 0.0f);
  absl::StatusOr<Value> pair = vm.Invoke("pair", {Value(x)});
  ASSERT_TRUE(pair.ok()) << pair.status();
  const TupleFields& fields = pair->as_tuple();
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[0].as_tensor().shape(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(fields[0].as_tensor().data_as<float>()[2], 8.0f + 9.0f + 10.0f + 11.0f);
  EXPECT_EQ(fields[1].as_shape(), (std::vector<int64_t>{3, 4}));
}

TEST(VirtualMachine, ShapeMismatchNamesFunctionParameterAndDimensionThenRecovers) {
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  absl::StatusOr<Value> bad = vm.Invoke("main", {Value(Filled({5, 4}, 0)), Value(Filled({6, 4}, 0))});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              AllOf(HasSubstr("function 'main'"), HasSubstr("parameter 'y'"), HasSubstr("dimension 0 (n)"),
                    HasSubstr("expected 5"), HasSubstr("got 6")));

  absl::StatusOr<Value> bad_fixed = vm.Invoke("main", {Value(Filled({5, 3}, 0)), Value(Filled({5, 4}, 0))});
  ASSERT_FALSE(bad_fixed.ok());
  EXPECT_THAT(std::string(bad_fixed.status().message()),
              AllOf(HasSubstr("parameter 'x'"), HasSubstr("dimension 1"), HasSubstr("expected 4")));

  Tensor ints = *Tensor::Empty({5, 4}, DTypeInt64());
  absl::StatusOr<Value> bad_dtype = vm.Invoke("main", {Value(ints), Value(Filled({5, 4}, 0))});
  ASSERT_FALSE(bad_dtype.ok());
  EXPECT_THAT(std::string(bad_dtype.status().message()),
              AllOf(HasSubstr("parameter 'x'"), HasSubstr("expected dtype float32"), HasSubstr("got int64")));

  absl::StatusOr<Value> bad_rank = vm.Invoke("main", {Value(Filled({20}, 0)), Value(Filled({5, 4}, 0))});
  ASSERT_FALSE(bad_rank.ok());
  EXPECT_THAT(std::string(bad_rank.status().message()), HasSubstr("expected 2 dimensions, got 1"));

  absl::StatusOr<Value> good = vm.Invoke("main", {Value(Filled({5, 4}, 0)), Value(Filled({5, 4}, 0))});
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->as_tensor().data_as<float>()[19], 4.0f * 19.0f);
}

TEST(VirtualMachine, WrongArgumentCountAndUnknownFunction) {
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  EXPECT_THAT(std::string(vm.Invoke("main", {}).status().message()), HasSubstr("takes 2 arguments (x, y), got 0"));
  EXPECT_THAT(std::string(vm.Invoke("sum_to", {}).status().message()), HasSubstr("takes 1 argument (k), got 0"));
  EXPECT_THAT(std::string(vm.Invoke("nope", {}).status().message()), HasSubstr("no function 'nope'"));
  // An embedder's empty or wrongly kinded values are statuses naming the parameter, not aborts.
  EXPECT_THAT(std::string(vm.Invoke("main", {Value(), Value()}).status().message()),
              AllOf(HasSubstr("parameter 'x'"), HasSubstr("expected a tensor")));
  EXPECT_THAT(std::string(vm.Invoke("main", {Value(Filled({5, 4}, 0)), Value(int64_t{3})}).status().message()),
              AllOf(HasSubstr("parameter 'y'"), HasSubstr("expected a tensor, got int 3")));
  EXPECT_THAT(std::string(vm.Invoke("Main", {}).status().message()),
              AllOf(HasSubstr("no function 'Main' in the executable (it has: main, sum_to, "), HasSubstr("(did you mean 'main'?)")));
  EXPECT_THAT(std::string(vm.Invoke("sum_to", {Value(Filled({1}, 0))}).status().message()),
              HasSubstr("parameter 'k': expected an int"));
}

TEST(VirtualMachine, TwoThreadsShareOneExecutable) {
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  auto worker = [&](int64_t n, bool* ok) {
    VirtualMachine vm(exe);
    *ok = true;
    for (int iter = 0; iter < 200 && *ok; ++iter) {
      absl::StatusOr<Value> r = vm.Invoke("main", {Value(Filled({n, 4}, 1.0f)), Value(Filled({n, 4}, 0.0f))});
      absl::StatusOr<Value> s = vm.Invoke("pair", {Value(Filled({n, 4}, 0.0f))});
      *ok = r.ok() && s.ok() && r->as_tensor().shape()[0] == n &&
            r->as_tensor().data_as<float>()[n * 4 - 1] == 3.0f * (n * 4) + (n * 4 - 1);
    }
  };
  bool ok1 = false, ok2 = false;
  std::thread t1(worker, 3, &ok1), t2(worker, 17, &ok2);
  t1.join();
  t2.join();
  EXPECT_TRUE(ok1);
  EXPECT_TRUE(ok2);
}

TEST(Executable, LoadChecksBuiltinsAndVersions) {
  std::string bytes = testing::BuildSampleExecutable();
  BuiltinRegistry empty;
  absl::StatusOr<std::shared_ptr<const Executable>> missing = Executable::Load(bytes, empty);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("needs builtin 'kiln.alloc_tensor'"));

  BuiltinRegistry wrong;
  wrong.RegisterBuiltin("kiln.alloc_tensor", "(int) -> tensor",
                        [](BuiltinContext&, const Value* const*, int, Value*) { return absl::OkStatus(); });
  absl::StatusOr<std::shared_ptr<const Executable>> mismatch = Executable::Load(bytes, wrong);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_THAT(std::string(mismatch.status().message()), HasSubstr("expects (shape, int) -> tensor"));

  std::string newer = bytes;
  newer[10] = 7;  // minor version 7
  EXPECT_THAT(std::string(Executable::Load(newer, builtins::DefaultRegistry()).status().message()),
              HasSubstr("file format 2.7, this runtime reads 2.0 to 2." + std::to_string(kFormatMinor)));
  std::string junk = "hello world, not an executable";
  EXPECT_THAT(std::string(Executable::Load(junk, builtins::DefaultRegistry()).status().message()),
              HasSubstr("not a Kiln executable: the file is text"));
  std::string binary_junk("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x00\x0b\x0c\x0d\x0e\x0f\x10", 16);
  EXPECT_THAT(std::string(Executable::Load(binary_junk, builtins::DefaultRegistry()).status().message()),
              HasSubstr("bad magic"));
}

TEST(Executable, VerifierRejectsBadBytecode) {
  ExecutableBuilder b;
  FunctionBuilder& f = b.AddFunction("f", {IntParam("k")});
  f.Move(5, 0);  // register 5 does not exist
  f.Ret(0);
  absl::StatusOr<std::string> built = b.Build();
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(std::string(built.status().message()), HasSubstr("function 'f' instruction 0"));

  ExecutableBuilder c;
  FunctionBuilder& g = c.AddFunction("g", {IntParam("k")});
  g.Move(0, 0);  // falls off the end
  EXPECT_THAT(std::string(c.Build().status().message()), HasSubstr("run past its end"));
}

}  // namespace
}  // namespace kiln::vm
