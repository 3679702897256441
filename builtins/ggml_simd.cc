#include "builtins/ggml_simd.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace kiln::builtins {

namespace {

GgmlSimd FromHost() {
  if (const char* forced = std::getenv("KILN_GGML_SIMD"); forced != nullptr && *forced != '\0') {
    absl::StatusOr<GgmlSimd> simd = ParseGgmlSimd(forced);
    if (simd.ok()) return *simd;
    // A typo must not silently change results: say so once, then follow the CPU.
    std::fprintf(stderr, "kiln: ignoring KILN_GGML_SIMD: %s\n", std::string(simd.status().message()).c_str());
  }
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return avx512 ? GgmlSimd::kAvx512 : GgmlSimd::kAvx2;
}

std::atomic<GgmlSimd>& Active() {
  static std::atomic<GgmlSimd> active{FromHost()};
  return active;
}

}  // namespace

GgmlSimd ActiveGgmlSimd() { return Active().load(std::memory_order_relaxed); }

void SetGgmlSimd(GgmlSimd simd) { Active().store(simd, std::memory_order_relaxed); }

const char* GgmlSimdName(GgmlSimd simd) { return simd == GgmlSimd::kAvx512 ? "avx512" : "avx2"; }

absl::StatusOr<GgmlSimd> ParseGgmlSimd(const char* text) {
  if (std::strcmp(text, "avx2") == 0) return GgmlSimd::kAvx2;
  if (std::strcmp(text, "avx512") == 0) return GgmlSimd::kAvx512;
  return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a llama.cpp CPU build (avx2 or avx512)"));
}

}  // namespace kiln::builtins
