// The source tree, for tests that read files from it (examples/, tests/relax/modules):
// $KILN_SOURCE_DIR when set (ctest sets it, and a fresh clone may be tested in place of the
// one it was built from), otherwise the tree the tests were built from, so a test binary
// also runs directly.
#pragma once

#include <cstdlib>
#include <string>

namespace kiln::test {

inline std::string SourceDir() {
  const char* dir = std::getenv("KILN_SOURCE_DIR");
  return dir != nullptr && dir[0] != '\0' ? dir : KILN_TEST_SOURCE_DIR;
}

}  // namespace kiln::test
