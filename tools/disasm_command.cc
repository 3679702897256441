#include <cstdio>
#include <cstring>
#include <string>

#include "support/mapped_file.h"
#include "tools/commands.h"
#include "tools/usage_error.h"
#include "vm/disassembler.h"
#include "vm/executable.h"

namespace kiln::tools {

int DisasmCommand(int argc, char** argv) {
  static constexpr char kUsage[] =
      "usage: kiln disasm FILE.kx\n\n"
      "Prints an executable's tables (target CPU, constants, external weights, builtins,\n"
      "kernels) and the bytecode of every function.\n"
      "The file is decoded and verified, but no kernel object is loaded and the CPU is not checked.\n";
  // --help anywhere, as every other subcommand takes it (`kiln disasm model.kx --help` called
  // it an unknown option).
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  // Say what is wrong with the arguments, not only the usage.
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      std::fprintf(stderr, "kiln disasm: %s\n", UnknownOptionMessage(argv[i], kUsage).c_str());
      return 2;
    }
  }
  if (argc != 2) {
    std::fprintf(stderr, "kiln disasm: %s\n%s",
                 argc < 2 ? "no executable given" : "one executable at a time", kUsage);
    return 2;
  }
  absl::StatusOr<std::shared_ptr<const support::MappedFile>> image = support::MappedFile::Open(argv[1]);
  if (!image.ok()) {
    std::fprintf(stderr, "kiln disasm: %s\n", std::string(image.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<vm::Executable::Contents> contents = vm::Executable::Decode(*image);
  if (!contents.ok()) {
    std::fprintf(stderr, "kiln disasm: %s: %s\n", argv[1], std::string(contents.status().message()).c_str());
    return 1;
  }
  std::fputs(vm::Disassemble(*contents).c_str(), stdout);
  return 0;
}

}  // namespace kiln::tools
