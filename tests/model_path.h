// Where tests find the bundled model (SmolLM2-135M-Instruct Q4_1 GGUF): the model cache that
// scripts/fetch_model.sh fills, $KILN_MODEL_DIR or ~/.cache/kiln/models. Tests that need the
// model skip, saying how to fetch it, when it is not there; under CI=true (whose set-up
// fetched it) they fail instead, so a broken fetch cannot pass as skipped tests.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace kiln::test {

inline constexpr const char* kBundledModelName = "SmolLM2-135M-Instruct.Q4_1.gguf";

inline std::string ModelDir() {
  const char* dir = std::getenv("KILN_MODEL_DIR");
  if (dir != nullptr && dir[0] != '\0') return dir;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && home[0] != '\0' ? home : "/root") + "/.cache/kiln/models";
}

// The bundled model's path, or "" when it has not been fetched.
inline std::string BundledModelPath() {
  std::string path = ModelDir() + "/" + kBundledModelName;
  return std::filesystem::exists(path) ? path : "";
}

inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

}  // namespace kiln::test

// Skips (fails under CI) the current test when the bundled model is missing.
#define KILN_REQUIRE_BUNDLED_MODEL(path_var)                                                   \
  const std::string path_var = ::kiln::test::BundledModelPath();                              \
  if (path_var.empty()) {                                                                     \
    if (::kiln::test::InCi()) {                                                               \
      FAIL() << "the bundled model is not in " << ::kiln::test::ModelDir()                    \
             << " although CI's set-up fetches it";                                           \
    }                                                                                         \
    GTEST_SKIP() << "the bundled model is not in " << ::kiln::test::ModelDir()                \
                 << "; run scripts/fetch_model.sh";                                           \
  }
