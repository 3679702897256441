#include "codegen/shared_object_linker.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

extern char** environ;

namespace kiln::codegen {
namespace {

// A directory from mkdtemp, removed with its contents when this goes out of scope.
class TempDir {
 public:
  static absl::StatusOr<TempDir> Create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/kiln-link-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("cannot create a temporary directory for linking (", pattern,
                                              "): ", std::strerror(errno)));
    }
    return TempDir(pattern);
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string File(const char* name) const { return absl::StrCat(path_, "/", name); }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InternalError(absl::StrCat("cannot read ", path));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The linker's environment: ours, with PATH set to the system's standard path when ours has
// none. A gcc driver found without PATH still needs it: collect2 looks up `ld` through PATH and
// fails ("cannot find 'ld'", or "liblto_plugin.so not found") when PATH is unset or empty.
std::vector<std::string> LinkerEnvironment() {
  std::vector<std::string> env;
  bool has_path = false;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text = *entry;
    if (text.rfind("PATH=", 0) == 0) {
      if (text.size() == 5) continue;  // an empty PATH finds nothing; replaced below
      has_path = true;
    }
    env.push_back(std::move(text));
  }
  if (!has_path) {
    std::string standard(::confstr(_CS_PATH, nullptr, 0), '\0');
    if (!standard.empty()) ::confstr(_CS_PATH, standard.data(), standard.size());
    standard = standard.c_str();  // drop confstr's terminating NUL
    env.push_back(absl::StrCat("PATH=", standard.empty() ? "/usr/bin:/bin" : standard));
  }
  return env;
}

}  // namespace

absl::StatusOr<std::string> LinkSharedObject(const std::string& object_bytes) {
  const char* override_linker = std::getenv("KILN_LINKER");
  std::string linker = override_linker != nullptr && *override_linker != '\0' ? override_linker : "cc";

  absl::StatusOr<TempDir> dir = TempDir::Create();
  if (!dir.ok()) return dir.status();
  std::string object = dir->File("kernels.o");
  std::string shared = dir->File("kernels.so");
  std::string log = dir->File("link.log");
  if (absl::Status s = WriteFile(object, object_bytes); !s.ok()) return s;

  std::vector<std::string> argv_text = {linker, "-shared", "-o", shared, object, "-lm", "-Wl,--no-undefined",
                                        "-Wl,-z,noexecstack"};
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = LinkerEnvironment();
  std::vector<char*> env;
  for (std::string& e : env_text) env.push_back(e.data());
  env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  int spawn_error = ::posix_spawnp(&pid, linker.c_str(), &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) {
    if (spawn_error == ENOENT) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot link CPU kernels: the linker '", linker, "' is not on PATH; install a C compiler driver ",
          "(e.g. `apt-get install gcc`) or set KILN_LINKER to one"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run the linker '", linker, "': ", std::strerror(spawn_error)));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waiting for the linker: ", std::strerror(errno)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    absl::StatusOr<std::string> output = ReadFile(log);
    std::string reason = WIFEXITED(status) ? absl::StrCat("exit status ", WEXITSTATUS(status))
                                           : absl::StrCat("signal ", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return absl::InternalError(absl::StrCat("linking CPU kernels failed (", absl::StrJoin(argv_text, " "), ": ",
                                            reason, "): ", output.ok() ? *output : "(no output)"));
  }
  return ReadFile(shared);
}

}  // namespace kiln::codegen
