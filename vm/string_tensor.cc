#include "vm/string_tensor.h"

#include <memory>

#include "absl/strings/str_cat.h"

namespace kiln::vm {
namespace {

// What a string tensor's owner holds: the element table and the arena it points into.
struct StringStorage {
  std::vector<StringElement> elements;
  std::string arena;
};

}  // namespace

bool IsStringTensor(const Tensor& t) { return t.defined() && t.dtype() == DTypeString(); }

absl::StatusOr<Tensor> MakeStringTensor(const std::vector<int64_t>& shape, const std::vector<std::string>& strings) {
  absl::StatusOr<int64_t> numel = ShapeNumel(shape);
  if (!numel.ok()) return numel.status();
  if (*numel != static_cast<int64_t>(strings.size())) {
    return absl::InvalidArgumentError(absl::StrCat("a string tensor of shape ", ShapeToString(shape), " needs ", *numel,
                                                   " strings, got ", strings.size()));
  }
  auto storage = std::make_shared<StringStorage>();
  size_t total = 0;
  for (const std::string& s : strings) total += s.size();
  storage->arena.reserve(total);
  for (const std::string& s : strings) storage->arena += s;
  // Pointers are taken only after the arena is complete (it never reallocates afterwards).
  storage->elements.resize(strings.size() + 1);  // one spare so data() is never null
  size_t offset = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    storage->elements[i] = {storage->arena.data() + offset, strings[i].size()};
    offset += strings[i].size();
  }
  void* data = storage->elements.data();
  return Tensor::View(std::move(storage), data, 0, shape, DTypeString(), DLDevice{kDLCPU, 0});
}

std::vector<std::string> StringsOf(const Tensor& t) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out.emplace_back(StringAt(t, i));
  return out;
}

}  // namespace kiln::vm
