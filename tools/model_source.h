// A model file as a Relax module, for the commands that run the pipeline on it themselves
// (`kiln compile`, `kiln tune`): a .onnx model imported (docs/onnx.md), anything else read
// as IR text (docs/ir.md), with its source locations for error messages.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "frontends/onnx/importer.h"
#include "relax/text_parser.h"

namespace kiln::tools {

absl::StatusOr<relax::ParsedModule> LoadModelSource(const std::string& path,
                                                    const frontends::onnx::ImportOptions& onnx_options);

}  // namespace kiln::tools
