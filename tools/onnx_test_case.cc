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
#include "support/packed_strings.h"
#include "tir/string_type.h"
#include "tir/target.h"
#include "tools/onnx_model.h"
#include "vm/dtype.h"
#include "vm/string_tensor.h"
#include "vm/virtual_machine.h"

namespace kiln::tools {
namespace {

namespace fs = std::filesystem;
using frontends::onnx::OnnxValue;
using frontends::onnx::OnnxValueKind;

struct DataSet {
  std::string name;
  std::vector<OnnxValue> inputs, outputs;
};

// input_0.pb, input_1.pb, ... in numeric order; file i holds a value of kinds[i] (a tensor
// past the declared ones).
absl::StatusOr<std::vector<OnnxValue>> ReadNumbered(const fs::path& dir, const std::string& prefix,
                                                    const std::vector<OnnxValueKind>& kinds) {
  std::vector<OnnxValue> out;
  for (size_t i = 0;; ++i) {
    fs::path file = dir / absl::StrCat(prefix, i, ".pb");
    if (!fs::exists(file)) break;
    const OnnxValueKind kind = i < kinds.size() ? kinds[i] : OnnxValueKind::kTensor;
    absl::StatusOr<OnnxValue> v = frontends::onnx::ReadValueFile(file.string(), kind);
    if (!v.ok()) return v.status();
    out.push_back(*std::move(v));
  }
  return out;
}

absl::StatusOr<std::vector<DataSet>> ReadDataSets(const fs::path& dir,
                                                  const frontends::onnx::OnnxGraphSignature& signature) {
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
    absl::StatusOr<std::vector<OnnxValue>> inputs = ReadNumbered(folder, "input_", signature.input_kinds);
    if (!inputs.ok()) return inputs.status();
    absl::StatusOr<std::vector<OnnxValue>> outputs = ReadNumbered(folder, "output_", signature.output_kinds);
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

bool SameValue(const OnnxValue& a, const OnnxValue& b) {
  if (a.present != b.present || a.is_sequence != b.is_sequence || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    if (!SameData(a.tensors[i], b.tensors[i])) return false;
  }
  return true;
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

// Strings compare exactly; the first difference is reported.
std::string CompareStrings(const std::string& what, const vm::Tensor& actual, const relax::ConstantData& expected) {
  absl::StatusOr<std::vector<std::string>> want =
      support::UnpackStrings(expected.bytes->data(), expected.bytes->size(), expected.numel());
  if (!want.ok()) return absl::StrCat(what, ": expected data: ", want.status().message());
  const std::vector<std::string> got = vm::StringsOf(actual);
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != (*want)[i]) {
      if (bad++ == 0) first = static_cast<int64_t>(i);
    }
  }
  if (bad == 0) return "";
  return absl::StrCat(what, ": string at ", IndexText(first, expected.shape), " is \"", got[first], "\", expected \"",
                      (*want)[first], "\"; ", bad, " of ", got.size(), " strings differ");
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
  if (tir::IsStringType(dt)) return CompareStrings(what, actual, expected);
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
  absl::StatusOr<frontends::onnx::OnnxGraphSignature> signature = frontends::onnx::ReadOnnxGraphSignature(model.string());
  if (!signature.ok()) return FromStatus(signature.status(), "import");
  absl::StatusOr<std::vector<DataSet>> sets = ReadDataSets(dir, *signature);
  if (!sets.ok()) {
    // Data Kiln cannot read (maps, sparse tensors): the model then uses types or operators
    // Kiln lacks, which its import says.
    absl::StatusOr<frontends::onnx::ImportResult> imported = frontends::onnx::ImportOnnxFile(model.string());
    if (!imported.ok() && imported.status().code() == absl::StatusCode::kUnimplemented) {
      return FromStatus(imported.status(), "import");
    }
    return Fail(absl::StrCat("test data: ", sets.status().message()));
  }
  if (sets->empty()) return Fail("no test_data_set_* folder");
  const std::vector<std::string>& input_names = signature->input_names;

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
  std::map<std::string, OnnxValue> bound_values;     // the same, for sequence and optional inputs
  std::vector<std::string> parameters, bfloat16_values, output_names;
  // ONNX 1.12's test data holds bfloat16 as uint16 bit patterns (tensor_file.h).
  auto as_held = [&](const std::string& name, const relax::ConstantData& data) {
    const bool bfloat16 = std::find(bfloat16_values.begin(), bfloat16_values.end(), name) != bfloat16_values.end();
    return bfloat16 ? frontends::onnx::BFloat16BitsAsFloat32(data) : data;
  };
  double max_abs_error = 0;
  for (const DataSet& set : *sets) {
    // Test data names its values after the graph inputs; unnamed ones go by position. A
    // sequence's elements are the parameters NAME[k] (ImportOptions::value_lookup).
    std::map<std::string, relax::ConstantData> by_name;
    std::map<std::string, OnnxValue> values_by_name;
    for (size_t i = 0; i < set.inputs.size(); ++i) {
      const OnnxValue& value = set.inputs[i];
      std::string name = value.name;
      if (name.empty() && i < input_names.size()) name = input_names[i];
      const bool tensor = i >= signature->input_kinds.size() || signature->input_kinds[i] == OnnxValueKind::kTensor;
      if (!tensor) values_by_name[name] = value;
      if (value.is_sequence) {
        for (size_t k = 0; k < value.tensors.size(); ++k) by_name[absl::StrCat(name, "[", k, "]")] = value.tensors[k];
      } else if (!value.tensors.empty()) {
        by_name[name] = value.tensors[0];
      }
    }
    bool rebuild = exe == nullptr;
    for (const auto& [name, data] : bound) {
      auto it = by_name.find(name);
      if (it == by_name.end() || !SameData(it->second, data)) rebuild = true;
    }
    for (const auto& [name, value] : bound_values) {
      auto it = values_by_name.find(name);
      if (it == values_by_name.end() || !SameValue(it->second, value)) rebuild = true;
    }
    if (rebuild) {
      frontends::onnx::ImportOptions options;
      bound.clear();
      bound_values.clear();
      options.value_lookup = [&](const std::string& name) -> std::optional<OnnxValue> {
        auto it = values_by_name.find(name);
        if (it == values_by_name.end()) return std::nullopt;
        bound_values[name] = it->second;
        return it->second;
      };
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
    // The expected tensors in the order the import returns them: a sequence's elements in
    // order, an empty optional none.
    std::vector<relax::ConstantData> expected_tensors;
    for (const OnnxValue& value : set.outputs) {
      expected_tensors.insert(expected_tensors.end(), value.tensors.begin(), value.tensors.end());
    }
    if (outputs.size() != expected_tensors.size()) {
      return Fail(absl::StrCat(set.name, ": ", outputs.size(), " output tensors, expected ", expected_tensors.size()));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string what = absl::StrCat(set.name, " output ", i);
      if (!outputs[i].is_tensor()) return Fail(absl::StrCat(what, ": not a tensor: ", outputs[i].Describe()));
      const bool bfloat16 = i < output_names.size() && std::find(bfloat16_values.begin(), bfloat16_values.end(),
                                                                  output_names[i]) != bfloat16_values.end();
      const relax::ConstantData expected =
          i < output_names.size() ? as_held(output_names[i], expected_tensors[i]) : expected_tensors[i];
      std::string diff = Compare(what, outputs[i].as_tensor(), expected, bfloat16, tolerance, &max_abs_error);
      if (!diff.empty()) return {CaseOutcome::kFail, diff, max_abs_error};
    }
  }
  return {CaseOutcome::kPass, "", max_abs_error};
}

}  // namespace kiln::tools
