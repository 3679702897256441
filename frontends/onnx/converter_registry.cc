#include "frontends/onnx/converter_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "frontends/onnx/converters/converters.h"
#include "support/check.h"

namespace kiln::frontends::onnx {

std::string QualifiedOpType(std::string_view domain, std::string_view op_type) {
  if (domain.empty() || domain == "ai.onnx") return std::string(op_type);
  return absl::StrCat(std::string(domain), ":", std::string(op_type));
}

const ConverterRegistry& ConverterRegistry::Global() {
  static const ConverterRegistry* registry = [] {
    auto* r = new ConverterRegistry();
    RegisterAllConverters(*r);
    std::sort(r->converters_.begin(), r->converters_.end(), [](const ConverterInfo& a, const ConverterInfo& b) {
      return a.op_type != b.op_type ? a.op_type < b.op_type : a.min_opset < b.min_opset;
    });
    return r;
  }();
  return *registry;
}

const ConverterInfo* ConverterRegistry::Find(std::string_view op_type, int64_t opset) const {
  for (const ConverterInfo& info : converters_) {
    if (info.op_type == op_type && info.min_opset <= opset && opset <= info.max_opset) return &info;
  }
  return nullptr;
}

void ConverterRegistry::Register(std::string op_type, ConverterFn convert, int64_t min_opset, int64_t max_opset) {
  for (const ConverterInfo& info : converters_) {
    KILN_CHECK(!(info.op_type == op_type && info.min_opset <= max_opset && min_opset <= info.max_opset))
        << "ONNX converter for " << op_type << " registered twice for overlapping opsets";
  }
  converters_.push_back({std::move(op_type), min_opset, max_opset, std::move(convert)});
}

}  // namespace kiln::frontends::onnx
