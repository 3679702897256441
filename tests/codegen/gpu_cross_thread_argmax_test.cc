// argmax / argmin combined across the threads of a block (tir/transform/
// cross_thread_arg_reduction.h): which blocks the two-value combine accepts, that the GPU
// rule uses it (barriers in both emitters' kernels), and on lavapipe, where a Vulkan device
// is present, rows longer than 65535 elements against the reference evaluator. One thread
// per row used to loop over the whole row, which lavapipe cuts after 65535 iterations
// (a ramp of 90000 gave 65534); now 64 threads share it. Ties go to the lowest position and
// the first NaN wins, as in the serial loop (the inputs are made to have both).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/default_builtins.h"
#include "relax/text_parser.h"
#include "tests/codegen/gpu_compile.h"
#include "tests/codegen/op_check.h"
#include "tests/reference/reference_evaluator.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/text_parser.h"
#include "tir/transform/cross_thread_arg_reduction.h"
#include "tir/transform/lower_cross_thread_reduction.h"
#include "vm/device.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace kiln::op_cases {
namespace {

// argmax over the rows of A as legalization writes it (relax/op/legalize_reduce.cc), with
// `take` and the init values substituted.
tir::PrimFunc ArgmaxBlock(const std::string& take, const std::string& value_init = "0.0") {
  const std::string text = R"(
prim_func @f(A: Buffer((n, m), float32), B: Buffer((n,), int64), V: Buffer((n,), float32)) {
  for i in serial(0, n) {
    for r in serial(0, m) {
      block "B" {
        vi = spatial(n, i)
        vr = reduce(m, r)
        init {
          B[vi] = 0
          V[vi] = )" + value_init + R"(
        }
        B[vi] = select()" + take + R"(, vr, B[vi])
        V[vi] = select()" + take + R"(, A[vi, vr], V[vi])
      }
    }
  }
})";
  absl::StatusOr<tir::ParsedPrimFunc> parsed = tir::ParsePrimFunc(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status() << text;
  return parsed.ok() ? parsed->func : tir::PrimFunc();
}

const tir::BlockNode* BlockOf(const tir::PrimFunc& func) {
  const tir::BlockNode* block = nullptr;
  tir::schedule_internal::ForEachStmt(func->body, [&](const tir::Stmt& s) {
    if (const auto* b = s.as<tir::BlockNode>()) block = b;
  });
  return block;
}

TEST(CrossThreadArgCombinerTest, AcceptsTheLegalizedArgmaxAndArgminOnly) {
  const std::string nan = " || (A[vi, vr] != A[vi, vr] && V[vi] == V[vi])";
  struct Case {
    std::string take;
    bool combines, is_max;
  };
  for (const Case& c : std::vector<Case>{
           {"vr == 0 || (A[vi, vr] > V[vi]" + nan + ")", true, true},
           {"vr == 0 || (A[vi, vr] < V[vi]" + nan + ")", true, false},
           // A float without the NaN clause: a NaN would tie with every number.
           {"vr == 0 || A[vi, vr] > V[vi]", false, true},
           // >= takes the last of equal values: not the lowest-position rule.
           {"vr == 0 || (A[vi, vr] >= V[vi]" + nan + ")", false, true},
           // No "first element" clause: the init value competes.
           {"A[vi, vr] > V[vi]" + nan, false, true},
           {"vr == 1 || (A[vi, vr] > V[vi]" + nan + ")", false, true}}) {
    SCOPED_TRACE(c.take);
    tir::PrimFunc func = ArgmaxBlock(c.take);
    ASSERT_TRUE(func.defined());
    std::optional<tir::transform::ArgReductionCombiner> combiner =
        tir::transform::CrossThreadArgCombinerOf(BlockOf(func));
    EXPECT_EQ(combiner.has_value(), c.combines);
    if (combiner) {
      EXPECT_EQ(combiner->is_max, c.is_max);
      EXPECT_TRUE(combiner->nan_wins);
      // An int64 position and a float32 value per thread.
      EXPECT_EQ(tir::transform::CrossThreadPartialBytes(BlockOf(func)), 12);
    }
  }
}

const char* const kArgmaxModule = R"(module {
  func @main(x: Tensor((n, m), float32)) -> Tensor((n,), int64) {
    r = R.argmax(x, axis=1)
    return r
  }
})";

TEST(CrossThreadArgmaxTest, BothEmittersCombineAcrossThreads) {
  absl::StatusOr<std::string> bytes = CompileForGpu(kArgmaxModule, tir::Target::Cuda("sm_80"));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok()) << exe.status();
  const std::string& source = (*exe)->contents().device_code.at(0).source;
  EXPECT_THAT(source, ::testing::HasSubstr("__syncthreads();"));
  EXPECT_THAT(source, ::testing::HasSubstr("__shared__ kiln_i64"));
  EXPECT_THAT(source, ::testing::HasSubstr("__shared__ float"));
  EXPECT_TRUE(CompileForGpu(kArgmaxModule, tir::Target::Vulkan()).ok());
}

