// The ONNX importer on models built here with the protobuf API: symbolic dims, shape-value
// propagation, binding, and every class of bad model getting a clear status.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "relax/struct_info.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "tests/frontends/onnx_model_builder.h"
#include "tests/source_dir.h"

namespace kiln::frontends::onnx {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = ::onnx::TensorProto::INT64;

const relax::FunctionNode& Main(const ImportResult& r) {
  const relax::IRModule::Entry* entry = r.module.Find("main");
  EXPECT_NE(entry, nullptr);
  return *entry->relax_function();
}

std::string ResultSInfo(const ImportResult& r) { return relax::ToString(Main(r).ret_struct_info); }

TEST(OnnxImporter, DimParamsBecomeSharedSymbolicVariables) {
  ModelBuilder m;
  m.Input("x", kFloat, {"batch", "seq", "8"}).Input("y", kFloat, {"batch", "?", "8"}).Output("z");
  m.Node("Add", {"x", "y"}, {"z"});
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_TRUE(r.ok()) << r.status();
  const relax::FunctionNode& f = Main(*r);
  ASSERT_EQ(f.params.size(), 2u);
  EXPECT_EQ(relax::ToString(f.params[0].struct_info()), "Tensor((batch, seq, 8), float32)");
  EXPECT_EQ(relax::ToString(f.params[1].struct_info()), "Tensor((batch, y_dim1, 8), float32)");
  // One variable for "batch": both params hold the same tir::Var.
  const auto* x = f.params[0].struct_info().as<relax::TensorStructInfoNode>();
  const auto* y = f.params[1].struct_info().as<relax::TensorStructInfoNode>();
  EXPECT_EQ((*x->shape)[0].get(), (*y->shape)[0].get());
  EXPECT_EQ(r->parameters, (std::vector<std::string>{"x", "y"}));
  // The printed module parses back.
  std::string text = relax::PrintModule(r->module);
  EXPECT_TRUE(relax::ParseModule(text).ok()) << text;
}

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape: a reshape to a symbolic shape.
TEST(OnnxImporter, ShapeValuesPropagateToReshape) {
  ModelBuilder m;
  m.Input("x", kFloat, {"b", "n", "768"}).Output("y");
  m.Initializer("i0", {0}, {});
  m.Initializer("i1", {1}, {});
  m.Initializer("heads", {12, 64}, {2});
  m.Initializer("axes", {0}, {1});
  m.Node("Shape", {"x"}, {"s"});
  m.Node("Gather", {"s", "i0"}, {"b0"});
  m.Node("Gather", {"s", "i1"}, {"n0"});
  m.Node("Unsqueeze", {"b0", "axes"}, {"b1"});
  m.Node("Unsqueeze", {"n0", "axes"}, {"n1"});
  m.Node("Concat", {"b1", "n1", "heads"}, {"shape"})->add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(::onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  m.Node("Reshape", {"x", "shape"}, {"y"});
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ResultSInfo(*r), "Tensor((b, n, 12, 64), float32)");
}

TEST(OnnxImporter, ShapeArithmeticAndSizeStaySymbolic) {
  ModelBuilder m;
  m.Input("x", kFloat, {"b", "n"}).Output("y");
  m.Initializer("two", {2}, {1});
  m.Node("Shape", {"x"}, {"s"});
  m.Node("Mul", {"s", "two"}, {"s2"});
  m.Node("ConstantOfShape", {"s2"}, {"y"});
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ResultSInfo(*r), "Tensor((2 * b, 2 * n), float32)");
}

void SetIntAttr(::onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
}

