// FuseAttention (relax/transform/fuse_attention.h): attention chains written as operators
// become one kernel on CPUs, which computes what the operators do (checked against the
// reference evaluator on the unfused module, tests/reference, at sizes that leave partial
// row blocks, vectors and register tiles), and chains it must not take stay as they were.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/fuse_attention.h"
#include "relax/transform/pipeline.h"
#include "tests/reference/reference_evaluator.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace kiln::codegen {
namespace {

int CountOf(const std::string& text, const std::string& what) {
  int count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
  return count;
}

relax::IRModule Parse(const std::string& text) {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, "attention.kir");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return {};
  absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed->module, &parsed->locations);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  return normalized.ok() ? *normalized : relax::IRModule();
}

// The module after fuse_attention alone, printed.
std::string AfterFuseAttention(const std::string& text, tir::Target target = tir::Target::Cpu("host", 512)) {
  relax::IRModule module = Parse(text);
  absl::StatusOr<relax::IRModule> fused = relax::FuseAttention(module, target);
  EXPECT_TRUE(fused.ok()) << fused.status();
  return fused.ok() ? relax::PrintModule(*fused) : "";
}

// Compiled for `mcpu` ("host", or "haswell": AVX2 code, which every machine here runs).
std::shared_ptr<const vm::Executable> Compile(const std::string& text, std::string* lowered_text,
                                              const std::string& mcpu = "host") {
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, "attention.kir");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return nullptr;
  absl::StatusOr<tir::Target> parsed_target = tir::Target::Parse("cpu -mcpu=" + mcpu);
  EXPECT_TRUE(parsed_target.ok()) << parsed_target.status();
  if (!parsed_target.ok()) return nullptr;
  absl::StatusOr<tir::Target> target = ResolveCpuTarget(*parsed_target);
  EXPECT_TRUE(target.ok()) << target.status();
  if (!target.ok()) return nullptr;
  absl::StatusOr<CpuTarget> cpu = ToCpuTarget(*target);
  EXPECT_TRUE(cpu.ok()) << cpu.status();
  if (!cpu.ok()) return nullptr;
  relax::PipelineOptions options;
  options.check_well_formed = true;
  options.libraries.openblas = false;
  options.target = *target;
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, options, &parsed->locations);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (!lowered.ok()) return nullptr;
  *lowered_text = relax::PrintModule(*lowered);
  absl::StatusOr<std::string> bytes = BuildExecutable(*lowered, *cpu);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  if (!bytes.ok()) return nullptr;
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? *exe : nullptr;
}

struct Input {
  vm::Tensor vm;
  reference::RefValue ref;
};

// Uniform in [-scale, scale): scores of either sign and spread, so the softmax is not flat.
Input RandomInput(std::vector<int64_t> shape, uint32_t seed, float scale = 1.0f) {
  vm::Tensor t = *vm::Tensor::Empty(shape, vm::DTypeFloat32());
  std::vector<double> values(static_cast<size_t>(t.numel()));
  uint32_t s = seed * 2654435761u + 11;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    float v = scale * static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 1000.0f;
    t.data_as<float>()[i] = v;
    values[static_cast<size_t>(i)] = v;
  }
  return {t, reference::RefValue(reference::HostTensor::FromDoubles(tir::DataType::Float32(), shape, values))};
}

// The kernel's result against the reference's, to float32 rounding of the operators.
void ExpectNear(const vm::Tensor& got, const reference::HostTensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  std::vector<double> w = want.ToDoubles();
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double expected = w[static_cast<size_t>(i)];
    ASSERT_NEAR(got.data_as<float>()[i], expected, 2e-5 * (1 + std::fabs(expected))) << "element " << i;
  }
}

