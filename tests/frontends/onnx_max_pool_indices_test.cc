// MaxPool's Indices output (converters/max_pool_indices.cc) against loops written here from
// the operator's definition: for each output element the flat position in X of the first
// window element (in window order) holding the window's maximum, padding never chosen;
// with dilations, asymmetric pads, ceil_mode (a last window running past the padding), ties
// and two planes (the (n, c) offset), row-major and column-major (storage_order 1).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = ::onnx::TensorProto::INT64;

constexpr int64_t kPlanes = 2, kH = 7, kW = 6;
constexpr int64_t kKernel = 2, kStride = 2, kDilation = 2, kPadTop = 1, kPadLeft = 0, kPadBottom = 0, kPadRight = 1;

void SetIntsAttr(::onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  ::onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(::onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

void CheckIndices(bool column_major) {
  std::vector<float> x(static_cast<size_t>(kPlanes * kH * kW));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 5);  // many ties
  ModelBuilder m(12);
  m.Input("X", kFloat, {"1", "2", "7", "6"}).Output("Y").Output("I", kInt64);
  ::onnx::NodeProto* node = m.Node("MaxPool", {"X"}, {"Y", "I"}, "pool");
  SetIntsAttr(node, "kernel_shape", {kKernel, kKernel});
  SetIntsAttr(node, "strides", {kStride, kStride});
  SetIntsAttr(node, "dilations", {kDilation, kDilation});
  SetIntsAttr(node, "pads", {kPadTop, kPadLeft, kPadBottom, kPadRight});
  SetIntAttr(node, "ceil_mode", 1);
  SetIntAttr(node, "storage_order", column_major ? 1 : 0);
  absl::StatusOr<ImportResult> imported = ImportOnnxBytes(m.Bytes(), "", ImportOptions{});
  ASSERT_TRUE(imported.ok()) << imported.status();
  absl::StatusOr<std::vector<vm::Tensor>> out =
      CompileAndRun(*imported, {{"X", HostData(tir::DataType::Float32(), {1, kPlanes, kH, kW}, x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  const std::vector<int64_t>& shape = (*out)[1].shape();
  ASSERT_EQ(shape.size(), 4u);
  const int64_t oh = shape[2], ow = shape[3];
  ASSERT_EQ((*out)[0].shape(), shape);
  ASSERT_GE(oh, 3);  // ceil_mode's extra window along H: (7 + 1 - 3) / 2 rounded up + 1
  const int64_t* got = static_cast<const int64_t*>((*out)[1].data());
  const float* got_max = static_cast<const float*>((*out)[0].data());
  for (int64_t p = 0; p < kPlanes; ++p) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t at = -1;
        for (int64_t a = 0; a < kKernel; ++a) {
          for (int64_t b = 0; b < kKernel; ++b) {
            const int64_t h = i * kStride - kPadTop + a * kDilation, w = j * kStride - kPadLeft + b * kDilation;
            if (h < 0 || h >= kH || w < 0 || w >= kW) continue;
            const float v = x[static_cast<size_t>((p * kH + h) * kW + w)];
            if (at < 0 || v > best) {
              best = v;
              at = p * kH * kW + (column_major ? h + w * kH : h * kW + w);
            }
          }
        }
        const int64_t e = (p * oh + i) * ow + j;
        EXPECT_EQ(got_max[e], best) << p << " " << i << " " << j;
        EXPECT_EQ(got[e], at) << "plane " << p << " at " << i << ", " << j;
      }
    }
  }
}

TEST(OnnxMaxPoolIndices, RowMajorWithDilationsPadsCeilModeAndTies) { CheckIndices(false); }
TEST(OnnxMaxPoolIndices, ColumnMajorStorageOrder) { CheckIndices(true); }

}  // namespace
}  // namespace kiln::frontends::onnx