// The grouped-query branch of Attention's function body: the heads of K are repeated
// Hq / Hkv times when Hq != Hkv and Hq % Hkv == 0. The comparisons, Not, And, Mod and Where
// fold on the shape values, so Expand and Reshape get shapes (symbolic ones included).
TEST(OnnxImporter, ComparisonsWhereModAndLogicFoldOnShapeValues) {
  for (const auto& [q_heads, expected] :
       {std::pair{std::string("8"), std::string("Tensor((b, 8, n, 16), float32)")},
        {std::string("2"), std::string("Tensor((b, 2, n, 16), float32)")}}) {
    ModelBuilder m;
    m.Input("q", kFloat, {"b", q_heads, "n", "16"}).Input("k", kFloat, {"b", "2", "n", "16"}).Output("y");
    m.Initializer("one", {1}, {1});
    m.Initializer("zero", {0}, {1});
    m.Initializer("two", {2}, {1});
    ::onnx::NodeProto* hq = m.Node("Shape", {"q"}, {"hq"});
    SetIntAttr(hq, "start", 1);
    SetIntAttr(hq, "end", 2);
    ::onnx::NodeProto* hkv = m.Node("Shape", {"k"}, {"hkv"});
    SetIntAttr(hkv, "start", 1);
    SetIntAttr(hkv, "end", 2);
    m.Node("Shape", {"k"}, {"kshape"});
    m.Node("Equal", {"hq", "hkv"}, {"same"});
    m.Node("Not", {"same"}, {"differ"});
    m.Node("Mod", {"hq", "hkv"}, {"rem"});
    m.Node("Equal", {"rem", "zero"}, {"divides"});
    m.Node("And", {"differ", "divides"}, {"grouped"});
    m.Node("Div", {"hq", "hkv"}, {"ratio"});
    m.Node("Where", {"grouped", "ratio", "one"}, {"repeat"});
    m.Node("Unsqueeze", {"k", "two"}, {"k5"});
    m.Node("Gather", {"kshape", "zero"}, {"b1"});
    m.Node("Gather", {"kshape", "two"}, {"n1"});
    SetIntAttr(m.Node("Concat", {"b1", "hkv", "repeat", "n1"}, {"lead"}), "axis", 0);
    m.Initializer("d", {16}, {1});
    SetIntAttr(m.Node("Concat", {"lead", "d"}, {"expand_shape"}), "axis", 0);
    m.Node("Expand", {"k5", "expand_shape"}, {"expanded"});
    SetIntAttr(m.Node("Concat", {"b1", "hq", "n1", "d"}, {"final_shape"}), "axis", 0);
    m.Node("Reshape", {"expanded", "final_shape"}, {"y"});
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(ResultSInfo(*r), expected);
  }
}

// A shape value that a node already used as a tensor (here Sub with run-time data) keeps its
// elements: a later Concat -> ConstantOfShape still gets a shape, not run-time data.
TEST(OnnxImporter, ShapeValuesStayKnownAfterUseAsTensors) {
  ModelBuilder m;
  m.Input("x", kFloat, {"b", "n"}).Input("lengths", kInt64, {"b"}).Output("y").Output("offset", kInt64);
  m.Node("Shape", {"x"}, {"s"});
  m.Node("Sub", {"lengths", "s"}, {"offset"});
  SetIntAttr(m.Node("Concat", {"s", "s"}, {"s2"}), "axis", 0);
  m.Node("ConstantOfShape", {"s2"}, {"y"});
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(ResultSInfo(*r), HasSubstr("Tensor((b, n, b, n), float32)"));
}

// A constant cast at import time stays usable where an operator needs data (Pad's
// constant_value from CastLike(-inf, x) in Attention's body).
TEST(OnnxImporter, SmallConstantsCastAtImportTime) {
  ModelBuilder m;
  m.Input("x", ::onnx::TensorProto::FLOAT16, {"2", "3"}).Output("y", ::onnx::TensorProto::FLOAT16);
  auto* value = m.Node("Constant", {}, {"neg_inf"})->add_attribute();
  value->set_name("value_float");
  value->set_type(::onnx::AttributeProto::FLOAT);
  value->set_f(-std::numeric_limits<float>::infinity());
  m.Node("CastLike", {"neg_inf", "x"}, {"fill"});
  m.Initializer("pads", {0, 0, 0, 2}, {4});
  m.Node("Pad", {"x", "pads", "fill"}, {"y"});
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ResultSInfo(*r), "Tensor((2, 5), float16)");
  EXPECT_THAT(relax::PrintModule(r->module), HasSubstr("pad_value=-inf"));
}

