#include "tools/usage_error.h"

#include <cstdio>

namespace kiln::tools {

int UsageError(std::string_view command, std::string_view message) {
  std::fprintf(stderr, "kiln %.*s: %.*s\n'kiln %.*s --help' lists the options.\n",
               static_cast<int>(command.size()), command.data(), static_cast<int>(message.size()),
               message.data(), static_cast<int>(command.size()), command.data());
  return 2;
}

}  // namespace kiln::tools
