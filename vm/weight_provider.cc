#include "vm/weight_provider.h"

#include "absl/strings/str_cat.h"

namespace kiln::vm {

absl::StatusOr<Tensor> TensorMapWeightProvider::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return absl::NotFoundError(absl::StrCat("no weight named '", name, "'"));
  return it->second;
}

}  // namespace kiln::vm
