// Loading OpenBLAS at first use (builtins/openblas_library.h): the entry points resolve, the
// answer is the same every time, and a core type the user chose is left alone.
#include "builtins/openblas_library.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace kiln::builtins {
namespace {

// Read at program start, before any test loads the library (which may set the variable).
const std::string user_choice = [] {
  const char* set = std::getenv("OPENBLAS_CORETYPE");
  return std::string(set != nullptr ? set : "");
}();

TEST(OpenBlasLibraryTest, LoadsOnceWithItsEntryPoints) {
  std::string error;
  const OpenBlasLibrary* lib = LoadOpenBlas(&error);
  ASSERT_NE(lib, nullptr) << error;
  EXPECT_NE(lib->sgemm, nullptr);
  EXPECT_EQ(LoadOpenBlas(), lib);
  if (!user_choice.empty()) {
    EXPECT_NE(lib->core_choice.find("set by the user"), std::string::npos) << lib->core_choice;
    EXPECT_EQ(std::string(std::getenv("OPENBLAS_CORETYPE")), user_choice);
  }
  // 2x2 row-major product through the loaded entry point: [[1,2],[3,4]] @ [[5,6],[7,8]].
  const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
  float c[4] = {};
  lib->sgemm(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
  EXPECT_EQ(c[0], 19.0f);
  EXPECT_EQ(c[1], 22.0f);
  EXPECT_EQ(c[2], 43.0f);
  EXPECT_EQ(c[3], 50.0f);
}

}  // namespace
}  // namespace kiln::builtins
