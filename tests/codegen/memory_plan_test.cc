// Memory planning end to end: the storage ops become AllocStorage / AllocTensor
// instructions, planned and unplanned executables compute the same numbers, and the
// acceptance check of issue 4: for the transformer block at n = 300 the peak memory of a
// call is below the sum of the sizes of its intermediates (every alloc_tensor of main
// except the output, sized from the unplanned lowered module).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "relax/struct_info_functions.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"
#include "tir/analyzer.h"
#include "vm/device.h"
#include "vm/disassembler.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"
#include "tests/source_dir.h"

namespace kiln::codegen {
namespace {

struct Built {
  relax::IRModule lowered;
  std::shared_ptr<const vm::Executable> exe;
};

Built Build(const std::string& text, const std::string& name, bool plan_memory, bool fuse = true) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, name);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return {};
  relax::PipelineOptions options;
  options.check_well_formed = true;
  options.plan_memory = plan_memory;
  options.fuse = fuse;
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, options, &parsed->locations);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (!lowered.ok()) return {};
  absl::StatusOr<std::string> bytes = BuildExecutable(*lowered, CpuTarget::Host());
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  if (!bytes.ok()) return {};
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
  EXPECT_TRUE(exe.ok()) << exe.status();
  return {*lowered, exe.ok() ? *exe : nullptr};
}

vm::Tensor Random(std::vector<int64_t> shape, uint32_t seed) {
  vm::Tensor t = *vm::Tensor::Empty(shape, vm::DTypeFloat32());
  uint32_t s = seed * 2654435761u + 11;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data_as<float>()[i] = static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 1000.0f;
  }
  return t;
}

// The bytes of every alloc_tensor in `fn` except those the result is computed into, with
// the symbolic variable `var` set to `value`.
int64_t IntermediateBytes(const relax::FunctionNode& fn, const std::string& var, int64_t value) {
  const auto* seq = fn.body.as<relax::SeqExprNode>();
  std::vector<const relax::VarNode*> outputs;
  for (const relax::BindingBlock& block : seq->blocks) {
    for (const relax::Binding& b : block.bindings) {
      const auto* call = b.value.as<relax::CallNode>();
      const auto* op = call == nullptr ? nullptr : call->op.as<relax::OpNode>();
      if (op != nullptr && op->name == "call_tir_dps" && b.var.get() == seq->body.get()) {
        for (const relax::Expr& out : call->args[2].as<relax::TupleNode>()->fields) {
          outputs.push_back(out.as<relax::VarNode>());
        }
      }
    }
  }
  EXPECT_EQ(outputs.size(), 1u) << "the result should be one kernel output";
  int64_t total = 0;
  int count = 0;
  for (const relax::BindingBlock& block : seq->blocks) {
    for (const relax::Binding& b : block.bindings) {
      const auto* call = b.value.as<relax::CallNode>();
      const auto* op = call == nullptr ? nullptr : call->op.as<relax::OpNode>();
      if (op == nullptr || op->name != "alloc_tensor") continue;
      if (std::find(outputs.begin(), outputs.end(), b.var.get()) != outputs.end()) continue;
      const auto* t = b.var->struct_info().as<relax::TensorStructInfoNode>();
      int64_t bytes = t->dtype->bits() / 8;
      for (const tir::PrimExpr& d : *t->shape) {
        tir::Analyzer analyzer;
        std::vector<tir::Var> vars;
        relax::CollectVars(d, &vars);
        for (const tir::Var& v : vars) {
          if (v->name == var) analyzer.Bind(v, value, value);
        }
        tir::IntBound dim = analyzer.ConstIntBound(d);
        EXPECT_TRUE(dim.is_const()) << tir::ToString(d);
        bytes *= dim.min;
      }
      total += bytes;
      ++count;
    }
  }
  // The block's 9 fused kernels write 8 intermediates before the output.
  EXPECT_GE(count, 8);
  return total;
}

