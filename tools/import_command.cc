// kiln import: an ONNX model -> the Relax module in the IR text format (docs/onnx.md).
#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/strings/numbers.h"
#include "frontends/onnx/importer.h"
#include "relax/text_printer.h"
#include "support/file_io.h"
#include "tools/commands.h"
#include "tools/onnx_model.h"
#include "tools/option_value.h"
#include "tools/usage_error.h"

namespace kiln::tools {
namespace {

constexpr const char* kUsage =
    "usage: kiln import MODEL.onnx [-o MODEL.kir] [--bind NAME=FILE.pb]... [options]\n"
    "\n"
    "Imports an ONNX model into a Relax module (function 'main': one parameter per graph\n"
    "input, the graph outputs as result) and prints it in the IR text format, or writes it\n"
    "to -o. 'kiln check' and 'kiln compile' read the result; 'kiln compile' and 'kiln run'\n"
    "also take the .onnx file directly. docs/onnx.md lists the supported operators.\n"
    "\n"
    "  -o, --output FILE     write the module to FILE instead of standard output\n"
    "  --bind NAME=FILE.pb   give graph input NAME the data of a TensorProto file at import\n"
    "                        time: it becomes a constant (needed when an operator's output\n"
    "                        shape depends on it: Reshape's shape, Expand's shape, ...)\n"
    "  --no-check            skip ONNX's model checker\n"
    "  --list-ops [OPSET]    print the supported operator types (at OPSET, default 17)\n";

}  // namespace

int ImportCommand(int argc, char** argv) {
  std::string path, output;
  frontends::onnx::ImportOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (OptionValue(argc, argv, &i, "-o", &output) || OptionValue(argc, argv, &i, "--output", &output)) {
      // `-o "$OUT"` with OUT unset would otherwise print the module instead of writing it.
      if (output.empty()) return UsageError("import", "-o needs a file name, got ''");
    } else if (OptionValue(argc, argv, &i, "--bind", &value)) {
      if (absl::Status s = AddBinding(value, options); !s.ok()) {
        std::fprintf(stderr, "kiln import: %s\n", std::string(s.message()).c_str());
        return 1;
      }
    } else if (arg == "--no-check") {
      options.check = false;
    } else if (arg == "--list-ops") {
      int64_t opset = 17;
      // A word that is no opset number is an error, not opset 0 (an empty list of ai.onnx
      // operators, as std::atoi read 'abc').
      if (i + 1 < argc && argv[i + 1][0] != '-') {
        const std::string text = argv[++i];
        if (!absl::SimpleAtoi(text, &opset) || opset < 1) {
          return UsageError("import", "--list-ops takes an opset version (1 or more), got '" + text + "'");
        }
      }
      for (const std::string& op : frontends::onnx::SupportedOperators(opset)) std::printf("%s\n", op.c_str());
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError("import", UnknownOptionMessage(arg, kUsage));
    } else if (path.empty()) {
      path = arg;
    } else {
      std::fprintf(stderr, "kiln import: one model at a time ('%s' and '%s')\n", path.c_str(), arg.c_str());
      return 2;
    }
  }
  if (path.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  // `-o model.onnx` for `model.onnx` replaced the model by its text, as kiln compile once
  // replaced a source by the executable.
  if (std::error_code same_error; !output.empty() && std::filesystem::equivalent(path, output, same_error)) {
    return UsageError("import", "-o '" + output + "' is the input model; the module text would overwrite it (give FILE.kir)");
  }
  absl::StatusOr<frontends::onnx::ImportResult> imported = frontends::onnx::ImportOnnxFile(path, options);
  if (!imported.ok()) {
    std::fprintf(stderr, "kiln import: %s\n", std::string(imported.status().message()).c_str());
    return 1;
  }
  std::string text = relax::PrintModule(imported->module);
  if (output.empty()) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  if (absl::Status written = support::WriteFile(output, text); !written.ok()) {
    std::fprintf(stderr, "kiln import: %s\n", std::string(written.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace kiln::tools
