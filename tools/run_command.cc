// kiln run: load an executable and call one of its functions.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "builtins/default_builtins.h"
#include "tools/commands.h"
#include "tools/profile_report.h"
#include "tools/input_spec.h"
#include "tools/named_inputs.h"
#include "tools/npy_tensor.h"
#include "tools/onnx_model.h"
#include "tools/option_value.h"
#include "tools/usage_error.h"
#include "codegen/cpu_target.h"
#include "tir/target.h"
#include "vm/string_tensor.h"
#include "vm/virtual_machine.h"

namespace kiln::tools {
namespace {

constexpr const char* kUsage =
    "usage: kiln run FILE.kx [--fn NAME] [--input SPEC]... [options]\n"
    "       kiln run MODEL.onnx [--input SPEC]... [options]\n"
    "\n"
    "Loads FILE.kx, calls one function with the given inputs, and prints each output's\n"
    "shape, dtype and checksums (sum and sum of absolute values). An ONNX model is\n"
    "imported and compiled for this CPU in memory first (function main, docs/onnx.md).\n"
    "\n"
    "  --fn NAME          function to call (default: main)\n"
    "  --input SPEC       one per parameter, in order, or NAME=SPEC for the parameter NAME:\n"
    "                       FILE.npy                a NumPy array\n"
    "                       FILE.pb                 an ONNX TensorProto\n"
    "                       random:7x784:f32[:SEED] uniform random data (floats in [-1, 1))\n"
    "                       zeros:SHAPE:DTYPE, ones:SHAPE:DTYPE  (SHAPE 'scalar': a 0-d tensor)\n"
    "                       int:VALUE               an int64 scalar (Prim(int64), a symbolic size)\n"
    "                       float:VALUE             a float64 scalar (Prim(float64))\n"
    "                       bool:true, bool:false   a bool scalar (Prim(bool))\n"
    "                       shape:2x3               a Shape value (a Shape((n, m)) parameter)\n"
    "                     DTYPE: bool, i8..i64, u8..u64, f16, f32, f64, bf16 (or int8, float32, ...)\n"
    "  --output-dir DIR   also write the outputs as DIR/output_<i>.npy (DIR is created)\n"
    "  --device NAME      run on NAME (cpu, cuda, cuda:1, vulkan, vulkan:1; default cpu): the\n"
    "                     executable must be compiled for it (kiln compile --target cuda or\n"
    "                     --target vulkan); inputs are copied there\n"
    "  --repeat N         call the function N times and print the mean time per call\n"
    "  --warmup N         first call it N more times, untimed (default 0)\n"
    "  --profile          print the total time of each kernel and builtin, sorted\n"
    "  --stats            print the peak host memory allocated during the call, and\n"
    "                     what memory planning placed in shared storage\n";

// Sum of the elements (or of their absolute values) in double precision, each element read
// as its type says: signed integers as signed, float16 and bfloat16 decoded. NaN for types
// without a scalar reading (vector lanes, sub-byte types).
double Checksum(const vm::Tensor& t, bool absolute) {
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = vm::LoadElementAsDouble(t.data(), t.dtype(), i);
    sum += absolute ? std::fabs(v) : v;
  }
  return sum;
}

void Flatten(const vm::Value& v, std::vector<vm::Value>* out) {
  if (v.kind() == vm::Value::Kind::kTuple) {
    for (const vm::Value& field : v.as_tuple()) Flatten(field, out);
  } else {
    out->push_back(v);
  }
}

}  // namespace

