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

// The newest default-domain opset the converters were written against (ONNX 1.12 defines
// 17; 18 moved Reduce* axes to an input). Newer opsets are accepted: an operator converts
// with the semantics of its newest version a converter knows (ONNX's later versions of the
// operators here mostly add types); a converter registered without an upper bound covers
// every later opset.
inline constexpr int64_t kNewestOpset = 18;
inline constexpr int64_t kOldestOpset = 1;
// The newest opset the ONNX library's checker (Debian's ONNX 1.12) knows: newer models are
// not given to it, since it would reject operator versions it has never heard of.
inline constexpr int64_t kCheckerNewestOpset = 17;
// A converter's max_opset for "and every later version".
inline constexpr int64_t kEveryLaterOpset = INT64_MAX;

struct LoadedModel {
  ::onnx::ModelProto proto;
  std::string base_dir;                    // the model's folder: external data is relative to it
  int64_t opset = 0;                       // the default domain's ("" or "ai.onnx") version; 0: not imported
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
