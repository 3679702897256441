// ai.onnx.preview FlexAttention (converters/attention_converters.cc), the first operator of a
// domain other than the default one (converter_registry.h: "<domain>:<OpType>"). Results
// are checked against attention computed here in double precision, loop by loop.
#include <cmath>
#include <cstring>
#include <map>

#include "frontends/onnx/converter_registry.h"
#include "frontends/onnx/importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

using ::testing::HasSubstr;
constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;

// A model importing ai.onnx.preview 1 beside the default domain.
ModelBuilder PreviewModel() {
  ModelBuilder m(26);
  auto* preview = m.proto().add_opset_import();
  preview->set_domain("ai.onnx.preview");
  preview->set_version(1);
  return m;
}

// A modifier graph: out = in <op> constant, the constant a float initializer of one element.
::onnx::GraphProto Modifier(const std::string& name, const std::string& op, float constant) {
  ::onnx::GraphProto g;
  g.set_name(name);
  auto* node = g.add_node();
  node->set_op_type(op);
  node->add_input("in");
  node->add_input("c");
  node->add_output("out");
  auto* init = g.add_initializer();
  init->set_name("c");
  init->set_data_type(kFloat);
  init->add_float_data(constant);
  g.add_input()->set_name("in");
  g.add_output()->set_name("out");
  return g;
}

std::vector<float> Pattern(size_t n, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * static_cast<float>(i) + phase);
  return v;
}

TEST(OnnxFlexAttention, GroupedHeadsWithScoreAndProbModifiersMatchADirectComputation) {
  const int64_t B = 2, Hq = 4, Hkv = 2, L = 3, S = 5, E = 4, Ev = 3;
  const float scale = 0.3f, bias = 0.25f, prob_factor = 2.0f;
  ModelBuilder m = PreviewModel();
  m.Input("Q", kFloat, {"2", "4", "3", "4"})
      .Input("K", kFloat, {"2", "2", "5", "4"})
      .Input("V", kFloat, {"2", "2", "5", "3"})
      .Output("Y");
  ::onnx::NodeProto* node = m.Node("FlexAttention", {"Q", "K", "V"}, {"Y"});
  node->set_domain("ai.onnx.preview");
  auto* scale_attr = node->add_attribute();
  scale_attr->set_name("scale");
  scale_attr->set_type(::onnx::AttributeProto::FLOAT);
  scale_attr->set_f(scale);
  SetGraphAttr(node, "score_mod", Modifier("score_mod", "Add", bias));
  SetGraphAttr(node, "prob_mod", Modifier("prob_mod", "Mul", prob_factor));
  const std::vector<float> q = Pattern(B * Hq * L * E, 0.1f), k = Pattern(B * Hkv * S * E, 1.3f),
                           v = Pattern(B * Hkv * S * Ev, 2.9f);
  absl::StatusOr<std::vector<vm::Tensor>> out =
      ImportUncheckedAndRun(m.Bytes(), {{"Q", HostData(tir::DataType::Float32(), {B, Hq, L, E}, q)},
                       {"K", HostData(tir::DataType::Float32(), {B, Hkv, S, E}, k)},
                       {"V", HostData(tir::DataType::Float32(), {B, Hkv, S, Ev}, v)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{B, Hq, L, Ev}));
  std::vector<float> y(static_cast<size_t>(B * Hq * L * Ev));
  std::memcpy(y.data(), (*out)[0].data(), y.size() * sizeof(float));

  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = h / (Hq / Hkv);  // query heads 0,1 share K/V head 0; 2,3 head 1
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> p(S);
        double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e) dot += q[((b * Hq + h) * L + i) * E + e] * k[((b * Hkv + kh) * S + j) * E + e];
          p[j] = dot * scale + bias;
          top = std::max(top, p[j]);
        }
        for (double& x : p) sum += (x = std::exp(x - top));
        for (int64_t d = 0; d < Ev; ++d) {
          double want = 0;
          for (int64_t j = 0; j < S; ++j) want += p[j] / sum * prob_factor * v[((b * Hkv + kh) * S + j) * Ev + d];
          EXPECT_NEAR(y[((b * Hq + h) * L + i) * Ev + d], want, 1e-5) << b << " " << h << " " << i << " " << d;
        }
      }
    }
  }
}

TEST(OnnxFlexAttention, ThreeDimensionalInputsAreAClearError) {
  ModelBuilder m = PreviewModel();
  m.Input("Q", kFloat, {"1", "3", "4"}).Input("K", kFloat, {"1", "3", "4"}).Input("V", kFloat, {"1", "3", "4"});
  m.Output("Y");
  m.Node("FlexAttention", {"Q", "K", "V"}, {"Y"}, "flex")->set_domain("ai.onnx.preview");
  const absl::Status status = ImportUncheckedStatus(m.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("node 'flex'"));
  EXPECT_THAT(status.message(), HasSubstr("must be 4-D"));
}

TEST(OnnxFlexAttention, AnotherDomainsOperatorStaysUnsupportedByName) {
  // An operator the default domain has (Relu) is not taken for another domain's.
  ModelBuilder m(17);
  auto* other = m.proto().add_opset_import();
  other->set_domain("com.example");
  other->set_version(1);
  m.Input("X", kFloat, {"2"}).Output("Y");
  m.Node("Relu", {"X"}, {"Y"}, "custom")->set_domain("com.example");
  const absl::Status status = ImportUncheckedStatus(m.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("operator Relu of domain 'com.example' is not supported"));
}

TEST(OnnxFlexAttention, RegisteredUnderItsQualifiedName) {
  EXPECT_EQ(QualifiedOpType("ai.onnx.preview", "FlexAttention"), "ai.onnx.preview:FlexAttention");
  EXPECT_EQ(QualifiedOpType("", "Relu"), "Relu");
  EXPECT_EQ(QualifiedOpType("ai.onnx", "Relu"), "Relu");
  EXPECT_NE(ConverterRegistry::Global().Find("ai.onnx.preview:FlexAttention", 1), nullptr);
  EXPECT_EQ(ConverterRegistry::Global().Find("FlexAttention", 26), nullptr);
}

}  // namespace
}  // namespace kiln::frontends::onnx
