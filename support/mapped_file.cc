#include "support/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::support {
namespace {

constexpr size_t kAlignment = 64;

// What data() points at for an empty file or string: mmap refuses zero-length mappings.
alignas(kAlignment) const char kEmpty[kAlignment] = {};

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlignment == 0; }

}  // namespace

absl::StatusOr<std::shared_ptr<const MappedFile>> MappedFile::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO (`mkfifo`, or a shell's `<(...)`) for reading otherwise waits
  // for a writer, possibly forever, before fstat can say it is not a file. It changes
  // nothing for a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("cannot open '", path, "': ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int error = errno;
    ::close(fd);
    return absl::InternalError(absl::StrCat("cannot stat '", path, "': ", std::strerror(error)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not a regular file"));
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->name_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ == 0) {
    file->data_ = kEmpty;
    ::close(fd);
    return std::shared_ptr<const MappedFile>(std::move(file));
  }
  void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_SHARED, fd, 0);
  int error = errno;
  // The mapping keeps the file's pages reachable; the descriptor is no longer needed.
  ::close(fd);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot map '", path, "' (", file->size_, " bytes): ", std::strerror(error)));
  }
  file->data_ = static_cast<const char*>(p);
  file->mapped_ = true;
  return std::shared_ptr<const MappedFile>(std::move(file));
}

std::shared_ptr<const MappedFile> MappedFile::FromBytes(std::string bytes, std::string name) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->name_ = std::move(name);
  file->size_ = bytes.size();
  file->owned_ = std::move(bytes);
  if (file->size_ == 0) {
    file->data_ = kEmpty;
  } else if (Aligned(file->owned_.data())) {
    file->data_ = file->owned_.data();
  } else {
    file->buffer_.reset(new char[file->size_ + kAlignment]);
    char* base = file->buffer_.get();
    char* aligned = base + (kAlignment - reinterpret_cast<uintptr_t>(base) % kAlignment) % kAlignment;
    std::memcpy(aligned, file->owned_.data(), file->size_);
    std::string().swap(file->owned_);
    file->data_ = aligned;
  }
  return file;
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<char*>(data_), size_);
}

}  // namespace kiln::support
