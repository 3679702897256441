// EmitSpirvModule on hand-written lowered device kernels: what it refuses says so clearly.
// (What it emits is checked by tests/codegen/vulkan_op_harness_test.cc: spirv-val on every
// op case, and every case run on a Vulkan device against the reference evaluator.)
#include "codegen/spirv_codegen.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tir/text_parser.h"

namespace kiln::codegen {
namespace {

using ::testing::HasSubstr;

tir::PrimFunc Parse(const std::string& text) {
  absl::StatusOr<tir::ParsedPrimFunc> parsed = tir::ParsePrimFunc(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status() << text;
  return parsed->func;
}

TEST(SpirvCodegenTest, RefusesWhatItCannotEmitNamingTheKernel) {
  tir::PrimFunc bf16 = Parse(R"(
prim_func @k(A_data: handle) {
  attr calling_conv = "device_kernel"
  decl_buffer A: Buffer((64,), bfloat16) = A_data {
    for i in thread_binding(0, 64, "threadIdx.x") {
      A[i] = A[i]
    }
  }
})");
  absl::StatusOr<SpirvModule> m = EmitSpirvModule({{"k_device0", bf16}});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("device kernel k_device0: type bfloat16 (buffer 'A') is not supported "
                                              "by the SPIR-V code generator yet"));

  // 17 scalars: 136 bytes of push constants, above the 128 every device offers.
  std::string params, uses;
  for (int i = 0; i < 17; ++i) {
    absl::StrAppend(&params, ", s", i, ": int64");
    absl::StrAppend(&uses, " + s", i);
  }
  tir::PrimFunc many = Parse(absl::StrCat(R"(
prim_func @k(A_data: handle)", params, R"() {
  attr calling_conv = "device_kernel"
  decl_buffer A: Buffer((64,), int64) = A_data {
    for i in thread_binding(0, 64, "threadIdx.x") {
      A[i] = i)", uses, R"(
    }
  }
})"));
  m = EmitSpirvModule({{"k_device0", many}});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("17 scalar parameters (136 bytes of push constants; at most 128) is not "
                                              "supported by the SPIR-V code generator yet"));

  // Not a lowered device kernel.
  tir::PrimFunc host = Parse(R"(
prim_func @k(A: Buffer((4,), float32)) {
  A[0] = 1.0
})");
  m = EmitSpirvModule({{"k", host}});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("not a lowered device kernel"));
}

// The 32-bit values of the module's OpConstant instructions (opcode 43, four words).
std::vector<uint32_t> ConstantWords(const std::string& bytes) {
  std::vector<uint32_t> words(bytes.size() / 4), values;
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  for (size_t at = 5; at < words.size() && (words[at] >> 16) != 0; at += words[at] >> 16) {
    if (words[at] == ((4u << 16) | 43u)) values.push_back(words[at + 3]);
  }
  return values;
}

TEST(SpirvCodegenTest, Float16ConstantsRoundOnce) {
  // 1 + 2^-11 + 2^-40 is just above the tie between the halves 1 and 1 + 2^-10: rounded
  // once it is 1 + 2^-10 (float32 bits 0x3f802000). Through float32 it became the tie
  // itself and then 1 (0x3f800000).
  tir::PrimFunc scale = Parse(R"(
prim_func @k(A_data: handle) {
  attr calling_conv = "device_kernel"
  decl_buffer A: Buffer((64,), float16) = A_data {
    for i in thread_binding(0, 64, "threadIdx.x") {
      A[i] = A[i] * float16(1.0004882812509095)
    }
  }
})");
  absl::StatusOr<SpirvModule> m = EmitSpirvModule({{"k_device0", scale}});
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<uint32_t> constants = ConstantWords(m->bytes);
  EXPECT_THAT(constants, ::testing::Contains(0x3f802000u));
  EXPECT_THAT(constants, ::testing::Not(::testing::Contains(0x3f800000u)));
}

}  // namespace
}  // namespace kiln::codegen
