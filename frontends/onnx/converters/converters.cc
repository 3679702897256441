#include "frontends/onnx/converters/converters.h"

namespace kiln::frontends::onnx {

void RegisterAllConverters(ConverterRegistry& registry) {
  RegisterElementwiseConverters(registry);
  RegisterTensorConverters(registry);
  RegisterReduceConverters(registry);
  RegisterNnConverters(registry);
  RegisterRearrangeConverters(registry);
  RegisterLossConverters(registry);
  RegisterMathConverters(registry);
  RegisterAttentionConverters(registry);
}

}  // namespace kiln::frontends::onnx