// Range over bounds computed from run-time data: its length becomes a fresh symbolic dim
// named after the output, defined when the count is computed (tensor_to_shape + match_cast).
// Its numerics: tests/frontends/onnx_node_new (hannwindow_expanded, ...).
TEST(OnnxImporter, RangeOverRunTimeBoundsHasASymbolicLength) {
  ModelBuilder m(17);
  m.Input("n", kInt64, {}).Output("y", kInt64);
  m.Initializer("zero", {0}, {});
  m.Initializer("one", {1}, {});
  m.Node("Add", {"n", "one"}, {"limit"});
  m.Node("Range", {"zero", "limit", "one"}, {"y"});
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_TRUE(r.ok()) << r.status();
  // The dim is defined inside main, so its result only keeps the rank.
  EXPECT_EQ(ResultSInfo(*r), "Tensor(ndim=1, int64)");
  const std::string text = relax::PrintModule(r->module);
  EXPECT_THAT(text, HasSubstr("R.tensor_to_shape("));
  EXPECT_THAT(text, HasSubstr("Tensor((y_count,), int64)"));
}

TEST(OnnxImporter, RunTimeShapeInputNeedsABinding) {
  ModelBuilder m;
  m.Input("x", kFloat, {"2", "6"}).Input("shape", kInt64, {"2"}).Output("y");
  m.Node("Reshape", {"x", "shape"}, {"y"}, "reshape_node");
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("node 'reshape_node' (op Reshape, opset 17)"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("input 'shape' must be known at import time"));

  ImportOptions options;
  auto bytes = std::make_shared<std::vector<uint8_t>>(16);
  int64_t values[2] = {3, 4};
  std::memcpy(bytes->data(), values, 16);
  options.bind["shape"] = relax::ConstantData{tir::DataType::Int64(), {2}, bytes, ""};
  r = ImportOnnxBytes(m.Bytes(), "", options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ResultSInfo(*r), "Tensor((3, 4), float32)");
  EXPECT_EQ(r->parameters, (std::vector<std::string>{"x"}));  // a bound input is a constant
}

TEST(OnnxImporter, UnsupportedOperatorNamesNodeOpAndOpset) {
  ModelBuilder m(13);
  m.Input("x", kFloat, {"4"}).Output("y");
  m.Node("NoSuchOp", {"x"}, {"y"}, "n0");
  ImportOptions options;
  options.check = false;  // ONNX's checker would reject the unknown op first
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "", options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(r.status().message(), "node 'n0' (op NoSuchOp, opset 13): operator NoSuchOp is not supported");
}

TEST(OnnxImporter, OpsetsNewerThanTheConvertersKnowImport) {
  // ONNX's later opsets mostly add types to existing operators: a model at opset 28 converts
  // Relu and Add with their newest known semantics, and ONNX 1.12's checker (which knows
  // opsets up to 17) is not asked about it.
  ModelBuilder m(28);
  m.Input("x", kFloat, {"n"}).Output("y");
  m.Node("Relu", {"x"}, {"r"});
  m.Node("Add", {"r", "x"}, {"y"});
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ResultSInfo(*r), "Tensor((n,), float32)");
}

// The newest `onnx` package writes its own IR version (10 or more) into every model, also
// at an old opset; ONNX 1.12's checker (IR version 8) would refuse such a model outright.
TEST(OnnxImporter, AnIrVersionNewerThanTheCheckersImports) {
  ModelBuilder m(17);
  m.proto().set_ir_version(11);
  m.Input("x", kFloat, {"n"}).Output("y");
  m.Node("Relu", {"x"}, {"y"});
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ResultSInfo(*r), "Tensor((n,), float32)");
}