TEST(MemoryPlanTest, StorageOpsBecomeInstructionsAndKeepTheNumbers) {
  // A chain of elementwise operators: with planning a's and c's memory is one storage.
  const std::string text = R"(module {
  func @main(x: Tensor((n, 64), float32)) -> Tensor((n, 64), float32) where n <= 4096 {
    dataflow {
      %a = R.exp(x)
      %b = R.multiply(%a, %a)
      %c = R.add(%b, x)
      %d = R.tanh(%c)
      e = R.subtract(%d, %a)
    }
    return e
  }
})";
  // Unfused, so that each operator's output is an intermediate to plan (fusion would make
  // most of the chain one kernel).
  Built planned = Build(text, "chain.kir", true, /*fuse=*/false);
  Built plain = Build(text, "chain.kir", false, /*fuse=*/false);
  ASSERT_NE(planned.exe, nullptr);
  ASSERT_NE(plain.exe, nullptr);
  std::string listing = vm::Disassemble(planned.exe->contents());
  EXPECT_NE(listing.find("alloc_storage"), std::string::npos) << listing;
  EXPECT_NE(listing.find("alloc_tensor"), std::string::npos) << listing;
  vm::VirtualMachine vm_planned(planned.exe), vm_plain(plain.exe);
  for (int64_t n : {1, 7, 300}) {
    vm::Tensor x = Random({n, 64}, static_cast<uint32_t>(n));
    absl::StatusOr<vm::Value> got = vm_planned.Invoke("main", {vm::Value(x)});
    ASSERT_TRUE(got.ok()) << got.status();
    absl::StatusOr<vm::Value> want = vm_plain.Invoke("main", {vm::Value(x)});
    ASSERT_TRUE(want.ok()) << want.status();
    // Independent of both: e = tanh(exp(x)^2 + x) - exp(x), to float32 accuracy.
    const float* in = x.data_as<float>();
    const float* g = got->as_tensor().data_as<float>();
    const float* w = want->as_tensor().data_as<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      double a = std::exp(static_cast<double>(in[i]));
      double e = std::tanh(a * a + in[i]) - a;
      ASSERT_EQ(g[i], w[i]) << "planned and unplanned differ at " << i;
      ASSERT_NEAR(g[i], e, 1e-5 * (1 + std::fabs(e))) << i;
    }
  }
  EXPECT_GT(vm_planned.storage_stats().storages, 0);
  EXPECT_EQ(vm_plain.storage_stats().storages, 0);
}

TEST(MemoryPlanTest, TransformerBlockPeakIsBelowTheSumOfItsIntermediates) {
  const std::string root = kiln::test::SourceDir();
  std::string path = std::string(root) + "/examples/models/transformer_block.kir";
  absl::StatusOr<std::string> text = support::ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  Built planned = Build(*text, path, true);
  Built plain = Build(*text, path, false);
  ASSERT_NE(planned.exe, nullptr);
  ASSERT_NE(plain.exe, nullptr);
  const int64_t n = 300;
  const int64_t sum = IntermediateBytes(*plain.lowered.Find("main")->relax_function(), "n", n);

  std::vector<vm::Value> args{vm::Value(Random({n, 64}, 1))};
  const std::vector<std::vector<int64_t>> weights = {{64, 64}, {64, 64}, {64, 64}, {64, 64}, {64},     {64},
                                                     {64, 256}, {256},   {256, 64}, {64},     {64},     {64}};
  for (size_t i = 0; i < weights.size(); ++i) args.push_back(vm::Value(Random(weights[i], 2 + static_cast<uint32_t>(i))));

  auto peak_of = [&](vm::VirtualMachine& machine, vm::Value* result) {
    vm::ResetCpuPeakMemory();
    int64_t baseline = vm::CpuMemoryStats().bytes_in_use;
    absl::StatusOr<vm::Value> r = machine.Invoke("main", args);
    EXPECT_TRUE(r.ok()) << r.status();
    int64_t peak = vm::CpuMemoryStats().peak_bytes_in_use - baseline;
    if (r.ok()) *result = *r;
    return peak;
  };
  vm::VirtualMachine vm_planned(planned.exe), vm_plain(plain.exe);
  vm::Value got, want;
  const int64_t planned_peak = peak_of(vm_planned, &got);
  const int64_t plain_peak = peak_of(vm_plain, &want);
  const vm::VirtualMachine::StorageStats& stats = vm_planned.storage_stats();
  std::printf("transformer block, n = %lld: intermediates %lld bytes; peak %lld bytes planned, %lld unplanned; "
              "%lld tensors (%lld bytes) in %lld storages (%lld bytes)\n",
              static_cast<long long>(n), static_cast<long long>(sum), static_cast<long long>(planned_peak),
              static_cast<long long>(plain_peak), static_cast<long long>(stats.tensors),
              static_cast<long long>(stats.tensor_bytes), static_cast<long long>(stats.storages),
              static_cast<long long>(stats.storage_bytes));
  EXPECT_LT(planned_peak, sum);
  // A storage is never grown for a larger later tensor (relax/transform/plan_memory.h), so
  // planning holds no bytes the unplanned run would not.
  EXPECT_LE(planned_peak, plain_peak);
  EXPECT_GT(stats.storages, 0);
  EXPECT_LT(stats.storage_bytes, stats.tensor_bytes);
  // Same kernels in the same order: bit-identical results.
  ASSERT_TRUE(got.is_tensor() && want.is_tensor());
  ASSERT_EQ(got.as_tensor().shape(), want.as_tensor().shape());
  EXPECT_EQ(std::memcmp(got.as_tensor().data(), want.as_tensor().data(), got.as_tensor().nbytes()), 0);
}

}  // namespace
}  // namespace kiln::codegen
