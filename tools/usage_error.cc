#include "tools/usage_error.h"

#include <cctype>
#include <cstdio>
#include <vector>

#include "support/nearest_name.h"

namespace kiln::tools {

int UsageError(std::string_view command, std::string_view message) {
  std::fprintf(stderr, "kiln %.*s: %.*s\n'kiln %.*s --help' lists the options.\n",
               static_cast<int>(command.size()), command.data(), static_cast<int>(message.size()),
               message.data(), static_cast<int>(command.size()), command.data());
  return 2;
}

std::string UnknownOptionMessage(std::string_view arg, std::string_view usage) {
  // The options are the words of the help text that start with '-' and a letter or '-'.
  std::vector<std::string> options;
  for (size_t i = 0; i < usage.size(); ++i) {
    const bool starts_word = i == 0 || usage[i - 1] == ' ' || usage[i - 1] == '\n' || usage[i - 1] == '[';
    if (!starts_word || usage[i] != '-' || i + 1 >= usage.size()) continue;
    if (!std::isalpha(static_cast<unsigned char>(usage[i + 1])) && usage[i + 1] != '-') continue;
    size_t end = i + 1;
    while (end < usage.size() && (std::isalnum(static_cast<unsigned char>(usage[end])) || usage[end] == '-')) ++end;
    options.emplace_back(usage.substr(i, end - i));
    i = end;
  }
  const std::string_view name = arg.substr(0, arg.find('='));
  std::string message = "unknown option '" + std::string(arg) + "'";
  // Single-letter options are too short to guess from.
  if (name.size() > 2) message += support::DidYouMean(name, options);
  return message;
}

}  // namespace kiln::tools
