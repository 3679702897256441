// The TIR text format on its own (tir/text_parser.h, tir/text_printer.h): a PrimFunc parses
// to the function built with the constructors, prints back to the same text, records where
// its names were defined, and malformed input gives the exact `file:line:col: error: ...`.
// (Whole modules are tested in tests/relax/text_format_test.cc.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/tir/bit_kernels.h"
#include "tir/structural_equal.h"
#include "tir/text_parser.h"
#include "tir/text_printer.h"

namespace kiln::tir {
namespace {

const char* kScale = R"(prim_func @scale(A: Buffer((n, 4), float32), B: Buffer((n, 4), float32), s: float32) where n <= 64 {
  attr op_pattern = "elementwise"
  for i in parallel(0, n) {
    for j in serial(0, 4) {
      block "B" {
        vi = spatial(n, i)
        vj = spatial(4, j)
        B[vi, vj] = A[vi, vj] * s
      }
    }
  }
}
)";

TEST(TirTextFormatTest, ParsesToTheHandBuiltFunctionAndPrintsBack) {
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(kScale, "scale.tir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->name, "scale");

  Var n("n", DataType::Int64(), 0, 64);
  Var s("s", DataType::Float32());
  Buffer a("A", DataType::Float32(), {n, 4});
  Buffer b("B", DataType::Float32(), {n, 4});
  Var i("i"), j("j"), vi("vi"), vj("vj");
  Stmt store = BufferStore(b, Mul(a.Load({vi, vj}), s), {vi, vj});
  Stmt block = Block("B", {IterVar{vi, n, IterType::kSpatial, i}, IterVar{vj, 4, IterType::kSpatial, j}}, store);
  Stmt loops = For(i, 0, n, ForKind::kParallel, For(j, 0, 4, ForKind::kSerial, block));
  PrimFunc expected({PrimFuncParam{a, Var()}, PrimFuncParam{b, Var()}, PrimFuncParam{Buffer(), s}}, loops,
                    {{"op_pattern", "elementwise"}});
  EXPECT_TRUE(StructuralEqual(parsed->func, expected)) << PrintPrimFunc(parsed->func, "scale");

  EXPECT_EQ(PrintPrimFunc(parsed->func, "scale"), kScale);
}

TEST(TirTextFormatTest, RecordsWhereNamesAreDefined) {
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(kScale, "scale.tir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const PrimFunc& f = parsed->func;
  const SourceLocation& func_at = parsed->locations.at(f.get());
  EXPECT_EQ(func_at.file, "scale.tir");
  EXPECT_EQ(func_at.line, 1);
  EXPECT_EQ(func_at.column, 11);  // the @scale token
  const SourceLocation& b_at = parsed->locations.at(f->params[1].buffer.get());
  EXPECT_EQ(b_at.line, 1);
  EXPECT_EQ(b_at.column, 46);
  const auto* loop = f->body.as<ForNode>();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(parsed->locations.at(loop->loop_var.get()).line, 3);
  EXPECT_EQ(parsed->locations.at(loop->loop_var.get()).column, 7);
}

TEST(TirTextFormatTest, RepeatedNamesAreMadeUnique) {
  Buffer a("A", DataType::Float32(), {4});
  Var i1("i"), i2("i");
  Stmt body = SeqStmt({For(i1, 0, 4, ForKind::kSerial, BufferStore(a, FloatImm(DataType::Float32(), 0), {i1})),
                       For(i2, 0, 4, ForKind::kSerial, BufferStore(a, FloatImm(DataType::Float32(), 1), {i2}))});
  PrimFunc f({PrimFuncParam{a, Var()}}, body);
  std::string text = PrintPrimFunc(f, "k");
  EXPECT_NE(text.find("for i_1 in serial(0, 4)"), std::string::npos) << text;
  absl::StatusOr<ParsedPrimFunc> again = ParsePrimFunc(text);
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << text;
  EXPECT_TRUE(StructuralEqual(again->func, f));
  EXPECT_EQ(PrintPrimFunc(again->func, "k"), text);
}

TEST(TirTextFormatTest, BitOperationsAndReinterpretRoundTrip) {
  for (const char* text : {testing::kBitOps, testing::kVectorBitOps, testing::kReinterpret, testing::kInt4}) {
    absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(PrintPrimFunc(parsed->func, parsed->name), text);
  }
  // C's precedence: & under ^ under |, all under comparisons; shifts under + -.
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(R"(prim_func @p(A: Buffer((1,), int32), B: Buffer((1,), bool)) {
  A[0] = A[0] | A[0] ^ A[0] & A[0] << A[0] + A[0]
  B[0] = (A[0] & A[0]) == A[0]
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const auto* seq = parsed->func->body.as<SeqStmtNode>();
  ASSERT_NE(seq, nullptr);
  PrimExpr value = seq->seq[0].as<BufferStoreNode>()->value;
  std::vector<ExprKind> spine;
  for (PrimExpr e = value; e.as<BinaryNode>() != nullptr; e = e.as<BinaryNode>()->b) spine.push_back(e.kind());
  EXPECT_EQ(spine, (std::vector<ExprKind>{ExprKind::kBitOr, ExprKind::kBitXor, ExprKind::kBitAnd, ExprKind::kShl,
                                          ExprKind::kAdd}));
}

TEST(TirTextFormatTest, ErrorsNameTheLocationAndWhatWasExpected) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case kCases[] = {
      {"", "k.tir:1:1: error: expected 'prim_func', found end of input"},
      {"module { }", "k.tir:1:1: error: expected 'prim_func', found identifier 'module'"},
      {"prim_func k() { }", "k.tir:1:11: error: expected a function name like @main, found identifier 'k'"},
      {"prim_func @k() { }\nprim_func @j() { }", "k.tir:2:1: error: expected end of input, found identifier 'prim_func'"},
      {"prim_func @k(A: Buffer((4,), float32)) {\n  A[0] = m\n}", "k.tir:2:10: error: undefined variable 'm'"},
      {"prim_func @k(A: Buffer((n,), float32)) {\n  A[0] = cast(float32, n + int32(1))\n}",
       "k.tir:2:26: error: mismatched operand types int64 and int32 for '+'"},
      {"prim_func @k(A: Buffer((4,), float32)) {\n  A[0] = A[0] & A[1]\n}",
       "k.tir:2:15: error: '&' needs integer operands, found float32"},
      {"prim_func @k(A: Buffer((4,), int32)) {\n  A[0] = A[0] & A[1] == A[2]\n}",
       "k.tir:2:15: error: mismatched operand types int32 and bool for '&'"},
      {"prim_func @k(A: Buffer((4,), float32)) {\n  A[0] = ~A[0]\n}",
       "k.tir:2:10: error: '~' needs an integer operand, found float32"},
      {"prim_func @k(A: Buffer((4,), float32)) {\n  A[0] = reinterpret(float32, int64(1))\n}",
       "k.tir:2:10: error: reinterpret from int64 to float32 changes the width (64 vs 32 bits)"},
      // A dimension that is no integer: true was read as 1, 1.5 failed only in kiln compile.
      {"prim_func @k(A: Buffer((true, 4), float32)) { }",
       "k.tir:1:25: error: a dimension is an integer expression, found bool 'true'"},
      {"prim_func @k(A: Buffer((4,), float32, strides=(1.5,))) { }",
       "k.tir:1:48: error: a stride is an integer expression, found float32 '1.5'"},
      // An integer division by the literal 0 compiled to whatever LLVM folded it to (0).
      {"prim_func @k(A: Buffer((4,), int32)) {\n  A[0] = floordiv(A[1], int32(0))\n}",
       "k.tir:2:10: error: integer division by the constant 0 in 'floordiv'"},
      {"prim_func @k(A: Buffer((4,), int32)) {\n  A[0] = A[1] / int32(0)\n}",
       "k.tir:2:15: error: integer division by the constant 0 in '/'"},
      {"prim_func @k(A: Buffer((4,), int32)) {\n  A[0] = A[0] <<< A[1]\n}",
       "k.tir:2:17: error: expected an expression, found '<'"},
      {"prim_func @k(A: Buffer((4,), float32)) where m <= 4 { }",
       "k.tir:1:46: error: bound on 'm', which is not a symbolic variable defined by the parameters or a match_cast"},
      {"prim_func @k(A: Buffer((4,), float32)) {\n  A[4] = 1.0\n}",
       "k.tir:2:3: error: index 0 of buffer 'A' is 4, outside [0, 4)"},
      {"prim_func @k(A: Buffer((n, 4), float32)) {\n  A[0, 0] = A[0, 100000]\n}",
       "k.tir:2:13: error: index 1 of buffer 'A' is 100000, outside [0, 4)"},
      {"prim_func @k(A: Buffer((n,), float32)) {\n  A[-1] = 1.0\n}",
       "k.tir:2:3: error: index 0 of buffer 'A' is -1, outside [0, n)"},
      {"prim_func @k(A: Buffer((n,\n  floordiv(b, 2)), float32)) { }",
       "k.tir:2:12: error: symbolic variable 'b' appears only inside an expression of the parameters' shapes, so no "
       "argument gives its value: make it a whole dimension of a buffer parameter (Buffer((b, ...), ...)) or a scalar "
       "parameter (b: int64)"},
      // A number beyond its type's range is an error, not a silent infinity (hunt21).
      {"prim_func @k(A: Buffer((4,), float32)) {\n  A[0] = 1e39\n}",
       "k.tir:2:10: error: number 1e39 is outside the range of float32; write inf for an infinity"},
      {"prim_func @k(A: Buffer((4,), float16)) {\n  A[0] = float16(65520.0)\n}",
       "k.tir:2:18: error: number 65520.0 is outside the range of float16; write inf for an infinity"},
      {"prim_func @k(A: Buffer((4,), float64)) {\n  A[0] = float64(-1e309)\n}",
       "k.tir:2:19: error: number 1e309 is outside the range of float64; write inf for an infinity"},
      {"prim_func @k(A: Buffer((m * 2,), float32), B: Buffer((n + 1,), float32)) { }",
       "k.tir:1:25: error: symbolic variable 'm' appears only inside an expression of the parameters' shapes, so no "
       "argument gives its value: make it a whole dimension of a buffer parameter (Buffer((m, ...), ...)) or a scalar "
       "parameter (m: int64)"},
      // user-inputs-4 (check_implies_compile_fuzz_test, seed 11): an iteration domain over a
      // loop variable passed kiln check and failed inside the compiler's schedule pass.
      {"prim_func @k(A: Buffer((n,), float32)) {\n  for k in serial(0, n) {\n    block \"b\" {\n"
       "      vi = spatial(k, k)\n      A[vi] = 0.0\n    }\n  }\n}",
       "k.tir:4:20: error: the extent of iteration variable 'vi' uses loop variable 'k': an iteration domain cannot "
       "change with the loops around the block (use the function's sizes)"},
  };
  for (const Case& c : kCases) {
    absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(c.text, "k.tir");
    if (parsed.ok()) {
      ADD_FAILURE() << "parsed: " << c.text;
      continue;
    }
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(parsed.status().message()), c.message) << c.text;
  }
}

TEST(TirTextFormatTest, AVariableInsideAParameterShapeIsFineWhenAnotherParameterGivesIt) {
  for (const char* text : {"prim_func @k(A: Buffer((n, floordiv(n, 2)), float32)) { }",
                           "prim_func @k(A: Buffer((floordiv(b, 2),), float32), b: int64) { }",
                           "prim_func @k(A: Buffer((b * 2,), float32), B: Buffer((b,), float32)) { }"}) {
    EXPECT_TRUE(ParsePrimFunc(text, "k.tir").ok()) << text << ": " << ParsePrimFunc(text, "k.tir").status();
  }
}

TEST(TirTextFormatTest, NumbersAtTheEdgeOfTheirRangeAreKept) {
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(
      "prim_func @k(A: Buffer((4,), float16), B: Buffer((4,), float32)) {\n  A[0] = float16(65504.0)\n"
      "  B[0] = 3.40282347e38\n  B[1] = 1e-50\n}",
      "k.tir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::string printed = PrintPrimFunc(parsed->func, "k");
  EXPECT_NE(printed.find("float16(65504.0)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("3.40282347e+38"), std::string::npos) << printed;
}

// `1.` and `.5` are float literals, as in C and Python (hunt21 found them refused).
TEST(TirTextFormatTest, NumbersWithABareDecimalPointAreNumbers) {
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(
      "prim_func @k(A: Buffer((4,), float32)) {\n  A[0] = 1.\n  A[1] = .5 * A[0]\n  A[2] = 2.e1\n}", "k.tir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::string printed = PrintPrimFunc(parsed->func, "k");
  EXPECT_NE(printed.find("A[0] = 1.0"), std::string::npos) << printed;
  EXPECT_NE(printed.find("0.5 * A[0]"), std::string::npos) << printed;
  EXPECT_NE(printed.find("A[2] = 20.0"), std::string::npos) << printed;
}

// A trailing comma after the last parameter, as after the last dimension of a shape.
TEST(TirTextFormatTest, ATrailingCommaEndsTheParameterList) {
  absl::StatusOr<ParsedPrimFunc> parsed =
      ParsePrimFunc("prim_func @k(A: Buffer((4,), float32), s: float32,) {\n  A[0] = s\n}", "k.tir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->func->params.size(), 2u);
  absl::StatusOr<ParsedPrimFunc> bad = ParsePrimFunc("prim_func @k(A: Buffer((4,), float32),,) {\n}", "k.tir");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("k.tir:1:39: error: expected a parameter name"), std::string::npos)
      << bad.status();
}

// A chain of binary operators builds a tree as deep as the chain is long; every recursive
// pass after the parser walks it, so `a + a + ...` of 20,000 terms crashed `kiln check` in
// the printer (hunt21). Bounded like nesting: 1024 operators pass, 1025 are an error.
TEST(TirTextFormatTest, LongOperatorChainsAreBoundedNotACrash) {
  auto chain = [](int operators) {
    std::string text = "prim_func @k(A: Buffer((4,), float32)) {\n  A[0] = A[1]";
    for (int i = 0; i < operators; ++i) text += " + A[1]";
    return text + "\n}";
  };
  EXPECT_TRUE(ParsePrimFunc(chain(kMaxExpressionOperators), "k.tir").ok());
  for (int operators : {kMaxExpressionOperators + 1, 20000}) {
    absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(chain(operators), "k.tir");
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.status().message().find("more than 1024 operators in one expression"), std::string::npos)
        << parsed.status();
  }
  // The count is per expression: many statements of long expressions are fine.
  std::string many = "prim_func @k(A: Buffer((4,), float32)) {\n";
  for (int s = 0; s < 4; ++s) {
    many += "  A[0] = A[1]";
    for (int i = 0; i < 1000; ++i) many += " * A[2]";
    many += "\n";
  }
  EXPECT_TRUE(ParsePrimFunc(many + "}", "k.tir").ok()) << ParsePrimFunc(many + "}", "k.tir").status();
}

TEST(TirTextFormatTest, DeepNestingIsAnErrorNotACrash) {
  std::string text = "prim_func @k(A: Buffer((4,), float32)) { A[0] = ";
  for (int i = 0; i < 10000; ++i) text += "(";
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(text, "deep.tir");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("nesting deeper than 256 levels"), std::string::npos) << parsed.status();
}

}  // namespace
}  // namespace kiln::tir
