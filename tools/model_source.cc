#include "tools/model_source.h"

#include "support/file_io.h"
#include "tools/onnx_model.h"

namespace kiln::tools {

absl::StatusOr<relax::ParsedModule> LoadModelSource(const std::string& path,
                                                    const frontends::onnx::ImportOptions& onnx_options) {
  if (EndsWith(path, ".onnx")) {
    absl::StatusOr<frontends::onnx::ImportResult> imported = frontends::onnx::ImportOnnxFile(path, onnx_options);
    if (!imported.ok()) return imported.status();
    relax::ParsedModule parsed;
    parsed.module = imported->module;
    return parsed;
  }
  absl::StatusOr<std::string> text = support::ReadFile(path);
  if (!text.ok()) return text.status();
  return relax::ParseModule(*text, path);
}

}  // namespace kiln::tools
