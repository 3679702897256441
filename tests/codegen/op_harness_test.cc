// The operator harness: every case of tests/codegen/op_cases.h (a one-op Relax function
// with symbolic shapes) is compiled ONCE through the whole pipeline (relax::RunPipeline:
// library dispatch, legalization, schedule, lowering; codegen::BuildExecutable: LLVM and VM
// codegen) and run by the VM for each of its concrete sizes (1, primes, above 1000), against
// the independent reference evaluator (tests/reference), which shares no code with any of
// that. Cases large enough for OpenBLAS run both with the library and without it.
// A registry check fails when an operator with a legalization has no case, or one reading
// float data has no case with NaN and infinite inputs (compared NaN-aware).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/dispatch_libraries.h"
#include "relax/transform/pipeline.h"
#include "support/status_macros.h"
#include "tests/codegen/op_cases.h"
#include "tests/codegen/op_check.h"
#include "tests/reference/host_tensor.h"
#include "tests/reference/ref_value.h"
#include "tests/reference/reference_evaluator.h"
#include "vm/executable.h"
#include "vm/tensor.h"
#include "vm/virtual_machine.h"

namespace kiln::op_cases {

namespace {

using reference::HostTensor;
using reference::RefValue;

// Compiles `text` once through the pipeline; the lowered module's text is kept for messages.
struct Compiled {
  std::shared_ptr<const vm::Executable> exe;
  std::string lowered;
};

absl::StatusOr<Compiled> Compile(const std::string& text, bool openblas, bool quantize_activations) {
  KILN_ASSIGN_OR_RETURN(relax::ParsedModule parsed, relax::ParseModule(text));
  const codegen::CpuTarget target = codegen::CpuTarget::Host();
  relax::PipelineOptions options;
  options.check_well_formed = true;
  options.libraries.openblas = openblas;
  options.libraries.openblas_by_evidence = false;  // every matmul OpenBLAS can take: its path is tested
  options.libraries.quantized = openblas;
  options.libraries.quantize_activations = quantize_activations;
  options.target = codegen::HostTarget();
  KILN_ASSIGN_OR_RETURN(relax::IRModule lowered, relax::RunPipeline(parsed.module, options, &parsed.locations));
  Compiled c;
  c.lowered = relax::PrintModule(lowered);
  KILN_ASSIGN_OR_RETURN(std::string bytes, codegen::BuildExecutable(lowered, target));
  KILN_ASSIGN_OR_RETURN(c.exe, vm::Executable::Load(bytes, builtins::DefaultRegistry()));
  return c;
}

class OpHarnessTest : public ::testing::TestWithParam<Case> {};

TEST_P(OpHarnessTest, CompiledOnceMatchesTheReferenceForEverySize) {
  const Case& c = GetParam();
  const std::string text = ModuleText(c);
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed->module);
  ASSERT_TRUE(normalized.ok()) << normalized.status() << "\n" << text;

