#include "tools/onnx_test_case.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "builtins/default_builtins.h"
#include "codegen/cpu_target.h"
#include "frontends/onnx/tensor_file.h"
#include "frontends/onnx/value.h"
#include "vm/dtype.h"
#include "tir/target.h"
#include "tools/onnx_model.h"
#include "vm/virtual_machine.h"

namespace kiln::tools {
namespace {

namespace fs = std::filesystem;
using frontends::onnx::NamedTensor;

struct DataSet {
  std::string name;
  std::vector<NamedTensor> inputs, outputs;
};

// input_0.pb, input_1.pb, ... in numeric order.
absl::StatusOr<std::vector<NamedTensor>> ReadNumbered(const fs::path& dir, const std::string& prefix) {
  std::vector<NamedTensor> out;
  for (int i = 0;; ++i) {
    fs::path file = dir / absl::StrCat(prefix, i, ".pb");
    if (!fs::exists(file)) break;
    absl::StatusOr<NamedTensor> t = frontends::onnx::ReadTensorFile(file.string());
    if (!t.ok()) return t.status();
    out.push_back(*std::move(t));
  }
  return out;
}

absl::StatusOr<std::vector<DataSet>> ReadDataSets(const fs::path& dir) {
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      folders.push_back(entry.path());
    }
  }
  std::sort(folders.begin(), folders.end());
  std::vector<DataSet> sets;
  for (const fs::path& folder : folders) {
    DataSet set;
    set.name = folder.filename().string();
    absl::StatusOr<std::vector<NamedTensor>> inputs = ReadNumbered(folder, "input_");
    if (!inputs.ok()) return inputs.status();
    absl::StatusOr<std::vector<NamedTensor>> outputs = ReadNumbered(folder, "output_");
    if (!outputs.ok()) return outputs.status();
    set.inputs = *std::move(inputs);
    set.outputs = *std::move(outputs);
    sets.push_back(std::move(set));
  }
  return sets;
}

bool SameData(const relax::ConstantData& a, const relax::ConstantData& b) {
  return a.dtype == b.dtype && a.shape == b.shape && *a.bytes == *b.bytes;
}

std::string ShapeText(const std::vector<int64_t>& shape) { return absl::StrCat("(", absl::StrJoin(shape, ", "), ")"); }

std::string IndexText(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    if (shape[i] > 0) {
      index[i] = flat % shape[i];
      flat /= shape[i];
    }
  }
  return absl::StrCat("[", absl::StrJoin(index, ", "), "]");
}

void Flatten(const vm::Value& v, std::vector<vm::Value>* out) {
  if (v.kind() == vm::Value::Kind::kTuple) {
    for (const vm::Value& field : v.as_tuple()) Flatten(field, out);
  } else {
    out->push_back(v);
  }
}

