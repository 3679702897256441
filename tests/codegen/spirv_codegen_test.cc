// EmitSpirvModule on hand-written lowered device kernels: what it refuses says so clearly.
// (What it emits is checked by tests/codegen/vulkan_op_harness_test.cc: spirv-val on every
// op case, and every case run on a Vulkan device against the reference evaluator.)
#include "codegen/spirv_codegen.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace kiln::codegen
