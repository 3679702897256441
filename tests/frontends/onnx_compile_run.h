// Compiles an imported ONNX model for the host CPU (the normal pipeline, one thread) and
// runs it on the VM: what the frontend tests that check numerics share.
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "builtins/default_builtins.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "frontends/onnx/importer.h"
#include "relax/transform/pipeline.h"
#include "support/packed_strings.h"
#include "support/status_macros.h"
#include "tir/string_type.h"
#include "tir/target.h"
#include "vm/string_tensor.h"
#include "vm/virtual_machine.h"

namespace kiln::frontends::onnx {

// Host data of `dtype` and `shape` holding `values` (as the element type's bytes).
template <typename T>
relax::ConstantData HostData(tir::DataType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  relax::ConstantData d;
  d.dtype = dtype;
  d.shape = std::move(shape);
  auto bytes = std::make_shared<std::vector<uint8_t>>(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(bytes->data(), values.data(), bytes->size());
  d.bytes = std::move(bytes);
  return d;
}

// `inputs` by graph input name (every parameter of the imported function); the outputs in
// the graph's order.
inline absl::StatusOr<std::vector<vm::Tensor>> CompileAndRun(const ImportResult& imported,
                                                             const std::map<std::string, relax::ConstantData>& inputs) {
  KILN_ASSIGN_OR_RETURN(tir::Target target, codegen::ResolveCpuTarget(tir::Target::Cpu("host", 0, 1)));
  relax::PipelineOptions pipeline;
  pipeline.target = target;
  KILN_ASSIGN_OR_RETURN(relax::IRModule lowered, relax::RunPipeline(imported.module, pipeline));
  KILN_ASSIGN_OR_RETURN(codegen::CpuTarget cpu, codegen::ToCpuTarget(target));
  KILN_ASSIGN_OR_RETURN(std::string bytes, codegen::BuildExecutable(lowered, cpu));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const vm::Executable> exe,
                        vm::Executable::Load(std::move(bytes), builtins::DefaultRegistry()));
  std::vector<vm::Value> args;
  for (const std::string& param : imported.parameters) {
    auto it = inputs.find(param);
    if (it == inputs.end()) return absl::InvalidArgumentError("no data for graph input '" + param + "'");
    const relax::ConstantData& d = it->second;
    if (tir::IsStringType(d.dtype)) {  // packed strings (support/packed_strings.h)
      KILN_ASSIGN_OR_RETURN(std::vector<std::string> strings, support::UnpackStrings(d.bytes->data(), d.bytes->size(), d.numel()));
      KILN_ASSIGN_OR_RETURN(vm::Tensor t, vm::MakeStringTensor(d.shape, strings));
      args.push_back(vm::Value(t));
      continue;
    }
    DLDataType dtype{static_cast<uint8_t>(d.dtype.code()), static_cast<uint8_t>(d.dtype.bits()), 1};
    KILN_ASSIGN_OR_RETURN(vm::Tensor t, vm::Tensor::Empty(d.shape, dtype));
    if (!d.bytes->empty()) std::memcpy(t.data(), d.bytes->data(), d.bytes->size());
    args.push_back(vm::Value(t));
  }
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<vm::VirtualMachine> machine, vm::VirtualMachine::Create(exe, vm::CpuDevice()));
  KILN_ASSIGN_OR_RETURN(vm::Value result, machine->Invoke("main", args));
  std::vector<vm::Tensor> outputs;
  if (result.kind() == vm::Value::Kind::kTuple) {
    for (const vm::Value& v : result.as_tuple()) outputs.push_back(v.as_tensor());
  } else {
    outputs.push_back(result.as_tensor());
  }
  return outputs;
}

// For models of domains Debian's ONNX checker predates (ai.onnx.preview, ai.onnx.ml): the
// import without the checker, then compiled and run as CompileAndRun; or its status alone.
inline absl::StatusOr<std::vector<vm::Tensor>> ImportUncheckedAndRun(
    const std::string& model_bytes, const std::map<std::string, relax::ConstantData>& inputs) {
  ImportOptions options;
  options.check = false;
  KILN_ASSIGN_OR_RETURN(ImportResult imported, ImportOnnxBytes(model_bytes, "", options));
  return CompileAndRun(imported, inputs);
}
inline absl::Status ImportUncheckedStatus(const std::string& model_bytes) {
  ImportOptions options;
  options.check = false;
  return ImportOnnxBytes(model_bytes, "", options).status();
}

}  // namespace kiln::frontends::onnx
