// Text format: parse -> print -> parse -> print is stable for every hand-written module in
// tests/relax/modules/*.kir, names resolve to the defining nodes, and malformed input gives
// the exact `file:line:col: error: ...` message.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "relax/structural_equal.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "tir/expr.h"
#include "tests/source_dir.h"

namespace kiln::relax {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::filesystem::path> ModuleFiles() {
  const std::string root = kiln::test::SourceDir();
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(root) / "tests/relax/modules")) {
    if (entry.path().extension() == ".kir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(TextFormatTest, ModulesRoundTrip) {
  std::vector<std::filesystem::path> files = ModuleFiles();
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    auto first = ParseModule(ReadFile(path), path.filename().string());
    if (!first.ok()) {
      ADD_FAILURE() << first.status();
      continue;
    }
    std::string text1 = PrintModule(first->module);
    auto second = ParseModule(text1, "printed");
    if (!second.ok()) {
      ADD_FAILURE() << second.status() << "\n" << text1;
      continue;
    }
    std::string text2 = PrintModule(second->module);
    EXPECT_EQ(text1, text2);
    EXPECT_EQ(StructuralDiff(first->module, second->module), "");
    if (std::getenv("KILN_TEXT_DUMP") != nullptr) std::cout << text1;
  }
  EXPECT_GE(files.size(), 20u) << "KILN_SOURCE_DIR must point at the source tree";
}


// ---------------------------------------------------------------- names and structure

ParsedModule MustParse(std::string_view text) {
  auto parsed = ParseModule(text, "test.kir");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return ParsedModule{};
  return std::move(*parsed);
}

const FunctionNode* Func(const ParsedModule& m, std::string_view name) {
  const IRModule::Entry* entry = m.module.Find(name);
  return entry ? entry->relax_function() : nullptr;
}

TEST(TextFormatTest, UsesResolveToTheirDefinitions) {
  ParsedModule m = MustParse(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) where n <= 4096 {
    dataflow {
      %a: Tensor((n, 4), float32) = R.add(x, x)
      b = R.multiply(%a, x)
    }
    c = match_cast(b, Tensor((n, k), float32))
    return c
  }
})");
  const FunctionNode* f = Func(m, "main");
  ASSERT_NE(f, nullptr);
  const Var& x = f->params[0];
  const auto* x_sinfo = x.struct_info().as<TensorStructInfoNode>();
  ASSERT_NE(x_sinfo, nullptr);
  const auto* n = (*x_sinfo->shape)[0].as<tir::VarNode>();
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->name, "n");
  EXPECT_EQ(n->lower_bound, 0);
  EXPECT_EQ(n->upper_bound, 4096);
  // The return struct info refers to the same n.
  const auto* ret = f->ret_struct_info.as<TensorStructInfoNode>();
  EXPECT_EQ((*ret->shape)[0].get(), n);

  const auto* seq = f->body.as<SeqExprNode>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->blocks.size(), 2u);
  EXPECT_TRUE(seq->blocks[0].dataflow);
  EXPECT_FALSE(seq->blocks[1].dataflow);
  const Binding& a = seq->blocks[0].bindings[0];
  EXPECT_TRUE(a.var.is_dataflow());
  EXPECT_EQ(a.var.name_hint(), "a");
  const auto* add = a.value.as<CallNode>();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->op.as<OpNode>()->name, "add");
  EXPECT_TRUE(add->args[0].same_as(x));
  EXPECT_TRUE(add->args[1].same_as(x));
  const Binding& b = seq->blocks[0].bindings[1];
  EXPECT_FALSE(b.var.is_dataflow());
  EXPECT_FALSE(b.var.struct_info().defined()) << "the parser does not infer struct info";
  EXPECT_TRUE(b.value.as<CallNode>()->args[0].same_as(a.var));
  const Binding& c = seq->blocks[1].bindings[0];
  ASSERT_TRUE(c.is_match_cast());
  EXPECT_TRUE(c.value.same_as(b.var));
  const auto* mc = c.match_cast_sinfo.as<TensorStructInfoNode>();
  EXPECT_EQ((*mc->shape)[0].get(), n);
  const auto* k = (*mc->shape)[1].as<tir::VarNode>();
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name, "k");
  EXPECT_EQ(k->upper_bound, std::nullopt);
  EXPECT_TRUE(seq->body.same_as(c.var));

  // Locations: the function at its name, each variable where it is defined.
  const SourceLocation& fl = m.locations.at(f);
  EXPECT_EQ(fl.file, "test.kir");
  EXPECT_EQ(fl.line, 2);
  EXPECT_EQ(fl.column, 8);
  EXPECT_EQ(m.locations.at(x.get()).line, 2);
  EXPECT_EQ(m.locations.at(x.get()).column, 14);
  EXPECT_EQ(m.locations.at(a.var.get()).line, 4);
  EXPECT_EQ(m.locations.at(a.var.get()).column, 7);
  EXPECT_EQ(m.locations.at(c.var.get()).line, 7);
}

