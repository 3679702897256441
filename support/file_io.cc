#include "support/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace kiln::support {
namespace {

absl::Status WriteAll(int fd, std::string_view contents, const std::string& path) {
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::DataLossError(absl::StrCat("error writing '", path, "': ", std::strerror(errno)));
    }
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  // A directory opens as an ifstream and reads as empty: callers would report what an
  // empty file lacks ("expected 'module'") instead of the mistake.
  if (struct stat st {}; ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is a directory, not a file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open '", path, "': ", std::strerror(errno)));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat("error reading '", path, "'"));
  }
  return contents.str();
}

absl::Status WriteFile(const std::string& path, std::string_view contents) {
  // A regular file is replaced by writing a sibling and renaming it over the old one, so a
  // process that has the old file mapped (a server running an executable) keeps its
  // pages; truncating in place would make its next access fault. Anything else (a device,
  // a pipe) is written in place.
  struct stat st {};
  bool in_place = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  static std::atomic<uint64_t> counter{0};
  std::string target = in_place ? path : absl::StrCat(path, ".tmp.", ::getpid(), ".", counter++);
  int flags = in_place ? (O_WRONLY | O_TRUNC | O_CLOEXEC) : (O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC);
  int fd = ::open(target.c_str(), flags, 0666);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
  }
  absl::Status status = WriteAll(fd, contents, path);
  if (::close(fd) != 0 && status.ok()) {
    status = absl::DataLossError(absl::StrCat("error writing '", path, "': ", std::strerror(errno)));
  }
  if (!in_place) {
    if (status.ok() && std::rename(target.c_str(), path.c_str()) != 0) {
      status = absl::PermissionDeniedError(absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
    }
    if (!status.ok()) ::unlink(target.c_str());
  }
  return status;
}

}  // namespace kiln::support