  // Library kernels on and off. A quantized matmul's library kernel also runs as the default
  // one that quantizes activations to 8-bit blocks as llama.cpp does, which the reference
  // does not: that mode checks only that infs and NaNs come out where the reference has them
  // and every other result is finite (8-bit rounding moves a result by up to several percent
  // of its terms' magnitude); its arithmetic is checked bit for bit against a naive
  // implementation in tests/builtins/q8_block_dot_test.cc.
  struct Mode {
    bool libraries;
    bool quantize_activations;
  };
  std::vector<Mode> modes = {{true, false}};
  if (c.openblas || c.quantized_library) modes.push_back({false, false});
  if (c.quantized_library) modes.push_back({true, true});
  for (const Mode& mode : modes) {
    const bool openblas = mode.libraries;
    SCOPED_TRACE(!openblas ? "libraries: none"
                 : mode.quantize_activations ? "libraries: openblas, activations quantized to 8 bits"
                                             : "libraries: openblas");
    Case held = c;
    if (mode.quantize_activations) {
      held.rtol = 0;
      held.atol = std::numeric_limits<double>::infinity();
    }
    absl::StatusOr<Compiled> compiled = Compile(text, openblas, mode.quantize_activations);
    ASSERT_TRUE(compiled.ok()) << compiled.status() << "\n" << text;
    const bool dispatched = compiled->lowered.find(relax::kOpenBlasSgemm) != std::string::npos;
    EXPECT_EQ(dispatched, c.openblas && openblas) << "OpenBLAS dispatch\n" << compiled->lowered;
    vm::VirtualMachine machine(compiled->exe);
    std::mt19937 rng(1234);
    for (const auto& size : c.sizes) {
      std::string where;
      for (const auto& [k, v] : size) absl::StrAppend(&where, k, "=", v, " ");
      std::vector<RefValue> inputs;
      std::vector<vm::Value> args;
      for (const Param& p : c.params) {
        HostTensor t = RandomTensor(p, size, rng);
        args.emplace_back(ToVm(t));
        inputs.emplace_back(std::move(t));
      }
      absl::StatusOr<RefValue> expected = reference::Evaluate(*normalized, "main", inputs);
      ASSERT_TRUE(expected.ok()) << where << expected.status();
      absl::StatusOr<vm::Value> result = machine.Invoke("main", args);
      ASSERT_TRUE(result.ok()) << where << result.status() << "\n" << compiled->lowered;
      absl::StatusOr<RefValue> actual = FromVm(*result);
      ASSERT_TRUE(actual.ok()) << where << actual.status();
      if (!ExpectClose(*expected, *actual, held, where)) {
        ADD_FAILURE() << "lowered module:\n" << compiled->lowered;
        return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpHarnessTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(OpHarnessCoverageTest, EveryOperatorWithALegalizationHasACase) {
  std::set<std::string> covered;
  for (const Case& c : AllCases()) {
    std::set<std::string> ops = OperatorsOf(c);
    EXPECT_FALSE(ops.empty()) << c.name << " calls no operator (does it parse?)\n" << ModuleText(c);
    covered.insert(ops.begin(), ops.end());
  }
  const std::vector<std::string> legalized = LegalizedOperators();
  for (const std::string& name : legalized) {
    EXPECT_TRUE(covered.count(name)) << "operator '" << name
                                     << "' has a legalization but no case in tests/codegen/op_cases.h";
  }
  EXPECT_GT(legalized.size(), 40u) << "the registry lost its legalizations?";
}

TEST(OpHarnessCoverageTest, EveryFloatOperatorHasANanAndInfCase) {
  std::set<std::string> covered;
  for (const Case& c : AllCases()) {
    bool special = false;
    for (const Param& p : c.params) special = special || p.gen.special > 0;
    if (!special) continue;
    std::set<std::string> ops = OperatorsOf(c);
    covered.insert(ops.begin(), ops.end());
  }
  const relax::OpRegistry& registry = relax::OpRegistry::Global();
  for (const std::string& name : registry.Names()) {
    if (registry.Find(name)->legalize == nullptr || ReadsNoFloatData(name)) continue;
    EXPECT_TRUE(covered.count(name)) << "operator '" << name
                                     << "' has no case with NaN and infinite inputs in tests/codegen/op_cases.h";
  }
}

// R.divide of integer tensors by a tensor holding 0 (or INT_MIN by -1) is an error naming the
// division, where the CPU would raise SIGFPE; the reference evaluator has no answer to
// compare with, so the error itself is the expectation.
TEST(OpHarnessIntegerDivisionTest, DivisionByZeroIsAnError) {
  const std::string text = R"(module {
  func @main(x: Tensor((n,), int32), y: Tensor((n,), int32)) -> Tensor((n,), int32) {
    z = R.divide(x, y)
    return z
  }
})";
  absl::StatusOr<Compiled> compiled = Compile(text, /*openblas=*/false, /*quantize_activations=*/false);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  vm::VirtualMachine machine(compiled->exe);
  auto tensor = [](std::vector<int32_t> values) {
    vm::Tensor t = *vm::Tensor::Empty({static_cast<int64_t>(values.size())}, DLDataType{kDLInt, 32, 1});
    std::memcpy(t.data(), values.data(), values.size() * sizeof(int32_t));
    return vm::Value(t);
  };
  absl::StatusOr<vm::Value> ok = machine.Invoke("main", {tensor({7, -7, 9}), tensor({2, 2, -3})});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->as_tensor().data_as<int32_t>()[0], 3);  // truncating
  EXPECT_EQ(ok->as_tensor().data_as<int32_t>()[1], -3);
  EXPECT_EQ(ok->as_tensor().data_as<int32_t>()[2], -3);
  absl::StatusOr<vm::Value> zero = machine.Invoke("main", {tensor({1, 2, 3}), tensor({1, 0, 1})});
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.status().message(), ::testing::HasSubstr("division by zero"));
  absl::StatusOr<vm::Value> overflow = machine.Invoke("main", {tensor({-2147483647 - 1}), tensor({-1})});
  ASSERT_FALSE(overflow.ok());
  EXPECT_THAT(overflow.status().message(), ::testing::HasSubstr("integer overflow"));
  // The VM stays usable.
  EXPECT_TRUE(machine.Invoke("main", {tensor({4}), tensor({2})}).ok());
}

// floor_divide, floor_mod and mod of integers: a zero divisor is the same error as divide's;
// INT_MIN modulo -1 is 0 (no overflow: the remainder never needs the quotient), INT_MIN
// floor-divided by -1 overflows like divide.
TEST(OpHarnessIntegerDivisionTest, FloorDivideAndModuloByZeroAreErrors) {
  for (const char* op : {"floor_divide", "floor_mod", "mod"}) {
    SCOPED_TRACE(op);
    const std::string text = absl::StrCat(R"(module {
  func @main(x: Tensor((n,), int32), y: Tensor((n,), int32)) -> Tensor((n,), int32) {
    z = R.)", op, R"((x, y)
    return z
  }
})");
    absl::StatusOr<Compiled> compiled = Compile(text, /*openblas=*/false, /*quantize_activations=*/false);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    vm::VirtualMachine machine(compiled->exe);
    auto tensor = [](std::vector<int32_t> values) {
      vm::Tensor t = *vm::Tensor::Empty({static_cast<int64_t>(values.size())}, DLDataType{kDLInt, 32, 1});
      std::memcpy(t.data(), values.data(), values.size() * sizeof(int32_t));
      return vm::Value(t);
    };
    absl::StatusOr<vm::Value> ok = machine.Invoke("main", {tensor({7, -7, 7, -7}), tensor({2, 2, -2, -2})});
    ASSERT_TRUE(ok.ok()) << ok.status();
    const int32_t* got = ok->as_tensor().data_as<int32_t>();
    const std::vector<int32_t> want = std::string(op) == "floor_divide" ? std::vector<int32_t>{3, -4, -4, 3}
                                      : std::string(op) == "floor_mod"  ? std::vector<int32_t>{1, 1, -1, -1}
                                                                        : std::vector<int32_t>{1, -1, 1, -1};
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;
    absl::StatusOr<vm::Value> zero = machine.Invoke("main", {tensor({1, 2, 3}), tensor({1, 0, 1})});
    ASSERT_FALSE(zero.ok());
    EXPECT_THAT(zero.status().message(), ::testing::HasSubstr("division by zero"));
    absl::StatusOr<vm::Value> min = machine.Invoke("main", {tensor({-2147483647 - 1}), tensor({-1})});
    if (std::string(op) == "floor_divide") {
      ASSERT_FALSE(min.ok());
      EXPECT_THAT(min.status().message(), ::testing::HasSubstr("integer overflow"));
    } else {
      ASSERT_TRUE(min.ok()) << min.status();
      EXPECT_EQ(min->as_tensor().data_as<int32_t>()[0], 0);
    }
  }
}

TEST(OpHarnessCoverageTest, CaseNamesAreUnique) {
  std::set<std::string> names;
  for (const Case& c : AllCases()) EXPECT_TRUE(names.insert(c.name).second) << "duplicate case " << c.name;
}

}  // namespace
}  // namespace kiln::op_cases