TEST(TextFormatTest, TirNamesResolve) {
  ParsedModule m = MustParse(R"(module {
  prim_func @k(A: Buffer((n,), float32), B: Buffer((n,), float32), n: int64) {
    for i in serial(0, n) {
      block "b" {
        vi = spatial(n, i)
        B[vi] = A[vi]
      }
    }
  }
})");
  const IRModule::Entry* entry = m.module.Find("k");
  ASSERT_NE(entry, nullptr);
  const tir::PrimFunc& f = *entry->prim_func();
  ASSERT_EQ(f->params.size(), 3u);
  const tir::Buffer& A = f->params[0].buffer;
  const tir::Buffer& B = f->params[1].buffer;
  // The scalar parameter n is the symbolic dimension of the buffers.
  EXPECT_TRUE(f->params[2].var.same_as(A->shape[0]));
  EXPECT_TRUE(B->shape[0].same_as(A->shape[0]));
  const auto* loop = f->body.as<tir::ForNode>();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->for_kind, tir::ForKind::kSerial);
  EXPECT_TRUE(loop->extent.same_as(A->shape[0]));
  const auto* block = loop->body.as<tir::BlockNode>();
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->name, "b");
  ASSERT_EQ(block->iter_vars.size(), 1u);
  EXPECT_TRUE(block->iter_vars[0].value.same_as(loop->loop_var));
  const auto* store = block->body.as<tir::BufferStoreNode>();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->buffer.same_as(B));
  EXPECT_TRUE(store->indices[0].same_as(block->iter_vars[0].var));
  const auto* load = store->value.as<tir::BufferLoadNode>();
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->buffer, A.node());
}

// The parser's result equals a module built with the constructors (an independent reference).
TEST(TextFormatTest, MatchesHandBuiltModule) {
  tir::Var n = tir::Var::Shape("n", 128);
  Var x("x", TensorSInfo({n, 4}, DataType::Float32()));
  Var y("y", TensorSInfo({n, 4}, DataType::Float32()), /*dataflow=*/true);
  Var z("z", StructInfo());
  BindingBlock df;
  df.dataflow = true;
  df.bindings.push_back({y, Call(Op("add"), {x, x}, {{"axis", std::vector<int64_t>{1}}, {"keepdims", true}}), {}});
  df.bindings.push_back({z, Tuple({y, PrimValue(n + 1), ShapeExpr({n, 4})}), {}});
  Var w("w", StructInfo());
  BindingBlock plain;
  plain.bindings.push_back({w, TupleGetItem(z, 0), {}});
  Expr f = Function({x}, SeqExpr({df, plain}, w), TensorSInfo({n, 4}, DataType::Float32()), /*is_pure=*/false,
                    {{"global_symbol", std::string("f")}});
  tir::Buffer A("A", DataType::Float32(), {16});
  tir::Var i("i");
  tir::PrimFunc k({tir::PrimFuncParam{A, {}}},
                  tir::For(i, 0, 16, tir::ForKind::kUnrolled, tir::BufferStore(A, tir::FloatImm(DataType::Float32(), 0.5), {i})));
  IRModule expected;
  ASSERT_TRUE(expected.Add("f", f).ok());
  ASSERT_TRUE(expected.Add("k", k).ok());

  const std::string text = R"(module {
  impure func @f(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) where n <= 128 {
    attr global_symbol = "f"
    dataflow {
      %y: Tensor((n, 4), float32) = R.add(x, x, axis=[1], keepdims=true)
      z = (%y, R.prim(n + 1), R.shape([n, 4]))
    }
    w = z[0]
    return w
  }

  prim_func @k(A: Buffer((16,), float32)) {
    for i in unroll(0, 16) {
      A[i] = 0.5
    }
  }
}
)";
  EXPECT_EQ(PrintModule(expected), text);
  ParsedModule parsed = MustParse(text);
  EXPECT_EQ(StructuralDiff(expected, parsed.module), "");
}

