#include "tools/onnx_model.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "codegen/build_executable.h"
#include "frontends/onnx/tensor_file.h"
#include "support/packed_strings.h"
#include "support/status_macros.h"
#include "tir/string_type.h"
#include "vm/string_tensor.h"

namespace kiln::tools {

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

absl::StatusOr<OnnxCompileResult> CompileOnnxModel(const std::string& path,
                                                   const frontends::onnx::ImportOptions& import_options,
                                                   const relax::PipelineOptions& pipeline,
                                                   const codegen::CpuTarget& cpu) {
  OnnxCompileResult result;
  KILN_ASSIGN_OR_RETURN(result.imported, frontends::onnx::ImportOnnxFile(path, import_options));
  KILN_ASSIGN_OR_RETURN(relax::IRModule lowered, relax::RunPipeline(result.imported.module, pipeline));
  KILN_ASSIGN_OR_RETURN(result.executable, codegen::BuildExecutable(lowered, cpu, {{"kiln.model.onnx", path}}));
  return result;
}

absl::StatusOr<vm::Tensor> TensorFromConstant(const relax::ConstantData& data) {
  if (data.is_external()) return absl::InvalidArgumentError("an external constant has no data");
  if (tir::IsStringType(data.dtype)) {  // packed on the host, a vm string tensor at run time
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> strings,
                          support::UnpackStrings(data.bytes->data(), data.bytes->size(), data.numel()));
    return vm::MakeStringTensor(data.shape, strings);
  }
  DLDataType dtype{static_cast<uint8_t>(data.dtype.code()), static_cast<uint8_t>(data.dtype.bits()), 1};
  KILN_ASSIGN_OR_RETURN(vm::Tensor t, vm::Tensor::Empty(data.shape, dtype));
  if (t.nbytes() != static_cast<int64_t>(data.bytes->size())) {
    return absl::InternalError("tensor size does not match its data");
  }
  if (t.nbytes() > 0) std::memcpy(t.data(), data.bytes->data(), data.bytes->size());
  return t;
}

absl::StatusOr<vm::Tensor> ReadPbTensor(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(frontends::onnx::NamedTensor named, frontends::onnx::ReadTensorFile(path));
  return TensorFromConstant(named.data);
}

absl::Status AddBinding(const std::string& spec, frontends::onnx::ImportOptions& options) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    return absl::InvalidArgumentError(absl::StrCat("--bind needs NAME=FILE.pb, got '", spec, "'"));
  }
  KILN_ASSIGN_OR_RETURN(frontends::onnx::NamedTensor named, frontends::onnx::ReadTensorFile(spec.substr(eq + 1)));
  options.bind[spec.substr(0, eq)] = std::move(named.data);
  return absl::OkStatus();
}

}  // namespace kiln::tools
