// Reading an ONNX model file into its protobuf, with everything a file can get wrong
// reported as a status: size limit (protobuf's 2 GiB), parse errors, a missing graph, the
// opset imports (the default domain's version is what converters see), and ONNX's own
// checker (onnx/checker.h) when asked. External data is not read here: initializers are
// converted lazily by tensor_proto.h against `base_dir`.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace kiln::frontends::onnx {

// The newest default-domain opset the converters know (ONNX 1.12 defines 17; 18 is
// accepted for Reduce* with axes as an input).
inline constexpr int64_t kNewestOpset = 18;
inline constexpr int64_t kOldestOpset = 1;

struct LoadedModel {
  ::onnx::ModelProto proto;
  std::string base_dir;                    // the model's folder: external data is relative to it
  int64_t opset = 0;                       // the default domain's ("" or "ai.onnx") version
  std::map<std::string, int64_t> domains;  // every imported domain and its version
};

struct LoadOptions {
  // Run ONNX's checker (onnx::checker::check_model) and fail on what it reports.
  bool check = true;
};

absl::StatusOr<LoadedModel> LoadModelFile(const std::string& path, const LoadOptions& options = {});
// A serialized ModelProto in memory; external data resolves against `base_dir` ("" forbids it).
absl::StatusOr<LoadedModel> LoadModelBytes(const std::string& bytes, const std::string& base_dir,
                                           const LoadOptions& options = {});

}  // namespace kiln::frontends::onnx
