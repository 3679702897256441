#include "vm/cpu_features.h"

#include <cpuid.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::vm {
namespace {

enum Reg : uint8_t { kEax, kEbx, kEcx, kEdx };
// Register state the OS must save for the extension to be usable (XCR0 bits).
enum State : uint8_t { kNoState, kAvxState, kAvx512State, kAmxState };

struct Feature {
  const char* name;  // LLVM's name
  uint32_t leaf, subleaf;
  Reg reg;
  uint8_t bit;
  State state;
};

// Bits from the Intel SDM / AMD APM cpuid tables.
constexpr Feature kFeatures[] = {
    {"cx8", 1, 0, kEdx, 8, kNoState},          {"cmov", 1, 0, kEdx, 15, kNoState},
    {"mmx", 1, 0, kEdx, 23, kNoState},         {"fxsr", 1, 0, kEdx, 24, kNoState},
    {"sse", 1, 0, kEdx, 25, kNoState},         {"sse2", 1, 0, kEdx, 26, kNoState},
    {"sse3", 1, 0, kEcx, 0, kNoState},         {"pclmul", 1, 0, kEcx, 1, kNoState},
    {"ssse3", 1, 0, kEcx, 9, kNoState},        {"fma", 1, 0, kEcx, 12, kAvxState},
    {"cx16", 1, 0, kEcx, 13, kNoState},        {"sse4.1", 1, 0, kEcx, 19, kNoState},
    {"sse4.2", 1, 0, kEcx, 20, kNoState},      {"movbe", 1, 0, kEcx, 22, kNoState},
    {"popcnt", 1, 0, kEcx, 23, kNoState},      {"aes", 1, 0, kEcx, 25, kNoState},
    {"avx", 1, 0, kEcx, 28, kAvxState},        {"f16c", 1, 0, kEcx, 29, kAvxState},
    {"bmi", 7, 0, kEbx, 3, kNoState},          {"avx2", 7, 0, kEbx, 5, kAvxState},
    {"bmi2", 7, 0, kEbx, 8, kNoState},         {"avx512f", 7, 0, kEbx, 16, kAvx512State},
    {"avx512dq", 7, 0, kEbx, 17, kAvx512State}, {"adx", 7, 0, kEbx, 19, kNoState},
    {"avx512ifma", 7, 0, kEbx, 21, kAvx512State}, {"avx512cd", 7, 0, kEbx, 28, kAvx512State},
    {"sha", 7, 0, kEbx, 29, kNoState},         {"avx512bw", 7, 0, kEbx, 30, kAvx512State},
    {"avx512vl", 7, 0, kEbx, 31, kAvx512State}, {"avx512vbmi", 7, 0, kEcx, 1, kAvx512State},
    {"avx512vbmi2", 7, 0, kEcx, 6, kAvx512State}, {"gfni", 7, 0, kEcx, 8, kNoState},
    {"vaes", 7, 0, kEcx, 9, kAvxState},        {"vpclmulqdq", 7, 0, kEcx, 10, kAvxState},
    {"avx512vnni", 7, 0, kEcx, 11, kAvx512State}, {"avx512bitalg", 7, 0, kEcx, 12, kAvx512State},
    {"avx512vpopcntdq", 7, 0, kEcx, 14, kAvx512State},
    {"avx512vp2intersect", 7, 0, kEdx, 8, kAvx512State},
    {"amx-bf16", 7, 0, kEdx, 22, kAmxState},   {"avx512fp16", 7, 0, kEdx, 23, kAvx512State},
    {"amx-tile", 7, 0, kEdx, 24, kAmxState},   {"amx-int8", 7, 0, kEdx, 25, kAmxState},
    {"avxvnni", 7, 1, kEax, 4, kAvxState},     {"avx512bf16", 7, 1, kEax, 5, kAvx512State},
    {"sahf", 0x80000001, 0, kEcx, 0, kNoState}, {"lzcnt", 0x80000001, 0, kEcx, 5, kNoState},
    {"sse4a", 0x80000001, 0, kEcx, 6, kNoState}, {"prfchw", 0x80000001, 0, kEcx, 8, kNoState},
    {"xop", 0x80000001, 0, kEcx, 11, kAvxState}, {"fma4", 0x80000001, 0, kEcx, 16, kAvxState},
    {"tbm", 0x80000001, 0, kEcx, 21, kNoState},
};

struct Regs {
  uint32_t r[4] = {0, 0, 0, 0};
};

Regs Cpuid(uint32_t leaf, uint32_t subleaf) {
  Regs regs;
  // __get_cpuid_count checks the leaf against the maximum (basic or extended) first and
  // leaves zeros when it is not supported.
  if (!__get_cpuid_count(leaf, subleaf, &regs.r[kEax], &regs.r[kEbx], &regs.r[kEcx], &regs.r[kEdx])) return Regs();
  return regs;
}

struct HostState {
  bool avx = false, avx512 = false, amx = false;
  HostState() {
    Regs one = Cpuid(1, 0);
    bool osxsave = (one.r[kEcx] >> 27) & 1;
    if (!osxsave) return;
    uint32_t xcr0_lo = 0, xcr0_hi = 0;
    // xgetbv with ecx = 0 reads XCR0: which register states the OS saves on a switch.
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    avx = (xcr0_lo & 0x6) == 0x6;                   // SSE and AVX (YMM) state
    avx512 = avx && (xcr0_lo & 0xe0) == 0xe0;       // opmask, ZMM_Hi256, Hi16_ZMM
    amx = (xcr0_lo & 0x60000) == 0x60000;           // XTILECFG, XTILEDATA
  }
};

bool Detect(const Feature& f, const HostState& state) {
  bool ok = false;
  switch (f.state) {
    case kNoState: ok = true; break;
    case kAvxState: ok = state.avx; break;
    case kAvx512State: ok = state.avx512; break;
    case kAmxState: ok = state.amx; break;
  }
  // A sub-leaf exists only up to the maximum that sub-leaf 0 reports in eax.
  if (f.subleaf > 0 && Cpuid(f.leaf, 0).r[kEax] < f.subleaf) return false;
  return ok && ((Cpuid(f.leaf, f.subleaf).r[f.reg] >> f.bit) & 1) != 0;
}

const Feature* Find(const std::string& name) {
  for (const Feature& f : kFeatures) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

// Computed once: cpuid is slow (it serialises the pipeline) and the answer never changes.
const std::vector<bool>& HostFeatureTable() {
  static const std::vector<bool>* table = [] {
    HostState state;
    auto* t = new std::vector<bool>();
    for (const Feature& f : kFeatures) t->push_back(Detect(f, state));
    return t;
  }();
  return *table;
}

}  // namespace

const std::vector<std::string>& KnownCpuFeatures() {
  static const std::vector<std::string>* names = [] {
    auto* v = new std::vector<std::string>();
    for (const Feature& f : kFeatures) v->push_back(f.name);
    return v;
  }();
  return *names;
}

bool IsKnownCpuFeature(const std::string& name) { return Find(name) != nullptr; }

bool HostHasCpuFeature(const std::string& name) {
  const Feature* f = Find(name);
  return f != nullptr && HostFeatureTable()[static_cast<size_t>(f - kFeatures)];
}

std::string HostCpuDescription() {
  char brand[49] = {};
  if (Cpuid(0x80000000, 0).r[kEax] >= 0x80000004) {
    for (uint32_t i = 0; i < 3; ++i) {
      Regs regs = Cpuid(0x80000002 + i, 0);
      std::memcpy(brand + 16 * i, regs.r, 16);
    }
  }
  std::string text(absl::StripAsciiWhitespace(brand));
  return text.empty() ? std::string("this CPU") : text;
}

absl::Status CheckCpuFeatures(const std::string& cpu, const std::vector<std::string>& features) {
  std::vector<std::string> unknown, missing;
  for (const std::string& name : features) {
    if (!IsKnownCpuFeature(name)) {
      unknown.push_back(name);
    } else if (!HostHasCpuFeature(name)) {
      missing.push_back(name);
    }
  }
  if (!unknown.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the executable's kernels were compiled for CPU '", cpu, "' with features this runtime cannot detect (",
        absl::StrJoin(unknown, ", "), "); use a newer kiln runtime or recompile with this one"));
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the executable's kernels were compiled for CPU '", cpu, "' and use ", absl::StrJoin(missing, ", "),
        ", which this CPU (", HostCpuDescription(),
        ") lacks; recompile with `kiln compile --mcpu host` on this machine (or an --mcpu it supports)"));
  }
  return absl::OkStatus();
}

}  // namespace kiln::vm
