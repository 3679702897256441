// ImageDecoder (20): one R.call_pure_builtin of kiln.image.decode (builtins/
// image_decoder_builtins.cc, which decodes on the host with Debian's image libraries). The
// image's height and width are known only when the bytes are decoded: the call's result has
// rank 3, and a match_cast names its dims with fresh symbolic variables (<output>_height,
// <output>_width; the channel count follows from pixel_format), which the VM defines when the
// function runs, so later operators see a shaped tensor.
#include <cctype>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/converters/common.h"
#include "frontends/onnx/converters/converters.h"
#include "support/status_macros.h"

namespace kiln::frontends::onnx {
namespace {

using tir::DataType;

absl::StatusOr<std::vector<Value>> ConvertImageDecoder(NodeContext& c) {
  KILN_ASSIGN_OR_RETURN(DataType dtype, c.InputDType(0));
  if (dtype != DataType::UInt(8)) return c.Error("encoded_stream must be a uint8 tensor, got ", dtype.ToString());
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, c.InputShape(0));
  if (shape.size() != 1) return c.Error("encoded_stream must be 1-d, got rank ", shape.size());
  const std::string pixel_format = c.AttrString("pixel_format", "RGB");
  int64_t code = 0, channels = 3;
  if (pixel_format == "BGR") {
    code = 1;
  } else if (pixel_format == "Grayscale") {
    code = 2, channels = 1;
  } else if (pixel_format != "RGB") {
    return c.Error("pixel_format must be RGB, BGR or Grayscale, got '", pixel_format, "'");
  }
  KILN_ASSIGN_OR_RETURN(relax::Expr encoded, c.Input(0));
  KILN_ASSIGN_OR_RETURN(relax::Expr decoded,
                        c.Emit(relax::Call(relax::Op("call_pure_builtin"),
                                           {relax::ExternFunc("kiln.image.decode"), encoded,
                                            relax::PrimValue(PrimExpr(code))},
                                           {}, {relax::TensorSInfoOfNdim(3, DataType::UInt(8))})));
  std::string base;
  for (char ch : c.has_output(0) ? c.node().output(0) : std::string("image")) {
    base += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  }
  const PrimExpr height(tir::Var::Shape(base + "_height")), width(tir::Var::Shape(base + "_width"));
  absl::StatusOr<relax::Var> image = c.builder().EmitMatchCast(
      decoded, relax::TensorSInfo({height, width, PrimExpr(channels)}, DataType::UInt(8)), base);
  if (!image.ok()) return c.Annotate(image.status());
  return Outputs(*image);
}

}  // namespace

void RegisterImageDecoderConverters(ConverterRegistry& r) { r.Register("ImageDecoder", ConvertImageDecoder, 20); }

}  // namespace kiln::frontends::onnx
