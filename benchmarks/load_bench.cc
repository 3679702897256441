// Loading an executable with large weights: mapping the file (Executable::LoadFile, the
// weights stay in the shared page cache and constants point into them) against the peer
// that reads the file into memory first (support::ReadFile + Executable::Load(bytes), how
// format 1.x loaded). Prints the time per load and the process's private (anonymous)
// memory each path adds while the executable lives; the checksum of every section is
// verified in both.
//
//   build/benchmarks/load_bench [MIB]      (default 256 MiB of float32 weights)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "builtins/default_builtins.h"
#include "support/file_io.h"
#include "vm/executable_builder.h"

namespace {

// RssAnon from /proc/self/status, in bytes: memory private to this process.
int64_t AnonymousBytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "RssAnon:") {
      int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    std::getline(in, key);
  }
  return -1;
}

template <typename F>
void Measure(const char* name, int repeats, F&& load) {
  double best = 1e30;
  int64_t added = 0;
  for (int r = 0; r < repeats; ++r) {
    int64_t before = AnonymousBytes();
    auto start = std::chrono::steady_clock::now();
    auto exe = load();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!exe.ok()) {
      std::fprintf(stderr, "%s: %s\n", name, std::string(exe.status().message()).c_str());
      std::exit(1);
    }
    best = std::min(best, ms);
    added = AnonymousBytes() - before;
  }
  std::printf("%-34s %10.1f ms per load %10.1f MiB private memory added\n", name, best,
              static_cast<double>(added) / (1 << 20));
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t mib = argc > 1 ? std::atoll(argv[1]) : 256;
  kiln::vm::ExecutableBuilder b;
  auto w = kiln::vm::Tensor::Empty({mib * (1 << 18)}, kiln::vm::DTypeFloat32());
  if (!w.ok()) return 1;
  for (int64_t i = 0; i < w->numel(); ++i) w->data_as<float>()[i] = static_cast<float>(i % 1000);
  int32_t c = b.AddConstant(kiln::vm::Value(*w));
  kiln::vm::FunctionBuilder& f = b.AddFunction("weights", {});
  int32_t r = f.NewRegister();
  f.LoadConst(r, c);
  f.Ret(r);
  auto bytes = b.Build();
  if (!bytes.ok()) return 1;
  *w = kiln::vm::Tensor();
  std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/kiln_load_bench.kx";
  if (!kiln::support::WriteFile(path, *bytes).ok()) return 1;
  bytes->clear();
  bytes->shrink_to_fit();
  std::printf("executable with %lld MiB of weights (%s)\n", static_cast<long long>(mib), path.c_str());
  const auto& registry = kiln::builtins::DefaultRegistry();
  Measure("LoadFile (mapped)", 5, [&] { return kiln::vm::Executable::LoadFile(path, registry); });
  Measure("ReadFile + Load(bytes) (copied)", 5, [&]() -> absl::StatusOr<std::shared_ptr<const kiln::vm::Executable>> {
    auto file = kiln::support::ReadFile(path);
    if (!file.ok()) return file.status();
    return kiln::vm::Executable::Load(*std::move(file), registry);
  });
  std::remove(path.c_str());
  return 0;
}
