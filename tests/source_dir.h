// The source tree, for tests that read files from it (examples/, tests/relax/modules):
// $KILN_SOURCE_DIR when set (ctest sets it, and a fresh clone may be tested in place of the
// one it was built from), otherwise the tree the tests were built from, so a test binary
// also runs directly.
#pragma once

#include <string>

namespace kiln::test {

std::string SourceDir();

}  // namespace kiln::test