// Runs `main` of the compiled and of the reference (unfused) module on q, k, v (and a mask)
// of the given shapes and compares. `masked(i, j)`, when given, sets the mask's element at
// row i, column j (its last two axes) to -inf, the way a causal or padding mask hides a key.
using MaskedFn = std::function<bool(int64_t row, int64_t column)>;
void ExpectMatchesReference(const std::shared_ptr<const vm::Executable>& exe, const relax::IRModule& reference_module,
                            const std::vector<std::vector<int64_t>>& shapes, uint32_t seed, float spread,
                            const MaskedFn& masked = nullptr) {
  ASSERT_NE(exe, nullptr);
  std::vector<vm::Value> args;
  std::vector<reference::RefValue> ref_args;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Input in = RandomInput(shapes[i], seed + static_cast<uint32_t>(i), i < 2 ? spread : 1.0f);
    if (i == 3 && masked) {
      const std::vector<int64_t>& shape = shapes[i];
      const int64_t columns = shape.back(), rows = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
      float* data = in.vm.data_as<float>();
      std::vector<double> values(data, data + in.vm.numel());
      for (int64_t e = 0; e < in.vm.numel(); ++e) {
        if (masked((e / columns) % rows, e % columns)) {
          data[e] = -std::numeric_limits<float>::infinity();
          values[static_cast<size_t>(e)] = -std::numeric_limits<double>::infinity();
        }
      }
      in.ref = reference::RefValue(reference::HostTensor::FromDoubles(tir::DataType::Float32(), shape, values));
    }
    args.push_back(vm::Value(in.vm));
    ref_args.push_back(in.ref);
  }
  vm::VirtualMachine machine(exe);
  absl::StatusOr<vm::Value> got = machine.Invoke("main", args);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<reference::RefValue> want = reference::Evaluate(reference_module, "main", ref_args);
  ASSERT_TRUE(want.ok()) << want.status();
  ExpectNear(got->as_tensor(), want->tensor());
}

// Self-attention over a symbolic sequence, as examples/models/transformer_block.kir writes it.
constexpr char kSelfAttention[] = R"(module {
  func @main(q: Tensor((n, 64), float32), k: Tensor((n, 64), float32), v: Tensor((n, 64), float32)) -> Tensor((n, 64), float32) where n <= 2048 {
    dataflow {
      %kt = R.permute_dims(k, axes=[1, 0])
      %scores = R.matmul(q, %kt)
      %scale = R.const(float32, [], [0.125])
      %scaled = R.multiply(%scores, %scale)
      %probs = R.softmax(%scaled, axis=-1)
      out = R.matmul(%probs, v)
    }
    return out
  }
})";

TEST(FuseAttentionTest, TheChainBecomesOneKernelAndTheIntermediatesGo) {
  std::string text = AfterFuseAttention(kSelfAttention);
  EXPECT_EQ(CountOf(text, "R.call_tir(@attention, (q, k, v)"), 1) << text;
  for (const char* gone : {"R.softmax", "R.matmul", "R.permute_dims", "R.multiply"}) {
    EXPECT_EQ(CountOf(text, gone), 0) << gone << "\n" << text;
  }
  // Rows in blocks of 32 where vectors have 16 lanes, 24 otherwise.
  EXPECT_GE(CountOf(text, "floordiv(n + 31, 32)"), 1) << text;
  std::string avx2 = AfterFuseAttention(kSelfAttention, tir::Target::Cpu("haswell", 256));
  EXPECT_GE(CountOf(avx2, "floordiv(n + 23, 24)"), 1) << avx2;
  // Other targets keep the operators.
  std::string vulkan = AfterFuseAttention(kSelfAttention, tir::Target::Vulkan());
  EXPECT_EQ(CountOf(vulkan, "@attention"), 0) << vulkan;
  EXPECT_EQ(CountOf(vulkan, "R.softmax"), 1) << vulkan;
}

// On the host's vectors and on AVX2's (row blocks of 24, 8 lanes, register tiles of 6 rows).
TEST(FuseAttentionTest, SelfAttentionMatchesTheOperators) {
  relax::IRModule reference_module = Parse(kSelfAttention);
  for (const std::string mcpu : {"host", "haswell"}) {
    SCOPED_TRACE(mcpu);
    std::string lowered;
    std::shared_ptr<const vm::Executable> exe = Compile(kSelfAttention, &lowered, mcpu);
    ASSERT_NE(exe, nullptr);
    EXPECT_EQ(CountOf(lowered, "R.call_tir_dps(@attention,"), 1) << lowered;
    // Partial row blocks, partial vectors and register tiles.
    for (int64_t n : {1, 2, 5, 17, 24, 31, 33, 49, 100, 257}) {
      SCOPED_TRACE(n);
      ExpectMatchesReference(exe, reference_module, {{n, 64}, {n, 64}, {n, 64}}, static_cast<uint32_t>(n), 2.0f);
    }
  }
}

