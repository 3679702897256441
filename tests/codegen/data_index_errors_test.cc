// Run-time errors of the indexing operators' compiled kernels: an index outside [-dim, dim)
// in a gather or scatter, and a stride of 0 in dynamic_strided_slice, stop the call with an
// error naming the buffer and the value (never an out-of-bounds access), and the VM stays
// usable. The op harness (op_cases.h) covers valid inputs; these have no reference answer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/status_macros.h"
#include "vm/executable.h"
#include "vm/tensor.h"
#include "vm/virtual_machine.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::shared_ptr<const vm::Executable>> Compile(const std::string& text) {
  KILN_ASSIGN_OR_RETURN(relax::ParsedModule parsed, relax::ParseModule(text));
  relax::PipelineOptions options;
  options.check_well_formed = true;
  options.target = codegen::HostTarget();
  KILN_ASSIGN_OR_RETURN(relax::IRModule lowered, relax::RunPipeline(parsed.module, options, &parsed.locations));
  KILN_ASSIGN_OR_RETURN(std::string bytes, codegen::BuildExecutable(lowered, codegen::CpuTarget::Host()));
  return vm::Executable::Load(bytes, builtins::DefaultRegistry());
}

template <typename T>
vm::Value Tensor(std::vector<int64_t> shape, std::vector<T> values, DLDataType dtype) {
  vm::Tensor t = *vm::Tensor::Empty(std::move(shape), dtype);
  std::memcpy(t.data(), values.data(), values.size() * sizeof(T));
  return vm::Value(t);
}
vm::Value F32(std::vector<int64_t> shape, std::vector<float> v) { return Tensor(std::move(shape), v, {kDLFloat, 32, 1}); }
vm::Value I64(std::vector<int64_t> shape, std::vector<int64_t> v) { return Tensor(std::move(shape), v, {kDLInt, 64, 1}); }

TEST(DataIndexErrorsTest, GatherElementsIndexOutOfRange) {
  auto exe = Compile(R"(module {
  func @main(x: Tensor((n, 3), float32), i: Tensor((n, m), int64)) -> Object {
    r = R.gather_elements(x, i, axis=1)
    return r
  }
})");
  ASSERT_TRUE(exe.ok()) << exe.status();
  vm::VirtualMachine machine(*exe);
  absl::StatusOr<vm::Value> ok = machine.Invoke("main", {F32({1, 3}, {1, 2, 3}), I64({1, 2}, {-1, 0})});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->as_tensor().data_as<float>()[0], 3);
  EXPECT_EQ(ok->as_tensor().data_as<float>()[1], 1);
  for (int64_t bad : {3, -4}) {
    absl::StatusOr<vm::Value> r = machine.Invoke("main", {F32({1, 3}, {1, 2, 3}), I64({1, 2}, {0, bad})});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("out of range")) << r.status();
  }
  EXPECT_TRUE(machine.Invoke("main", {F32({1, 3}, {1, 2, 3}), I64({1, 1}, {2})}).ok());
}

TEST(DataIndexErrorsTest, ScatterNdIndexOutOfRange) {
  auto exe = Compile(R"(module {
  func @main(x: Tensor((4, n), float32), i: Tensor((m, 1), int64), u: Tensor((m, n), float32)) -> Object {
    r = R.scatter_nd(x, i, u, reduction="add")
    return r
  }
})");
  ASSERT_TRUE(exe.ok()) << exe.status();
  vm::VirtualMachine machine(*exe);
  const vm::Value x = F32({4, 1}, {0, 0, 0, 0});
  absl::StatusOr<vm::Value> ok = machine.Invoke("main", {x, I64({2, 1}, {-1, 3}), F32({2, 1}, {1, 2})});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->as_tensor().data_as<float>()[3], 3);
  absl::StatusOr<vm::Value> r = machine.Invoke("main", {x, I64({2, 1}, {0, 4}), F32({2, 1}, {1, 2})});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("index 4 is out of range"));
  // A negative index out of range is named as given: -5 (it was reported wrapped, as -1,
  // an index that is valid).
  r = machine.Invoke("main", {x, I64({2, 1}, {0, -5}), F32({2, 1}, {1, 2})});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("index -5 is out of range for dim 0 of 'out' (extent 4; a negative index counts from the end)"));
}

TEST(DataIndexErrorsTest, DynamicStridedSliceZeroStrideAndShapes) {
  auto exe = Compile(R"(module {
  func @main(x: Tensor((n,), float32), b: Tensor((1,), int64), e: Tensor((1,), int64), s: Tensor((1,), int64)) -> Object {
    r = R.dynamic_strided_slice(x, b, e, s)
    return r
  }
})");
  ASSERT_TRUE(exe.ok()) << exe.status();
  vm::VirtualMachine machine(*exe);
  const vm::Value x = F32({5}, {0, 1, 2, 3, 4});
  absl::StatusOr<vm::Value> ok = machine.Invoke("main", {x, I64({1}, {-1}), I64({1}, {-100}), I64({1}, {-2})});
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_EQ(ok->as_tensor().shape(), std::vector<int64_t>({3}));
  EXPECT_EQ(ok->as_tensor().data_as<float>()[0], 4);
  EXPECT_EQ(ok->as_tensor().data_as<float>()[2], 0);
  absl::StatusOr<vm::Value> empty = machine.Invoke("main", {x, I64({1}, {3}), I64({1}, {1}), I64({1}, {1})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->as_tensor().shape(), std::vector<int64_t>({0}));
  absl::StatusOr<vm::Value> zero = machine.Invoke("main", {x, I64({1}, {0}), I64({1}, {5}), I64({1}, {0})});
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.status().message(), HasSubstr("stride of axis 0 (strides[0]) is 0"));
}

}  // namespace
}  // namespace kiln