// Distinct variables with one name hint print with distinct names and still round-trip.
TEST(TextFormatTest, RepeatedNamesAreMadeUnique) {
  tir::Var n1 = tir::Var::Shape("n");
  tir::Var n2 = tir::Var::Shape("n");
  Var a("x", TensorSInfo({n1}, DataType::Float32()));
  Var b("x", TensorSInfo({n2}, DataType::Float32()));
  Var c("x", StructInfo());
  Var d("if", StructInfo());  // a keyword
  Var e("x.1", StructInfo());  // not an identifier
  BindingBlock block;
  block.bindings.push_back({c, Tuple({a, b}), {}});
  block.bindings.push_back({d, c, {}});
  block.bindings.push_back({e, d, {}});
  Expr f = Function({a, b}, SeqExpr({block}, e), StructInfo(), true);
  IRModule module;
  ASSERT_TRUE(module.Add("main", f).ok());
  std::string text = PrintModule(module);
  EXPECT_EQ(text, R"(module {
  func @main(x: Tensor((n,), float32), x_1: Tensor((n_1,), float32)) {
    x_2 = (x, x_1)
    if_ = x_2
    x_1_1 = if_
    return x_1_1
  }
}
)");
  ParsedModule parsed = MustParse(text);
  EXPECT_EQ(StructuralDiff(module, parsed.module), "");
  EXPECT_EQ(PrintModule(parsed.module), text);
}

// The printer spells PrimExprs as tir::ToString and StructInfo as relax::ToString do.
TEST(TextFormatTest, SpellingMatchesToString) {
  tir::Var n = tir::Var::Shape("n");
  tir::Var i("i", DataType::Int32());
  tir::Var f("f", DataType::Float32());
  tir::Buffer A("A", DataType::Float32(), {n, 8});
  std::vector<PrimExpr> exprs = {
      n + 1,
      (n + 1) * 2,
      n - (n - 1),
      tir::FloorDiv(n, 2) + tir::FloorMod(n, 3),
      tir::Min(i, tir::IntImm(DataType::Int32(), -4)),
      tir::Select(tir::Or(tir::LT(n, 4), tir::Not(tir::EQ(n, 5))), f, tir::FloatImm(DataType::Float32(), -2.5)),
      tir::Cast(DataType::Float(64), f) * tir::FloatImm(DataType::Float(64), 0.1),
      tir::Div(tir::Call("exp", {f}), tir::Call("pow", {f, tir::FloatImm(DataType::Float32(), 3)})),
      A.Load({n - 1, 0}),
      tir::Ramp(n, 1, 4) + tir::Broadcast(n, 4),
      tir::Let(tir::Var("t", DataType::Float32()), f, f),
      tir::Sub(tir::IntImm(DataType::Int64(), 0), tir::IntImm(DataType::Int64(), -3)),
      tir::EQ(tir::LT(n, 1), tir::GE(n, 2)),
      tir::And(tir::IntImm(DataType::Bool(), 1), tir::IntImm(DataType::Bool(), 0)),
  };
  for (const PrimExpr& e : exprs) {
    EXPECT_EQ(PrintStmt(tir::Evaluate(e)), "evaluate " + tir::ToString(e) + "\n");
  }
  std::vector<StructInfo> sinfos = {
      ObjectSInfo(),
      PrimSInfo(DataType::Int64(), n * 2),
      ShapeSInfo({n, 4}),
      ShapeSInfoOfNdim(3),
      ShapeSInfoOfNdim(kUnknownNdim),
      TensorSInfo({n}, DataType::Float(16), "cuda:0"),
      TensorSInfoOfNdim(2, std::nullopt),
      TensorSInfoOfNdim(kUnknownNdim, std::nullopt),
      TupleSInfo({ObjectSInfo(), TupleSInfo({})}),
      FuncSInfo({TensorSInfo({n}, DataType::Int(8))}, ObjectSInfo(), false),
      OpaqueFuncSInfo(ObjectSInfo(), true),
  };
  for (const StructInfo& s : sinfos) {
    Var v("v", s);
    Expr func = Function({v}, SeqExpr({}, v), StructInfo(), true);
    EXPECT_EQ(PrintExpr(func, "f"), "func @f(v: " + ToString(s) + ") {\n  return v\n}\n");
  }
}

TEST(TextFormatTest, ConstantBytesAreExact) {
  ParsedModule m = MustParse(R"(module {
  func @main() {
    a = R.const(float32, [3], [0.1, 0x7fc00001, -0.0])
    b = R.const(float64, [1], [0.1])
    c = R.const(int16, [2], [-2, 300])
    return (a, b, c)
  }
})");
  const auto* seq = Func(m, "main")->body.as<SeqExprNode>();
  auto bytes = [&](int i) { return *seq->blocks[0].bindings[i].value.as<ConstantNode>()->data.bytes; };
  EXPECT_EQ(bytes(0), (std::vector<uint8_t>{0xcd, 0xcc, 0xcc, 0x3d, 0x01, 0x00, 0xc0, 0x7f, 0x00, 0x00, 0x00, 0x80}));
  EXPECT_EQ(bytes(1), (std::vector<uint8_t>{0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f}));
  EXPECT_EQ(bytes(2), (std::vector<uint8_t>{0xfe, 0xff, 0x2c, 0x01}));
  std::string printed = PrintModule(m.module);
  EXPECT_NE(printed.find("R.const(float32, [3], [0.100000001, 0x7fc00001, -0.0])"), std::string::npos) << printed;
}