// `text` compiled for vulkan and run on the device with `inputs`, against the reference.
void ExpectMatchesOnVulkan(const std::string& text, const std::vector<reference::HostTensor>& inputs) {
  absl::StatusOr<vm::Device*> device = vm::GetDevice("vulkan:0");
  if (!device.ok()) GTEST_SKIP() << "no Vulkan device here: " << device.status().message();
  absl::StatusOr<std::string> bytes = CompileForGpu(text, tir::Target::Vulkan());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok()) << exe.status();
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed->module);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  std::vector<reference::RefValue> ref_args;
  std::vector<vm::Value> args;
  for (const reference::HostTensor& t : inputs) {
    absl::StatusOr<vm::Tensor> on_device = ToVm(t).CopyTo(*device);
    ASSERT_TRUE(on_device.ok()) << on_device.status();
    args.emplace_back(*on_device);
    ref_args.emplace_back(t);
  }
  absl::StatusOr<reference::RefValue> expected = reference::Evaluate(*normalized, "main", ref_args);
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<std::unique_ptr<vm::VirtualMachine>> machine = vm::VirtualMachine::Create(*exe, *device);
  ASSERT_TRUE(machine.ok()) << machine.status();
  absl::StatusOr<vm::Value> result = (*machine)->Invoke("main", args);
  ASSERT_TRUE(result.ok()) << result.status();
  absl::StatusOr<vm::Value> host = ToHost(*result);
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<reference::RefValue> actual = FromVm(*host);
  ASSERT_TRUE(actual.ok()) << actual.status();
  Case exact;
  exact.rtol = exact.atol = 0;
  ExpectClose(*expected, *actual, exact, "");
}

std::string ArgModule(const std::string& op, const std::string& shape, const std::string& dtype,
                      const std::string& axis, const std::string& out_shape) {
  return absl::StrCat("module {\n  func @main(x: Tensor(", shape, ", ", dtype, ")) -> Tensor(", out_shape,
                      ", int64) {\n    r = R.", op, "(x", axis, ")\n    return r\n  }\n}\n");
}

constexpr int64_t kLong = 90000;  // beyond lavapipe's 65535 loop iterations per invocation

TEST(VulkanArgmaxTest, ARampLongerThanLavapipesLoopLimit) {
  std::vector<double> ramp(kLong);
  for (int64_t i = 0; i < kLong; ++i) ramp[i] = static_cast<double>(i) * 0.5;
  reference::HostTensor x = reference::HostTensor::FromDoubles(tir::DataType::Float32(), {1, kLong}, ramp);
  for (const char* op : {"argmax", "argmin"}) {
    SCOPED_TRACE(op);
    ExpectMatchesOnVulkan(ArgModule(op, "(n, m)", "float32", ", axis=1", "(n,)"), {x});
  }
}

TEST(VulkanArgmaxTest, TiesGoToTheLowestPositionAndTheFirstNanWins) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> values(3 * kLong, 1.0);
  // Row 0: the maximum 5 at 70000 and 80000, the minimum -5 at 89999 and 66000.
  values[70000] = values[80000] = 5.0;
  values[89999] = values[66000] = -5.0;
  // Row 1: NaNs at 66001 and 88000 (argmax and argmin both report 66001), a 9 before them.
  values[kLong + 3] = 9.0;
  values[kLong + 66001] = values[kLong + 88000] = nan;
  // Row 2: every element equal: position 0.
  reference::HostTensor x = reference::HostTensor::FromDoubles(tir::DataType::Float32(), {3, kLong}, values);
  for (const char* op : {"argmax", "argmin"}) {
    SCOPED_TRACE(op);
    ExpectMatchesOnVulkan(ArgModule(op, "(n, m)", "float32", ", axis=1", "(n,)"), {x});
  }
}

TEST(VulkanArgmaxTest, IntegerRowsWithManyTies) {
  std::vector<double> values(2 * kLong);
  for (int64_t i = 0; i < 2 * kLong; ++i) values[i] = static_cast<double>((i * 7919) % 13) - 6;
  values[kLong + 77777] = 100;
  reference::HostTensor x = reference::HostTensor::FromDoubles(tir::DataType::Int32(), {2, kLong}, values);
  for (const char* op : {"argmax", "argmin"}) {
    SCOPED_TRACE(op);
    ExpectMatchesOnVulkan(ArgModule(op, "(n, m)", "int32", ", axis=1", "(n,)"), {x});
  }
}

TEST(VulkanArgmaxTest, OverEveryAxisToOnePosition) {
  // No axis: the position in the flattened (300, 300) tensor, one workgroup.
  std::vector<double> values(kLong);
  for (int64_t i = 0; i < kLong; ++i) values[i] = std::sin(static_cast<double>(i) * 0.001) * (i < 70000 ? 1.0 : 2.0);
  reference::HostTensor x = reference::HostTensor::FromDoubles(tir::DataType::Float32(), {300, 300}, values);
  for (const char* op : {"argmax", "argmin"}) {
    SCOPED_TRACE(op);
    ExpectMatchesOnVulkan(ArgModule(op, "(a, b)", "float32", "", "()"), {x});
  }
}

TEST(VulkanArgmaxTest, MoreRowsThanOneGridAxisHolds) {
  // 70 000 rows of 40: one workgroup per row, spread over two grid axes.
  const int64_t rows = 70000, width = 40;
  std::vector<double> values(rows * width);
  for (int64_t i = 0; i < rows * width; ++i) values[i] = static_cast<double>((i * 2654435761u) % 1000);
  reference::HostTensor x = reference::HostTensor::FromDoubles(tir::DataType::Float32(), {rows, width}, values);
  ExpectMatchesOnVulkan(ArgModule("argmax", "(n, m)", "float32", ", axis=1", "(n,)"), {x});
}

}  // namespace
}  // namespace kiln::op_cases
