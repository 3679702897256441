#include "tools/named_inputs.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::tools {
namespace {

// A NAME=SPEC's NAME when it looks like a parameter name: letters, digits, '_', '.', ':'
// (ONNX names), not starting with a digit. Input kinds (random:, zeros:, ...) hold no '='.
std::optional<std::string> NamePart(const std::string& input) {
  const size_t eq = input.find('=');
  if (eq == std::string::npos || eq == 0) return std::nullopt;
  const std::string name = input.substr(0, eq);
  if (std::isdigit(static_cast<unsigned char>(name[0]))) return std::nullopt;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != ':') return std::nullopt;
  }
  return name;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> OrderInputsByName(const std::vector<std::string>& inputs,
                                                           const std::vector<std::string>& params,
                                                           const std::string& function_name) {
  const std::string listed = absl::StrCat("its parameters: ", params.empty() ? "none" : absl::StrJoin(params, ", "));
  std::vector<std::optional<std::string>> ordered(params.size());
  std::vector<std::string> positional;
  for (const std::string& input : inputs) {
    std::optional<std::string> name = NamePart(input);
    std::error_code error;
    if (name && std::filesystem::exists(input, error)) name.reset();  // a file named a=b.npy
    if (!name) {
      positional.push_back(input);
      continue;
    }
    auto it = std::find(params.begin(), params.end(), *name);
    if (it == params.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input ", input, ": function '", function_name, "' has no parameter '", *name, "' (", listed, ")"));
    }
    std::optional<std::string>& slot = ordered[static_cast<size_t>(it - params.begin())];
    if (slot) return absl::InvalidArgumentError(absl::StrCat("function '", function_name, "' parameter '", *name, "' is given twice"));
    slot = input.substr(name->size() + 1);
  }
  if (positional.size() == inputs.size()) return inputs;  // none named: the VM reports a wrong count, naming the parameters
  // Positional inputs fill the parameters not given by name, in order.
  size_t next = 0;
  for (std::optional<std::string>& slot : ordered) {
    if (!slot && next < positional.size()) slot = positional[next++];
  }
  if (next < positional.size()) {
    return absl::InvalidArgumentError(absl::StrCat("function '", function_name, "' takes ", params.size(), " inputs; '",
                                                   positional[next], "' is one too many (", listed, ")"));
  }
  std::vector<std::string> result;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!ordered[i]) {
      return absl::InvalidArgumentError(absl::StrCat("function '", function_name, "' parameter '", params[i],
                                                     "' has no --input (give ", params[i], "=SPEC, or SPEC in order)"));
    }
    result.push_back(*ordered[i]);
  }
  return result;
}

}  // namespace kiln::tools