// `1.` and `.5` are numbers, as in C and Python (hunt21 found them refused); they print as
// `1.0` and `0.5`, and `1.e2` keeps its exponent.
TEST(TextFormatTest, NumbersWithABareDecimalPointAreNumbers) {
  ParsedModule m = MustParse(R"(module {
  func @main() {
    a = R.const(float32, [4], [1., .5, -.25, 1.e2])
    return a
  }
})");
  const auto* seq = Func(m, "main")->body.as<SeqExprNode>();
  EXPECT_EQ(*seq->blocks[0].bindings[0].value.as<ConstantNode>()->data.bytes,
            (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x80, 0xbe, 0x00, 0x00,
                                  0xc8, 0x42}));
  std::string printed = PrintModule(m.module);
  EXPECT_NE(printed.find("[1.0, 0.5, -0.25, 100.0]"), std::string::npos) << printed;
  // A name after the point is not a number's fraction: a clear error, not two tokens.
  auto bad = ParseModule("module { func @f() { c = R.const(float32, [], [1.x])\n return c } }", "e.kir");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("unexpected character 'x' after a number"), std::string::npos)
      << bad.status();
}

// A trailing comma is accepted after the last parameter as after the last dimension of a
// shape (`(n, 4,)`); it was "expected a parameter name" for parameters only.
TEST(TextFormatTest, ATrailingCommaEndsParameterListsLikeShapes) {
  ParsedModule m = MustParse(R"(module {
  func @main(x: Tensor((n, 4,), float32), y: Tensor((n, 4), float32),) -> Tensor((n, 4), float32) {
    z = R.call_tir(@k, (x, y), out_sinfo=Tensor((n, 4), float32),)
    s = R.sum(z, axis=[0],)
    return z
  }
  prim_func @k(A: Buffer((m, 4), float32), B: Buffer((m, 4), float32), C: Buffer((m, 4), float32),) {
    for i in serial(0, m) {
      for j in serial(0, 4) {
        C[i, j] = A[i, j] + B[i, j]
      }
    }
  }
})");
  EXPECT_EQ(Func(m, "main")->params.size(), 2u);
  EXPECT_EQ(m.module.Find("k")->prim_func()->get()->params.size(), 3u);
  // So is a call's argument list (user-inputs-4: `R.sum(z, axis=[0],)` was "positional
  // argument after keyword arguments").
  const auto* body = Func(m, "main")->body.as<SeqExprNode>();
  ASSERT_NE(body, nullptr);
  ASSERT_EQ(body->blocks[0].bindings.size(), 2u);
  EXPECT_EQ(body->blocks[0].bindings[1].value.as<CallNode>()->attrs.size(), 1u);
  // The printer writes none; the comma alone is no parameter.
  EXPECT_EQ(PrintModule(m.module).find(",)"), std::string::npos);
  auto bad = ParseModule("module { func @f(,) { return 0 } }", "e.kir");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("e.kir:1:18: error: expected a parameter name"), std::string::npos)
      << bad.status();
}

// docs/ir.md writes nan and inf as words; a constant's `nan` is the quiet NaN's bits (hunt21:
// R.const refused the word while accepting `inf`).
TEST(TextFormatTest, NanAndInfAreWordsInConstants) {
  ParsedModule m = MustParse(R"(module {
  func @main() {
    a = R.const(float32, [3], [nan, -inf, inf])
    b = R.const(float64, [1], [nan])
    return (a, b)
  }
})");
  const auto* seq = Func(m, "main")->body.as<SeqExprNode>();
  auto bytes = [&](int i) { return *seq->blocks[0].bindings[i].value.as<ConstantNode>()->data.bytes; };
  EXPECT_EQ(bytes(0), (std::vector<uint8_t>{0x00, 0x00, 0xc0, 0x7f, 0x00, 0x00, 0x80, 0xff, 0x00, 0x00, 0x80, 0x7f}));
  EXPECT_EQ(bytes(1), (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}));
}