int RunCommand(int argc, char** argv) {
  std::string path, fn = "main", output_dir, device_name = "cpu";
  std::vector<std::string> inputs;
  bool profile = false, stats = false;
  int repeat = 1;
  int warmup = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string v;
    auto value = [&](const char* flag) { return OptionValue(argc, argv, &i, flag, &v); };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (value("--fn")) {
      fn = v;
    } else if (value("--input")) {
      inputs.push_back(v);
    } else if (value("--device")) {
      device_name = v;
    } else if (value("--output-dir")) {
      output_dir = v;
    } else if (value("--warmup")) {
      if (!absl::SimpleAtoi(v, &warmup) || warmup < 0) {
        return UsageError("run", "--warmup needs a count of calls (0 or more), got '" + v + "'");
      }
    } else if (value("--repeat")) {
      if (!absl::SimpleAtoi(v, &repeat) || repeat < 1) {
        return UsageError("run", "--repeat needs a count of calls from 1 to 2147483647, got '" + v + "'");
      }
    } else if (arg == "--profile") {
      profile = true;
    } else if (arg == "--stats") {
      stats = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError("run", UnknownOptionMessage(arg, kUsage));
    } else if (path.empty()) {
      path = arg;
    } else {
      std::fprintf(stderr, "kiln run: more than one executable given\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  absl::StatusOr<std::shared_ptr<const vm::Executable>> exe;
  if (EndsWith(path, ".onnx")) {
    absl::StatusOr<tir::Target> target = codegen::ResolveCpuTarget(tir::Target::Cpu("host"));
    absl::StatusOr<codegen::CpuTarget> cpu = target.ok() ? codegen::ToCpuTarget(*target) : target.status();
    absl::StatusOr<OnnxCompileResult> compiled = absl::InternalError("");
    if (cpu.ok()) {
      relax::PipelineOptions pipeline;
      pipeline.target = *target;
      compiled = CompileOnnxModel(path, {}, pipeline, *cpu);
    } else {
      compiled = cpu.status();
    }
    if (compiled.ok()) {
      exe = vm::Executable::Load(std::move(compiled->executable), builtins::DefaultRegistry());
    } else {
      exe = compiled.status();
    }
  } else {
    exe = vm::Executable::LoadFile(path, builtins::DefaultRegistry());
  }
  if (!exe.ok()) {
    std::fprintf(stderr, "kiln run: %s\n", std::string(exe.status().message()).c_str());
    return 1;
  }
  // The VM's default device: where its storage is allocated and its kernels run (a cuda
  // executable's functions run on a GPU). Inputs are copied there, outputs back.
  absl::StatusOr<vm::Device*> device = vm::GetDevice(device_name);
  if (!device.ok()) {
    std::fprintf(stderr, "kiln run: %s\n", std::string(device.status().message()).c_str());
    return 1;
  }
  // The kernels run where they were compiled for: said here, as kiln generate does, not as
  // the first kernel's "argument 0 (x): expected a tensor in CPU memory, got DLPack device
  // type 7". (An executable without kernels runs anywhere.)
  const std::string compiled_for = (*exe)->CompiledFor();
  const std::string device_kind = (*device)->name().substr(0, (*device)->name().find(':'));
  if (compiled_for != device_kind && !(*exe)->contents().kernels.empty()) {
    std::fprintf(stderr, "kiln run: %s was compiled for %s, not for %s: run it with --device %s, or compile it with --target %s\n",
                 path.c_str(), compiled_for.c_str(), device_kind.c_str(), compiled_for.c_str(), device_kind.c_str());
    return 1;
  }
  if (const int32_t index = (*exe)->FindFunction(fn); index >= 0) {
    std::vector<std::string> params;
    for (const vm::ParamSignature& param : (*exe)->functions()[index].params) params.push_back(param.name);
    absl::StatusOr<std::vector<std::string>> ordered = OrderInputsByName(inputs, params, fn);
    if (!ordered.ok()) {
      std::fprintf(stderr, "kiln run: %s\n", std::string(ordered.status().message()).c_str());
      return 1;
    }
    inputs = *std::move(ordered);
  }
  std::vector<vm::Value> args;
  for (const std::string& spec : inputs) {
    absl::StatusOr<vm::Value> v = ParseInputSpec(spec);
    if (v.ok() && v->is_tensor() && (*device)->dl_device().device_type != kDLCPU) {
      absl::StatusOr<vm::Tensor> moved = v->as_tensor().CopyTo(*device);
      if (moved.ok()) {
        v = vm::Value(*std::move(moved));
      } else {
        v = moved.status();
      }
    }
    if (!v.ok()) {
      std::fprintf(stderr, "kiln run: %s\n", std::string(v.status().message()).c_str());
      return 1;
    }
    args.push_back(*v);
  }
  absl::StatusOr<std::unique_ptr<vm::VirtualMachine>> created = vm::VirtualMachine::Create(*exe, *device);
  if (!created.ok()) {
    std::fprintf(stderr, "kiln run: %s\n", std::string(created.status().message()).c_str());
    return 1;
  }
  vm::VirtualMachine& machine = **created;
  // Warm-up calls come before profiling and the memory statistics start counting.
  for (int w = 0; w < warmup; ++w) {
    absl::StatusOr<vm::Value> warm = machine.Invoke(fn, args);
    if (!warm.ok()) {
      std::fprintf(stderr, "kiln run: %s\n", std::string(warm.status().message()).c_str());
      return 1;
    }
  }
  machine.EnableProfiling(profile);
  vm::ResetCpuPeakMemory();
  machine.ResetStorageStats();
  int64_t baseline = vm::CpuMemoryStats().bytes_in_use;
  absl::StatusOr<vm::Value> result;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeat; ++r) {
    result = machine.Invoke(fn, args);
    if (!result.ok()) break;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) {
    std::fprintf(stderr, "kiln run: %s\n", std::string(result.status().message()).c_str());
    return 1;
  }
  std::vector<vm::Value> outputs;
  Flatten(*result, &outputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    vm::Value& v = outputs[i];
    if (v.is_tensor() && v.as_tensor().device().device_type != kDLCPU) {
      absl::StatusOr<vm::Tensor> host = v.as_tensor().CopyTo(vm::CpuDevice());
      if (!host.ok()) {
        std::fprintf(stderr, "kiln run: %s\n", std::string(host.status().message()).c_str());
        return 1;
      }
      v = vm::Value(*std::move(host));
    }
    if (!v.is_tensor()) {
      std::printf("output %zu: %s\n", i, v.Describe().c_str());
      continue;
    }
    const vm::Tensor& t = v.as_tensor();
    if (vm::IsStringTensor(t)) {  // the first strings, quoted (a sum means nothing here)
      std::string shown;
      for (int64_t k = 0; k < std::min<int64_t>(t.numel(), 8); ++k) absl::StrAppend(&shown, k ? ", " : "", "\"", std::string(vm::StringAt(t, k)), "\"");
      std::printf("output %zu: %s [%s%s]\n", i, t.Describe().c_str(), shown.c_str(), t.numel() > 8 ? ", ..." : "");
    } else {
      std::printf("output %zu: %s sum=%.6g abs_sum=%.6g\n", i, t.Describe().c_str(), Checksum(t, false), Checksum(t, true));
    }
    if (!output_dir.empty()) {
      std::error_code created;
      std::filesystem::create_directories(output_dir, created);  // a failure shows when writing
      std::string out_path = absl::StrCat(output_dir, "/output_", i, ".npy");
      absl::Status written = WriteNpyTensor(out_path, t);
      if (!written.ok()) {
        std::fprintf(stderr, "kiln run: %s\n", std::string(written.message()).c_str());
        return 1;
      }
    }
  }
  if (repeat > 1) std::printf("time: %.3f ms per call over %d calls\n", seconds * 1e3 / repeat, repeat);
  if (stats) {
    vm::MemoryStats m = vm::CpuMemoryStats();
    std::printf("peak memory: %lld bytes (%.3f MiB) allocated during the call, inputs excluded\n",
                static_cast<long long>(m.peak_bytes_in_use - baseline),
                static_cast<double>(m.peak_bytes_in_use - baseline) / (1 << 20));
    // Per call (every repeat runs the same instructions on the same shapes).
    const vm::VirtualMachine::StorageStats& planned = machine.storage_stats();
    if (planned.tensors > 0) {
      std::printf("planned storage: %lld tensors of %lld bytes in all placed in %lld storages of %lld bytes\n",
                  static_cast<long long>(planned.tensors / repeat), static_cast<long long>(planned.tensor_bytes / repeat),
                  static_cast<long long>(planned.storages / repeat), static_cast<long long>(planned.storage_bytes / repeat));
    }
  }
  if (profile) PrintProfile(machine, stdout);
  return 0;
}

}  // namespace kiln::tools
