// ImageDecoder (converters/image_decoder_converters.cc, builtins/image_decoder_builtins.cc,
// builtins/image/): what the PIL-decoded cases of tests/frontends/onnx_image_decoder (ctest
// onnx_image_decoder_cases) do not show: the run-time shape feeding a later operator, 16-bit
// PNM samples scaled (worked out by hand; PIL keeps them 32-bit), and bad input — unknown
// formats, truncated files, corrupt headers, huge claimed sizes and random corruption — as
// clear errors, never a crash. One model per pixel format is compiled once and run on each
// input.
#include <algorithm>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "support/check.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"
#include "tests/source_dir.h"

namespace kiln::frontends::onnx {
namespace {

using ::testing::HasSubstr;
using Bytes = std::vector<uint8_t>;

constexpr int32_t kUint8 = ::onnx::TensorProto::UINT8;

std::string ImageModel(const std::string& pixel_format, bool transpose = false) {
  ModelBuilder m(20);
  m.Input("data", kUint8, {"n"}).Output("y", kUint8);
  ::onnx::NodeProto* node = m.Node("ImageDecoder", {"data"}, {transpose ? "image" : "y"});
  auto* a = node->add_attribute();
  a->set_name("pixel_format");
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(pixel_format);
  if (transpose) {  // HWC -> CHW, which needs the decoded dims
    ::onnx::NodeProto* t = m.Node("Transpose", {"image"}, {"y"});
    auto* perm = t->add_attribute();
    perm->set_name("perm");
    perm->set_type(::onnx::AttributeProto::INTS);
    for (int64_t p : {2, 0, 1}) perm->add_ints(p);
  }
  return m.Bytes();
}

// One compiled model, run on many inputs.
class Decoder {
 public:
  explicit Decoder(const std::string& model) {
    ImportOptions options;
    options.check = false;  // Debian's ONNX checker predates opset 20
    absl::StatusOr<ImportResult> imported = ImportOnnxBytes(model, "", options);
    KILN_CHECK(imported.ok()) << imported.status();
    imported_ = std::make_unique<ImportResult>(*std::move(imported));
  }

  absl::StatusOr<vm::Tensor> Run(const Bytes& bytes) {
    absl::StatusOr<std::vector<vm::Tensor>> out =
        CompileAndRunCached(HostData(tir::DataType::UInt(8), {static_cast<int64_t>(bytes.size())}, bytes));
    if (!out.ok()) return out.status();
    return (*out)[0];
  }

 private:
  absl::StatusOr<std::vector<vm::Tensor>> CompileAndRunCached(const relax::ConstantData& data) {
    if (machine_ == nullptr) {
      KILN_ASSIGN_OR_RETURN(tir::Target target, codegen::ResolveCpuTarget(tir::Target::Cpu("host", 0, 1)));
      relax::PipelineOptions pipeline;
      pipeline.target = target;
      KILN_ASSIGN_OR_RETURN(relax::IRModule lowered, relax::RunPipeline(imported_->module, pipeline));
      KILN_ASSIGN_OR_RETURN(codegen::CpuTarget cpu, codegen::ToCpuTarget(target));
      KILN_ASSIGN_OR_RETURN(std::string exe_bytes, codegen::BuildExecutable(lowered, cpu));
      KILN_ASSIGN_OR_RETURN(std::shared_ptr<const vm::Executable> exe,
                            vm::Executable::Load(std::move(exe_bytes), builtins::DefaultRegistry()));
      KILN_ASSIGN_OR_RETURN(machine_, vm::VirtualMachine::Create(exe, vm::CpuDevice()));
    }
    KILN_ASSIGN_OR_RETURN(vm::Tensor t, vm::Tensor::Empty(data.shape, DLDataType{kDLUInt, 8, 1}));
    if (!data.bytes->empty()) std::memcpy(t.data(), data.bytes->data(), data.bytes->size());
    KILN_ASSIGN_OR_RETURN(vm::Value result, machine_->Invoke("main", {vm::Value(t)}));
    return std::vector<vm::Tensor>{result.as_tensor()};
  }

