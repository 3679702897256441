// The TIR interpreter on hand-written PrimFuncs (text format); every expected number is
// worked out by hand (or is a textbook value of a math function), not by the interpreter.
#include "tir/interpreter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tir/schedule_rules/cpu_schedule.h"
#include "tests/tir/bit_kernels.h"
#include "tests/tir/q4_0.h"
#include "tir/text_parser.h"

namespace kiln::tir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

PrimFunc Parse(const std::string& text) {
  absl::StatusOr<ParsedPrimFunc> parsed = ParsePrimFunc(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? parsed->func : PrimFunc();
}

// A typed host array with its HostBuffer view.
template <typename T>
struct Array {
  Array(DataType dtype, std::vector<int64_t> shape, std::vector<T> values)
      : values(std::move(values)),
        buffer(HostBuffer::Writable(dtype, std::move(shape), reinterpret_cast<uint8_t*>(this->values.data()))) {}
  std::vector<T> values;
  HostBuffer buffer;
  HostBuffer* arg() { return &buffer; }
};

Array<float> F32(std::vector<int64_t> shape, std::vector<float> v) { return {DataType::Float32(), shape, v}; }
Array<float> F32Zeros(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return {DataType::Float32(), shape, std::vector<float>(n, 0.0f)};
}
Array<int32_t> I32(std::vector<int64_t> shape, std::vector<int32_t> v) { return {DataType::Int32(), shape, v}; }

TEST(InterpreterTest, ElementwiseBlockWithBroadcast) {
  PrimFunc f = Parse(R"(
  prim_func @add(A: Buffer((2, 3), float32), B: Buffer((3,), float32), C: Buffer((2, 3), float32)) {
    for i in serial(0, 2) {
      for j in serial(0, 3) {
        block "add" {
          vi = spatial(2, i)
          vj = spatial(3, j)
          C[vi, vj] = A[vi, vj] + B[vj]
        }
      }
    }
  })");
  auto a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = F32({3}, {10, 20, 30});
  auto c = F32Zeros({2, 3});
  ASSERT_TRUE(RunPrimFunc(f, {a.arg(), b.arg(), c.arg()}).ok());
  EXPECT_THAT(c.values, ElementsAre(11, 22, 33, 14, 25, 36));
}

TEST(InterpreterTest, MatmulReductionRunsInitOnFirstVisit) {
  // [[1 2 3] [4 5 6]] x [[1 0] [0 1] [1 1]] = [[4 5] [10 11]]
  PrimFunc f = Parse(R"(
  prim_func @mm(A: Buffer((2, 3), float32), B: Buffer((3, 2), float32), C: Buffer((2, 2), float32)) {
    for i in serial(0, 2) {
      for j in serial(0, 2) {
        for k in serial(0, 3) {
          block "mm" {
            vi = spatial(2, i)
            vj = spatial(2, j)
            vk = reduce(3, k)
            init {
              C[vi, vj] = 0.0
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  })");
  auto a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = F32({3, 2}, {1, 0, 0, 1, 1, 1});
  auto c = F32({2, 2}, {99, 99, 99, 99});  // init must overwrite
  ASSERT_TRUE(RunPrimFunc(f, {a.arg(), b.arg(), c.arg()}).ok());
  EXPECT_THAT(c.values, ElementsAre(4, 5, 10, 11));
}

TEST(InterpreterTest, NestedBlocksScratchBuffersAndPredicate) {
  // Row maxima of [[3 -1 7] [-2 -5 -4]] into a scratch buffer, then written only where the
  // predicate holds (j < 2 of a loop of 4).
  PrimFunc f = Parse(R"(
  prim_func @rowmax(A: Buffer((2, 3), float32), B: Buffer((2, 4), float32)) {
    for i in serial(0, 2) {
      block "row" {
        vi = spatial(2, i)
        alloc mx: Buffer((1,), float32, scope="local")
        for k in serial(0, 3) {
          block "max" {
            vk = reduce(3, k)
            init {
              mx[0] = float32(-inf)
            }
            mx[0] = max(mx[0], A[vi, vk])
          }
        }
        for j in serial(0, 4) {
          block "out" {
            vj = spatial(2, j)
            where j < 2
            B[vi, vj] = mx[0] + cast(float32, vj)
          }
        }
      }
    }
  })");
  auto a = F32({2, 3}, {3, -1, 7, -2, -5, -4});
  auto b = F32({2, 4}, {0, 0, 9, 9, 0, 0, 9, 9});
  ASSERT_TRUE(RunPrimFunc(f, {a.arg(), b.arg()}).ok());
  EXPECT_THAT(b.values, ElementsAre(7, 8, 9, 9, -2, -1, 9, 9));
}

TEST(InterpreterTest, SymbolicShapesBindFromArgumentsAndMismatchesAreErrors) {
  PrimFunc f = Parse(R"(
  prim_func @scale(A: Buffer((n, 2), float32), B: Buffer((n, 2), float32), s: float32) {
    for i in serial(0, n) {
      for j in serial(0, 2) {
        B[i, j] = A[i, j] * s
      }
    }
  })");
  auto a = F32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto b = F32Zeros({3, 2});
  ASSERT_TRUE(RunPrimFunc(f, {a.arg(), b.arg(), 0.5}).ok());
  EXPECT_THAT(b.values, ElementsAre(0.5, 1, 1.5, 2, 2.5, 3));

  auto short_b = F32Zeros({2, 2});
  absl::Status s = RunPrimFunc(f, {a.arg(), short_b.arg(), 0.5});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("argument 1 (B) dimension 0: expected 3 (n), got 2"));

  auto wrong_cols = F32Zeros({3, 3});
  EXPECT_THAT(RunPrimFunc(f, {a.arg(), wrong_cols.arg(), 0.5}).message(), HasSubstr("dimension 1: expected 2, got 3"));
  auto ints = I32({3, 2}, {0, 0, 0, 0, 0, 0});
  EXPECT_THAT(RunPrimFunc(f, {a.arg(), ints.arg(), 0.5}).message(), HasSubstr("expected dtype float32, got int32"));
  EXPECT_THAT(RunPrimFunc(f, {a.arg(), b.arg()}).message(), HasSubstr("takes 3 arguments, got 2"));
  EXPECT_THAT(RunPrimFunc(f, {a.arg(), int64_t{1}, 0.5}).message(), HasSubstr("expected a buffer"));
}

TEST(InterpreterTest, CompoundDimsAndStridesAreChecked) {
  PrimFunc f = Parse(R"(
  prim_func @pad(A: Buffer((n, m), float32, strides=(s, 1)), B: Buffer((n + 1,), float32)) {
    for i in serial(0, n) {
      B[i] = A[i, m - 1] + cast(float32, s)
    }
    B[n] = 0.5
  })");
  auto a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = F32Zeros({3});
  ASSERT_TRUE(RunPrimFunc(f, {a.arg(), b.arg()}).ok());
  EXPECT_THAT(b.values, ElementsAre(6, 9, 0.5));  // 3 + 3, 6 + 3 (s is 3), then 0.5
  auto bad = F32Zeros({4});
  EXPECT_THAT(RunPrimFunc(f, {a.arg(), bad.arg()}).message(), HasSubstr("dimension 0: expected 3 (n + 1), got 4"));
}

TEST(InterpreterTest, IntegerSemantics) {
  PrimFunc f = Parse(R"(
  prim_func @ints(C: Buffer((16,), int32), D: Buffer((4,), int8), E: Buffer((3,), uint8)) {
    C[0] = floordiv(int32(-7), int32(2))
    C[1] = floormod(int32(-7), int32(2))
    C[2] = int32(-7) / int32(2)
    C[3] = floordiv(int32(7), int32(-2))
    C[4] = floormod(int32(7), int32(-2))
    C[5] = min(int32(-3), int32(2)) * max(int32(-3), int32(2))
    C[6] = int32(2147483647) + int32(1)
    C[7] = select(int32(3) > int32(2), int32(10), int32(20))
    C[8] = cast(int32, float32(-2.75))
    C[9] = cast(int32, cast(bool, int32(5))) + cast(int32, int32(0) == int32(0))
    C[10] = cast(int32, uint8(200) > uint8(100))
    C[11] = floormod(int32(-6), int32(3))
    C[12] = cast(int32, int64(4294967297))
    C[13] = let t = int32(6) in t * t
    C[14] = cast(int32, !(int32(1) < int32(2)) || false)
    C[15] = cast(int32, cast(float32, int32(16777217)))
    D[0] = int8(127) + int8(1)
    D[1] = cast(int8, int32(200))
    D[2] = int8(-128) / int8(-1)
    D[3] = cast(int8, uint8(255))
    E[0] = uint8(250) + uint8(10)
    E[1] = uint8(3) - uint8(5)
    E[2] = cast(uint8, int8(-1))
  })");
  auto c = I32({16}, std::vector<int32_t>(16, 0));
  Array<int8_t> d(DataType::Int(8), {4}, std::vector<int8_t>(4, 0));
  Array<uint8_t> e(DataType::UInt(8), {3}, std::vector<uint8_t>(3, 0));
  absl::Status s = RunPrimFunc(f, {c.arg(), d.arg(), e.arg()});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(c.values, ElementsAre(-4, 1, -3, -4, -1, -6, -2147483648, 10, -2, 2, 1, 0, 1, 36, 0, 16777216));
  EXPECT_THAT(d.values, ElementsAre(-128, -56, -128, -1));
  EXPECT_THAT(e.values, ElementsAre(4, 254, 255));
}

TEST(InterpreterTest, UndefinedBehaviourIsAnErrorNotACrash) {
  PrimFunc div = Parse(R"(
  prim_func @div(A: Buffer((2,), int32), B: Buffer((2,), int32)) {
    for i in serial(0, 2) {
      B[i] = floordiv(int32(10), A[i])
    }
  })");
  auto a = I32({2}, {5, 0});
  auto b = I32({2}, {0, 0});
  absl::Status s = RunPrimFunc(div, {a.arg(), b.arg()});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("integer division by zero"));
  EXPECT_EQ(b.values[0], 2);  // written before the error

  PrimFunc oob = Parse(R"(
  prim_func @oob(A: Buffer((3,), float32), B: Buffer((3,), float32)) {
    for i in serial(0, 3) {
      B[i] = A[i + 1]
    }
  })");
  auto x = F32({3}, {1, 2, 3});
  auto y = F32Zeros({3});
  s = RunPrimFunc(oob, {x.arg(), y.arg()});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("buffer A: index 3 is outside [0, 3) in dimension 0"));

  PrimFunc cast = Parse(R"(
  prim_func @cast(A: Buffer((1,), float32), B: Buffer((1,), int32)) {
    B[0] = cast(int32, A[0])
  })");
  auto big = F32({1}, {3e9f});
  auto out = I32({1}, {0});
  EXPECT_THAT(RunPrimFunc(cast, {big.arg(), out.arg()}).message(), HasSubstr("out of range"));

  PrimFunc iter = Parse(R"(
  prim_func @iter(A: Buffer((4,), float32)) {
    for i in serial(0, 4) {
      block "b" {
        vi = spatial(3, i)
        A[vi] = 1.0
      }
    }
  })");
  auto four = F32Zeros({4});
  EXPECT_THAT(RunPrimFunc(iter, {four.arg()}).message(), HasSubstr("iteration variable vi = 3 is outside [0, 3)"));

  HostBuffer read_only = HostBuffer::ReadOnly(DataType::Float32(), {4}, reinterpret_cast<const uint8_t*>(four.values.data()));
  EXPECT_THAT(RunPrimFunc(iter, {&read_only}).message(), HasSubstr("read-only buffer A"));
}

TEST(InterpreterTest, FailedAssertReportsItsFormattedMessage) {
  PrimFunc take = Parse(R"(
  prim_func @take(A: Buffer((3,), float32), I: Buffer((2,), int64), B: Buffer((2,), float32)) {
    for i in serial(0, 2) {
      assert 0 <= I[i] && I[i] < 3, "index {} at position {} is outside [0, 3) {{}}", I[i], i
      B[i] = A[I[i]]
    }
  })");
  auto a = F32({3}, {1, 2, 3});
  Array<int64_t> idx(DataType::Int64(), {2}, {2, 7});
  auto b = F32Zeros({2});
  absl::Status s = RunPrimFunc(take, {a.arg(), idx.arg(), b.arg()});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "index 7 at position 1 is outside [0, 3) {}");
  EXPECT_EQ(b.values[0], 3.0f);  // the first element passed its check
  idx.values[1] = 0;
  EXPECT_TRUE(RunPrimFunc(take, {a.arg(), idx.arg(), b.arg()}).ok());
  EXPECT_EQ(b.values[1], 1.0f);
}

TEST(InterpreterTest, ControlFlowLetAllocateAndEveryLoopKind) {
  PrimFunc f = Parse(R"(
  prim_func @control(A: Buffer((8,), float32), B: Buffer((8,), float32)) {
    let half = 4 {
      for i in parallel(0, 2) {
        for j in vectorized(0, 2) {
          for k in unroll(0, 2) {
            if i * 4 + j * 2 + k < half {
              B[i * 4 + j * 2 + k] = A[i * 4 + j * 2 + k]
            } else {
              B[i * 4 + j * 2 + k] = 0.0 - A[i * 4 + j * 2 + k]
            }
          }
        }
      }
    }
    allocate tmp: Buffer((2,), float32, scope="local") {
      for t in thread_binding(0, 2, "threadIdx.x") {
        tmp[t] = A[t] * 10.0
      }
      B[0] = tmp[0] + tmp[1]
    }
    evaluate exp(A[0])
  })");
  auto a = F32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto b = F32Zeros({8});
  absl::Status s = RunPrimFunc(f, {a.arg(), b.arg()});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(b.values, ElementsAre(30, 2, 3, 4, -5, -6, -7, -8));
}

TEST(InterpreterTest, MathIntrinsicsFloat32) {
  PrimFunc f = Parse(R"(
  prim_func @math(B: Buffer((17,), float32)) {
    B[0] = exp(1.0)
    B[1] = log(1.0)
    B[2] = sqrt(2.0)
    B[3] = rsqrt(4.0)
    B[4] = tanh(0.5)
    B[5] = sigmoid(0.0)
    B[6] = erf(1.0)
    B[7] = fabs(-2.5)
    B[8] = floor(-1.5)
    B[9] = ceil(-1.5)
    B[10] = round(2.5)
    B[11] = round(3.5)
    B[12] = pow(2.0, 10.0)
    B[13] = sin(0.0)
    B[14] = cos(0.0)
    B[15] = floordiv(-7.0, 2.0)
    B[16] = floormod(-7.0, 2.0)
  })");
  auto b = F32Zeros({17});
  ASSERT_TRUE(RunPrimFunc(f, {b.arg()}).ok());
  const std::vector<double> expected = {2.718281828459045, 0, 1.4142135623730951, 0.5, 0.46211715726000974, 0.5,
                                        0.8427007929497149, 2.5, -2, -1, 2, 4, 1024, 0, 1, -4, 1};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(b.values[i], expected[i], 1e-6 * std::max(1.0, std::fabs(expected[i]))) << i;
  }
}

TEST(InterpreterTest, Float32ArithmeticRoundsToFloat32) {
  // 16777216 + 1 is not a float32: it rounds (to even) back to 16777216.
  PrimFunc f = Parse(R"(
  prim_func @round(B: Buffer((2,), float32), C: Buffer((1,), float64)) {
    B[0] = 16777216.0 + 1.0
    B[1] = 0.1 + 0.2
    C[0] = float64(16777216.0) + float64(1.0)
  })");
  auto b = F32Zeros({2});
  Array<double> c(DataType::Float(64), {1}, {0});
  ASSERT_TRUE(RunPrimFunc(f, {b.arg(), c.arg()}).ok());
  EXPECT_EQ(b.values[0], 16777216.0f);
  EXPECT_EQ(b.values[1], 0.1f + 0.2f);
  EXPECT_EQ(c.values[0], 16777217.0);
}

TEST(InterpreterTest, Float16AndBool) {
  // float16 bit patterns: 1.0 = 0x3c00, 2.0 = 0x4000, 3.0 = 0x4200, 2048 = 0x6800;
  // 2048 + 1 rounds to even (2048) in float16; 65504 * 2 overflows to inf (0x7c00).
  PrimFunc f = Parse(R"(
  prim_func @half(A: Buffer((2,), float16), B: Buffer((4,), float16), M: Buffer((2,), bool)) {
    B[0] = A[0] + A[1]
    B[1] = cast(float16, int32(2048)) + cast(float16, int32(1))
    B[2] = cast(float16, float32(65504.0)) * cast(float16, float32(2.0))
    B[3] = cast(float16, float32(0.000000059604644775390625))
    M[0] = A[0] < A[1]
    M[1] = A[0] > A[1]
  })");
  Array<uint16_t> a(DataType::Float(16), {2}, {0x3c00, 0x4000});
  Array<uint16_t> b(DataType::Float(16), {4}, {0, 0, 0, 0});
  Array<uint8_t> m(DataType::Bool(), {2}, {7, 7});
  absl::Status s = RunPrimFunc(f, {a.arg(), b.arg(), m.arg()});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(b.values, ElementsAre(0x4200, 0x6800, 0x7c00, 0x0001));  // 2^-24 is the least subnormal
  EXPECT_THAT(m.values, ElementsAre(1, 0));
}

TEST(InterpreterTest, BitOperationsAndOutOfRangeShifts) {
  PrimFunc f = Parse(testing::kBitOps);
  Array<int32_t> a(DataType::Int32(), {6}, testing::kBitOpsA);
  Array<uint8_t> u(DataType::UInt(8), {2}, testing::kBitOpsU);
  Array<int32_t> o(DataType::Int32(), {12}, std::vector<int32_t>(12, 7));
  Array<uint8_t> p(DataType::UInt(8), {4}, std::vector<uint8_t>(4, 7));
  absl::Status s = RunPrimFunc(f, {a.arg(), u.arg(), o.arg(), p.arg()});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(o.values, testing::kBitOpsO);
  EXPECT_EQ(p.values, testing::kBitOpsP);
}

TEST(InterpreterTest, VectorBitOperationsAndReinterpret) {
  PrimFunc f = Parse(testing::kVectorBitOps);
  Array<int32_t> a(DataType::Int32(), {8}, testing::kVectorBitOpsA);
  Array<int32_t> sh(DataType::Int32(), {8}, testing::kVectorBitOpsS);
  Array<int32_t> o(DataType::Int32(), {8}, std::vector<int32_t>(8, 7));
  Array<uint32_t> m(DataType::UInt(32), {8}, std::vector<uint32_t>(8, 7));
  Array<int32_t> w(DataType::Int32(), {4}, testing::kVectorBitOpsW);
  Array<int64_t> v(DataType::Int64(), {2}, {7, 7});
  absl::Status s = RunPrimFunc(f, {a.arg(), sh.arg(), o.arg(), m.arg(), w.arg(), v.arg()});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(o.values, testing::kVectorBitOpsO);
  EXPECT_EQ(m.values, testing::kVectorBitOpsM);
  EXPECT_EQ(v.values, testing::kVectorBitOpsV);
}

TEST(InterpreterTest, ReinterpretKeepsTheBits) {
  PrimFunc f = Parse(testing::kReinterpret);
  Array<uint16_t> h(DataType::UInt(16), {3}, testing::kReinterpretH);
  Array<uint16_t> fl(DataType::Float(16), {3}, {0, 0, 0});
  Array<uint16_t> g(DataType::UInt(16), {3}, {0, 0, 0});
  auto x = F32({2}, testing::kReinterpretX);
  auto i = I32({2}, {0, 0});
  absl::Status s = RunPrimFunc(f, {h.arg(), fl.arg(), g.arg(), x.arg(), i.arg()});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(fl.values, testing::kReinterpretF);
  EXPECT_EQ(g.values, testing::kReinterpretG);
  EXPECT_EQ(i.values, testing::kReinterpretI);
}

TEST(InterpreterTest, Int4BuffersArePackedLowNibbleFirst) {
  PrimFunc f = Parse(testing::kInt4);
  const int64_t n = static_cast<int64_t>(testing::kInt4A.size());
  Array<int8_t> a(DataType::Int(8), {n}, testing::kInt4A);
  Array<uint8_t> q(DataType::Int(4), {n}, std::vector<uint8_t>(5, 0xff));
  Array<int8_t> b(DataType::Int(8), {n}, std::vector<int8_t>(n, 0));
  Array<uint8_t> u(DataType::UInt(4), {n}, std::vector<uint8_t>(5, 0));
  Array<uint8_t> v(DataType::Int(4), {8}, std::vector<uint8_t>(4, 0));
  absl::Status s = RunPrimFunc(f, {a.arg(), q.arg(), b.arg(), u.arg(), v.arg()});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(q.values, testing::kInt4Q);
  EXPECT_EQ(b.values, testing::kInt4B);
  EXPECT_EQ(u.values, testing::kInt4U);
  EXPECT_EQ(v.values, testing::kInt4V);
}

// Q4_0 blocks (tests/tir/q4_0.h) dequantized by the TIR kernels match the plain C++
// reference bit for bit.
TEST(InterpreterTest, DequantizesQ4_0Blocks) {
  const int64_t nb = 11;
  std::vector<uint8_t> blocks = testing::RandomQ4_0Blocks(nb, 1234);
  std::vector<float> expected = testing::ReferenceDequantizeQ4_0(blocks);
  for (const char* text : {testing::kDequantizeQ4_0, testing::kDequantizeQ4_0Vectorized}) {
    PrimFunc f = Parse(text);
    Array<uint8_t> q(DataType::UInt(8), {nb, 18}, blocks);
    auto w = F32Zeros({nb, 32});
    absl::Status s = RunPrimFunc(f, {q.arg(), w.arg()});
    ASSERT_TRUE(s.ok()) << s;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_TRUE(testing::SameWeight(w.values[i], expected[i])) << "weight " << i << ": " << w.values[i] << " vs "
                                                                  << expected[i];
    }
  }
}