TEST(TextFormatTest, ExternalConstantsNameAWeightAndRoundTrip) {
  ParsedModule m = MustParse(R"(module {
  func @main() {
    w = R.const(uint8, [1536, 360], external="blk.0.ffn_up.weight")
    return w
  }
})");
  const auto* seq = Func(m, "main")->body.as<SeqExprNode>();
  const ConstantData& data = seq->blocks[0].bindings[0].value.as<ConstantNode>()->data;
  EXPECT_TRUE(data.is_external());
  EXPECT_EQ(data.external_name, "blk.0.ffn_up.weight");
  EXPECT_EQ(data.bytes, nullptr);
  EXPECT_EQ(data.shape, (std::vector<int64_t>{1536, 360}));
  EXPECT_EQ(ToString(seq->blocks[0].bindings[0].value.struct_info()), "Tensor((1536, 360), uint8)");
  std::string printed = PrintModule(m.module);
  EXPECT_NE(printed.find("R.const(uint8, [1536, 360], external=\"blk.0.ffn_up.weight\")"), std::string::npos) << printed;
  ParsedModule again = MustParse(printed);
  EXPECT_EQ(PrintModule(again.module), printed);
}

// ---------------------------------------------------------------- errors

struct ErrorCase {
  const char* text;
  const char* message;
};