// Cross-attention with batch and head axes, m queries against n keys of other extents, and
// each way of writing the scale the pass takes.
TEST(FuseAttentionTest, BatchedCrossAttentionWithEachScaleMatchesTheOperators) {
  const std::string templ = R"(module {
  func @main(q: Tensor((b, 2, m, 40), float32), k: Tensor((b, 2, n, 40), float32), v: Tensor((b, 2, n, 24), float32)) -> Tensor((b, 2, m, 24), float32) where m <= 512, n <= 512 {
    dataflow {
      %kt = R.permute_dims(k, axes=[0, 1, 3, 2])
      %scores = R.matmul(q, %kt)
      SCALE
      %probs = R.softmax(%scaled, axis=3)
      out = R.matmul(%probs, v)
    }
    return out
  }
})";
  const std::vector<std::string> scales = {
      "%scaled = R.divide(%scores, R.const(float32, [], [6.3245554]))",
      "%scaled = R.multiply(R.const(float32, [1], [0.3]), %scores)",
      "%scaled = R.add(%scores, R.const(float32, [], [0.0]))",  // not a scale: no fusion
  };
  for (size_t i = 0; i < scales.size(); ++i) {
    SCOPED_TRACE(scales[i]);
    const std::string text = absl::StrReplaceAll(templ, {{"SCALE", scales[i]}});
    std::string lowered;
    std::shared_ptr<const vm::Executable> exe = Compile(text, &lowered);
    ASSERT_NE(exe, nullptr);
    const bool fused = i < 2;
    EXPECT_EQ(CountOf(lowered, "R.call_tir_dps(@attention,"), fused ? 1 : 0) << lowered;
    relax::IRModule reference_module = Parse(text);
    for (auto [b, m, n] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {2, 7, 33}, {1, 40, 5}, {3, 33, 70}}) {
      SCOPED_TRACE(absl::StrCat(b, " x ", m, " x ", n));
      ExpectMatchesReference(exe, reference_module, {{b, 2, m, 40}, {b, 2, n, 40}, {b, 2, n, 24}},
                             static_cast<uint32_t>(m * 100 + n), 3.0f);
    }
  }
}

// An additive mask between the scale and the softmax (a BERT-style padding mask over the
// keys, a causal mask over queries and keys, a bias per head), broadcast to the scores.
TEST(FuseAttentionTest, AdditiveMasksMatchTheOperators) {
  const std::string templ = R"(module {
  func @main(q: Tensor((b, 2, m, 40), float32), k: Tensor((b, 2, n, 40), float32), v: Tensor((b, 2, n, 24), float32), mask: Tensor(MASK, float32)) -> Tensor((b, 2, m, 24), float32) where m <= 512, n <= 512 {
    dataflow {
      %kt = R.permute_dims(k, axes=[0, 1, 3, 2])
      %scores = R.matmul(q, %kt)
      %scaled = R.divide(%scores, R.const(float32, [], [6.3245554]))
      %masked = R.add(ADD)
      %probs = R.softmax(%masked, axis=-1)
      out = R.matmul(%probs, v)
    }
    return out
  }
})";
  struct Case {
    std::string what, mask, add;
    std::function<std::vector<int64_t>(int64_t b, int64_t m, int64_t n)> shape;
    MaskedFn masked;
  };
  const std::vector<Case> cases = {
      {"padding", "(b, 1, 1, n)", "%scaled, mask", [](int64_t b, int64_t, int64_t n) { return std::vector<int64_t>{b, 1, 1, n}; },
       [](int64_t, int64_t j) { return j % 3 == 2; }},
      {"causal", "(m, n)", "mask, %scaled", [](int64_t, int64_t m, int64_t n) { return std::vector<int64_t>{m, n}; },
       [](int64_t i, int64_t j) { return j > i; }},
      {"bias per head", "(2, m, n)", "%scaled, mask",
       [](int64_t, int64_t m, int64_t n) { return std::vector<int64_t>{2, m, n}; }, nullptr},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string text = absl::StrReplaceAll(templ, {{"MASK", c.mask}, {"ADD", c.add}});
    std::string after = AfterFuseAttention(text);
    EXPECT_EQ(CountOf(after, "R.call_tir(@attention, (q, k, v, mask)"), 1) << after;
    std::string lowered;
    std::shared_ptr<const vm::Executable> exe = Compile(text, &lowered);
    ASSERT_NE(exe, nullptr);
    relax::IRModule reference_module = Parse(text);
    // m <= n, so that every causal row keeps a key (a row of -inf alone is NaN both ways).
    for (auto [b, m, n] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {2, 7, 33}, {1, 33, 40}, {2, 50, 70}}) {
      SCOPED_TRACE(absl::StrCat(b, " x ", m, " x ", n));
      ExpectMatchesReference(exe, reference_module, {{b, 2, m, 40}, {b, 2, n, 40}, {b, 2, n, 24}, c.shape(b, m, n)},
                             static_cast<uint32_t>(m * 100 + n), 3.0f, c.masked);
    }
  }
  // A mask that would grow the scores (more rows than the queries) is no mask of this chain.
  const std::string grows = absl::StrReplaceAll(templ, {{"MASK", "(b, 2, 2, m, n)"}, {"ADD", "%scaled, mask"},
                                                        {"Tensor((b, 2, m, 24), float32) where", "Object where"}});
  std::string after = AfterFuseAttention(grows);
  EXPECT_EQ(CountOf(after, "@attention"), 0) << after;
}

