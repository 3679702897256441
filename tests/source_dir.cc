// The build-time source path lives in this one file (its compile definition), so every other
// test file compiles to the same object in any checkout and ccache shares it across worktrees.
#include "tests/source_dir.h"

#include <cstdlib>

namespace kiln::test {

std::string SourceDir() {
  const char* dir = std::getenv("KILN_SOURCE_DIR");
  return dir != nullptr && dir[0] != '\0' ? dir : KILN_TEST_SOURCE_DIR;
}

}  // namespace kiln::test
