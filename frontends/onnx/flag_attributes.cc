#include "frontends/onnx/flag_attributes.h"

#include <string_view>
#include <unordered_set>

#include "absl/strings/str_cat.h"

namespace kiln::frontends::onnx {
namespace {

// Every name here is a 0/1 flag in every operator of the ONNX specification that has it
// (names that are flags in one operator and counts or enums in another are left out).
bool IsFlagAttribute(std::string_view name) {
  static const std::unordered_set<std::string_view> kFlags = {
      "align_corners", "allowzero", "antialias", "broadcast", "ceil_mode", "center_point_box",
      "count_include_pad", "detect_negative", "detect_positive", "exclude_outside", "exclusive",
      "input_forget", "interleaved", "inverse", "is_causal", "is_test", "keepdims", "largest", "layout",
      "linear_before_reset", "new_axis", "noop_with_empty_axes", "onesided", "periodic", "reverse",
      "saturate", "select_last_index", "sorted", "spatial", "storage_order", "training_mode", "transA",
      "transB", "upper"};
  return kFlags.count(name) > 0;
}

}  // namespace

absl::Status CheckFlagAttributes(const ::onnx::NodeProto& node, const std::string& label) {
  for (const ::onnx::AttributeProto& attr : node.attribute()) {
    if (attr.type() != ::onnx::AttributeProto::INT || !IsFlagAttribute(attr.name())) continue;
    if (attr.i() != 0 && attr.i() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": attribute '", attr.name(), "' is ", attr.i(), "; it is a flag: 0 or 1"));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::frontends::onnx