TEST(TextFormatTest, ErrorsNameTheLocationAndWhatWasExpected) {
  const ErrorCase kCases[] = {
      {"", "e.kir:1:1: error: expected 'module', found end of input"},
      {"module {", "e.kir:1:9: error: expected 'func', 'impure func', 'prim_func' or '}', found end of input"},
      {"module { func main() {} }", "e.kir:1:15: error: expected a function name like @main, found identifier 'main'"},
      {"module {\n  func @f(x: Tensor((n, 4), float33)) {\n    return x\n  }\n}",
       "e.kir:2:29: error: expected a data type or device=\"...\", found identifier 'float33'"},
      {"module { func @f() { return y } }", "e.kir:1:29: error: undefined variable 'y'"},
      // What a new user coming from TVMScript writes first gets a hint at Kiln's spelling.
      {"@R.function\ndef main(x): return x",
       "e.kir:1:1: error: expected 'module' (Kiln's text format, docs/ir.md: module { func @main(...) ... }; "
       "TVMScript is not read), found '@R'"},
      {"module { func @f(x: Tensor((n, 4), float32)) { y = R.reshape(x, (n, 5))\n return y } }",
       "e.kir:1:66: error: 'n' is a symbolic dimension, not a Relax value: write a shape as R.shape([...]) and a "
       "scalar as R.prim(...)"},
      {"module { func @f(x: Tensor((4,), float32)) { y = R.add(x, 1.5)\n return y } }",
       "e.kir:1:59: error: a bare number is not a Relax value: write a scalar tensor as R.const(DTYPE, [], [1.5]) "
       "(docs/ir.md, Constants)"},
      {"module { func @f() { c = R.const(2.0, float32)\n return c } }",
       "e.kir:1:34: error: R.const takes the data type first, then the shape and the elements: "
       "R.const(float32, [], [2.0])"},
      // TVM's spellings of operators, struct info and dtypes; C's and Python's habits.
      {"module { func @f(x: Tensor((n, 4), float32)) { y = R.nn.softmax(x, axis=1)\n return y } }",
       "e.kir:1:54: error: operators have no namespaces: write 'R.nn.softmax' as 'R.softmax' (docs/ir.md)"},
      {"module { func @f(x: R.Tensor((n, 4), \"float32\")) { return x } }",
       "e.kir:1:21: error: struct info is written without 'R.': Tensor(...), e.g. Tensor((n, 4), float32)"},
      // hunt21: what a new user writes after docs/ir.md.
      {"module { func @f(x: Tensor((4,), float32)) { y = relu(x)\n return y } }",
       "e.kir:1:50: error: undefined variable 'relu': an operator is called as R.relu(...), a function of the "
       "module as @relu(...)"},
      {"module { func @f(x: Tensor((4,), float32)) { dataflow { y = R.relu(x)\n return y } } }",
       "e.kir:2:2: error: 'return' goes after the block's closing '}': bind the result to a name without '%' "
       "inside the block, then return that name"},
      {"module { func @f() { c = R.const(float32, [], [1e39])\n return c } }",
       "e.kir:1:48: error: number 1e39 is outside the range of float32; write inf for an infinity"},
      {"module { func @f() { c = R.const(float64, [2], [1.0, -1e400])\n return c } }",
       "e.kir:1:55: error: number 1e400 is outside the range of float64; write inf for an infinity"},
      {"module { func @f() { c = R.const(bool, [2], [1, 2])\n return c } }",
       "e.kir:1:49: error: value 2 is out of range for bool (true, false, 1 or 0)"},
      {"module { func @f(x: Tensor((n, 4), \"float32\")) { return x } }",
       "e.kir:1:36: error: a data type is written without quotes: float32"},
      // `kiln run --input`'s, NumPy's and PyTorch's spellings of data types.
      {"module { func @f(x: Tensor((n, 4), f32)) { return x } }",
       "e.kir:1:36: error: expected a data type or device=\"...\", found identifier 'f32' (the text format writes "
       "this data type float32)"},
      {"module { func @f(x: Prim(i64)) { return x } }",
       "e.kir:1:26: error: expected a data type (int64, float32, ...), found identifier 'i64' (the text format writes "
       "this data type int64)"},
      {"module { func @f(x: Tensor((4,), float32)) { y = R.astype(x, dtype=fp16)\n return y } }",
       "e.kir:1:68: error: expected an attribute value (integer, number, bool, string, data type or [numbers]), found "
       "identifier 'fp16' (the text format writes this data type float16)"},
      {"module { prim_func @k(A: Buffer((4,), float32)) { A[0] = f32(1) } }",
       "e.kir:1:58: error: unknown function 'f32' (a typed literal is written float32(...))"},
      // docs/ir.md wrote a match_cast to Shape([s_dim0, s_dim1]), as R.shape([...]) is spelt.
      {"module { func @f(s: Shape) { t: Shape((a, b)) = match_cast(s, Shape([a, b]))\n return t } }",
       "e.kir:1:69: error: a shape's dims are written in parentheses: Shape((n, 4)), as in Tensor((n, 4), float32)"},
      {"module { func @f(x: Tensor((1.5, 4), float32)) { return x } }",
       "e.kir:1:29: error: a dimension is an integer expression, found float32 '1.5'"},
      {"module { func @f(x: Tensor([n, 4], float32)) { return x } }",
       "e.kir:1:28: error: a tensor's shape is written in parentheses: Tensor((n, 4), float32)"},
      {"module { func @f(x: Tensor((n, 4), dtype=float32)) { return x } }",
       "e.kir:1:36: error: a tensor's data type is written alone, without 'dtype=': Tensor((n, 4), float32)"},
      {"module { func @f(x: Object) { return x; } }",
       "e.kir:1:39: error: unexpected character ';' (statements end at the end of a binding; no ';' is needed)"},
      {"module { func @f(\xc3\xa9: Object) { return x } }",
       "e.kir:1:18: error: unexpected character byte 0xc3 (outside strings and comments the text is ASCII: names "
       "are letters, digits and '_')"},
      {"module { func @f(x: Object) {\n x = R.add(x, x)\n return x } }", "e.kir:2:2: error: redefinition of variable 'x'"},
      {"module { func @f(x: Object) { %y = R.add(x, x)\n return x } }",
       "e.kir:1:31: error: dataflow variable '%y' outside a dataflow block"},
      {"module { func @f(x: Object) { dataflow { %y = x }\n return %y } }",
       "e.kir:2:9: error: undefined variable '%y': a %name is local to its dataflow block; bind the value the "
       "block gives out to a name without '%'"},
      {"module { func @f(x: Tensor((n,), float32)) { y: Tensor((m,), float32) = x\n return y } }",
       "e.kir:1:57: error: undefined variable 'm'"},
      {"module { func @f() { return @g } }", "e.kir:1:29: error: undefined function '@g'"},
      {"module { func @f() { return () }\n func @f() { return () } }", "e.kir:2:7: error: redefinition of function '@f'"},
      {"module { func @f(x: Object) { y = R.add(x, axis=1, x)\n return y } }",
       "e.kir:1:52: error: positional argument after keyword arguments"},
      {"module { func @f(x: Object) { y = R.add(x, axis=1, axis=2)\n return y } }",
       "e.kir:1:52: error: duplicate attribute 'axis'"},
      {"module { func @f(x: Object) { y = R.call_tir(@f, (x,), sinfo=Object)\n return y } }",
       "e.kir:1:56: error: struct info arguments are written out_sinfo=..., found 'sinfo='"},
      {"module { func @f(x: Object) { y = R.add(x x)\n return y } }",
       "e.kir:1:43: error: expected ',' or ')', found identifier 'x'"},
      {"module { func @f() { c = R.const(float32, [2], [1.0])\n return c } }",
       "e.kir:1:48: error: constant has 1 values but its shape has 2 elements"},
      {"module { func @f() { c = R.const(int8, [1], [128])\n return c } }",
       "e.kir:1:46: error: value 128 is out of range for int8"},
      {"module { func @f() -> Object where n <= 4 { return () } }",
       "e.kir:1:36: error: bound on 'n', which is not a symbolic variable defined by the parameters or a match_cast"},
      {"module { func @f(x: Object) { y = if x { yield x }\n return y } }",
       "e.kir:2:2: error: expected 'else', found identifier 'return'"},
      {"module { func @f(x: Object) { dataflow { y = if x { yield x } else { yield x } }\n return y } }",
       "e.kir:1:46: error: 'if' is not allowed in a dataflow block"},
      {"module { func @f(x: Object) { y = x[0\n return y } }", "e.kir:2:2: error: expected ']', found identifier 'return'"},
      {"module { func @f(x: Object) -> Tensor((m,), float32) { return x } }", "e.kir:1:40: error: undefined variable 'm'"},
      {"module { func @f(x: Tensor((n,), float32)) { y = R.prim(n + int32(1))\n return y } }",
       "e.kir:1:59: error: mismatched operand types int64 and int32 for '+'"},
      {"module { func @f(x: Tensor((n,), float32)) { y = R.prim(n < 1 < 2)\n return y } }",
       "e.kir:1:63: error: comparisons do not chain: parenthesize one side"},
      {"module { func @f(x: Tensor((n,), float32)) { y = R.prim(foo(n))\n return y } }",
       "e.kir:1:57: error: unknown function 'foo' (expected floordiv, floormod, min, max, select, cast, "
       "reinterpret, ramp, broadcast, a math intrinsic or a typed literal like int32(3))"},
      {"module { func @f(x: Tensor((n,), float32)) { y = R.prim(int8(300))\n return y } }",
       "e.kir:1:62: error: literal 300 is out of range for int8"},
      {"module { func @f(x: Tensor((n,), float32)) { y = R.prim(exp(n, n))\n return y } }",
       "e.kir:1:57: error: 'exp' takes 1 argument, found 2"},
      {"module { func @f() { y = R.prim(\"s)\n return y } }", "e.kir:1:33: error: unterminated string literal"},
      {"module { func @f() { y = R.prim(1 $ 2) } }", "e.kir:1:35: error: unexpected character '$'"},
      {"module { prim_func @k(A: Buffer((4,), float32)) { A[0, 1] = 0.0 } }",
       "e.kir:1:51: error: buffer 'A' has 1 dimension, found 2 indexes"},
      {"module { prim_func @k(A: Buffer((4,), float32)) { A[0] = 1 } }",
       "e.kir:1:56: error: store of int64 to buffer 'A' of float32"},
      {"module { prim_func @k(A: Buffer((4,), float32)) { B[0] = 1.0 } }", "e.kir:1:51: error: undefined buffer 'B'"},
      {"module { prim_func @k(A: Buffer((4,), float32)) { loop i in serial(0, 4) { } } }",
       "e.kir:1:51: error: expected a statement (for, block, if, allocate, decl_buffer, let, evaluate, assert or a buffer store), "
       "found identifier 'loop'"},
      {"module { prim_func @k(A: Buffer((4,), float32)) { for i in sequential(0, 4) { } } }",
       "e.kir:1:60: error: expected a loop kind (serial, parallel, vectorized, unroll, thread_binding), found "
       "identifier 'sequential'"},
      {"module { prim_func @k(A: Buffer((4,), float32)) { for i in thread_binding(0, 4) { } } }",
       "e.kir:1:79: error: expected ',', found ')'"},
      {"module { prim_func @k(A: Buffer((4,), float32)) { for i in serial(0, int32(4)) { } } }",
       "e.kir:1:70: error: loop bounds must be integers of one type, found int64 and int32"},
      {"module { prim_func @k(A: Buffer((4,), float32)) { for i in serial(0, 4) { for i in serial(0, 4) { } } } }",
       "e.kir:1:79: error: redefinition of variable 'i'"},
      {"module { prim_func @k(A: Buffer((4,), float32)) { block \"b\" { vi = outer(4, 0) } } }",
       "e.kir:1:68: error: expected 'spatial' or 'reduce', found identifier 'outer'"},
      {"module { prim_func @k(A: Buffer((4,), float32)) { if 1 { } } }",
       "e.kir:1:51: error: if condition must be bool, found int64"},
      {"module { prim_func @k(A: Buffer((4,), float32, scope=1)) { } }",
       "e.kir:1:54: error: expected a scope string (\"global\", \"shared\", \"local\"), found integer 1"},
      {"module { prim_func @k(n: int33) { } }", "e.kir:1:26: error: expected a data type (int64, float32, ...), found identifier 'int33'"},
      {"module { } extra", "e.kir:1:12: error: expected end of input, found identifier 'extra'"},
      // Shapes and bounds that can never hold (they used to reach compile as "invalid bytecode").
      {"module { func @f(x: Tensor((n,), float32)) -> Object where n <= -7 { return x } }",
       "e.kir:1:60: error: bounds on 'n' can never hold: n >= 0 (a dimension) and n <= -7"},
      {"module { func @f(x: Tensor((n,), float32)) -> Object where n >= 5, n <= 2 { return x } }",
       "e.kir:1:60: error: bounds on 'n' can never hold: n >= 5 and n <= 2"},
      {"module { func @f(x: Tensor((n,), float32)) -> Object where n >= -1 { return x } }",
       "e.kir:1:60: error: 'n' is a dimension and never negative, but is bounded by n >= -1"},
      {"module { func @f(x: Tensor((-3, 4), float32)) { return x } }",
       "e.kir:1:29: error: negative dimension -3 in a shape"},
      {"module { prim_func @k(A: Buffer((4, -2), float32)) { } }", "e.kir:1:37: error: negative dimension -2 in a shape"},
      {"module { prim_func @k(A: Buffer((m,), float32)) where m >= 3, m <= 1 { } }",
       "e.kir:1:55: error: bounds on 'm' can never hold: m >= 3 and m <= 1"},
  };
  for (const ErrorCase& c : kCases) {
    auto parsed = ParseModule(c.text, "e.kir");
    if (parsed.ok()) {
      ADD_FAILURE() << "parsed: " << c.text;
      continue;
    }
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(parsed.status().message()), c.message) << c.text;
  }
}

