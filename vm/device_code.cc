#include "vm/device_code.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"

namespace kiln::vm {

std::optional<size_t> ChooseBinary(const DeviceCode& code, int major, int minor) {
  const int device = major * 10 + minor;
  std::optional<size_t> best_ptx;
  int best_ptx_arch = -1;
  for (size_t i = 0; i < code.binaries.size(); ++i) {
    const DeviceBinary& b = code.binaries[i];
    int arch = 0;
    if (!absl::StartsWith(b.arch, "sm_") || !absl::SimpleAtoi(b.arch.substr(3), &arch)) continue;
    if (b.format == "cubin" && arch == device) return i;
    if (b.format == "ptx" && arch <= device && arch > best_ptx_arch) {
      best_ptx = i;
      best_ptx_arch = arch;
    }
  }
  return best_ptx;
}

}  // namespace kiln::vm
