// Col2Im (converters/col2im_converters.cc) against the operator's definition evaluated here in
// plain loops: every column element added to its image position, for strides that do not
// divide the padded image (rows past the last block stay 0), dilations and asymmetric pads.
#include <map>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

using ::testing::HasSubstr;
constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;

void SetIntsAttr(::onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

TEST(OnnxCol2Im, SumsColumnsIntoTheImageWithStridesDilationsAndPads) {
  const int64_t n = 2, channels = 2, ih = 7, iw = 8, bh = 2, bw = 3;
  const std::vector<int64_t> strides = {2, 3}, dilations = {2, 1}, pads = {1, 0, 0, 2};  // top left bottom right
  // Blocks per dim: (image + pads - dilation (block - 1) - 1) / stride + 1.
  const int64_t gh = (ih + pads[0] + pads[2] - dilations[0] * (bh - 1) - 1) / strides[0] + 1;
  const int64_t gw = (iw + pads[1] + pads[3] - dilations[1] * (bw - 1) - 1) / strides[1] + 1;
  const int64_t rows = channels * bh * bw, blocks = gh * gw;
  ModelBuilder m(18);
  m.Input("X", kFloat, {std::to_string(n), std::to_string(rows), std::to_string(blocks)}).Output("Y");
  m.Initializer("image", {ih, iw}, {2});
  m.Initializer("block", {bh, bw}, {2});
  ::onnx::NodeProto* node = m.Node("Col2Im", {"X", "image", "block"}, {"Y"}, "col2im");
  SetIntsAttr(node, "strides", strides);
  SetIntsAttr(node, "dilations", dilations);
  SetIntsAttr(node, "pads", pads);
  std::vector<float> x(static_cast<size_t>(n * rows * blocks));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 13) - 6.0f;
  std::vector<double> want(static_cast<size_t>(n * channels * ih * iw), 0.0);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t ch = row / (bh * bw), ky = row / bw % bh, kx = row % bw;
      for (int64_t l = 0; l < blocks; ++l) {
        const int64_t y = l / gw * strides[0] - pads[0] + ky * dilations[0];
        const int64_t xx = l % gw * strides[1] - pads[1] + kx * dilations[1];
        if (y < 0 || y >= ih || xx < 0 || xx >= iw) continue;
        want[((b * channels + ch) * ih + y) * iw + xx] += x[(b * rows + row) * blocks + l];
      }
    }
  }
  ImportOptions options;
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", options);
  ASSERT_TRUE(imported.ok()) << imported.status();
  absl::StatusOr<std::vector<vm::Tensor>> out =
      CompileAndRun(*imported, {{"X", HostData(tir::DataType::Float32(), {n, rows, blocks}, x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{n, channels, ih, iw}));
  const float* got = static_cast<const float*>((*out)[0].data());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "element " << i;
}

TEST(OnnxCol2Im, ABlockCountThatDoesNotMatchTheImageIsAnErrorNamingTheNode) {
  ModelBuilder m(18);
  m.Input("X", kFloat, {"1", "4", "5"}).Output("Y");
  m.Initializer("image", {3, 3}, {2});
  m.Initializer("block", {2, 2}, {2});
  m.Node("Col2Im", {"X", "image", "block"}, {"Y"}, "bad_col2im");
  ImportOptions unchecked;
  unchecked.check = false;
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", unchecked);
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(imported.status().message(), HasSubstr("bad_col2im"));
  EXPECT_THAT(imported.status().message(), HasSubstr("input has 5 blocks; the image and block shapes give 4"));
}

}  // namespace
}  // namespace kiln::frontends::onnx
