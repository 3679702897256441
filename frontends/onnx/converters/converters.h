// Every family of ONNX converters (converter_registry.h). One file per family; a new family
// adds its Register function here and to RegisterAllConverters (converters.cc).
#pragma once

namespace kiln::frontends::onnx {

class ConverterRegistry;

// Add Sub Mul Div Pow Max Min Sum Mean, comparisons, Where, unary math and activations that
// map to Kiln operators or decompose into them (Relu, Sigmoid, LeakyRelu, Elu, Selu, Gelu,
// Swish, Mish, ...).
void RegisterElementwiseConverters(ConverterRegistry& registry);
// Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Concat, Split, Slice, Gather,
// Transpose, Expand, Identity, Cast, CastLike, Constant, ConstantOfShape, Range, Dropout.
void RegisterTensorConverters(ConverterRegistry& registry);
// ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax, ArgMin.
void RegisterReduceConverters(ConverterRegistry& registry);
// MatMul, Gemm, Softmax, LayerNormalization.
void RegisterNnConverters(ConverterRegistry& registry);
// Conv, ConvTranspose, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (1-3 spatial dims).
void RegisterWindowConverters(ConverterRegistry& registry);
// BatchNormalization, InstanceNormalization, GroupNormalization, LRN,
// MeanVarianceNormalization, LogSoftmax, RMSNormalization, LpNormalization.
void RegisterNormalizationConverters(ConverterRegistry& registry);
// Resize, Upsample.
void RegisterResizeConverters(ConverterRegistry& registry);
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (one-hot masks, no gather).
void RegisterLossConverters(ConverterRegistry& registry);

// Abs Sign Floor Ceil Round Erf, trigonometric and hyperbolic functions, IsNaN IsInf, Clip,
// Mod, And Or Xor Not, Bitwise*, BitShift, and the activations Celu and Shrink.
void RegisterMathConverters(ConverterRegistry& registry);

// RotaryEmbedding and Attention (opset 23), ai.onnx.preview FlexAttention (1), decomposed
// into matmul, softmax, where, ...
void RegisterAttentionConverters(ConverterRegistry& registry);
// GatherElements, GatherND, Scatter, ScatterElements, ScatterND, OneHot, Pad, Tile, Trilu,
// CumSum, TopK, Einsum, DepthToSpace, SpaceToDepth, Hardmax, EyeLike,
// ReverseSequence (data_converters.cc).
void RegisterDataConverters(ConverterRegistry& registry);

// quantize_converters.cc: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul,
// MatMulInteger.
void RegisterQuantizeConverters(ConverterRegistry& registry);

// grid_sample_converters.cc: GridSample, AffineGrid.
void RegisterGridSampleConverters(ConverterRegistry& registry);

// signal_converters.cc: DFT, STFT (framed DFTs).
void RegisterSignalConverters(ConverterRegistry& registry);

// mel_weight_matrix_converters.cc: MelWeightMatrix (17; a constant when its inputs are known at
// import time, else Relax operators).
void RegisterMelWeightMatrixConverters(ConverterRegistry& registry);

// linear_attention_converters.cc: LinearAttention (27), its recurrence unrolled.
void RegisterLinearAttentionConverters(ConverterRegistry& registry);

// recurrent_converters.cc: RNN, GRU, LSTM (7; unrolled over the static sequence length).
void RegisterRecurrentConverters(ConverterRegistry& registry);

// causal_conv_converters.cc: CausalConvWithState (27; concat, depthwise conv1d, slice).
void RegisterCausalConvConverters(ConverterRegistry& registry);

// window_function_converters.cc: HannWindow, HammingWindow, BlackmanWindow (17; size known at
// import time, the window a constant).
void RegisterWindowFunctionConverters(ConverterRegistry& registry);

// col2im_converters.cc: Col2Im (18; a grouped transposed convolution with one-hot kernels).
void RegisterCol2ImConverters(ConverterRegistry& registry);

// nms_converters.cc: NonMaxSuppression (10; pairwise IoU, the greedy pass unrolled over the
// static box count, the selection cut to its run-time count).
void RegisterNmsConverters(ConverterRegistry& registry);

// unique_converters.cc: Unique (11; sorts and run boundaries, the result cut to its run-time
// count).
void RegisterUniqueConverters(ConverterRegistry& registry);

// optimizer_converters.cc: ai.onnx.preview.training's Adagrad, Adam, Momentum (one update
// step each, elementwise).
void RegisterOptimizerConverters(ConverterRegistry& registry);

// ml_converters.cc: ai.onnx.ml's Binarizer and ArrayFeatureExtractor.
void RegisterMlConverters(ConverterRegistry& registry);
void RegisterTreeEnsembleConverters(ConverterRegistry& registry);  // tree_ensemble_converters.cc
void RegisterImageDecoderConverters(ConverterRegistry& registry);  // image_decoder_converters.cc

// control_flow_converters.cc: If, Scan, Loop (lowered at import time: a branch picked, or
// both selected with where; loops unrolled).
void RegisterControlFlowConverters(ConverterRegistry& registry);

// sequence_converters.cc: SequenceConstruct / Empty / Length / At / Insert / Erase,
// SplitToSequence, ConcatFromSequence, SequenceMap, Optional, OptionalHasElement,
// OptionalGetElement (sequences held at import time as lists of their elements).
void RegisterSequenceConverters(ConverterRegistry& registry);
// deform_conv_converters.cc: DeformConv (19; 2-D, bilinear taps gathered, one grouped matmul).
void RegisterDeformConvConverters(ConverterRegistry& registry);
// tfidf_converters.cc: TfIdfVectorizer (9; integer pools, n-gram matches as slice compares).
void RegisterTfIdfConverters(ConverterRegistry& registry);
// nonzero_converters.cc: NonZero (9; the result cut to its run-time count).
void RegisterNonZeroConverters(ConverterRegistry& registry);
// det_converters.cc: Det (11; Gaussian elimination with partial pivoting, unrolled).
void RegisterDetConverters(ConverterRegistry& registry);
// tensor_scatter_converters.cc: TensorScatter (24; linear / circular, as one gather).
void RegisterTensorScatterConverters(ConverterRegistry& registry);
// max_unpool_converters.cc: MaxUnpool (9; one scatter into zeros).
void RegisterMaxUnpoolConverters(ConverterRegistry& registry);
// roi_align_converters.cc: RoiAlign (10; avg / max, separable bilinear sampling as matmuls).
void RegisterRoiAlignConverters(ConverterRegistry& registry);
// string_converters.cc: StringConcat, RegexFullMatch, StringSplit, StringNormalizer,
// ai.onnx.ml LabelEncoder (host builtins over string tensors); Equal on strings
// (string_converters.h).
void RegisterStringConverters(ConverterRegistry& registry);
void RegisterAllConverters(ConverterRegistry& registry);

}  // namespace kiln::frontends::onnx