// A mask by `where`: a bool condition keeps the scaled scores or puts a constant there
// (-inf, or the most negative float as exporters write it), either way round.
TEST(FuseAttentionTest, WhereMasksMatchTheOperators) {
  const std::string templ = R"(module {
  func @main(q: Tensor((m, 32), float32), k: Tensor((n, 32), float32), v: Tensor((n, 16), float32), keep: Tensor((m, n), bool)) -> Tensor((m, 16), float32) where m <= 512, n <= 512 {
    dataflow {
      %kt = R.permute_dims(k)
      %scores = R.matmul(q, %kt)
      %scaled = R.multiply(%scores, R.const(float32, [], [0.17677669]))
      %masked = R.where(WHERE)
      %probs = R.softmax(%masked, axis=-1)
      out = R.matmul(%probs, v)
    }
    return out
  }
})";
  for (const std::string where :
       {"keep, %scaled, R.const(float32, [], [-inf])", "R.logical_not(keep), R.const(float32, [], [-3.4028235e38]), %scaled"}) {
    SCOPED_TRACE(where);
    std::string text = absl::StrReplaceAll(templ, {{"WHERE", where}});
    if (where.find("logical_not") != std::string::npos) {
      text = absl::StrReplaceAll(text, {{"%masked = R.where(R.logical_not(keep),", "%hide = R.logical_not(keep)\n      %masked = R.where(%hide,"}});
    }
    std::string after = AfterFuseAttention(text);
    EXPECT_EQ(CountOf(after, "@attention"), 2) << after;  // the call and the kernel
    std::string lowered;
    std::shared_ptr<const vm::Executable> exe = Compile(text, &lowered);
    ASSERT_NE(exe, nullptr);
    EXPECT_EQ(CountOf(lowered, "R.call_tir_dps(@attention,"), 1) << lowered;
    relax::IRModule reference_module = Parse(text);
    vm::VirtualMachine machine(exe);
    for (auto [m, n] : std::vector<std::array<int64_t, 2>>{{1, 1}, {7, 33}, {40, 40}, {33, 70}}) {
      SCOPED_TRACE(absl::StrCat(m, " x ", n));
      Input q = RandomInput({m, 32}, 1, 3.0f), k = RandomInput({n, 32}, 2, 3.0f), v = RandomInput({n, 16}, 3);
      // Causal: query i sees keys up to i + n - m (the last query sees every key).
      vm::Tensor keep = *vm::Tensor::Empty({m, n}, DLDataType{vm::kDTypeBool, 8, 1});
      std::vector<int64_t> bits;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const bool visible = j <= i + n - m;
          keep.data_as<uint8_t>()[i * n + j] = visible;
          bits.push_back(visible);
        }
      }
      reference::RefValue keep_ref(reference::HostTensor::FromInts(tir::DataType::Bool(), {m, n}, bits));
      absl::StatusOr<vm::Value> got = machine.Invoke("main", {vm::Value(q.vm), vm::Value(k.vm), vm::Value(v.vm), vm::Value(keep)});
      ASSERT_TRUE(got.ok()) << got.status();
      absl::StatusOr<reference::RefValue> want = reference::Evaluate(reference_module, "main", {q.ref, k.ref, v.ref, keep_ref});
      ASSERT_TRUE(want.ok()) << want.status();
      ExpectNear(got->as_tensor(), want->tensor());
    }
  }
}

