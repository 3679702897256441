#include "tools/compiled_model_cache.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "serving/model_files.h"
#include "support/file_io.h"
#include "support/hash.h"
#include "support/status_macros.h"
#include "vm/executable.h"

namespace kiln::tools {

namespace {

namespace fs = std::filesystem;

// Size and modification time of `path`, as text ("" when it cannot be read).
std::string FileStamp(const fs::path& path) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  if (error) return "";
  const auto time = fs::last_write_time(path, error);
  if (error) return "";
  return absl::StrCat(size, "@", time.time_since_epoch().count());
}

}  // namespace

absl::StatusOr<CachedModel> CompiledModelFor(const std::string& gguf_path, const codegen::ModelCompileOptions& options,
                                             bool recompile) {
  std::error_code error;
  const fs::path model = fs::absolute(gguf_path, error).lexically_normal();
  const std::string model_stamp = FileStamp(model);
  if (model_stamp.empty()) {
    if (fs::is_directory(model, error)) {
      return absl::InvalidArgumentError(absl::StrCat(gguf_path, ": is a directory; give the model's .gguf file"));
    }
    if (fs::exists(model, error)) {  // /dev/null, a FIFO: there, but no file to map
      return absl::InvalidArgumentError(absl::StrCat(gguf_path, ": is not a regular file; give the model's .gguf file"));
    }
    return absl::NotFoundError(absl::StrCat(gguf_path, ": no such model file"));
  }
  const std::string key_text =
      absl::StrCat(model.string(), "\n", model_stamp, "\n", options.pipeline.target.ToString(), "\n",
                   options.cpu.ToString(), "\n", options.max_tokens, "\n", vm::kFormatMajor, ".", vm::kFormatMinor,
                   "\n", FileStamp("/proc/self/exe"), "\n", options.ggml_avx2_build);
  const uint64_t key = support::Checksum64(key_text.data(), key_text.size());
  const fs::path dir = serving::CompiledModelDir();
  CachedModel cached;
  cached.path = (dir / absl::StrFormat("%s-%016x.kx", model.stem().string(), key)).string();
  if (!recompile && fs::exists(cached.path, error)) return cached;
  fs::create_directories(dir, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create the compiled-model cache ", dir.string(), ": ", error.message(),
                     " (set KILN_CACHE_DIR to a writable folder)"));
  }
  KILN_ASSIGN_OR_RETURN(std::string bytes, codegen::CompileGgufModel(gguf_path, options));
  KILN_RETURN_IF_ERROR(support::WriteFile(cached.path, bytes));
  cached.compiled = true;
  return cached;
}

}  // namespace kiln::tools
