// gpu_op_check: runs the operator harness bundle (tests/codegen/cuda_op_harness_test.cc,
// CudaGpuBundle) on a GPU, without the compiler: the runtime libraries only (no LLVM, no
// NVRTC), so it travels to a GPU machine with its shared libraries (scripts/gpu_check.sh).
//
//     gpu_op_check BUNDLE_DIR [--device cuda:0] [--profile]
//
// For every `case` line of BUNDLE_DIR/MANIFEST: loads the executable, and for each size
// copies the inputs to the device, runs `main`, copies the result back and compares it with
// the reference's output (NaN where the reference has NaN, the same infinity, |x - y| <=
// atol + rtol * |x| elsewhere; integers equal). Prints one line per case and a summary;
// exits 1 when any case fails, 2 on a usage or setup error. --profile times every kernel as
// `kiln run --profile` does (CUDA events on the device's stream, vm::DeviceTimer), prints
// each kernel's calls and time, and fails a case whose called kernel measured no time.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builtins/default_builtins.h"
#include "formats/npy.h"
#include "vm/dtype.h"
#include "vm/executable.h"
#include "vm/tensor.h"
#include "vm/virtual_machine.h"

namespace {

using kiln::vm::Tensor;

absl::StatusOr<Tensor> ReadTensor(const std::string& path) {
  absl::StatusOr<kiln::formats::NpyArray> array = kiln::formats::ReadNpy(path);
  if (!array.ok()) return array.status();
  uint8_t code = kDLInt;
  if (array->type.kind == 'f') code = kDLFloat;
  if (array->type.kind == 'u') code = kDLUInt;
  if (array->type.kind == 'b') code = kiln::vm::kDTypeBool;
  DLDataType dtype{code, static_cast<uint8_t>(array->type.bytes * 8), 1};
  absl::StatusOr<Tensor> t = Tensor::Empty(array->shape, dtype);
  if (!t.ok()) return t.status();
  if (array->nbytes > 0) std::memcpy(t->data(), array->data, array->nbytes);
  return t;
}

double ElementAsDouble(const Tensor& t, int64_t i) {
  const char* p = static_cast<const char*>(t.data());
  const DLDataType d = t.dtype();
  if (d.code == kDLFloat) {
    if (d.bits == 32) return reinterpret_cast<const float*>(p)[i];
    if (d.bits == 64) return reinterpret_cast<const double*>(p)[i];
    if (d.bits == 16) {  // IEEE half -> double
      uint16_t h = reinterpret_cast<const uint16_t*>(p)[i];
      int sign = h >> 15, exp = (h >> 10) & 31, frac = h & 1023;
      double v = exp == 0 ? std::ldexp(frac, -24) : exp == 31 ? (frac ? NAN : INFINITY) : std::ldexp(frac + 1024, exp - 25);
      return sign ? -v : v;
    }
  }
  int64_t v = 0;
  switch (d.bits) {
    case 8: v = d.code == kDLInt ? reinterpret_cast<const int8_t*>(p)[i] : reinterpret_cast<const uint8_t*>(p)[i]; break;
    case 16: v = d.code == kDLInt ? reinterpret_cast<const int16_t*>(p)[i] : reinterpret_cast<const uint16_t*>(p)[i]; break;
    case 32: v = d.code == kDLInt ? reinterpret_cast<const int32_t*>(p)[i] : reinterpret_cast<const uint32_t*>(p)[i]; break;
    default: v = reinterpret_cast<const int64_t*>(p)[i]; break;
  }
  return static_cast<double>(v);
}

// "" when they agree, else the first mismatch.
std::string Compare(const Tensor& expected, const Tensor& actual, double rtol, double atol) {
  if (expected.shape() != actual.shape() || expected.dtype().code != actual.dtype().code ||
      expected.dtype().bits != actual.dtype().bits) {
    return absl::StrCat("expected ", expected.Describe(), ", got ", actual.Describe());
  }
  const bool is_float = expected.dtype().code == kDLFloat;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double x = ElementAsDouble(expected, i), y = ElementAsDouble(actual, i);
    const bool ok = !is_float          ? x == y
                    : std::isnan(x)    ? std::isnan(y)
                    : std::isinf(x)    ? x == y
                                       : std::abs(x - y) <= atol + rtol * std::abs(x);
    if (!ok) return absl::StrCat("element ", i, ": expected ", x, ", got ", y);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, device_name = "cuda:0";
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      device_name = argv[++i];
    } else if (a == "--profile") {
      profile = true;
    } else if (dir.empty()) {
      dir = a;
    } else {
      std::fprintf(stderr, "usage: gpu_op_check BUNDLE_DIR [--device cuda:0] [--profile]\n");
      return 2;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: gpu_op_check BUNDLE_DIR [--device cuda:0] [--profile]\n");
    return 2;
  }
  absl::StatusOr<kiln::vm::Device*> device = kiln::vm::GetDevice(device_name);
  if (!device.ok()) {
    std::fprintf(stderr, "gpu_op_check: %s\n", std::string(device.status().message()).c_str());
    return 2;
  }
  std::ifstream manifest(dir + "/MANIFEST");
  if (!manifest) {
    std::fprintf(stderr, "gpu_op_check: cannot read %s/MANIFEST\n", dir.c_str());
    return 2;
  }
  int passed = 0, failed = 0;
  std::string line;
  while (std::getline(manifest, line)) {
    std::istringstream in(line);
    std::string word, name, file;
    double rtol = 0, atol = 0;
    int sizes = 0, inputs = 0;
    if (!(in >> word) || word != "case" || !(in >> name >> file >> rtol >> atol >> sizes >> inputs)) continue;
    std::string failure;
    absl::StatusOr<std::shared_ptr<const kiln::vm::Executable>> exe =
        kiln::vm::Executable::LoadFile(dir + "/" + file, kiln::builtins::DefaultRegistry());
    std::unique_ptr<kiln::vm::VirtualMachine> machine;
    if (!exe.ok()) {
      failure = std::string(exe.status().message());
    } else {
      absl::StatusOr<std::unique_ptr<kiln::vm::VirtualMachine>> created = kiln::vm::VirtualMachine::Create(*exe, *device);
      if (created.ok()) {
        machine = *std::move(created);
        machine->EnableProfiling(profile);
      } else {
        failure = std::string(created.status().message());
      }
    }
    for (int s = 0; s < sizes && failure.empty(); ++s) {
      std::vector<kiln::vm::Value> args;
      for (int k = 0; k < inputs && failure.empty(); ++k) {
        absl::StatusOr<Tensor> t = ReadTensor(absl::StrCat(dir, "/", name, ".", s, ".in", k, ".npy"));
        if (t.ok()) t = t->CopyTo(*device);
        if (!t.ok()) failure = std::string(t.status().message());
        else args.emplace_back(*t);
      }
      if (!failure.empty()) break;
      absl::StatusOr<Tensor> expected = ReadTensor(absl::StrCat(dir, "/", name, ".", s, ".out.npy"));
      absl::StatusOr<kiln::vm::Value> result = machine->Invoke("main", args);
      if (!expected.ok()) {
        failure = std::string(expected.status().message());
      } else if (!result.ok()) {
        failure = absl::StrCat("size ", s, ": ", result.status().message());
      } else if (!result->is_tensor()) {
        failure = absl::StrCat("size ", s, ": the result is not a tensor");
      } else {
        absl::StatusOr<Tensor> host = result->as_tensor().CopyTo(kiln::vm::CpuDevice());
        if (!host.ok()) failure = std::string(host.status().message());
        else if (std::string d = Compare(*expected, *host, rtol, atol); !d.empty()) failure = absl::StrCat("size ", s, ": ", d);
      }
    }
    if (profile && failure.empty()) {
      const kiln::vm::VirtualMachine::Profile& times = machine->profile();
      const std::vector<kiln::vm::KernelDecl>& kernels = (*exe)->contents().kernels;
      for (size_t k = 0; k < kernels.size(); ++k) {
        if (times.kernel_calls[k] == 0) continue;
        std::printf("  profile %-40s %4lld calls %10.1f us\n", kernels[k].name.c_str(),
                    static_cast<long long>(times.kernel_calls[k]), static_cast<double>(times.kernel_ns[k]) / 1e3);
        if (times.kernel_ns[k] <= 0 && failure.empty()) failure = absl::StrCat("kernel ", kernels[k].name, " timed 0 ns");
      }
    }
    if (failure.empty()) {
      ++passed;
      std::printf("PASS %s\n", name.c_str());
    } else {
      ++failed;
      std::printf("FAIL %s: %s\n", name.c_str(), failure.c_str());
    }
    std::fflush(stdout);
  }
  std::printf("gpu_op_check on %s: %d passed, %d failed\n", (*device)->name().c_str(), passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}