// Hand-written models with the checker not run (the newest `onnx` package's IR version): a
// graph input listed twice was skipped the second time, silently (hunt19); an input with no
// type was called "not a tensor".
TEST(OnnxImporter, AnInputDeclaredTwiceOrWithoutATypeIsNamed) {
  ModelBuilder twice(17);
  twice.proto().set_ir_version(11);
  twice.Input("x", kFloat, {"2"}).Input("x", kFloat, {"2"}).Output("y");
  twice.Node("Relu", {"x"}, {"y"});
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(twice.Bytes(), "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "graph input 'x' is declared twice (input names must be unique)");

  ModelBuilder untyped(17);
  untyped.proto().set_ir_version(11);
  untyped.proto().mutable_graph()->add_input()->set_name("x");
  untyped.Output("y");
  untyped.Node("Relu", {"x"}, {"y"});
  r = ImportOnnxBytes(untyped.Bytes(), "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("graph input 'x' has no type"));
}

// Above opset 17 ONNX 1.12's checker does not run: the importer itself refuses an input the
// operator does not take (it was converted ignoring it), naming the node and the input.
TEST(OnnxImporter, ASurplusInputIsAnErrorWithoutTheChecker) {
  ModelBuilder m(19);
  m.Input("x", kFloat, {"4"}).Input("extra", kFloat, {"4"}).Output("y");
  SetIntAttr(m.Node("Cast", {"x", "extra"}, {"y"}, "cast0"), "to", kFloat);
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "node 'cast0' (op Cast, opset 19): input 1 ('extra') is not an input Cast takes here (the node has 2 "
            "inputs): remove it");

  // A node's optional inputs that the converter reads are not surplus (Clip's min and max;
  // an omitted one in the middle is the empty name).
  ModelBuilder clip(19);
  clip.Input("x", kFloat, {"4"}).Input("hi", kFloat, {}).Output("y");
  clip.Node("Clip", {"x", "", "hi"}, {"y"}, "clip0");
  absl::StatusOr<ImportResult> ok = ImportOnnxBytes(clip.Bytes(), "");
  EXPECT_TRUE(ok.ok()) << ok.status();
}

// A flag attribute (0 or 1) with another value: Kiln read `!= 0`, ONNX Runtime reads `== 1`,
// so `allowzero=-100` meant 1 here and 0 there. Refused before the node converts.
TEST(OnnxImporter, AFlagAttributeOtherThanZeroOrOneIsAnError) {
  for (int64_t value : {int64_t{-100}, int64_t{2}, int64_t{1} << 40}) {
    for (int64_t opset : {17, 21}) {
      ModelBuilder m(opset);
      m.Input("x", kFloat, {"2", "3"}).Output("y");
      m.Initializer("shape", {3, 2}, {2});
      SetIntAttr(m.Node("Reshape", {"x", "shape"}, {"y"}, "reshape0"), "allowzero", value);
      ImportOptions options;
      options.check = false;  // the checker does not look at the value either
      absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "", options);
      ASSERT_FALSE(r.ok()) << value;
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(r.status().message(), absl::StrCat("node 'reshape0' (op Reshape, opset ", opset,
                                                   "): attribute 'allowzero' is ", value, "; it is a flag: 0 or 1"));
    }
  }
  for (int64_t value : {0, 1}) {
    ModelBuilder m(21);
    m.Input("x", kFloat, {"2", "3"}).Output("y");
    m.Initializer("shape", {3, 2}, {2});
    SetIntAttr(m.Node("Reshape", {"x", "shape"}, {"y"}, "reshape0"), "allowzero", value);
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(ResultSInfo(*r), "Tensor((3, 2), float32)");
  }
}

TEST(OnnxImporter, TruncatedProtobufIsAClearError) {
  ModelBuilder m;
  m.Input("x", kFloat, {"4"}).Output("y");
  m.Node("Relu", {"x"}, {"y"});
  std::string bytes = m.Bytes();
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(bytes.substr(0, bytes.size() / 2), "");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("not a valid ONNX model"));
  r = ImportOnnxBytes("", "");
  EXPECT_FALSE(r.ok());
  r = ImportOnnxBytes(std::string("\xff\xff\xff\xff garbage", 12), "");
  EXPECT_FALSE(r.ok());
}

TEST(OnnxImporter, WrongTypesAreErrors) {
  {
    // Complex numbers have no Kiln dtype (strings do: docs/onnx.md, "Strings").
    ModelBuilder m;
    m.Input("x", ::onnx::TensorProto::COMPLEX64, {"4"}).Output("y", ::onnx::TensorProto::COMPLEX64);
    m.Node("Identity", {"x"}, {"y"});
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("graph input 'x'"));
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("COMPLEX64"));
  }
  {
    // float + int64: Kiln's inference refuses, the error names the node.
    ModelBuilder m;
    m.Input("x", kFloat, {"4"}).Input("y", kInt64, {"4"}).Output("z");
    m.Node("Add", {"x", "y"}, {"z"}, "add0");
    ImportOptions options;
    options.check = false;
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "", options);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("node 'add0' (op Add, opset 17)"));
  }
}

