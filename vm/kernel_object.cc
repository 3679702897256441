#include "vm/kernel_object.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::vm {
namespace {

absl::Status WriteAll(int fd, const std::string& bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrCat("writing kernel object: ", std::strerror(errno)));
    }
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// An anonymous in-memory file when the kernel allows it, else a private temporary file that
// is unlinked as soon as it is open.
absl::StatusOr<int> OpenScratchFile() {
  int fd = ::memfd_create("kiln-kernels", MFD_CLOEXEC);
  if (fd >= 0) return fd;
  const char* tmp = std::getenv("TMPDIR");
  std::string path = absl::StrCat(tmp ? tmp : "/tmp", "/kiln-kernels-XXXXXX");
  fd = ::mkstemp(path.data());
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot create a kernel file: ", std::strerror(errno)));
  ::unlink(path.c_str());
  return fd;
}

}  // namespace

absl::StatusOr<std::shared_ptr<KernelObject>> KernelObject::Load(const std::string& bytes) {
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "\x7f" "ELF", 4) != 0) {
    return absl::InvalidArgumentError("the CPU kernel section is not an ELF shared object");
  }
  absl::StatusOr<int> fd = OpenScratchFile();
  if (!fd.ok()) return fd.status();
  absl::Status written = WriteAll(*fd, bytes);
  if (!written.ok()) {
    ::close(*fd);
    return written;
  }
  std::string path = absl::StrCat("/proc/self/fd/", *fd);
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    ::close(*fd);
    const char* error = ::dlerror();
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load the CPU kernel object: ", error ? error : "unknown dlopen error"));
  }
  return std::shared_ptr<KernelObject>(new KernelObject(handle, *fd));
}

KernelObject::~KernelObject() {
  ::dlclose(handle_);
  ::close(fd_);
}

absl::StatusOr<KilnKernelFn> KernelObject::Find(const std::string& name) const {
  void* symbol = ::dlsym(handle_, name.c_str());
  if (symbol == nullptr) {
    return absl::NotFoundError(absl::StrCat("kernel '", name, "' is not exported by the CPU kernel object"));
  }
  return reinterpret_cast<KilnKernelFn>(symbol);
}

}  // namespace kiln::vm
