// The embedding API (docs/embedding.md) used the way a new user gets it wrong: every
// mistake must come back as a status that says what is wrong and where — never a crash, a
// hang or a silently wrong answer — and the VM must stay usable afterwards. The program is
// the hand-built sample executable (tests/vm/test_programs.h); only the runtime API is used.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>

#include "builtins/default_builtins.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/vm/test_programs.h"
#include "vm/executable.h"
#include "vm/executable_builder.h"
#include "vm/virtual_machine.h"

namespace kiln::vm {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

// A scratch file holding `bytes`, removed with the object.
class TempFile {
 public:
  explicit TempFile(const std::string& bytes, const std::string& suffix = ".kx") {
    path_ = (std::filesystem::temp_directory_path() /
             ("kiln_misuse_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++) + suffix))
                .string();
    std::ofstream(path_, std::ios::binary) << bytes;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  static inline std::atomic<int> counter_{0};
  std::string path_;
};

absl::Status LoadFileStatus(const std::string& path) {
  return Executable::LoadFile(path, builtins::DefaultRegistry()).status();
}

std::shared_ptr<const Executable> LoadSample() {
  absl::StatusOr<std::shared_ptr<const Executable>> exe =
      Executable::Load(testing::BuildSampleExecutable(), builtins::DefaultRegistry());
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? *exe : nullptr;
}

Tensor Filled(std::vector<int64_t> shape, float start) {
  Tensor t = *Tensor::Empty(shape, DTypeFloat32());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = start + static_cast<float>(i);
  return t;
}

// A DLManagedTensor over caller-owned memory, as another framework hands one out.
struct Foreign {
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
  bool deleted = false;
  Foreign(void* data, std::vector<int64_t> shape_in, DLDataType dtype, std::vector<int64_t> strides_in = {},
          DLDevice device = {kDLCPU, 0})
      : shape(std::move(shape_in)), strides(std::move(strides_in)) {
    managed.dl_tensor.data = data;
    managed.dl_tensor.device = device;
    managed.dl_tensor.ndim = static_cast<int32_t>(shape.size());
    managed.dl_tensor.dtype = dtype;
    managed.dl_tensor.shape = shape.data();
    managed.dl_tensor.strides = strides.empty() ? nullptr : strides.data();
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) { static_cast<Foreign*>(self->manager_ctx)->deleted = true; };
  }
};

TEST(EmbeddingMisuse, FilesThatAreNotExecutablesAreRefusedNamingThePath) {
  EXPECT_THAT(Message(LoadFileStatus("/nonexistent/model.kx")), HasSubstr("/nonexistent/model.kx"));
  EXPECT_THAT(Message(LoadFileStatus(std::filesystem::temp_directory_path().string())), HasSubstr("not a regular file"));
  TempFile empty("");
  EXPECT_THAT(Message(LoadFileStatus(empty.path())), AllOf(HasSubstr(empty.path()), HasSubstr("empty")));
  // Other formats a user may pass by mistake: each is named.
  TempFile onnx(std::string("\x08\x07\x12\x07pytorch\x1a\x03" "2.1", 15), ".onnx");
  EXPECT_THAT(Message(LoadFileStatus(onnx.path())), AllOf(HasSubstr("not a Kiln executable"), HasSubstr("kiln compile")));
  TempFile gguf(std::string("GGUF\x03\x00\x00\x00", 8) + std::string(64, '\0'), ".gguf");
  EXPECT_THAT(Message(LoadFileStatus(gguf.path())), AllOf(HasSubstr("a GGUF model"), HasSubstr("kiln compile")));
  TempFile kir("@main(x: Tensor((n, 4), \"float32\")) {\n  return x\n}\n", ".kir");
  EXPECT_THAT(Message(LoadFileStatus(kir.path())), AllOf(HasSubstr("text"), HasSubstr("kiln compile")));
}

TEST(EmbeddingMisuse, TruncatedAndOtherVersionExecutablesAreRefused) {
  const std::string bytes = testing::BuildSampleExecutable();
  // Every prefix length at a few hundred points: a clear error each time, never a crash.
  for (size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 300) {
    absl::StatusOr<std::shared_ptr<const Executable>> exe =
        Executable::Load(bytes.substr(0, cut), builtins::DefaultRegistry());
    ASSERT_FALSE(exe.ok()) << "a " << cut << "-byte prefix of " << bytes.size() << " loaded";
    EXPECT_FALSE(Message(exe.status()).empty());
  }
  std::string newer_major = bytes, older_major = bytes;
  newer_major[8] = kFormatMajor + 1;
  older_major[8] = kFormatMajor - 1;
  EXPECT_THAT(Message(Executable::Load(newer_major, builtins::DefaultRegistry()).status()),
              AllOf(HasSubstr("file format 3.2"), HasSubstr("this runtime reads 2.0 to 2.")));
  EXPECT_THAT(Message(Executable::Load(older_major, builtins::DefaultRegistry()).status()),
              AllOf(HasSubstr("file format 1.2"), HasSubstr("this runtime reads 2.0 to 2.")));
}

TEST(EmbeddingMisuse, CallsWithTheWrongFunctionOrArgumentsNameWhatIsWrong) {
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  // FindFunction's -1 for an unknown name passed straight to Invoke.
  int32_t missing = exe->FindFunction("mian");
  EXPECT_EQ(missing, -1);
  std::vector<Value> args = {Value(Filled({3, 4}, 0)), Value(Filled({3, 4}, 0))};
  EXPECT_THAT(Message(vm.Invoke(missing, args.data(), args.size()).status()),
              AllOf(HasSubstr("function index -1"), HasSubstr("FindFunction")));
  // A null argument array with a count.
  EXPECT_THAT(Message(vm.Invoke(exe->FindFunction("main"), nullptr, 2).status()),
              AllOf(HasSubstr("function 'main'"), HasSubstr("null")));
  // Wrong dtype, rank, fixed dimension, and n differing between x and y.
  auto call_main = [&](Tensor x, Tensor y) { return Message(vm.Invoke("main", {Value(x), Value(y)}).status()); };
  EXPECT_THAT(call_main(*Tensor::Empty({3, 4}, DLDataType{kDLFloat, 64, 1}), Filled({3, 4}, 0)),
              AllOf(HasSubstr("function 'main' parameter 'x'"), HasSubstr("expected dtype float32, got float64")));
  EXPECT_THAT(call_main(Filled({12}, 0), Filled({3, 4}, 0)),
              AllOf(HasSubstr("parameter 'x'"), HasSubstr("expected 2 dimensions, got 1")));
  EXPECT_THAT(call_main(Filled({3, 5}, 0), Filled({3, 5}, 0)),
              AllOf(HasSubstr("parameter 'x' dimension 1"), HasSubstr("expected 4, got 5")));
  EXPECT_THAT(call_main(Filled({3, 4}, 0), Filled({2, 4}, 0)),
              AllOf(HasSubstr("parameter 'y' dimension 0 (n)"), HasSubstr("expected 3 (bound earlier), got 2")));
  // An undefined (default-constructed) tensor.
  EXPECT_THAT(call_main(Tensor(), Filled({3, 4}, 0)),
              AllOf(HasSubstr("function 'main' parameter 'x'"), HasSubstr("undefined tensor")));
  // The VM is still usable: a zero-row call works and yields a [0, 4] tensor.
  absl::StatusOr<Value> empty = vm.Invoke("main", {Value(Filled({0, 4}, 0)), Value(Filled({0, 4}, 0))});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->as_tensor().shape(), (std::vector<int64_t>{0, 4}));
  absl::StatusOr<Value> ok = vm.Invoke("main", {Value(Filled({2, 4}, 1)), Value(Filled({2, 4}, 0))});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->as_tensor().data_as<float>()[7], 3.0f * 8 + 7);
}

TEST(EmbeddingMisuse, NullExecutableOrDeviceIsAnError) {
  EXPECT_THAT(Message(VirtualMachine::Create(nullptr).status()), HasSubstr("null executable"));
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  EXPECT_THAT(Message(VirtualMachine::Create(exe, nullptr).status()), HasSubstr("null device"));
  // The constructor's VM reports it on every call instead.
  VirtualMachine vm(nullptr);
  EXPECT_THAT(Message(vm.Invoke("main", {}).status()), HasSubstr("null executable"));
  EXPECT_THAT(Message(Tensor::Empty({2}, DTypeFloat32(), nullptr).status()), HasSubstr("null device"));
}

TEST(EmbeddingMisuse, ForeignTensorsAreCheckedWhenAdoptedAndWhenPassed) {
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  alignas(64) float data[32] = {};
  for (int i = 0; i < 32; ++i) data[i] = static_cast<float>(i);
  // A transposed view (4 x 3 of a 3 x 4 array: strides 1, 4): not compact. The kernels read
  // compact rows, so a call must refuse it rather than read the wrong elements.
  {
    Foreign x(data, {4, 4}, DTypeFloat32(), {1, 4});
    Foreign y(data, {4, 4}, DTypeFloat32());
    absl::StatusOr<Tensor> tx = Tensor::FromDLPack(&x.managed);
    absl::StatusOr<Tensor> ty = Tensor::FromDLPack(&y.managed);
    ASSERT_TRUE(tx.ok() && ty.ok());
    EXPECT_THAT(Message(vm.Invoke("main", {Value(*tx), Value(*ty)}).status()),
                AllOf(HasSubstr("function 'main' parameter 'x'"), HasSubstr("compact row-major"),
                      HasSubstr("strides [1, 4]")));
  }
  // Negative extents, a null data pointer with elements, a dtype of no bits or lanes, an
  // element not on its own alignment: refused when adopted.
  {
    Foreign negative(data, {-3, 4}, DTypeFloat32());
    EXPECT_THAT(Message(Tensor::FromDLPack(&negative.managed).status()),
                AllOf(HasSubstr("FromDLPack"), HasSubstr("negative dimension in shape [-3, 4]")));
    EXPECT_FALSE(negative.deleted);  // a refused tensor stays the caller's
    Foreign null_data(nullptr, {3, 4}, DTypeFloat32());
    EXPECT_THAT(Message(Tensor::FromDLPack(&null_data.managed).status()),
                AllOf(HasSubstr("FromDLPack"), HasSubstr("null data")));
    Foreign no_lanes(data, {3, 4}, DLDataType{kDLFloat, 32, 0});
    EXPECT_THAT(Message(Tensor::FromDLPack(&no_lanes.managed).status()), AllOf(HasSubstr("FromDLPack"), HasSubstr("lanes")));
    Foreign no_bits(data, {3, 4}, DLDataType{kDLFloat, 0, 1});
    EXPECT_THAT(Message(Tensor::FromDLPack(&no_bits.managed).status()), AllOf(HasSubstr("FromDLPack"), HasSubstr("bits")));
    Foreign misaligned(reinterpret_cast<char*>(data) + 1, {3, 4}, DTypeFloat32());
    EXPECT_THAT(Message(Tensor::FromDLPack(&misaligned.managed).status()),
                AllOf(HasSubstr("FromDLPack"), HasSubstr("aligned")));
    Foreign empty_null(nullptr, {0, 4}, DTypeFloat32());  // no elements: no data needed
    absl::StatusOr<Tensor> e = Tensor::FromDLPack(&empty_null.managed);
    ASSERT_TRUE(e.ok()) << e.status();
  }
  // A tensor on a device this machine lacks.
  {
    Foreign gpu(data, {3, 4}, DTypeFloat32(), {}, DLDevice{kDLCUDA, 0});
    absl::StatusOr<Tensor> t = Tensor::FromDLPack(&gpu.managed);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_THAT(Message(vm.Invoke("main", {Value(*t), Value(Filled({3, 4}, 0))}).status()),
                AllOf(HasSubstr("parameter 'x'"), HasSubstr("expected a tensor on cpu"), HasSubstr("cuda")));
  }
  absl::StatusOr<Value> ok = vm.Invoke("main", {Value(Filled({1, 4}, 0)), Value(Filled({1, 4}, 0))});
  EXPECT_TRUE(ok.ok()) << ok.status();
}

TEST(EmbeddingMisuse, UndefinedTensorsAndNullDevicesAreErrors) {
  Tensor undefined;
  EXPECT_THAT(Message(undefined.Reshape({1}).status()), HasSubstr("undefined tensor"));
  EXPECT_THAT(Message(undefined.Slice(0, 1).status()), HasSubstr("undefined tensor"));
  EXPECT_THAT(Message(undefined.CopyTo(CpuDevice()).status()), HasSubstr("undefined tensor"));
  EXPECT_THAT(Message(Filled({2}, 0).CopyTo(nullptr).status()), HasSubstr("null device"));
  EXPECT_EQ(undefined.Describe(), "<undefined tensor>");
  EXPECT_FALSE(undefined.defined());
  EXPECT_FALSE(undefined.same_as(Filled({2}, 0)));
}

// The plain accessors of an undefined tensor abort naming the accessor and the fix (they
// dereferenced null); a tensor moved from is undefined too.
TEST(EmbeddingMisuseDeathTest, AccessorsOfAnUndefinedTensorAbortNamingThem) {
  const Tensor undefined;
  const std::string why = "the tensor is undefined .*check defined\\(\\) first";
  EXPECT_DEATH((void)undefined.ndim(), "Tensor::ndim: " + why);
  EXPECT_DEATH((void)undefined.shape(), "Tensor::shape: " + why);
  EXPECT_DEATH((void)undefined.strides(), "Tensor::strides: " + why);
  EXPECT_DEATH((void)undefined.dtype(), "Tensor::dtype: " + why);
  EXPECT_DEATH((void)undefined.device(), "Tensor::device: " + why);
  EXPECT_DEATH((void)undefined.numel(), "Tensor::numel: " + why);
  EXPECT_DEATH((void)undefined.nbytes(), "Tensor::nbytes: " + why);
  EXPECT_DEATH((void)undefined.is_contiguous(), "Tensor::is_contiguous: " + why);
  EXPECT_DEATH((void)undefined.data(), "Tensor::data: " + why);
  EXPECT_DEATH((void)undefined.data_as<float>(), "Tensor::data: " + why);
  EXPECT_DEATH((void)undefined.dl_tensor(), "Tensor::dl_tensor: " + why);
  EXPECT_DEATH((void)undefined.ToDLPack(), "Tensor::ToDLPack: " + why);
  Tensor moved = Filled({2}, 0);
  Tensor taker = std::move(moved);
  EXPECT_EQ(taker.numel(), 2);
  EXPECT_DEATH((void)moved.shape(), "Tensor::shape: " + why);  // NOLINT(bugprone-use-after-move): the point
}

TEST(EmbeddingMisuse, AHeldResultIsNotOverwrittenByTheNextCall) {
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  absl::StatusOr<Value> first = vm.Invoke("main", {Value(Filled({2, 4}, 0)), Value(Filled({2, 4}, 0))});
  ASSERT_TRUE(first.ok()) << first.status();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(vm.Invoke("main", {Value(Filled({2, 4}, 100)), Value(Filled({2, 4}, 100))}).ok());
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(first->as_tensor().data_as<float>()[i], 3.0f * i + i);
}

TEST(EmbeddingMisuse, HugeShapesAreErrorsNotAborts) {
  EXPECT_THAT(Message(Tensor::Empty({int64_t{1} << 40, int64_t{1} << 30}, DTypeFloat32()).status()),
              HasSubstr("too large"));
  EXPECT_THAT(Message(Tensor::Empty({int64_t{1} << 46}, DTypeFloat32()).status()), HasSubstr("out of memory"));
  EXPECT_THAT(Message(Tensor::Empty({-1, 4}, DTypeFloat32()).status()), HasSubstr("-1"));
  // A call whose planned storage cannot be allocated (n = 2^40 rows: 16 TiB) fails cleanly
  // before any kernel runs. (The inputs claim more rows than their memory holds; only the
  // shape is read before the allocation fails.)
  auto exe = LoadSample();
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  alignas(64) float data[4] = {};
  Foreign x(data, {int64_t{1} << 40, 4}, DTypeFloat32()), y(data, {int64_t{1} << 40, 4}, DTypeFloat32());
  absl::StatusOr<Tensor> tx = Tensor::FromDLPack(&x.managed), ty = Tensor::FromDLPack(&y.managed);
  ASSERT_TRUE(tx.ok() && ty.ok());
  EXPECT_THAT(Message(vm.Invoke("main", {Value(*tx), Value(*ty)}).status()),
              AllOf(HasSubstr("in function 'main'"), HasSubstr("out of memory")));
  EXPECT_TRUE(vm.Invoke("main", {Value(Filled({1, 4}, 0)), Value(Filled({1, 4}, 0))}).ok());
}

TEST(EmbeddingMisuse, ResultsOutliveTheVmAndTheExecutable) {
  Tensor weights;
  {
    auto exe = LoadSample();
    ASSERT_NE(exe, nullptr);
    VirtualMachine vm(exe);
    absl::StatusOr<Value> w = vm.Invoke("get_weights", {});
    ASSERT_TRUE(w.ok()) << w.status();
    weights = w->as_tensor();
  }
  // The view of the weights keeps the executable's bytes alive.
  EXPECT_EQ(weights.data_as<float>()[127], 127.0f / 4);
}

// A builtin that holds its call open until told to finish, calling back into its VM on
// the way (re-entrancy on the running thread must still work).
class Gate final : public TypedObject<Gate> {
 public:
  static constexpr char kTypeName[] = "test.gate";
  std::atomic<bool> entered{false}, release{false};
};

absl::Status WaitAtGate(BuiltinContext& ctx, const Value* const*, int, Value* result) {
  absl::StatusOr<Gate*> gate = ctx.state_as<Gate>();
  if (!gate.ok()) return gate.status();
  absl::StatusOr<Value> nested = ctx.vm->Invoke("one", {});
  if (!nested.ok()) return nested.status();
  (*gate)->entered = true;
  while (!(*gate)->release) std::this_thread::yield();
  *result = *nested;
  return absl::OkStatus();
}

TEST(EmbeddingMisuse, OneVmUsedByTwoThreadsAtOnceIsRefusedNotRaced) {
  auto gate = std::make_shared<Gate>();
  BuiltinRegistry registry;
  registry.RegisterBuiltin("test.wait_at_gate", "() -> int", WaitAtGate, gate);
  ExecutableBuilder b;
  int32_t wait = b.DeclareBuiltin("test.wait_at_gate", "() -> int");
  {
    FunctionBuilder& f = b.AddFunction("blocked", {});
    int32_t r = f.NewRegister();
    f.CallBuiltin(r, wait, {});
    f.Ret(r);
  }
  {
    FunctionBuilder& f = b.AddFunction("one", {});
    int32_t r = f.NewRegister();
    f.IntOp(r, IntOpKind::kAdd, Operand::Imm(0), Operand::Imm(1));
    f.Ret(r);
  }
  absl::StatusOr<std::string> bytes = b.Build();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(*bytes, registry);
  ASSERT_TRUE(exe.ok()) << exe.status();
  VirtualMachine vm(*exe);

  absl::StatusOr<Value> first = absl::UnknownError("not run");
  std::thread runner([&] { first = vm.Invoke("blocked", {}); });
  while (!gate->entered) std::this_thread::yield();
  // The runner's call is inside the builtin: a second thread's call is refused, by name.
  absl::StatusOr<Value> second = vm.Invoke("one", {});
  gate->release = true;
  runner.join();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->as_int(), 1);  // its call back into the VM on its own thread worked
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(second.status()),
              AllOf(HasSubstr("calling function 'one'"), HasSubstr("two threads at once"), HasSubstr("one VM per thread")));
  // Once the runner is done, this thread may use the VM.
  absl::StatusOr<Value> after = vm.Invoke("one", {});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->as_int(), 1);
}

}  // namespace
}  // namespace kiln::vm
