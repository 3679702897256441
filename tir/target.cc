#include "tir/target.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kiln::tir {
namespace {

absl::Status Invalid(std::string_view text, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("invalid target '", absl::string_view(text.data(), text.size()),
                                                 "': ", why));
}

bool ValidName(absl::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

const char* TargetKindName(TargetKind kind) {
  switch (kind) {
    case TargetKind::kCpu: return "cpu";
    case TargetKind::kCuda: return "cuda";
    case TargetKind::kVulkan: return "vulkan";
  }
  return "?";
}

Target Target::Cpu(std::string mcpu, int vector_bits, int num_threads) {
  Target t;
  t.kind = TargetKind::kCpu;
  t.mcpu = std::move(mcpu);
  t.vector_bits = vector_bits;
  t.num_threads = num_threads;
  return t;
}

Target Target::Cuda(std::string arch) {
  Target t;
  t.kind = TargetKind::kCuda;
  t.mcpu.clear();
  t.num_threads = 0;
  t.arch = std::move(arch);
  t.max_threads_per_block = 1024;
  t.max_shared_memory_per_block = 48 * 1024;
  t.warp_size = 32;
  return t;
}

Target Target::Vulkan() {
  Target t;
  t.kind = TargetKind::kVulkan;
  t.mcpu.clear();
  t.num_threads = 0;
  t.max_threads_per_block = 256;
  t.max_shared_memory_per_block = 16 * 1024;
  t.warp_size = 32;
  return t;
}

int64_t Target::MaxGridSize(int axis) const {
  switch (kind) {
    case TargetKind::kCuda: return axis == 0 ? int64_t{2147483647} : int64_t{65535};
    case TargetKind::kVulkan: return 65535;
    case TargetKind::kCpu: return 0;
  }
  return 0;
}

absl::StatusOr<Target> Target::Parse(std::string_view std_text) {
  absl::string_view text(std_text.data(), std_text.size());
  std::vector<absl::string_view> words = absl::StrSplit(text, ' ', absl::SkipEmpty());
  if (words.empty()) return Invalid(std_text, "empty; expected cpu, cuda or vulkan");
  Target t;
  if (words[0] == "cpu") {
    t = Cpu();
  } else if (words[0] == "cuda") {
    t = Cuda();
  } else if (words[0] == "vulkan") {
    t = Vulkan();
  } else {
    // Other compilers' target names (TVM's llvm, nvptx, spirv) say which kind is meant.
    std::string meant;
    if (words[0] == "llvm" || words[0] == "c" || words[0] == "x86" || words[0] == "x86_64" || words[0] == "host") {
      meant = "; for this CPU use 'cpu'";
    } else if (words[0] == "nvptx" || words[0] == "gpu" || words[0] == "nvidia") {
      meant = "; for NVIDIA GPUs use 'cuda'";
    } else if (words[0] == "spirv") {
      meant = "; for SPIR-V use 'vulkan'";
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unknown target '", words[0], "' (the kinds are cpu, cuda and vulkan", meant, ")"));
  }
  std::set<std::string> seen;
  for (size_t i = 1; i < words.size(); ++i) {
    absl::string_view word = words[i];
    size_t eq = word.find('=');
    if (word.size() < 2 || word[0] != '-' || eq == absl::string_view::npos) {
      return Invalid(std_text, absl::StrCat("expected -name=value, found '", word, "'"));
    }
    std::string name(word.substr(1, eq - 1));
    absl::string_view value = word.substr(eq + 1);
    if (!seen.insert(name).second) return Invalid(std_text, absl::StrCat("-", name, " is given twice"));
    auto positive = [&](int* out, int max) -> absl::Status {
      if (!absl::SimpleAtoi(value, out) || *out < 1 || *out > max) {
        return Invalid(std_text, absl::StrCat("-", name, " must be an integer in [1, ", max, "], found '", value, "'"));
      }
      return absl::OkStatus();
    };
    auto wrong_kind = [&]() {
      return Invalid(std_text, absl::StrCat("-", name, " is not an attribute of a ", words[0],
                                            " target (cpu: -mcpu -mattr -vector-bits -num-threads; cuda, vulkan: "
                                            "-arch -max-threads-per-block -max-shared-memory-per-block -warp-size)"));
    };
    bool cpu_attr = name == "mcpu" || name == "mattr" || name == "vector-bits" || name == "num-threads";
    bool gpu_attr = name == "arch" || name == "max-threads-per-block" || name == "max-shared-memory-per-block" ||
                    name == "warp-size";
    if (!cpu_attr && !gpu_attr) {
      return Invalid(std_text, absl::StrCat("unknown attribute -", name));
    }
    if (cpu_attr != t.is_cpu()) return wrong_kind();
    if (name == "mcpu") {
      if (!ValidName(value)) return Invalid(std_text, absl::StrCat("-mcpu needs a CPU name, found '", value, "'"));
      t.mcpu = std::string(value);
    } else if (name == "mattr") {
      for (absl::string_view f : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        if (f.size() < 2 || (f[0] != '+' && f[0] != '-') || !ValidName(f.substr(1))) {
          return Invalid(std_text, absl::StrCat("-mattr: each feature is +name or -name, found '", f, "'"));
        }
        t.features.emplace_back(f);
      }
    } else if (name == "vector-bits") {
      if (value != "128" && value != "256" && value != "512") {
        return Invalid(std_text, absl::StrCat("-vector-bits must be 128, 256 or 512, found '", value, "'"));
      }
      (void)absl::SimpleAtoi(value, &t.vector_bits);
    } else if (name == "num-threads") {
      if (absl::Status s = positive(&t.num_threads, 4096); !s.ok()) return s;
    } else if (name == "arch") {
      if (!ValidName(value)) return Invalid(std_text, absl::StrCat("-arch needs a name such as sm_90, found '", value, "'"));
      t.arch = std::string(value);
    } else if (name == "max-threads-per-block") {
      if (absl::Status s = positive(&t.max_threads_per_block, 1 << 16); !s.ok()) return s;
    } else if (name == "max-shared-memory-per-block") {
      if (absl::Status s = positive(&t.max_shared_memory_per_block, 1 << 30); !s.ok()) return s;
    } else if (name == "warp-size") {
      if (absl::Status s = positive(&t.warp_size, 1024); !s.ok()) return s;
    }
  }
  return t;
}

std::string Target::ToString() const {
  std::string out = TargetKindName(kind);
  if (is_cpu()) {
    absl::StrAppend(&out, " -mcpu=", mcpu);
    if (!features.empty()) absl::StrAppend(&out, " -mattr=", absl::StrJoin(features, ","));
    if (vector_bits > 0) absl::StrAppend(&out, " -vector-bits=", vector_bits);
    absl::StrAppend(&out, " -num-threads=", num_threads);
    return out;
  }
  if (!arch.empty()) absl::StrAppend(&out, " -arch=", arch);
  absl::StrAppend(&out, " -max-threads-per-block=", max_threads_per_block,
                  " -max-shared-memory-per-block=", max_shared_memory_per_block, " -warp-size=", warp_size);
  return out;
}

absl::StatusOr<std::optional<Target>> TargetOf(const PrimFunc& func) {
  auto it = func->attrs.find(kTargetAttr);
  if (it == func->attrs.end()) return std::optional<Target>();
  absl::StatusOr<Target> target = Target::Parse(it->second);
  if (!target.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("attribute \"target\": ", target.status().message()));
  }
  return std::optional<Target>(*std::move(target));
}

PrimFunc WithTarget(const PrimFunc& func, const Target& target) {
  std::map<std::string, std::string> attrs = func->attrs;
  attrs[kTargetAttr] = target.ToString();
  return PrimFunc(func->params, func->body, std::move(attrs));
}

}  // namespace kiln::tir
