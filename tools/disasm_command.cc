#include <cstdio>
#include <cstring>
#include <string>

#include "support/file_io.h"
#include "tools/commands.h"
#include "vm/disassembler.h"
#include "vm/executable.h"

namespace kiln::tools {

int DisasmCommand(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(argc == 2 ? stdout : stderr,
                 "usage: kiln disasm FILE.kx\n\n"
                 "Prints an executable's tables (constants, builtins, kernels) and the bytecode of\n"
                 "every function. The file is decoded and verified, but no kernel object is loaded.\n");
    return argc == 2 ? 0 : 2;
  }
  absl::StatusOr<std::string> bytes = support::ReadFile(argv[1]);
  if (!bytes.ok()) {
    std::fprintf(stderr, "kiln disasm: %s\n", std::string(bytes.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<vm::Executable::Contents> contents = vm::Executable::Decode(*bytes);
  if (!contents.ok()) {
    std::fprintf(stderr, "kiln disasm: %s: %s\n", argv[1], std::string(contents.status().message()).c_str());
    return 1;
  }
  std::fputs(vm::Disassemble(*contents).c_str(), stdout);
  return 0;
}

}  // namespace kiln::tools