// An empty string when `actual` matches `expected`; else why not.
// `bfloat16`: the output's ONNX type is bfloat16 (held widened in float32 at run time).
std::string Compare(const std::string& what, const vm::Tensor& actual, const relax::ConstantData& expected,
                    bool bfloat16, const Tolerance& tolerance, double* max_abs_error) {
  const tir::DataType dt = expected.dtype;
  DLDataType want{static_cast<uint8_t>(dt.code()), static_cast<uint8_t>(dt.bits()), 1};
  if (!vm::operator==(actual.dtype(), want)) {
    return absl::StrCat(what, ": dtype ", vm::DTypeToString(actual.dtype()), ", expected ", dt.ToString());
  }
  if (actual.shape() != expected.shape) {
    return absl::StrCat(what, ": shape ", ShapeText(actual.shape()), ", expected ", ShapeText(expected.shape));
  }
  relax::ConstantData got{dt, actual.shape(), nullptr, ""};
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(actual.data()),
                                                      static_cast<const uint8_t*>(actual.data()) + actual.nbytes());
  got.bytes = bytes;
  // ONNX's backend runner (onnx/backend/test/runner, 1.23) widens rtol to two bfloat16 ulps
  // (2^-6) for a bfloat16 output: its reference rounds every numpy step to bfloat16, so a
  // runtime that rounds only each operator's result differs by an ulp or so.
  const double rtol = bfloat16 || dt.is_bfloat() ? std::max(tolerance.rtol, 1.0 / 64) : tolerance.rtol;
  int64_t bad = 0, worst_at = -1;
  double worst = 0, worst_bad = -1;
  const int64_t n = expected.numel();
  for (int64_t i = 0; i < n; ++i) {
    double e, a;
    if ((dt.is_int() || dt.is_uint()) && dt.bits() == 64) {
      // 64-bit integers compare exactly (doubles would round them).
      int64_t ei = frontends::onnx::ElementAsInt(expected, i), ai = frontends::onnx::ElementAsInt(got, i);
      if (ei == ai) continue;
      e = static_cast<double>(ei);
      a = static_cast<double>(ai);
    } else {
      e = frontends::onnx::ElementAsDouble(expected, i);
      a = frontends::onnx::ElementAsDouble(got, i);
    }
    if (std::isnan(e) && std::isnan(a)) continue;
    if (std::isinf(e) || std::isinf(a)) {
      if (e == a) continue;
    }
    const double diff = std::fabs(a - e);
    const bool ok = !std::isnan(diff) && diff <= tolerance.atol + rtol * std::fabs(e);
    const double err = std::isnan(diff) ? INFINITY : diff;
    worst = std::max(worst, err);
    if (!ok) {
      ++bad;
      if (err > worst_bad) {
        worst_bad = err;
        worst_at = i;
      }
    }
  }
  *max_abs_error = std::max(*max_abs_error, worst);
  if (bad == 0) return "";
  return absl::StrCat(what, ": max abs error ", worst_bad, " at ", IndexText(worst_at, expected.shape), " (got ",
                      frontends::onnx::ElementAsDouble(got, worst_at), ", expected ",
                      frontends::onnx::ElementAsDouble(expected, worst_at), "); ", bad, " of ", n,
                      " elements outside rtol ", rtol, ", atol ", tolerance.atol);
}

CaseResult Fail(std::string message) { return {CaseOutcome::kFail, std::move(message), 0}; }

// Unimplemented before anything runs (an operator, attribute or type Kiln lacks) is
// UNSUPPORTED; anything else is a failure.
CaseResult FromStatus(const absl::Status& status, const std::string& stage) {
  if (status.code() == absl::StatusCode::kUnimplemented) {
    return {CaseOutcome::kUnsupported, std::string(status.message()), 0};
  }
  return Fail(absl::StrCat(stage, ": ", status.message()));
}

}  // namespace

bool IsOnnxTestCase(const std::string& dir) { return fs::exists(fs::path(dir) / "model.onnx"); }

