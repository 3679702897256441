// The converter registry: one converter per ONNX operator type (default domain), with the
// range of opset versions it handles. A converter turns one node into Relax bindings and
// returns one Value per node output (value.h); it sees the model's opset version through
// NodeContext::opset() and handles each version's differences itself (Softmax's axis
// semantics before 13, Reduce* axes as attribute or input, Split/Squeeze/Slice/Clip/Pad
// inputs vs attributes, ...).
//
// An operator of another domain is registered as "<domain>:<OpType>" (QualifiedOpType), its
// opset range counting that domain's versions (ai.onnx.preview's FlexAttention: 1 on).
//
// Registration is explicit, like Relax's operator registry: Global() calls every family's
// Register*Converters function (converters/converters.h). Each family lives in its own file
// under converters/, so adding operators means adding a file and one line there.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/onnx/model_loader.h"
#include "frontends/onnx/node_context.h"

namespace kiln::frontends::onnx {

// Returns one Value per node output, in order; trailing optional outputs a converter does
// not produce may be left off (the importer reports any of them a model uses).
using ConverterFn = std::function<absl::StatusOr<std::vector<Value>>(NodeContext& context)>;

struct ConverterInfo {
  std::string op_type;
  int64_t min_opset = 1;
  int64_t max_opset = kEveryLaterOpset;
  ConverterFn convert;
};

// "<domain>:<op_type>" for a domain other than the default ("" or "ai.onnx"); else op_type.
std::string QualifiedOpType(std::string_view domain, std::string_view op_type);

class ConverterRegistry {
 public:
  static const ConverterRegistry& Global();

  // The converter for `op_type` (qualified by its domain) at `opset` (that domain's version);
  // nullptr when there is none.
  const ConverterInfo* Find(std::string_view op_type, int64_t opset) const;
  // Every registered converter, sorted by op type then opset.
  const std::vector<ConverterInfo>& converters() const { return converters_; }

  // For the Register*Converters functions. Registering the same op type twice with
  // overlapping opset ranges is a KILN_CHECK (a programming error).
  void Register(std::string op_type, ConverterFn convert, int64_t min_opset = 1,
                int64_t max_opset = kEveryLaterOpset);

 private:
  std::vector<ConverterInfo> converters_;
};

}  // namespace kiln::frontends::onnx