TEST(InterpreterTest, FloatMinMaxPropagateNaN) {
  // NaN on either side (and in every lane of a vector) wins; infinities order as numbers.
  PrimFunc f = Parse(R"(
  prim_func @nan(A: Buffer((4,), float32), B: Buffer((12,), float32)) {
    B[0] = max(A[0], 1.0)
    B[1] = max(1.0, A[0])
    B[2] = min(A[0], 1.0)
    B[3] = min(1.0, A[0])
    B[4] = max(A[0], 0.0)
    B[5] = max(A[1], A[2])
    B[6] = min(A[1], A[2])
    B[7] = max(A[3], 2.0)
    B[ramp(8, 1, 4)] = max(A[ramp(0, 1, 4)], broadcast(-1.0, 4))
  })");
  const float nan = std::nanf("");
  const float inf = INFINITY;
  auto a = F32({4}, {nan, inf, -inf, 3});
  auto b = F32Zeros({12});
  absl::Status s = RunPrimFunc(f, {a.arg(), b.arg()});
  ASSERT_TRUE(s.ok()) << s;
  for (int i : {0, 1, 2, 3, 4, 8}) EXPECT_TRUE(std::isnan(b.values[static_cast<size_t>(i)])) << i;
  EXPECT_EQ(b.values[5], inf);
  EXPECT_EQ(b.values[6], -inf);
  EXPECT_EQ(b.values[7], 3);
  EXPECT_EQ(b.values[9], inf);
  EXPECT_EQ(b.values[10], -1);
  EXPECT_EQ(b.values[11], 3);
}

