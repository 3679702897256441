// Writes the tests' sample executable (tests/vm/test_programs.h) to a file, for the tools
// tests and the embedding example.
#include <cstdio>

#include "support/file_io.h"
#include "tests/vm/test_programs.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.kx\n", argv[0]);
    return 2;
  }
  absl::Status status = kiln::support::WriteFile(argv[1], kiln::vm::testing::BuildSampleExecutable());
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
