#include "frontends/onnx/model_loader.h"

#include <exception>
#include <filesystem>
#include <limits>

#include "absl/strings/str_cat.h"
#include "onnx/checker.h"
#include "support/file_io.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

absl::StatusOr<LoadedModel> Parse(const std::string& bytes, const std::string& label, const std::string& base_dir,
                                  const LoadOptions& options) {
  // protobuf refuses messages of 2 GiB or more; say so rather than "parse error".
  if (bytes.size() >= static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": ", bytes.size(),
                                                   " bytes is over protobuf's 2 GiB limit; store the weights as "
                                                   "external data"));
  }
  LoadedModel model;
  model.base_dir = base_dir;
  if (bytes.empty() || !model.proto.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": not a valid ONNX model (the protobuf does not parse: truncated or not ONNX)"));
  }
  if (!model.proto.has_graph()) return absl::InvalidArgumentError(absl::StrCat(label, ": the model has no graph"));
  for (const auto& import : model.proto.opset_import()) {
    model.domains[import.domain()] = import.version();
    if (import.domain().empty() || import.domain() == "ai.onnx") model.opset = import.version();
  }
  // IR version 1/2 models predate opset_import; they mean opset 1. A model importing only
  // other domains (ai.onnx.preview.training's optimizers) keeps opset 0: a default-domain
  // node in it is an error when converted.
  if (model.opset == 0 && model.proto.opset_import_size() == 0 && model.proto.ir_version() < 3) model.opset = 1;
  if (model.opset == 0 && model.domains.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": the model imports no operator set"));
  }
  if (model.opset < kOldestOpset && !(model.opset == 0 && !model.domains.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": opset ", model.opset, " is not a valid version"));
  }
  // The checker refuses an IR version newer than its own ("higher than the checker's"), which
  // the newest `onnx` package writes by default even for an old opset: such a model is not
  // wrong, so it is imported as models of opsets the checker does not know are.
  const bool checker_knows = model.opset >= kOldestOpset && model.opset <= kCheckerNewestOpset &&
                             model.proto.ir_version() <= ::onnx::Version::IR_VERSION;
  if (options.check && checker_knows) {
    // The checker throws (ValidationError, or anything protobuf-related); every exception is
    // the model's fault here. External data needs the model's folder, which check_model's
    // in-memory form does not know: check models with external data without it.
    bool has_external = false;
    for (const auto& init : model.proto.graph().initializer()) {
      has_external |= init.data_location() == ::onnx::TensorProto::EXTERNAL;
    }
    if (!has_external) {
      try {
        ::onnx::checker::check_model(model.proto);
      } catch (const std::exception& e) {
        return absl::InvalidArgumentError(absl::StrCat(label, ": invalid ONNX model (ONNX checker): ", e.what()));
      }
    }
  }
  return model;
}

}  // namespace

absl::StatusOr<LoadedModel> LoadModelFile(const std::string& path, const LoadOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, support::ReadFile(path));
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return Parse(bytes, path, dir.empty() ? std::string(".") : dir.string(), options);
}

absl::StatusOr<LoadedModel> LoadModelBytes(const std::string& bytes, const std::string& base_dir,
                                           const LoadOptions& options) {
  return Parse(bytes, "model", base_dir, options);
}

}  // namespace kiln::frontends::onnx