TEST(InterpreterTest, VectorLoadsAndStores) {
  PrimFunc f = Parse(R"(
  prim_func @vec(A: Buffer((8,), float32), B: Buffer((4,), float32), y: float32) {
    B[ramp(0, 1, 4)] = A[ramp(0, 2, 4)] + broadcast(y, 4)
  })");
  auto a = F32({8}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto b = F32Zeros({4});
  absl::Status s = RunPrimFunc(f, {a.arg(), b.arg(), 0.5});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(b.values, ElementsAre(0.5, 2.5, 4.5, 6.5));
}

TEST(InterpreterTest, StepBudgetStopsLongRuns) {
  PrimFunc f = Parse(R"(
  prim_func @long(A: Buffer((1,), float32)) {
    for i in serial(0, 1000000) {
      for j in serial(0, 1000000) {
        A[0] = A[0] + 1.0
      }
    }
  })");
  auto a = F32Zeros({1});
  InterpreterOptions options;
  options.max_steps = 1000;
  absl::Status s = RunPrimFunc(f, {a.arg()}, options);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);

  PrimFunc alloc = Parse(R"(
  prim_func @big(A: Buffer((1,), float32)) {
    allocate tmp: Buffer((1000000000,), float32) {
      tmp[0] = 1.0
    }
  })");
  options.max_allocation_bytes = 1 << 20;
  EXPECT_EQ(RunPrimFunc(alloc, {a.arg()}, options).code(), absl::StatusCode::kResourceExhausted);
}

