// Mutation test of the example models' parameter shapes: every parameter's shape perturbed
// by +-1 in each dimension gives a clear error or the reference's result - never a crash,
// garbage or an out-of-bounds read (scripts/sanitizer_tests.sh runs this under
// AddressSanitizer). Each model runs as written (constant weight dims: the VM's parameter
// checks refuse) and "symbolized", with every constant parameter dim replaced by a fresh
// symbolic variable, so that the relations between them are what inference assumed and the
// run-time shape checks (relax/transform/insert_shape_checks.h) must refuse.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"
#include "tests/reference/reference_evaluator.h"
#include "tests/source_dir.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace kiln::codegen {
namespace {

struct Model {
  std::string name;
  std::string text;
  // The parameters' shapes for a valid call (the symbolic dims given a small value).
  std::vector<std::vector<int64_t>> shapes;
};

// Every integer dim of the parameters' tensor types becomes a fresh symbol p0, p1, ...;
// the return type keeps only its rank.
std::string Symbolize(const std::string& text) {
  const size_t open = text.find("func @main(");
  const size_t arrow = text.find(") -> ", open);
  const size_t body = text.find(" {", arrow);
  std::string params = text.substr(open, arrow - open);
  std::string symbolized;
  int next = 0;
  std::regex dim(R"(([(,] ?)(\d+)(?=[,)]))");
  std::smatch m;
  std::string rest = params;
  while (std::regex_search(rest, m, dim)) {
    symbolized += m.prefix().str() + m[1].str() + absl::StrCat("p", next++);
    rest = m.suffix().str();
  }
  symbolized += rest;
  std::string ret = text.substr(arrow + 5, body - arrow - 5);
  const size_t where = ret.find(" where ");
  std::string bounds = where == std::string::npos ? "" : ret.substr(where);
  std::string type = ret.substr(0, where);
  const size_t dims_begin = type.find("((") + 2;
  const std::string dims = type.substr(dims_begin, type.find(')', dims_begin) - dims_begin);
  const int ndim = static_cast<int>(std::vector<std::string>(absl::StrSplit(dims, ',', absl::SkipWhitespace())).size());
  return text.substr(0, open) + symbolized + ") -> " + absl::StrCat("Tensor(ndim=", ndim, ", float32)") +
         bounds + text.substr(body);
}

std::vector<float> Values(int64_t n, uint32_t seed) {
  std::vector<float> out(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u + 7;
  for (float& v : out) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 4000.0f;
  }
  return out;
}

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

class Runner {
 public:
  explicit Runner(const std::string& text) {
    absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(text, "mutant.kir");
    EXPECT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
    if (!parsed.ok()) return;
    absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed->module, &parsed->locations);
    EXPECT_TRUE(normalized.ok()) << normalized.status() << "\n" << text;
    if (!normalized.ok()) return;
    normalized_ = *normalized;
    absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed->module, {}, &parsed->locations);
    EXPECT_TRUE(lowered.ok()) << lowered.status();
    if (!lowered.ok()) return;
    absl::StatusOr<std::string> bytes = BuildExecutable(*lowered, CpuTarget::Host());
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    if (!bytes.ok()) return;
    absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
    EXPECT_TRUE(exe.ok()) << exe.status();
    if (exe.ok()) machine_ = std::make_unique<vm::VirtualMachine>(*exe);
  }
  bool ok() const { return machine_ != nullptr; }

  // Runs the compiled module and the reference on the same inputs: both refuse, or both
  // run and agree. Returns whether the VM ran.
  bool Check(const std::vector<std::vector<int64_t>>& shapes, const std::string& what) {
    std::vector<vm::Value> args;
    std::vector<reference::RefValue> ref_args;
    for (size_t i = 0; i < shapes.size(); ++i) {
      std::vector<float> v = Values(Numel(shapes[i]), static_cast<uint32_t>(i + 1));
      vm::Tensor t = *vm::Tensor::Empty(shapes[i], vm::DTypeFloat32());
      std::copy(v.begin(), v.end(), t.data_as<float>());
      args.push_back(vm::Value(std::move(t)));
      ref_args.push_back(reference::RefValue(reference::HostTensor::FromDoubles(
          tir::DataType::Float32(), shapes[i], std::vector<double>(v.begin(), v.end()))));
    }
    absl::StatusOr<vm::Value> got = machine_->Invoke("main", args);
    absl::StatusOr<reference::RefValue> want = reference::Evaluate(normalized_, "main", ref_args);
    if (!got.ok()) {
      EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << what << ": " << got.status();
      EXPECT_FALSE(got.status().message().empty()) << what;
      EXPECT_FALSE(want.ok()) << what << ": the VM refused (" << got.status() << ") what the reference ran";
      return false;
    }
    EXPECT_TRUE(want.ok()) << what << ": the VM ran what the reference refuses: " << want.status();
    if (!want.ok()) return true;
    std::vector<double> w = want->tensor().ToDoubles();
    const vm::Tensor& g = got->as_tensor();
    EXPECT_EQ(g.numel(), static_cast<int64_t>(w.size())) << what;
    for (int64_t i = 0; i < std::min<int64_t>(g.numel(), static_cast<int64_t>(w.size())); ++i) {
      if (std::fabs(g.data_as<float>()[i] - w[static_cast<size_t>(i)]) > 1e-3 * (1 + std::fabs(w[static_cast<size_t>(i)]))) {
        ADD_FAILURE() << what << ": element " << i << " is " << g.data_as<float>()[i] << ", the reference says "
                      << w[static_cast<size_t>(i)];
        break;
      }
    }
    return true;
  }

 private:
  relax::IRModule normalized_;
  std::unique_ptr<vm::VirtualMachine> machine_;
};

