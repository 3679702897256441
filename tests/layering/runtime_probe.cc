// Linked against the runtime libraries only (see CMakeLists.txt beside this file). It
// calls the runtime's public entry points, so everything they pull in is linked and the
// layering test can inspect it.
#include "builtins/default_builtins.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

int main(int argc, char** argv) {
  if (argc < 2) return 0;
  auto exe = kiln::vm::Executable::LoadFile(argv[1], kiln::builtins::DefaultRegistry());
  if (!exe.ok()) return 1;
  kiln::vm::VirtualMachine vm(*exe);
  return vm.Invoke("main", {}).ok() ? 0 : 1;
}
