// kiln compile: a .kir module -> a .kx executable. Parse, the Relax pipeline
// (relax/transform/pipeline.h), then kernels and VM code (codegen/build_executable.h).
// A .gguf model is built into a Relax module first (codegen/compile_gguf_model.h).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "builtins/default_builtins.h"
#include "builtins/ggml_simd.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"
#include "tir/target.h"
#include "tools/commands.h"
#include "codegen/compile_gguf_model.h"
#include "tools/model_source.h"
#include "tools/onnx_model.h"
#include "tools/option_value.h"
#include "tools/usage_error.h"
#include "tune/tuning_db.h"

namespace kiln::tools {
namespace {

constexpr const char* kUsage =
    "usage: kiln compile FILE.kir [--target cpu|vulkan|cuda] -o FILE.kx [options]\n"
    "       kiln compile MODEL.gguf -o MODEL.kx [options]\n"
    "       kiln compile MODEL.onnx -o MODEL.kx [--bind NAME=FILE.pb]... [options]\n"
    "\n"
    "Compiles a module in the IR text format (docs/ir.md) to an executable that\n"
    "'kiln run' loads: the Relax pipeline, then every PrimFunc called through R.call_tir\n"
    "compiled into the target's kernels (one CPU shared object, SPIR-V modules or CUDA\n"
    "cubins and PTX carried in the executable), then bytecode for every Relax function.\n"
    "Tensor operators (R.add, R.matmul, ...) are legalized to PrimFuncs first.\n"
    "\n"
    "A GGUF language model (Llama family: llama, qwen2) is built into a module with\n"
    "functions prefill and decode over a paged KV cache (docs/llm.md); the executable\n"
    "references the GGUF file for its weights instead of copying them, and\n"
    "'kiln generate MODEL.kx' runs it.\n"
    "\n"
    "An ONNX model is imported first (as 'kiln import' does, docs/onnx.md); --bind NAME=FILE.pb\n"
    "gives a graph input its data at import time.\n"
    "\n"
    "  --target TARGET     what to compile for: 'cpu' (the default), 'cuda' (NVRTC, PTX and\n"
    "                      cubin for sm_80 and sm_90; 'cuda -arch=sm_90' for one), 'vulkan' (SPIR-V)\n"
    "                      or a target's text form, e.g. \"cpu -mcpu=znver3 -vector-bits=256\n"
    "                      -num-threads=4\" (docs/codegen.md)\n"
    "  -o, --output FILE   where to write the executable (default: FILE with .kx)\n"
    "  --mcpu NAME         the CPU to generate code for: 'host' (default) or an LLVM x86\n"
    "                      CPU name such as haswell, skylake-avx512, znver3, x86-64-v3\n"
    "                      (the same as -mcpu=NAME in --target)\n"
    "  --libs openblas|cublas|none  hand matmuls to a vendor library (pass\n"
    "                      dispatch_libraries), by default the target's: for cpu\n"
    "                      OpenBLAS for the float32 2-D matmuls (k*n >= 4096) whose shape\n"
    "                      class measured faster there than generated (docs/schedule.md);\n"
    "                      an explicit 'openblas' sends all of them; quantized\n"
    "                      matmuls to Kiln's CPU library kernels; for cuda 'cublas'\n"
    "                      (float32/float16 matmuls, batched and transposed, k*n >= 4096);\n"
    "                      vulkan has none. 'none' compiles every operator to generated\n"
    "                      kernels\n"
    "  --no-plan-memory    give every intermediate tensor its own allocation (pass\n"
    "                      plan_memory off; by default tensors whose lifetimes do not\n"
    "                      overlap share storage)\n"
    "  --no-fuse           one kernel per operator: skip operator fusion (passes\n"
    "                      annotate_patterns, fuse_ops, fuse_tir, which otherwise merge\n"
    "                      chains such as matmul + bias add + gelu into one kernel)\n"
    "  --max-tokens N      GGUF models: the most tokens one call takes (default: the\n"
    "                      model's context length)\n"
    "  --dump-after=PASS   print the module after PASS to stderr (repeatable; a comma\n"
    "                      separated list works too)\n"
    "  --dump-all          print the module after every pass to stderr\n"
    "  --time-passes       print each pass's and each stage's wall time to stderr\n"
    "  --check             check the module is well formed after every pass (always\n"
    "                      on in debug builds)\n"
    "  --tuning-db FILE    replay the best tuning records of FILE ('kiln tune', docs/tuning.md):\n"
    "                      each kernel the file names is scheduled with its fastest knobs, and\n"
    "                      dispatches on its symbolic size when the best differ by size\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "kiln compile: %s\n", message.c_str());
  return 1;
}

int Usage(const std::string& message) { return UsageError("compile", message); }

}  // namespace

