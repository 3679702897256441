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

std::string TargetAttribute(std::string_view target_text, std::string_view name) {
  size_t start = 0;
  while (start < target_text.size()) {
    size_t end = target_text.find(' ', start);
    if (end == std::string_view::npos) end = target_text.size();
    const std::string_view word = target_text.substr(start, end - start);
    if (word.size() > name.size() + 2 && word[0] == '-' && word.substr(1, name.size()) == name &&
        word[name.size() + 1] == '=') {
      return std::string(word.substr(name.size() + 2));
    }
    start = end + 1;
  }
  return "";
}

}  // namespace kiln::tools