// What Windows editors write: a byte order mark first, CRLF line ends; and form feeds.
TEST(TextFormatTest, ByteOrderMarkAndWindowsLineEndsAreNotText) {
  EXPECT_TRUE(ParseModule("\xef\xbb\xbfmodule {\r\n  func @f(x: Object) {\r\n    return x\r\n  }\r\n}\f\r\n", "w.kir").ok());
  // Columns count from after the mark, as an editor shows them.
  auto parsed = ParseModule("\xef\xbb\xbfmodul {}", "w.kir");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(std::string(parsed.status().message()), "w.kir:1:1: error: expected 'module', found identifier 'modul'");
}

// A binary file of a known kind given as IR text (kiln check model.gguf) is named.
TEST(TextFormatTest, KnownBinaryFilesAreNamedNotLexed) {
  for (const auto& [bytes, kind] : {std::pair<std::string, std::string>{std::string("GGUF\x03\0\0\0", 8), "a GGUF model (.gguf)"},
                                    {std::string("KILNEXE\0\x02\0\x02\0", 12), "a Kiln executable (.kx)"}}) {
    auto parsed = ParseModule(bytes, "m.bin");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(std::string(parsed.status().message()), "m.bin: error: not IR text (docs/ir.md): the file is " + kind);
  }
}

