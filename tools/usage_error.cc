#include "tools/usage_error.h"

#include <algorithm>
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

namespace {

// The options a help line starts with: "  -m, --model MODEL   ..." lists -m and --model.
// (Not every word with a dash: "-mcpu=znver3" inside a description is no option.)
std::vector<std::string> ListedOptions(std::string_view usage) {
  std::vector<std::string> listed;
  size_t line = 0;
  while (line < usage.size()) {
    size_t end = usage.find('\n', line);
    if (end == std::string_view::npos) end = usage.size();
    size_t i = line;
    while (i < end && usage[i] == ' ') ++i;
    while (i + 1 < end && usage[i] == '-' && usage[i + 1] != ' ') {
      size_t word = i;
      while (i < end && usage[i] != ' ' && usage[i] != ',') ++i;
      listed.emplace_back(usage.substr(word, i - word));
      if (i + 1 < end && usage[i] == ',' && usage[i + 1] == ' ') i += 2;
    }
    line = end + 1;
  }
  return listed;
}

}  // namespace

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
  // An option the help lists reaches here only when its parser did not take it: a value
  // option as the last word (`kiln generate --prompt`), or a flag given a value
  // (`--chat=1`). Calling it unknown would send the user looking for another spelling.
  if (const std::vector<std::string> listed = ListedOptions(usage);
      std::find(listed.begin(), listed.end(), name) != listed.end()) {
    return arg.find('=') == std::string_view::npos ? "option '" + std::string(name) + "' needs a value"
                                                   : "option '" + std::string(name) + "' takes no value";
  }
  std::string message = "unknown option '" + std::string(arg) + "'";
  // Single-letter options are too short to guess from.
  if (name.size() > 2) message += support::DidYouMean(name, options);
  return message;
}

}  // namespace kiln::tools
