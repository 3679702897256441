// The kiln subcommands. Each is defined in its own <name>_command.cc and receives the
// arguments after the subcommand name (argv[0] is the subcommand itself).
#pragma once

namespace kiln::tools {

int CheckCommand(int argc, char** argv);   // check_command.cc
int RunCommand(int argc, char** argv);     // run_command.cc
int DisasmCommand(int argc, char** argv);  // disasm_command.cc
int CompileCommand(int argc, char** argv);  // compile_command.cc
int GenerateCommand(int argc, char** argv);  // generate_command.cc
int ServeCommand(int argc, char** argv);     // serve_command.cc
int ImportCommand(int argc, char** argv);    // import_command.cc
int OnnxTestCommand(int argc, char** argv);  // onnx_test_command.cc
int TuneCommand(int argc, char** argv);      // tune_command.cc

}  // namespace kiln::tools