std::vector<Model> Models() {
  auto read = [](const std::string& name) {
    absl::StatusOr<std::string> text = support::ReadFile(test::SourceDir() + "/examples/models/" + name);
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : std::string();
  };
  return {
      {"mlp.kir", read("mlp.kir"), {{3, 784}, {784, 256}, {256}, {256, 10}, {10}}},
      {"transformer_block.kir",
       read("transformer_block.kir"),
       {{5, 64}, {64, 64}, {64, 64}, {64, 64}, {64, 64}, {64}, {64}, {64, 256}, {256}, {256, 64}, {64}, {64}, {64}}},
  };
}

TEST(ShapeMutation, ExampleModelsNeverCrashOnPerturbedParameterShapes) {
  for (const Model& model : Models()) {
    for (bool symbolic : {false, true}) {
      const std::string text = symbolic ? Symbolize(model.text) : model.text;
      SCOPED_TRACE(absl::StrCat(model.name, symbolic ? " (symbolized)" : ""));
      Runner runner(text);
      ASSERT_TRUE(runner.ok()) << text;
      EXPECT_TRUE(runner.Check(model.shapes, "the valid shapes"));
      int refused = 0;
      for (size_t p = 0; p < model.shapes.size(); ++p) {
        for (size_t d = 0; d < model.shapes[p].size(); ++d) {
          for (int delta : {-1, 1}) {
            std::vector<std::vector<int64_t>> shapes = model.shapes;
            shapes[p][d] += delta;
            refused += runner.Check(shapes, absl::StrCat("parameter ", p, " dim ", d, " ", delta > 0 ? "+1" : "-1")) ? 0 : 1;
          }
        }
      }
      // Only the symbolic batch / sequence dim (parameter 0, dim 0) may change.
      int mutants = 0;
      for (const auto& s : model.shapes) mutants += 2 * static_cast<int>(s.size());
      EXPECT_EQ(refused, mutants - 2);
    }
  }
}

}  // namespace
}  // namespace kiln::codegen