  std::unique_ptr<ImportResult> imported_;
  std::unique_ptr<vm::VirtualMachine> machine_;
};

Decoder& Rgb() {
  static Decoder* d = new Decoder(ImageModel("RGB"));
  return *d;
}

// The encoded image of a PIL-made case (tests/frontends/onnx_image_decoder).
Bytes CaseInput(const std::string& name) {
  const std::string path = test::SourceDir() + "/tests/frontends/onnx_image_decoder/test_image_decoder_" + name +
                           "/test_data_set_0/input_0.pb";
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  ::onnx::TensorProto t;
  KILN_CHECK(t.ParseFromString(text.str())) << path;
  return Bytes(t.raw_data().begin(), t.raw_data().end());
}

Bytes Text(const std::string& s) { return Bytes(s.begin(), s.end()); }

const std::vector<std::string>& FormatCases() {
  static const std::vector<std::string> cases = {"jpeg_420_rgb", "jpeg_progressive_rgb", "png_rgb",  "png_interlaced_rgb",
                                                 "tiff_raw_rgb", "tiff_lzw_bgr",         "webp_lossy_rgb", "webp_lossless_bgr",
                                                 "jp2_rgb",      "j2k_codestream_bgr",   "bmp_24bit_rgb", "bmp_8bit_palette_rgb",
                                                 "ppm_rgb",      "pbm_rgb"};
  return cases;
}

void ExpectError(const Bytes& bytes, const std::string& message, const std::string& what) {
  absl::StatusOr<vm::Tensor> out = Rgb().Run(bytes);
  ASSERT_FALSE(out.ok()) << what << " decoded to " << out->Describe();
  EXPECT_THAT(out.status().message(), HasSubstr("kiln.image.decode: ")) << what;
  EXPECT_THAT(out.status().message(), HasSubstr(message)) << what;
}

uint32_t Crc32(const uint8_t* p, size_t n) {  // PNG's CRC (ISO 3309), bit by bit
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
  }
  return ~c;
}

void PutBigEndian32(Bytes& b, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) b[at + k] = static_cast<uint8_t>(v >> (24 - 8 * k));
}

TEST(OnnxImageDecoder, RunTimeDimsFeedALaterOperator) {
  // P6, 3 x 2, maxval 255: Transpose to CHW needs the decoded height and width.
  Decoder chw(ImageModel("BGR", /*transpose=*/true));
  const Bytes ppm = Text("P6 3 2 255\n");
  Bytes data = ppm;
  for (uint8_t v = 0; v < 18; ++v) data.push_back(v);
  absl::StatusOr<vm::Tensor> out = chw.Run(data);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->shape(), (std::vector<int64_t>{3, 2, 3}));
  // Pixel (y, x) is bytes 3 * (3y + x) + {0, 1, 2} (R, G, B); channel 0 of BGR is blue.
  const uint8_t* y = out->data_as<uint8_t>();
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 6; ++p) EXPECT_EQ(y[c * 6 + p], 3 * p + (2 - c)) << c << " " << p;
  }
}

TEST(OnnxImageDecoder, SixteenBitPnmSamplesAreScaledAndRounded) {
  // round(v * 255 / 1000): 0.255 -> 0, 1.02 -> 1, 127.5 -> 128, 254.7 -> 255; 1200 clamps.
  Bytes pgm = Text("P5 3 2 1000\n");
  for (int v : {0, 1, 4, 500, 999, 1200}) pgm.insert(pgm.end(), {static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)});
  Decoder gray(ImageModel("Grayscale"));
  absl::StatusOr<vm::Tensor> out = gray.Run(pgm);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->shape(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(Bytes(out->data_as<uint8_t>(), out->data_as<uint8_t>() + 6), (Bytes{0, 0, 1, 128, 255, 255}));
}

