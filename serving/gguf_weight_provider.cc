#include "serving/gguf_weight_provider.h"

#include "absl/strings/str_cat.h"
#include "formats/gguf_tensor_view.h"
#include "support/status_macros.h"
#include "vm/dtype.h"

namespace kiln::serving {

absl::StatusOr<vm::Tensor> GgufWeightProvider::Find(const std::string& name) const {
  const formats::GgufTensor* tensor = file_->FindTensor(name);
  if (tensor == nullptr) return absl::NotFoundError(absl::StrCat("the GGUF file has no tensor '", name, "'"));
  formats::GgufTensorView view = formats::ViewOf(*tensor);
  KILN_ASSIGN_OR_RETURN(DLDataType dtype, vm::ParseDType(view.dtype));
  // The view never writes: constants are read-only (docs/vm.md), and the mapping is too.
  auto owner = std::const_pointer_cast<void>(std::static_pointer_cast<const void>(file_));
  return vm::Tensor::View(std::move(owner), const_cast<char*>(tensor->data), 0, std::move(view.shape), dtype,
                          DLDevice{kDLCPU, 0});
}

}  // namespace kiln::serving
