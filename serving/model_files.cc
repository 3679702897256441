#include "serving/model_files.h"

#include <cstdlib>

namespace kiln::serving {

namespace {

std::string CacheRoot() {
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && home[0] != '\0' ? home : "/root") + "/.cache/kiln";
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? std::string(value) : fallback;
}

}  // namespace

std::string ModelDir() { return EnvOr("KILN_MODEL_DIR", CacheRoot() + "/models"); }
std::string BundledModelPath() { return ModelDir() + "/" + kBundledModelName; }
std::string CompiledModelDir() { return EnvOr("KILN_CACHE_DIR", CacheRoot() + "/compiled"); }

}  // namespace kiln::serving