TEST(OnnxImporter, CyclesAndMissingInputsAreErrors) {
  {
    ModelBuilder m;
    m.Input("x", kFloat, {"4"}).Output("b");
    m.Node("Add", {"x", "b"}, {"a"}, "first");
    m.Node("Relu", {"a"}, {"b"}, "second");
    ImportOptions options;
    options.check = false;
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "", options);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("cycle"));
    // The checker, on, rejects it too (the graph is not sorted).
    EXPECT_FALSE(ImportOnnxBytes(m.Bytes(), "").ok());
  }
  {
    ModelBuilder m;
    m.Input("x", kFloat, {"4"}).Output("y");
    m.Node("Add", {"x", "nowhere"}, {"y"}, "add0");
    ImportOptions options;
    options.check = false;
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "", options);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("node 'add0'"));
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("'nowhere' is not a graph input"));
  }
}

TEST(OnnxImporter, HugeDimsAreErrors) {
  {
    ModelBuilder m;
    m.Input("x", kFloat, {"4", "1000000000000000"}).Output("y");
    m.Node("Relu", {"x"}, {"y"});
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("dim 1"));
  }
  {
    // An initializer claiming 2^62 elements with no data.
    ModelBuilder m;
    m.Input("x", kInt64, {"1"}).Output("y", kInt64);
    auto* t = m.Initializer("w", {}, {int64_t{1} << 31, int64_t{1} << 31});
    (void)t;
    m.Node("Add", {"x", "w"}, {"y"});
    ImportOptions options;
    options.check = false;
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "", options);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("tensor 'w'"));
  }
}

TEST(OnnxImporter, ExternalDataStaysInsideTheModelFolder) {
  fs::path dir = fs::temp_directory_path() / ("kiln_onnx_ext_" + std::to_string(::getpid()));
  fs::create_directories(dir / "model");
  {
    std::ofstream(dir / "outside.bin", std::ios::binary) << std::string(16, '\0');
    std::ofstream(dir / "model" / "w.bin", std::ios::binary) << std::string(16, '\x01');
  }
  auto build = [&](const std::string& location, int64_t offset) {
    ModelBuilder m;
    m.Input("x", kInt64, {"2"}).Output("y", kInt64);
    auto* t = m.Initializer("w", {}, {2});
    t->set_data_location(::onnx::TensorProto::EXTERNAL);
    auto* entry = t->add_external_data();
    entry->set_key("location");
    entry->set_value(location);
    auto* off = t->add_external_data();
    off->set_key("offset");
    off->set_value(std::to_string(offset));
    m.Node("Add", {"x", "w"}, {"y"});
    return m.Bytes();
  };
  const std::string base = (dir / "model").string();
  absl::StatusOr<ImportResult> r = ImportOnnxBytes(build("w.bin", 0), base);
  EXPECT_TRUE(r.ok()) << r.status();
  r = ImportOnnxBytes(build("../outside.bin", 0), base);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("outside the model's folder"));
  r = ImportOnnxBytes(build("/etc/passwd", 0), base);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("must be relative"));
  r = ImportOnnxBytes(build("w.bin", 8), base);  // 16 bytes wanted from offset 8 of 16
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("lies outside"));
  fs::remove_all(dir);
}

TEST(OnnxImporter, OpsetDifferences) {
  // Softmax before 13 flattens to 2-D at axis 1; from 13 it normalizes along one axis. Both
  // keep the input's shape.
  for (int64_t opset : {11, 13}) {
    ModelBuilder m(opset);
    m.Input("x", kFloat, {"2", "3", "4"}).Output("y");
    m.Node("Softmax", {"x"}, {"y"});
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(ResultSInfo(*r), "Tensor((2, 3, 4), float32)");
    std::string text = relax::PrintModule(r->module);
    EXPECT_EQ(text.find("R.reshape") != std::string::npos, opset < 13) << text;
  }
  // ReduceSum: axes an attribute at 11, an input at 13.
  {
    ModelBuilder m(11);
    m.Input("x", kFloat, {"2", "3"}).Output("y");
    auto* node = m.Node("ReduceSum", {"x"}, {"y"});
    auto* axes = node->add_attribute();
    axes->set_name("axes");
    axes->set_type(::onnx::AttributeProto::INTS);
    axes->add_ints(1);
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(ResultSInfo(*r), "Tensor((2, 1), float32)");
  }
  {
    ModelBuilder m(13);
    m.Input("x", kFloat, {"2", "3"}).Output("y");
    m.Initializer("axes", {0}, {1});
    m.Node("ReduceSum", {"x", "axes"}, {"y"});
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(ResultSInfo(*r), "Tensor((1, 3), float32)");
  }
}

