// ONNX models in the kiln tool: import (frontends/onnx) then the normal pipeline and code
// generation, in memory — shared by `kiln compile`, `kiln run` (.onnx given directly) and
// `kiln onnx-test`. Also the conversion of ONNX tensor files (.pb) to runtime tensors.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "codegen/cpu_target.h"
#include "frontends/onnx/importer.h"
#include "relax/transform/pipeline.h"
#include "vm/tensor.h"

namespace kiln::tools {

struct OnnxCompileResult {
  frontends::onnx::ImportResult imported;
  std::string executable;  // the .kx bytes
};

// Imports `path` with `import_options`, runs the pipeline with `pipeline`, builds for `cpu`.
absl::StatusOr<OnnxCompileResult> CompileOnnxModel(const std::string& path,
                                                   const frontends::onnx::ImportOptions& import_options,
                                                   const relax::PipelineOptions& pipeline,
                                                   const codegen::CpuTarget& cpu);

// Host data as a CPU tensor (a copy); packed strings become a string tensor.
absl::StatusOr<vm::Tensor> TensorFromConstant(const relax::ConstantData& data);
// A .pb TensorProto file as a CPU tensor.
absl::StatusOr<vm::Tensor> ReadPbTensor(const std::string& path);

// Parses `NAME=FILE.pb` (kiln import/compile --bind) into `options.bind`.
absl::Status AddBinding(const std::string& spec, frontends::onnx::ImportOptions& options);

bool EndsWith(const std::string& text, const std::string& suffix);

}  // namespace kiln::tools
