#include "frontends/onnx/converters/converters.h"

namespace kiln::frontends::onnx {

void RegisterAllConverters(ConverterRegistry& registry) {
  RegisterElementwiseConverters(registry);
  RegisterTensorConverters(registry);
  RegisterReduceConverters(registry);
  RegisterNnConverters(registry);
  RegisterWindowConverters(registry);
  RegisterNormalizationConverters(registry);
  RegisterResizeConverters(registry);
  RegisterLossConverters(registry);
  RegisterMathConverters(registry);
  RegisterAttentionConverters(registry);
  RegisterDataConverters(registry);
  RegisterQuantizeConverters(registry);
  RegisterGridSampleConverters(registry);
  RegisterSignalConverters(registry);
  RegisterMelWeightMatrixConverters(registry);
  RegisterControlFlowConverters(registry);
  RegisterLinearAttentionConverters(registry);
  RegisterRecurrentConverters(registry);
  RegisterCausalConvConverters(registry);
  RegisterWindowFunctionConverters(registry);
  RegisterCol2ImConverters(registry);
  RegisterNmsConverters(registry);
  RegisterUniqueConverters(registry);
  RegisterOptimizerConverters(registry);
  RegisterMlConverters(registry);
  RegisterTreeEnsembleConverters(registry);
  RegisterImageDecoderConverters(registry);
  RegisterSequenceConverters(registry);
  RegisterDeformConvConverters(registry);
  RegisterTfIdfConverters(registry);
  RegisterNonZeroConverters(registry);
  RegisterDetConverters(registry);
  RegisterTensorScatterConverters(registry);
  RegisterMaxUnpoolConverters(registry);
  RegisterRoiAlignConverters(registry);
  RegisterStringConverters(registry);
}

}  // namespace kiln::frontends::onnx
