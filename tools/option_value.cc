#include "tools/option_value.h"

namespace kiln::tools {

bool OptionValue(int argc, char** argv, int* i, std::string_view flag, std::string* value) {
  const std::string_view arg = argv[*i];
  if (arg == flag) {
    if (*i + 1 >= argc) return false;
    *value = argv[++*i];
    return true;
  }
  if (arg.size() > flag.size() && arg.substr(0, flag.size()) == flag && arg[flag.size()] == '=') {
    *value = std::string(arg.substr(flag.size() + 1));
    return true;
  }
  return false;
}

}  // namespace kiln::tools