TEST(OnnxImageDecoder, UnknownFormatsAndEmptyInputAreErrors) {
  ExpectError(Bytes{'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0}, "unknown image format (first bytes 47 49 46 38 39 61 01 00)", "GIF");
  ExpectError({}, "unknown image format (first bytes none: the input is empty)", "empty");
  ExpectError(Text("P7\nWIDTH 1\n"), "unknown image format", "PAM");
}

TEST(OnnxImageDecoder, TruncatedFilesAreErrors) {
  for (const std::string& name : FormatCases()) {
    const Bytes full = CaseInput(name);
    ASSERT_TRUE(Rgb().Run(full).ok()) << name;
    for (size_t keep : {full.size() / 2, full.size() * 9 / 10, std::min<size_t>(20, full.size() - 1)}) {
      absl::StatusOr<vm::Tensor> out = Rgb().Run(Bytes(full.begin(), full.begin() + keep));
      EXPECT_FALSE(out.ok()) << name << " cut to " << keep << " of " << full.size() << " bytes decoded";
      if (!out.ok()) {
        EXPECT_THAT(out.status().message(), HasSubstr("kiln.image.decode: ")) << name;
      }
    }
  }
}

TEST(OnnxImageDecoder, CorruptHeadersAreErrors) {
  Bytes png = CaseInput("png_rgb");
  png[20] ^= 0x40;  // IHDR's height, its CRC left as it was
  ExpectError(png, "PNG: IHDR: CRC error", "PNG CRC");
  Bytes jpeg = CaseInput("jpeg_420_rgb");
  for (size_t i = 2; i + 4 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xff && jpeg[i + 1] == 0xc0) {
      jpeg[i + 4] = 9;  // SOF0's sample precision
      break;
    }
  }
  ExpectError(jpeg, "JPEG: Unsupported JPEG data precision 9", "JPEG precision");
  Bytes tiff = CaseInput("tiff_raw_rgb");
  tiff[4] = 0xf0, tiff[5] = 0xff, tiff[6] = 0xff, tiff[7] = 0x7f;  // the first IFD's offset, past the end
  ExpectError(tiff, "TIFF: cannot read the header", "TIFF IFD offset");
  Bytes bmp = CaseInput("bmp_24bit_rgb");
  bmp[14] = 7;  // the DIB header's size
  ExpectError(bmp, "BMP: unknown header size 7", "BMP header size");
  ExpectError(Text("P6 12 x 255\n"), "PNM: expected the height, found byte 120", "PNM height");
  ExpectError(Text("P5 2 2 0\n\x01\x02\x03\x04"), "PNM: maxval 0 is outside 1..65535", "PNM maxval");
  Bytes webp = CaseInput("webp_lossy_rgb");
  for (size_t i = 20; i < 40; ++i) webp[i] = 0;  // the VP8 frame header
  ExpectError(webp, "WebP: ", "WebP frame header");
  Bytes jp2 = CaseInput("j2k_codestream_bgr");
  for (size_t i = 4; i < 40; ++i) jp2[i] = 0xff;  // SIZ's fields
  ExpectError(jp2, "JPEG 2000: ", "J2K SIZ");
}

TEST(OnnxImageDecoder, HugeClaimedSizesAreRefusedBeforeAllocating) {
  const std::string limit = "more than the decoder's limit of 268435456";
  ExpectError(Text("P6 100000 100000 255\n"), "PNM: the header claims 100000 x 100000 pixels, " + limit, "PNM");
  Bytes bmp = CaseInput("bmp_24bit_rgb");
  for (size_t at : {18, 22}) bmp[at] = 0xa0, bmp[at + 1] = 0x86, bmp[at + 2] = 0x01, bmp[at + 3] = 0;  // 100000
  ExpectError(bmp, "BMP: the header claims 100000 x 100000 pixels", "BMP");
  Bytes png = CaseInput("png_rgb");
  PutBigEndian32(png, 16, 100000);
  PutBigEndian32(png, 20, 100000);
  PutBigEndian32(png, 29, Crc32(png.data() + 12, 17));
  ExpectError(png, "PNG: the header claims 100000 x 100000 pixels", "PNG");
  Bytes jpeg = CaseInput("jpeg_420_rgb");
  for (size_t i = 2; i + 8 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xff && jpeg[i + 1] == 0xc0) {
      jpeg[i + 5] = 0xea, jpeg[i + 6] = 0x60, jpeg[i + 7] = 0xea, jpeg[i + 8] = 0x60;  // 60000 x 60000
      break;
    }
  }
  ExpectError(jpeg, "JPEG: the header claims 60000 x 60000 pixels", "JPEG");
  ExpectError(Text("P5 0 3 255\n"), "PNM: the header claims an empty or negative size 0 x 3", "PNM empty");
}

TEST(OnnxImageDecoder, RandomlyCorruptedFilesDecodeOrFailCleanly) {
  // Bytes overwritten at random: each decode either succeeds or returns an error of the
  // builtin; nothing crashes (tests/builtins/image_codecs_test.cc does more of this on the
  // decoders alone, under AddressSanitizer in scripts/sanitizer_tests.sh).
  std::mt19937 random(12);
  int failed = 0, total = 0;
  for (const std::string& name : FormatCases()) {
    const Bytes full = CaseInput(name);
    for (int mutant = 0; mutant < 30; ++mutant) {
      Bytes bytes = full;
      const int edits = 1 + static_cast<int>(random() % 8);
      for (int e = 0; e < edits; ++e) bytes[random() % bytes.size()] = static_cast<uint8_t>(random());
      absl::StatusOr<vm::Tensor> out = Rgb().Run(bytes);
      ++total;
      if (!out.ok()) {
        ++failed;
        EXPECT_THAT(out.status().message(), HasSubstr("kiln.image.decode: ")) << name;
      } else {
        EXPECT_EQ(out->shape().size(), 3u);
      }
    }
  }
  EXPECT_GT(failed, 0) << total;
}

TEST(OnnxImageDecoder, BadAttributesAndInputsAreImportErrors) {
  absl::Status s = ImportUncheckedStatus(ImageModel("CMYK"));
  EXPECT_THAT(s.message(), HasSubstr("pixel_format must be RGB, BGR or Grayscale, got 'CMYK'"));
  ModelBuilder m(20);
  m.Input("data", ::onnx::TensorProto::FLOAT, {"n"}).Output("y", kUint8);
  m.Node("ImageDecoder", {"data"}, {"y"});
  EXPECT_THAT(ImportUncheckedStatus(m.Bytes()).message(), HasSubstr("encoded_stream must be a uint8 tensor, got float32"));
}

}  // namespace
}  // namespace kiln::frontends::onnx