CaseResult RunOnnxTestCase(const std::string& dir, const Tolerance& tolerance) {
  const fs::path model = fs::path(dir) / "model.onnx";
  absl::StatusOr<std::vector<DataSet>> sets = ReadDataSets(dir);
  if (!sets.ok()) {
    // Sequence and optional test data are not TensorProtos: the model then uses types or
    // operators Kiln lacks, which its import says.
    absl::StatusOr<frontends::onnx::ImportResult> imported = frontends::onnx::ImportOnnxFile(model.string());
    if (!imported.ok() && imported.status().code() == absl::StatusCode::kUnimplemented) {
      return FromStatus(imported.status(), "import");
    }
    return Fail(absl::StrCat("test data: ", sets.status().message()));
  }
  if (sets->empty()) return Fail("no test_data_set_* folder");
  absl::StatusOr<std::vector<std::string>> input_names = frontends::onnx::OnnxGraphInputNames(model.string());
  if (!input_names.ok()) return FromStatus(input_names.status(), "import");

  // A small, fast compile: one thread per kernel (cases run in parallel processes).
  static absl::StatusOr<codegen::CpuTarget> cpu = [] () -> absl::StatusOr<codegen::CpuTarget> {
    absl::StatusOr<tir::Target> parsed = tir::Target::Parse("cpu -num-threads=1");
    if (!parsed.ok()) return parsed.status();
    absl::StatusOr<tir::Target> resolved = codegen::ResolveCpuTarget(*parsed);
    if (!resolved.ok()) return resolved.status();
    return codegen::ToCpuTarget(*resolved);
  }();
  if (!cpu.ok()) return Fail(std::string(cpu.status().message()));
  relax::PipelineOptions pipeline;
  absl::StatusOr<tir::Target> resolved = codegen::ResolveCpuTarget(*tir::Target::Parse("cpu -num-threads=1"));
  if (!resolved.ok()) return Fail(std::string(resolved.status().message()));
  pipeline.target = *resolved;

  std::shared_ptr<const vm::Executable> exe;
  std::map<std::string, relax::ConstantData> bound;  // what the current executable was built with
  std::vector<std::string> parameters, bfloat16_values, output_names;
  // ONNX 1.12's test data holds bfloat16 as uint16 bit patterns (tensor_file.h).
  auto as_held = [&](const std::string& name, const relax::ConstantData& data) {
    const bool bfloat16 = std::find(bfloat16_values.begin(), bfloat16_values.end(), name) != bfloat16_values.end();
    return bfloat16 ? frontends::onnx::BFloat16BitsAsFloat32(data) : data;
  };
  double max_abs_error = 0;
  for (const DataSet& set : *sets) {
    // Test data names its tensors after the graph inputs; unnamed ones go by position.
    std::map<std::string, relax::ConstantData> by_name;
    for (size_t i = 0; i < set.inputs.size(); ++i) {
      std::string name = set.inputs[i].name;
      if (name.empty() && i < input_names->size()) name = (*input_names)[i];
      by_name[name] = set.inputs[i].data;
    }
    bool rebuild = exe == nullptr;
    for (const auto& [name, data] : bound) {
      auto it = by_name.find(name);
      if (it == by_name.end() || !SameData(it->second, data)) rebuild = true;
    }
    if (rebuild) {
      frontends::onnx::ImportOptions options;
      bound.clear();
      options.bind_lookup = [&](const std::string& name) -> std::optional<relax::ConstantData> {
        auto it = by_name.find(name);
        if (it == by_name.end()) return std::nullopt;
        bound[name] = it->second;
        return it->second;
      };
      absl::StatusOr<OnnxCompileResult> compiled = CompileOnnxModel(model.string(), options, pipeline, *cpu);
      if (!compiled.ok()) return FromStatus(compiled.status(), "compile");
      parameters = compiled->imported.parameters;
      bfloat16_values = compiled->imported.bfloat16_values;
      output_names = compiled->imported.outputs;
      absl::StatusOr<std::shared_ptr<const vm::Executable>> loaded =
          vm::Executable::Load(std::move(compiled->executable), builtins::DefaultRegistry());
      if (!loaded.ok()) return Fail(absl::StrCat("load: ", loaded.status().message()));
      exe = *loaded;
    }
    std::vector<vm::Value> args;
    for (const std::string& name : parameters) {
      auto it = by_name.find(name);
      if (it == by_name.end()) return Fail(absl::StrCat(set.name, ": no data for graph input '", name, "'"));
      absl::StatusOr<vm::Tensor> t = TensorFromConstant(as_held(name, it->second));
      if (!t.ok()) return Fail(absl::StrCat(set.name, ": ", t.status().message()));
      args.push_back(vm::Value(*t));
    }
    absl::StatusOr<std::unique_ptr<vm::VirtualMachine>> machine = vm::VirtualMachine::Create(exe, vm::CpuDevice());
    if (!machine.ok()) return Fail(absl::StrCat("vm: ", machine.status().message()));
    absl::StatusOr<vm::Value> result = (*machine)->Invoke("main", args);
    if (!result.ok()) return Fail(absl::StrCat(set.name, ": run: ", result.status().message()));
    std::vector<vm::Value> outputs;
    Flatten(*result, &outputs);
    if (outputs.size() != set.outputs.size()) {
      return Fail(absl::StrCat(set.name, ": ", outputs.size(), " outputs, expected ", set.outputs.size()));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string what = absl::StrCat(set.name, " output ", i);
      if (!outputs[i].is_tensor()) return Fail(absl::StrCat(what, ": not a tensor: ", outputs[i].Describe()));
      const bool bfloat16 = i < output_names.size() && std::find(bfloat16_values.begin(), bfloat16_values.end(),
                                                                  output_names[i]) != bfloat16_values.end();
      const relax::ConstantData expected =
          i < output_names.size() ? as_held(output_names[i], set.outputs[i].data) : set.outputs[i].data;
      std::string diff = Compare(what, outputs[i].as_tensor(), expected, bfloat16, tolerance, &max_abs_error);
      if (!diff.empty()) return {CaseOutcome::kFail, diff, max_abs_error};
    }
  }
  return {CaseOutcome::kPass, "", max_abs_error};
}

}  // namespace kiln::tools