// The attention of a row with no keys is zero (an empty softmax times an empty v).
TEST(FuseAttentionTest, NoKeysGiveZeros) {
  const std::string text = R"(module {
  func @main(q: Tensor((m, 16), float32), k: Tensor((n, 16), float32), v: Tensor((n, 8), float32)) -> Tensor((m, 8), float32) {
    dataflow {
      %kt = R.permute_dims(k)
      %scores = R.matmul(q, %kt)
      %probs = R.softmax(%scores, axis=-1)
      out = R.matmul(%probs, v)
    }
    return out
  }
})";
  std::string lowered;
  std::shared_ptr<const vm::Executable> exe = Compile(text, &lowered);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(CountOf(lowered, "R.call_tir_dps(@attention,"), 1) << lowered;
  ExpectMatchesReference(exe, Parse(text), {{5, 16}, {0, 16}, {0, 8}}, 1, 1.0f);
  ExpectMatchesReference(exe, Parse(text), {{0, 16}, {3, 16}, {3, 8}}, 2, 1.0f);
  ExpectMatchesReference(exe, Parse(text), {{37, 16}, {3, 16}, {3, 8}}, 3, 1.0f);
}

// Chains the kernel would compute differently, or whose intermediates something else
// reads, keep their operators.
TEST(FuseAttentionTest, ChainsItMustNotTakeStayAsTheyWere) {
  const std::string templ = R"(module {
  func @main(q: Tensor((n, 64), DTYPE), k: Tensor((n, 64), DTYPE), v: Tensor((n, 64), DTYPE)) -> RET {
    dataflow {
      %kt = R.permute_dims(k, axes=[1, 0])
      %scores = R.matmul(q, %kt)
      %scaled = R.multiply(%scores, SCALE)
      %probs = R.softmax(%scaled, axis=AXIS)
      %attn = R.matmul(%probs, v)
      out = RESULT
    }
    return out
  }
})";
  struct Case {
    std::string what, dtype, scale, axis, result, ret;
  };
  const std::string f32 = "float32", c = "R.const(float32, [], [0.125])", one = "Tensor((n, 64), float32)";
  const std::vector<Case> cases = {
      {"negative scale", f32, "R.const(float32, [], [-0.125])", "-1", "%attn", one},
      {"zero scale", f32, "R.const(float32, [], [0.0])", "-1", "%attn", one},
      {"softmax over the queries", f32, c, "0", "%attn", one},
      {"float16", "float16", "R.const(float16, [], [0x3000])", "-1", "%attn",
       "Tensor((n, 64), float16)"},
      {"the probabilities are returned too", f32, c, "-1", "(%attn, %probs)", "Object"},
      {"the scores are returned too", f32, c, "-1", "(%attn, %scores)", "Object"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    std::string text = absl::StrReplaceAll(
        templ, {{"DTYPE", k.dtype}, {"SCALE", k.scale}, {"AXIS", k.axis}, {"RESULT", k.result}, {"RET", k.ret}});
    std::string after = AfterFuseAttention(text);
    EXPECT_EQ(CountOf(after, "@attention"), 0) << after;
    EXPECT_EQ(CountOf(after, "R.softmax"), 1) << after;
  }
  // The last matmul in another dataflow block than the queries: its call could not read them.
  {
    const std::string split = R"(module {
  func @main(x: Tensor((n, 64), float32), k: Tensor((n, 64), float32), v: Tensor((n, 64), float32)) -> Tensor((n, 64), float32) {
    dataflow {
      %q = R.multiply(x, R.const(float32, [], [2.0]))
      %kt = R.permute_dims(k)
      %scores = R.matmul(%q, %kt)
      probs = R.softmax(%scores, axis=-1)
    }
    dataflow {
      out = R.matmul(probs, v)
    }
    return out
  }
})";
    std::string after = AfterFuseAttention(split);
    EXPECT_EQ(CountOf(after, "@attention"), 0) << after;
  }
  // The transpose stays when something else reads it; the chain is fused all the same.
  std::string shared = absl::StrReplaceAll(
      templ, {{"DTYPE", f32}, {"SCALE", c}, {"AXIS", "-1"}, {"RESULT", "(%attn, %kt)"}, {"RET", "Object"}});
  std::string after = AfterFuseAttention(shared);
  EXPECT_EQ(CountOf(after, "R.call_tir(@attention,"), 1) << after;
  EXPECT_EQ(CountOf(after, "R.permute_dims"), 1) << after;
}

}  // namespace
}  // namespace kiln::codegen