// Split sizes and Squeeze axes: attributes before opset 13, inputs from 13.
TEST(OnnxImporter, SplitAndSqueezeAttributesBecomeInputs) {
  for (int64_t opset : {11, 13}) {
    ModelBuilder m(opset);
    m.Input("x", kFloat, {"1", "6"}).Output("a").Output("b");
    auto* split = m.Node("Split", {"x"}, {"p", "q"});
    auto* axis = split->add_attribute();
    axis->set_name("axis");
    axis->set_type(::onnx::AttributeProto::INT);
    axis->set_i(1);
    if (opset < 13) {
      auto* sizes = split->add_attribute();
      sizes->set_name("split");
      sizes->set_type(::onnx::AttributeProto::INTS);
      sizes->add_ints(2);
      sizes->add_ints(4);
    } else {
      m.Initializer("sizes", {2, 4}, {2});
      split->add_input("sizes");
    }
    auto* squeeze_a = m.Node("Squeeze", {"p"}, {"a"});
    auto* squeeze_b = m.Node("Squeeze", {"q"}, {"b"});
    if (opset < 13) {
      for (auto* node : {squeeze_a, squeeze_b}) {
        auto* axes = node->add_attribute();
        axes->set_name("axes");
        axes->set_type(::onnx::AttributeProto::INTS);
        axes->add_ints(0);
      }
    } else {
      m.Initializer("axes", {0}, {1});
      squeeze_a->add_input("axes");
      squeeze_b->add_input("axes");
    }
    absl::StatusOr<ImportResult> r = ImportOnnxBytes(m.Bytes(), "");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(ResultSInfo(*r), "Tuple(Tensor((2,), float32), Tensor((4,), float32))") << "opset " << opset;
  }
}

// Mutated models (bytes flipped, truncated, spliced) only ever give statuses: a cheap fuzz
// of the whole import path, deterministic so a failure reproduces.
TEST(OnnxImporter, MutatedModelsNeverCrash) {
  ModelBuilder m;
  m.Input("x", kFloat, {"b", "8"}).Output("y");
  m.Initializer("shape", {-1, 4}, {2});
  m.Node("Shape", {"x"}, {"s"});
  m.Node("Reshape", {"x", "shape"}, {"r"});
  m.Node("Relu", {"r"}, {"y"});
  const std::string good = m.Bytes();
  std::mt19937 rng(1234);
  int ok = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes[at] = static_cast<char>(rng()); break;
        case 1: bytes.resize(at); break;
        default: bytes.insert(at, 1, static_cast<char>(rng())); break;
      }
      if (bytes.empty()) break;
    }
    for (bool check : {true, false}) {
      ImportOptions options;
      options.check = check;
      ok += ImportOnnxBytes(bytes, "", options).ok();
    }
  }
  EXPECT_LT(ok, 4000);  // most mutations are refused, and none of them crashed
}

// The same on a real exported model (the encoder of tests/frontends/onnx_encoder): flips
// and truncations land in its node list, attributes, shapes and initializers alike.
TEST(OnnxImporter, MutatedEncoderNeverCrashes) {
  std::ifstream file(test::SourceDir() + "/tests/frontends/onnx_encoder/model.onnx", std::ios::binary);
  ASSERT_TRUE(file.good());
  const std::string good((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(ImportOnnxBytes(good, "").ok());
  std::mt19937 rng(99);
  for (int round = 0; round < 200; ++round) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t at = rng() % bytes.size();
      if (rng() % 16 == 0) {
        bytes.resize(at);
      } else {
        bytes[at] = static_cast<char>(rng());
      }
    }
    ImportOptions options;
    options.check = round % 2 == 0;
    (void)ImportOnnxBytes(bytes, "", options);  // a status either way; never a crash
  }
}

}  // namespace
}  // namespace kiln::frontends::onnx
