// WeightProvider: where a loading executable finds the constants it declares external
// (Executable::Contents::external_weights), by name. An application that already has its
// weights in memory or in a mapped file (a GGUF, a safetensors file) hands them to the
// executable without copying; the loader checks each tensor's dtype, shape, device and
// layout against the declaration and keeps the returned Tensor (and so its memory) alive as
// long as the executable lives.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "vm/tensor.h"

namespace kiln::vm {

class WeightProvider {
 public:
  virtual ~WeightProvider() = default;
  // The tensor called `name`; NotFound (or any error, which the loader passes on with the
  // weight's name) if there is none.
  virtual absl::StatusOr<Tensor> Find(const std::string& name) const = 0;
};

// Tensors held in a map: the simplest provider, for tests and embedders.
class TensorMapWeightProvider : public WeightProvider {
 public:
  void Add(const std::string& name, Tensor tensor) { tensors_[name] = std::move(tensor); }
  absl::StatusOr<Tensor> Find(const std::string& name) const override;

 private:
  std::map<std::string, Tensor> tensors_;
};

}  // namespace kiln::vm
