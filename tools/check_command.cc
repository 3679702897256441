#include <cstdio>

#include "tools/commands.h"

namespace kiln::tools {

// Placeholder until the owning library lands; replaced by the real command.
int CheckCommand(int argc, char** argv) {
  std::fprintf(stderr, "kiln check: not available in this build yet\n");
  return 2;
}

}  // namespace kiln::tools
