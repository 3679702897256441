// kiln check: parse a .kir module, normalize it (A-normal form, struct info inferred for
// every binding), check well-formedness, and print it, or print every error and fail.
#include <cstdio>
#include <string>

#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/well_formed.h"
#include "support/file_io.h"
#include "tools/commands.h"
#include "tools/usage_error.h"

namespace kiln::tools {
namespace {

constexpr const char* kUsage =
    "usage: kiln check FILE.kir [--quiet]\n"
    "\n"
    "Parses FILE.kir (the IR text format, docs/ir.md), infers the struct info of every\n"
    "binding (shapes stay symbolic), checks the module is well formed, and prints it with\n"
    "each binding's struct info. On errors, prints them (with file:line:col where the\n"
    "parser can tell) and exits with status 1.\n"
    "\n"
    "  -q, --quiet   print nothing on success\n";

}  // namespace

int CheckCommand(int argc, char** argv) {
  std::string path;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--quiet" || arg == "-q") {
      quiet = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError("check", UnknownOptionMessage(arg, kUsage));
    } else if (path.empty()) {
      path = arg;
    } else {
      std::fprintf(stderr, "kiln check: one file at a time ('%s' and '%s')\n", path.c_str(), arg.c_str());
      return 2;
    }
  }
  if (path.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }

  absl::StatusOr<std::string> text = support::ReadFile(path);
  if (!text.ok()) {
    std::fprintf(stderr, "kiln check: %s\n", std::string(text.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(*text, path);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n", std::string(parsed.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<relax::IRModule> module = relax::NormalizeModule(parsed->module, &parsed->locations);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", std::string(module.status().message()).c_str());
    return 1;
  }
  if (absl::Status wf = relax::CheckWellFormed(*module); !wf.ok()) {
    std::fprintf(stderr, "%s: the module is not well formed:\n%s\n", path.c_str(),
                 std::string(wf.message()).c_str());
    return 1;
  }
  if (!quiet) std::fputs(relax::PrintModule(*module).c_str(), stdout);
  return 0;
}

}  // namespace kiln::tools
