// kiln: the command-line front door. Dispatches to one subcommand per file.
#include <cstdio>
#include <cstring>
#include <string_view>

#include "tools/commands.h"
#include "vm/executable.h"
#include "vm/kernel_abi.h"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"check", kiln::tools::CheckCommand,
     "parse a .kir module, check it, and print it with inferred struct info"},
    {"compile", kiln::tools::CompileCommand, "compile a .kir, GGUF or ONNX model to a .kx executable (--target cpu|vulkan|cuda)"},
    {"tune", kiln::tools::TuneCommand, "auto-tune a model's CPU kernels into a records database (docs/tuning.md)"},
    {"run", kiln::tools::RunCommand, "load a .kx executable and call one of its functions"},
    {"disasm", kiln::tools::DisasmCommand, "print the contents of a .kx executable"},
    {"generate", kiln::tools::GenerateCommand, "generate text with a language model (GGUF; default: bundled SmolLM2)"},
    {"import", kiln::tools::ImportCommand, "import an ONNX model into a .kir module (docs/onnx.md)"},
    {"onnx-test", kiln::tools::OnnxTestCommand, "run ONNX backend node test cases through Kiln (docs/onnx.md)"},
    {"serve", kiln::tools::ServeCommand, "serve a language model over HTTP with the OpenAI API (default: bundled SmolLM2)"},
};

void PrintUsage(std::FILE* out) {
  std::fprintf(out, "usage: kiln <command> [options]\n\ncommands:\n");
  for (const Subcommand& command : kSubcommands) {
    std::fprintf(out, "  %-9s %s\n", command.name, command.summary);
  }
  std::fprintf(out, "\n'kiln <command> --help' describes a command's options; 'kiln --version' says which\n"
                   "kiln this is and the executable format it writes.\n");
}

// What a user reports with a bug, and what decides whether a .kx loads here: the release,
// the executable format this build writes (it reads the same major version, any minor
// version up to its own) and the kernel ABI.
void PrintVersion() {
  std::printf("kiln %s\nexecutable format %d.%d, kernel ABI %d\n", KILN_VERSION, kiln::vm::kFormatMajor,
              kiln::vm::kFormatMinor, KILN_KERNEL_ABI_VERSION);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "--version" || name == "version") {
    PrintVersion();
    return 0;
  }
  if (name == "--help" || name == "-h" || name == "help") {
    // `kiln help run` is `kiln run --help`, as git and go spell it.
    if (name == "help" && argc > 2) {
      for (const Subcommand& command : kSubcommands) {
        if (std::string_view(argv[2]) == command.name) {
          char help_flag[] = "--help";
          char* help_argv[] = {argv[2], help_flag, nullptr};
          return command.run(2, help_argv);
        }
      }
      std::fprintf(stderr, "kiln help: unknown command '%s'\n\n", argv[2]);
      PrintUsage(stderr);
      return 2;
    }
    PrintUsage(stdout);
    return 0;
  }
  for (const Subcommand& command : kSubcommands) {
    if (name == command.name) return command.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "kiln: unknown command '%s'\n\n", argv[1]);
  PrintUsage(stderr);
  return 2;
}