int CompileCommand(int argc, char** argv) {
  std::string path, output, target = "cpu", mcpu;
  relax::PipelineOptions options;
#ifndef NDEBUG
  options.check_well_formed = true;  // debug builds catch a pass that breaks the IR at that pass
#endif
  std::string libs;  // empty: the target's library
  std::string max_tokens_text, tuning_db;
  bool mcpu_given = false, tuning_db_given = false;
  frontends::onnx::ImportOptions onnx_options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag, std::string* out) { return OptionValue(argc, argv, &i, flag, out); };
    std::string v;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (value("-o", &output) || value("--output", &output)) {
      // `-o "$OUT"` with OUT unset would otherwise write MODEL.kx, maybe over another build.
      if (output.empty()) return Usage("-o needs a file name, got ''");
    } else if (value("--mcpu", &mcpu)) {
      mcpu_given = true;
    } else if (value("--tuning-db", &tuning_db)) {
      tuning_db_given = true;
    } else if (value("--target", &target) || value("--libs", &libs) || value("--max-tokens", &max_tokens_text)) {
    } else if (value("--bind", &v)) {
      if (absl::Status bound = AddBinding(v, onnx_options); !bound.ok()) return Fail(std::string(bound.message()));
    } else if (value("--dump-after", &v)) {
      // Empty names are kept, so that `--dump-after=` or `a,,b` is refused listing the passes
      // instead of compiling without the dump the user asked for.
      for (absl::string_view name : absl::StrSplit(v, ',')) options.dump_after.insert(std::string(name));
    } else if (arg == "--no-fuse") {
      options.fuse = false;
    } else if (arg == "--dump-all") {
      options.dump_all = true;
    } else if (arg == "--time-passes") {
      options.time_passes = true;
    } else if (arg == "--check") {
      options.check_well_formed = true;
    } else if (arg == "--no-plan-memory") {
      options.plan_memory = false;
    } else if (arg == "--target" || arg == "-o" || arg == "--output" || arg == "--mcpu" || arg == "--dump-after" ||
               arg == "--libs" || arg == "--max-tokens" || arg == "--bind" || arg == "--tuning-db") {
      return Usage("option '" + arg + "' needs a value");
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage(UnknownOptionMessage(arg, kUsage));
    } else if (path.empty()) {
      path = arg;
    } else {
      return Usage("one input file at a time ('" + path + "' and '" + arg + "')");
    }
  }
  if (path.empty()) return Usage("no input file");
  absl::StatusOr<tir::Target> parsed_target = tir::Target::Parse(target);
  if (!parsed_target.ok()) return Usage(std::string(parsed_target.status().message()));
  if (mcpu_given && mcpu.empty()) return Usage("--mcpu needs a CPU name, got ''");
  if (const std::string in_target = TargetAttribute(target, "mcpu");
      mcpu_given && !in_target.empty() && in_target != mcpu) {
    return Usage("--mcpu " + mcpu + " and --target's -mcpu=" + in_target + " disagree; give the CPU once");
  }
  // `--tuning-db "$DB"` with DB unset would otherwise compile untuned without a word.
  if (tuning_db_given && tuning_db.empty()) return Usage("--tuning-db needs a file name, got ''");
  // A cuda or vulkan target's kernels run on the GPU; their host parts (argument checks,
  // launches) are compiled for a baseline x86-64 CPU (or --mcpu), so the executable runs on
  // any GPU machine. Each target has its library: OpenBLAS for cpu, cuBLAS for cuda.
  const std::string target_library = parsed_target->kind == tir::TargetKind::kCpu    ? "openblas"
                                     : parsed_target->kind == tir::TargetKind::kCuda ? "cublas"
                                                                                     : "none";
  // The default sends a matmul to OpenBLAS where that measured faster for its shape class
  // (relax/transform/library_dispatch_evidence.h); `--libs openblas` sends every one it can.
  const bool libs_by_evidence = libs.empty();
  if (libs.empty()) libs = target_library;
  if (libs != "openblas" && libs != "cublas" && libs != "none") {
    return Usage("unknown --libs '" + libs + "' (openblas, cublas or none)");
  }
  if (libs != "none" && libs != target_library) {
    return Usage("--libs " + libs + " does not apply to target '" + tir::TargetKindName(parsed_target->kind) +
                 "' (its library: " + target_library + ")");
  }
  std::optional<tir::Target> gpu_target;
  if (parsed_target->is_gpu()) {
    gpu_target = *parsed_target;
    parsed_target = tir::Target::Cpu(mcpu.empty() ? "x86-64" : mcpu);
  }
  if (!mcpu.empty()) parsed_target->mcpu = mcpu;
  options.libraries.openblas = libs == "openblas";
  options.libraries.openblas_by_evidence = libs_by_evidence;
  options.libraries.quantized = libs == "openblas";
  options.libraries.cublas = libs == "cublas";
  if (absl::Status names = relax::ValidatePassNames(options.dump_after); !names.ok()) {
    return Usage("--dump-after: " + std::string(names.message()));
  }
  absl::StatusOr<tir::Target> resolved = codegen::ResolveCpuTarget(*parsed_target);
  if (!resolved.ok()) return Fail(std::string(resolved.status().message()));
  options.target = gpu_target ? *gpu_target : *resolved;
  absl::StatusOr<codegen::CpuTarget> cpu = codegen::ToCpuTarget(*resolved);
  if (!cpu.ok()) return Fail(std::string(cpu.status().message()));
  if (!tuning_db.empty()) {
    absl::StatusOr<std::vector<tune::TuningRecord>> records = tune::ReadTuningDb(tuning_db);
    if (!records.ok()) return Fail(std::string(records.status().message()));
    options.tuning = std::make_shared<const tir::TuningTable>(tune::BestTable(*records));
  }
  const bool is_gguf = path.size() > 5 && path.substr(path.size() - 5) == ".gguf";
  const bool is_onnx = EndsWith(path, ".onnx");
  if (!onnx_options.bind.empty() && !is_onnx) return Usage("--bind applies to .onnx models only");
  if (output.empty()) {
    output = path;
    if (output.size() > 4 && output.substr(output.size() - 4) == ".kir") output.resize(output.size() - 4);
    if (is_gguf || is_onnx) output.resize(output.size() - 5);
    output += ".kx";
  }
  // `-o model.kir` for `model.kir` would replace the source (or the GGUF/ONNX model) by the
  // executable: a typo that loses the user's file.
  if (std::error_code same_error; std::filesystem::equivalent(path, output, same_error)) {
    return Usage("-o '" + output + "' is the input file; the executable would overwrite it (give FILE.kx)");
  }
  if (is_gguf) {
    codegen::ModelCompileOptions model_options;
    model_options.pipeline = options;
    model_options.cpu = *cpu;
    // A GPU build's kernels compute as the llama.cpp build this machine would get
    // (builtins/ggml_simd.h).
    model_options.ggml_avx2_build = builtins::ActiveGgmlSimd() == builtins::GgmlSimd::kAvx2;
    model_options.kiln_runtime = &builtins::DefaultRegistry();
    if (!max_tokens_text.empty() && (!absl::SimpleAtoi(max_tokens_text, &model_options.max_tokens) ||
                                     model_options.max_tokens <= 0)) {
      return Usage("--max-tokens needs a positive integer, got '" + max_tokens_text + "'");
    }
    absl::StatusOr<std::string> bytes = codegen::CompileGgufModel(path, model_options);
    if (!bytes.ok()) return Fail(std::string(bytes.status().message()));
    if (absl::Status written = support::WriteFile(output, *bytes); !written.ok()) {
      return Fail(std::string(written.message()));
    }
    return 0;
  }
  if (!max_tokens_text.empty()) return Usage("--max-tokens applies to .gguf models only");

  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<relax::ParsedModule> source = LoadModelSource(path, onnx_options);
  if (!source.ok()) return Fail(std::string(source.status().message()));
  relax::ParsedModule parsed = *std::move(source);
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed.module, options, &parsed.locations);
  if (!lowered.ok()) return Fail(std::string(lowered.status().message()));
  auto lowered_at = std::chrono::steady_clock::now();
  // Kiln's own builtins ("kiln.") must be this runtime's, so that a misspelt one fails here
  // rather than when `kiln run` loads the file.
  absl::StatusOr<std::string> bytes = codegen::BuildExecutable(*lowered, *cpu, {}, &builtins::DefaultRegistry());
  if (!bytes.ok()) return Fail(std::string(bytes.status().message()));
  auto built_at = std::chrono::steady_clock::now();
  if (options.time_passes) {
    auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    std::fprintf(stderr, "stage %-21s %9.3f ms\nstage %-21s %9.3f ms\n", "parse+pipeline", ms(start, lowered_at),
                 "kernels+vm", ms(lowered_at, built_at));
  }
  if (absl::Status written = support::WriteFile(output, *bytes); !written.ok()) {
    return Fail(std::string(written.message()));
  }
  return 0;
}

}  // namespace kiln::tools
