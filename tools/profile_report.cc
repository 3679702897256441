#include "tools/profile_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "builtins/openblas_library.h"

namespace kiln::tools {

void PrintProfile(const vm::VirtualMachine& machine, std::FILE* out) {
  struct Row {
    std::string name;
    int64_t ns, calls;
  };
  std::vector<Row> rows;
  const vm::Executable::Contents& c = machine.executable().contents();
  const vm::VirtualMachine::Profile& p = machine.profile();
  for (size_t k = 0; k < c.kernels.size(); ++k) rows.push_back({"kernel " + c.kernels[k].name, p.kernel_ns[k], p.kernel_calls[k]});
  for (size_t b = 0; b < c.builtins.size(); ++b) rows.push_back({"builtin " + c.builtins[b].name, p.builtin_ns[b], p.builtin_calls[b]});
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.ns > b.ns; });
  std::fprintf(out, "%-48s %12s %8s\n", "callee", "total ms", "calls");
  bool used_openblas = false;
  for (const Row& row : rows) {
    if (row.calls > 0) std::fprintf(out, "%-48s %12.3f %8lld\n", row.name.c_str(), row.ns / 1e6, static_cast<long long>(row.calls));
    used_openblas |= row.calls > 0 && row.name.rfind("kernel kiln.openblas.", 0) == 0;
  }
  // Which OpenBLAS kernels ran matters as much as the time: see builtins/openblas_library.h.
  if (const builtins::OpenBlasLibrary* blas = used_openblas ? builtins::LoadOpenBlas() : nullptr) {
    std::fprintf(out, "OpenBLAS core: %s; %s\n", blas->core_name.empty() ? "unknown" : blas->core_name.c_str(),
                 blas->core_choice.c_str());
  }
}

}  // namespace kiln::tools
