// A CPU kernel shared object carried inside an executable, loaded without a compiler and
// without a file on disk (memfd), and unloaded when the last executable using it goes.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "vm/kernel_abi.h"

namespace kiln::vm {

class KernelObject {
 public:
  static absl::StatusOr<std::shared_ptr<KernelObject>> Load(const std::string& bytes);
  ~KernelObject();
  KernelObject(const KernelObject&) = delete;
  KernelObject& operator=(const KernelObject&) = delete;

  // The exported kernel, or an error naming it.
  absl::StatusOr<KilnKernelFn> Find(const std::string& name) const;

 private:
  KernelObject(void* handle, int fd) : handle_(handle), fd_(fd) {}
  void* handle_;
  // The scratch file stays open while the object is loaded: the loader knows the object by
  // the path /proc/self/fd/N, and a second object loaded under the same N (reused after a
  // close) would be taken for the first one.
  int fd_;
};

}  // namespace kiln::vm