TEST(TextFormatTest, DeepNestingIsAnErrorNotACrash) {
  for (const char* open : {"(", "R.add(", "Tuple(", "!"}) {
    std::string text = "module { func @f(x: Object) { y = ";
    std::string sinfo_text = "module { func @f(x: ";
    for (int i = 0; i < 10000; ++i) {
      text += open;
      sinfo_text += open;
    }
    for (const std::string& t : {text, sinfo_text}) {
      auto parsed = ParseModule(t, "deep.kir");
      ASSERT_FALSE(parsed.ok());
      EXPECT_NE(parsed.status().message().find("error:"), std::string::npos) << parsed.status();
    }
  }
  // A postfix chain nests as deeply as it is long: `x[0][0]...` and `x(x)(x)...` were
  // parsed flat and crashed the block builder's recursion (kiln check, 10,000 links).
  for (const char* link : {"[0]", "(x)"}) {
    std::string chain = "module { func @f(x: Tuple(Object)) { y = x";
    for (int i = 0; i < 10000; ++i) chain += link;
    chain += "\n return y } }";
    auto parsed = ParseModule(chain, "deep.kir");
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.status().message().find("nesting deeper than 256 levels"), std::string::npos) << parsed.status();
  }
  {
    std::string chain = "module { func @f(x: Tuple(Object)) { y = x";
    for (int i = 0; i < 100; ++i) chain += "[0]";
    chain += "\n return y } }";
    EXPECT_TRUE(ParseModule(chain, "chain.kir").ok());
  }
  std::string prim = "module { prim_func @k(A: Buffer((4,), float32)) { ";
  for (int i = 0; i < 10000; ++i) prim += "if true { ";
  auto parsed = ParseModule(prim, "deep.kir");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("nesting deeper than 256 levels"), std::string::npos) << parsed.status();
}

}  // namespace
}  // namespace kiln::relax
