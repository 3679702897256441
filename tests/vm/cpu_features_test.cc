// Host CPU features read with cpuid, checked against the kernel's own view in
// /proc/cpuinfo (which also reflects whether the OS enabled the register state).
#include "vm/cpu_features.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::vm {
namespace {

std::set<std::string> ProcCpuinfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

TEST(CpuFeatures, AgreeWithProcCpuinfo) {
  std::set<std::string> flags = ProcCpuinfoFlags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  // LLVM's name -> Linux's name.
  const std::pair<const char*, const char*> kNames[] = {
      {"sse2", "sse2"},       {"sse3", "pni"},          {"ssse3", "ssse3"},       {"sse4.1", "sse4_1"},
      {"sse4.2", "sse4_2"},   {"popcnt", "popcnt"},     {"avx", "avx"},           {"avx2", "avx2"},
      {"fma", "fma"},         {"f16c", "f16c"},         {"bmi", "bmi1"},          {"bmi2", "bmi2"},
      {"lzcnt", "abm"},       {"movbe", "movbe"},       {"avx512f", "avx512f"},   {"avx512bw", "avx512bw"},
      {"avx512dq", "avx512dq"}, {"avx512vl", "avx512vl"}, {"avx512cd", "avx512cd"}, {"avx512vnni", "avx512_vnni"},
      {"avx512bf16", "avx512_bf16"}, {"avx512fp16", "avx512_fp16"}, {"avxvnni", "avx_vnni"}, {"sse4a", "sse4a"},
      {"gfni", "gfni"},       {"vaes", "vaes"},         {"aes", "aes"},           {"pclmul", "pclmulqdq"},
  };
  for (const auto& [llvm, linux_name] : kNames) {
    EXPECT_TRUE(IsKnownCpuFeature(llvm)) << llvm;
    EXPECT_EQ(HostHasCpuFeature(llvm), flags.count(linux_name) == 1) << llvm << " / " << linux_name;
  }
}

TEST(CpuFeatures, KnownNamesAndAMessageNamingWhatIsMissing) {
  EXPECT_TRUE(HostHasCpuFeature("sse2"));  // every x86-64 CPU
  EXPECT_FALSE(IsKnownCpuFeature("frobnicate"));
  EXPECT_FALSE(HostHasCpuFeature("frobnicate"));
  EXPECT_TRUE(CheckCpuFeatures("x86-64", {"sse", "sse2"}).ok());
  EXPECT_FALSE(HostCpuDescription().empty());
}

}  // namespace
}  // namespace kiln::vm