TEST(InterpreterTest, ScheduledKernelsWithTailsAndDecomposedInit) {
  // The default CPU schedule splits, fuses, vectorizes and parallelizes, with block
  // predicates and tail guards for sizes that are not multiples of the tile; the
  // interpreter must still compute C[i, j] = sum_k (i + 1) * j = 5 * (i + 1) * j.
  PrimFunc mm = Parse(R"(
  prim_func @mm(A: Buffer((n, 5), float32), B: Buffer((5, 11), float32), C: Buffer((n, 11), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 11) {
        for k in serial(0, 5) {
          block "mm" {
            vi = spatial(n, i)
            vj = spatial(11, j)
            vk = reduce(5, k)
            init {
              C[vi, vj] = 0.0
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  })");
  CpuScheduleOptions options;
  options.vector_lanes = 4;
  options.num_threads = 4;
  absl::StatusOr<PrimFunc> scheduled = ScheduleForCpu(mm, options);
  ASSERT_TRUE(scheduled.ok()) << scheduled.status();
  for (int64_t n : {1, 3, 7}) {
    std::vector<float> a(n * 5), b(5 * 11);
    for (int64_t i = 0; i < n; ++i) {
      for (int k = 0; k < 5; ++k) a[i * 5 + k] = static_cast<float>(i + 1);
    }
    for (int k = 0; k < 5; ++k) {
      for (int j = 0; j < 11; ++j) b[k * 11 + j] = static_cast<float>(j);
    }
    auto ha = F32({n, 5}, a);
    auto hb = F32({5, 11}, b);
    auto hc = F32({n, 11}, std::vector<float>(n * 11, -1.0f));
    absl::Status s = RunPrimFunc(*scheduled, {ha.arg(), hb.arg(), hc.arg()});
    ASSERT_TRUE(s.ok()) << s;
    for (int64_t i = 0; i < n; ++i) {
      for (int j = 0; j < 11; ++j) EXPECT_EQ(hc.values[i * 11 + j], 5.0f * (i + 1) * j) << "n=" << n << " " << i << "," << j;
    }
  }

  PrimFunc add = Parse(R"(
  prim_func @add(A: Buffer((n,), float32), B: Buffer((n,), float32)) {
    for i in serial(0, n) {
      block "add" {
        vi = spatial(n, i)
        B[vi] = A[vi] + 1.0
      }
    }
  })");
  absl::StatusOr<PrimFunc> add_scheduled = ScheduleForCpu(add, options);
  ASSERT_TRUE(add_scheduled.ok()) << add_scheduled.status();
  std::vector<float> x(13);
  for (int i = 0; i < 13; ++i) x[i] = static_cast<float>(i);
  auto hx = F32({13}, x);
  auto hy = F32Zeros({13});
  ASSERT_TRUE(RunPrimFunc(*add_scheduled, {hx.arg(), hy.arg()}).ok());
  for (int i = 0; i < 13; ++i) EXPECT_EQ(hy.values[i], i + 1.0f) << i;
}

}  // namespace
}  // namespace kiln::tir
