// GgufWeightProvider: the tensors of a mapped GGUF file, by their GGUF names, for an
// executable whose external constants were declared from that file (relax/models/).
//
// Each tensor is a read-only view of the mapping (formats/gguf_tensor_view.h gives its
// dtype and shape: quantized tensors are uint8 rows of blocks); nothing is copied and the
// file stays mapped while any view lives. The loader checks dtype and shape against the
// executable's declarations, so a GGUF of another size or quantization is refused at load
// naming the weight.
#pragma once

#include <memory>
#include <string>

#include "formats/gguf_file.h"
#include "vm/weight_provider.h"

namespace kiln::serving {

class GgufWeightProvider : public vm::WeightProvider {
 public:
  explicit GgufWeightProvider(std::shared_ptr<const formats::GgufFile> file) : file_(std::move(file)) {}
  absl::StatusOr<vm::Tensor> Find(const std::string& name) const override;

 private:
  std::shared_ptr<const formats::GgufFile> file_;
};

}  // namespace kiln::serving
