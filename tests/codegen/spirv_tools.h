// spirv-val and spirv-dis (Debian spirv-tools) run on the SPIR-V modules the Vulkan tests
// compile.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "support/file_io.h"
#include "vm/executable.h"

namespace kiln::op_cases {

struct Tool {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// `command` through the shell.
inline Tool RunTool(const std::string& command) {
  Tool tool;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return tool;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) tool.output.append(buffer, n);
  int status = pclose(pipe);
  tool.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return tool;
}

inline bool HaveSpirvTools() { return RunTool("command -v spirv-val && command -v spirv-dis").exit_code == 0; }

// spirv-val's verdict on a module (and its disassembly, for the messages).
inline Tool Validate(const std::string& name, const std::string& bytes, std::string* disassembly = nullptr) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/kiln_vulkan_", name, ".spv");
  if (absl::Status w = support::WriteFile(path, bytes); !w.ok()) return {-1, std::string(w.message())};
  Tool tool = RunTool(absl::StrCat("spirv-val --target-env vulkan1.1 ", path));
  if (disassembly) *disassembly = RunTool(absl::StrCat("spirv-dis --no-color ", path)).output;
  std::remove(path.c_str());
  return tool;
}

// spirv-val's verdict on the SPIR-V module of an executable compiled for Vulkan.
inline Tool ValidateExecutable(const std::string& name, const vm::Executable& exe) {
  const std::vector<vm::DeviceCode>& code = exe.contents().device_code;
  if (code.size() != 1 || code[0].binaries.size() != 1) return {-1, "expected one SPIR-V module"};
  return Validate(name, code[0].binaries[0].bytes);
}

}  // namespace kiln::op_cases
