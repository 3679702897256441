#include "formats/ggml_type.h"

#include "support/check.h"

namespace kiln::formats {
namespace {

// Block sizes and bytes from the ggml block structs: the legacy quantizations hold 32
// elements with one (Q4_0, Q5_0, Q8_0) or two (Q4_1, Q5_1, Q8_1) float16 parameters; the
// K-quantizations hold super-blocks of 256 elements; IQ4_NL is Q4_0's block with table
// values, IQ4_XS a 256-element super-block of them with 6-bit scales per 32 (IQ2_XXS: listed
// so that its files are read and their tensors refused by name).
constexpr GgmlTypeInfo kTypes[] = {
    {GgmlType::kF32, "f32", 1, 4},         {GgmlType::kF16, "f16", 1, 2},
    {GgmlType::kQ4_0, "q4_0", 32, 18},     {GgmlType::kQ4_1, "q4_1", 32, 20},
    {GgmlType::kQ5_0, "q5_0", 32, 22},     {GgmlType::kQ5_1, "q5_1", 32, 24},
    {GgmlType::kQ8_0, "q8_0", 32, 34},     {GgmlType::kQ8_1, "q8_1", 32, 36},
    {GgmlType::kQ2_K, "q2_K", 256, 84},    {GgmlType::kQ3_K, "q3_K", 256, 110},
    {GgmlType::kQ4_K, "q4_K", 256, 144},   {GgmlType::kQ5_K, "q5_K", 256, 176},
    {GgmlType::kQ6_K, "q6_K", 256, 210},   {GgmlType::kQ8_K, "q8_K", 256, 292},
    {GgmlType::kIQ4_NL, "iq4_nl", 32, 18}, {GgmlType::kIQ4_XS, "iq4_xs", 256, 136},
    {GgmlType::kIQ2_XXS, "iq2_xxs", 256, 66},
    {GgmlType::kI8, "i8", 1, 1},           {GgmlType::kI16, "i16", 1, 2},
    {GgmlType::kI32, "i32", 1, 4},         {GgmlType::kI64, "i64", 1, 8},
    {GgmlType::kF64, "f64", 1, 8},         {GgmlType::kBF16, "bf16", 1, 2},
};

}  // namespace

std::optional<GgmlTypeInfo> FindGgmlType(uint32_t id) {
  for (const GgmlTypeInfo& info : kTypes) {
    if (static_cast<uint32_t>(info.type) == id) return info;
  }
  return std::nullopt;
}

std::string_view UnknownGgmlTypeName(uint32_t id) {
  // ggml's enum ggml_type: ids 4, 5 and 31-33, 36-38 are removed types.
  switch (id) {
    case 4: return "q4_2";
    case 5: return "q4_3";
    case 17: return "iq2_xs";
    case 18: return "iq3_xxs";
    case 19: return "iq1_s";
    case 21: return "iq3_s";
    case 22: return "iq2_s";
    case 29: return "iq1_m";
    case 31: return "q4_0_4_4";
    case 32: return "q4_0_4_8";
    case 33: return "q4_0_8_8";
    case 34: return "tq1_0";
    case 35: return "tq2_0";
    case 36: return "iq4_nl_4_4";
    case 37: return "iq4_nl_4_8";
    case 38: return "iq4_nl_8_8";
    case 39: return "mxfp4";
    default: return "";
  }
}

GgmlTypeInfo GgmlTypeLayout(GgmlType type) {
  std::optional<GgmlTypeInfo> info = FindGgmlType(static_cast<uint32_t>(type));
  KILN_CHECK(info.has_value()) << "GgmlType " << static_cast<uint32_t>(type) << " has no layout";
  return *info;
}

}  // namespace kiln::formats
