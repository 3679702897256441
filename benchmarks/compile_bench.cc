// Compile time of models that repeat themselves: L identical decoder layers (the transformer
// block of examples/models/transformer_block.kir, repeated with each layer's own weights)
// for L = 1, 4, 16, 32, and fused chains of 1,000 and 2,000 elementwise operators. For each
// it prints the kernels compiled (PrimFuncs after the pipeline), the wall time of the Relax
// pipeline (legalization, fusion, deduplication, scheduling, ...) and of code generation
// (LLVM and VM bytecode), and their sum. With identical kernels shared, an L-layer model
// should cost about one layer plus a small per-layer amount; scheduling a fused chain should
// grow linearly with its length.
//
//   build/benchmarks/compile_bench [--layers=1,4,16,32] [--chains=1000,2000]
//       [--libs=none|openblas] [--model=PATH] [--time-passes]
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"

#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR "."
#endif

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "compile_bench: %s\n", message.c_str());
  std::exit(1);
}

template <typename T>
T OrDie(absl::StatusOr<T> value, const std::string& what) {
  if (!value.ok()) Die(what + ": " + std::string(value.status().message()));
  return *std::move(value);
}

// `text` with every identifier (a `%name` included) passed through `rename`.
std::string RenameIdentifiers(const std::string& text, const std::function<std::string(const std::string&)>& rename) {
  std::string out;
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '%' || (ident(text[i]) && !std::isdigit(static_cast<unsigned char>(text[i])))) {
      size_t end = i + 1;
      while (end < text.size() && ident(text[end])) ++end;
      // An identifier after '.' is an operator name (R.matmul): left alone.
      std::string word = text.substr(i, end - i);
      out += i > 0 && text[i - 1] == '.' ? word : rename(word);
      i = end;
    } else if (std::isdigit(static_cast<unsigned char>(text[i]))) {
      size_t end = i;
      while (end < text.size() && ident(text[end])) ++end;  // 1e-05, float32 stay whole
      out += text.substr(i, end - i);
      i = end;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// The parameters of `func @main(...)` in `text`, split at top-level commas.
std::vector<std::string> MainParams(const std::string& text) {
  size_t open = text.find("func @main(");
  if (open == std::string::npos) Die("the model has no func @main");
  size_t i = open + 11;
  std::vector<std::string> params;
  std::string current;
  for (int depth = 0; i < text.size(); ++i) {
    char c = text[i];
    if (depth == 0 && (c == ',' || c == ')')) {
      params.push_back(std::string(absl::StripAsciiWhitespace(current)));
      current.clear();
      if (c == ')') break;
      continue;
    }
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    current += c;
  }
  return params;
}

// `layers` copies of the model's main function, one after the other: layer l's bindings
// are renamed `%l<l>_<name>`, its weights `<name>_<l>`, and its input is the previous
// layer's output (the first parameter, the model input, for layer 0).
std::string StackedModel(const std::string& model, int layers) {
  std::vector<std::string> params = MainParams(model);
  std::string input = params[0].substr(0, params[0].find(':'));
  std::set<std::string> weights;
  for (size_t p = 1; p < params.size(); ++p) weights.insert(params[p].substr(0, params[p].find(':')));
  size_t body_start = model.find("dataflow {");
  size_t ret = model.find("return ", body_start);
  if (body_start == std::string::npos || ret == std::string::npos) Die("the model's main is not one dataflow block");
  std::string output = std::string(absl::StripAsciiWhitespace(model.substr(ret + 7, model.find('\n', ret) - ret - 7)));
  std::string body = model.substr(body_start + 10, model.rfind('}', ret) - body_start - 10);
  size_t sig_end = model.find(") ->");
  std::string result_and_bounds = model.substr(sig_end, model.find('{', sig_end) - sig_end);

  std::vector<std::string> all_params = {params[0]};
  std::string bindings;
  for (int l = 0; l < layers; ++l) {
    for (size_t p = 1; p < params.size(); ++p) {
      all_params.push_back(RenameIdentifiers(params[p], [&](const std::string& w) {
        return weights.count(w) ? absl::StrCat(w, "_", l) : w;
      }));
    }
    const bool last = l + 1 == layers;
    bindings += RenameIdentifiers(body, [&](const std::string& w) -> std::string {
      if (w[0] == '%') return absl::StrCat("%l", l, "_", w.substr(1));
      if (weights.count(w)) return absl::StrCat(w, "_", l);
      if (w == input) return l == 0 ? input : absl::StrCat("%l", l - 1, "_", output);
      if (w == output) return last ? output : absl::StrCat("%l", l, "_", output);
      return w;
    });
  }
  return absl::StrCat("module {\n  func @main(", absl::StrJoin(all_params, ", "), result_and_bounds,
                      "{\n    dataflow {", bindings, "}\n    return ", output, "\n  }\n}\n");
}

// A chain of `length` elementwise operators over an (n, 64) tensor, fused into one kernel.
std::string ElementwiseChain(int length) {
  const char* ops[] = {"add", "multiply", "subtract", "maximum"};
  std::string bindings;
  std::string prev = "x";
  for (int i = 0; i < length; ++i) {
    std::string name = i + 1 == length ? "out" : absl::StrCat("%t", i);
    absl::StrAppend(&bindings, "      ", name, " = R.", ops[i % 4], "(", prev, ", y)\n");
    prev = name;
  }
  return absl::StrCat(
      "module {\n  func @main(x: Tensor((n, 64), float32), y: Tensor((64,), float32)) -> Tensor((n, 64), float32) "
      "{\n    dataflow {\n",
      bindings, "    }\n    return out\n  }\n}\n");
}

struct Timing {
  int kernels = 0;
  double pipeline_ms = 0;
  double codegen_ms = 0;
};

Timing Compile(const std::string& text, bool openblas, bool time_passes) {
  using Clock = std::chrono::steady_clock;
  const kiln::codegen::CpuTarget target = kiln::codegen::CpuTarget::Host();
  kiln::relax::PipelineOptions options;
  options.libraries.openblas = openblas;
  options.time_passes = time_passes;
  options.target = kiln::codegen::HostTarget(/*num_threads=*/2);
  Timing t;
  auto t0 = Clock::now();
  kiln::relax::ParsedModule parsed = OrDie(kiln::relax::ParseModule(text), "parse");
  kiln::relax::IRModule lowered = OrDie(kiln::relax::RunPipeline(parsed.module, options, &parsed.locations), "compile");
  auto t1 = Clock::now();
  OrDie(kiln::codegen::BuildExecutable(lowered, target), "build executable");
  auto t2 = Clock::now();
  for (const kiln::relax::IRModule::Entry& e : lowered.entries()) t.kernels += e.prim_func() != nullptr;
  t.pipeline_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  t.codegen_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  return t;
}

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> values;
  for (absl::string_view v : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int x = std::atoi(std::string(v).c_str());
    if (x < 1) Die(absl::StrCat("expected positive integers, got '", v, "'"));
    values.push_back(x);
  }
  return values;
}

const char* kUsage =
    "usage: compile_bench [--layers=1,4,16,32] [--chains=1000,2000] [--libs=none|openblas] [--model=PATH]\n"
    "                     [--time-passes]\n"
    "  Prints the compile time (Relax pipeline, code generation) and the kernels compiled for a\n"
    "  model of L identical layers and for fused chains of elementwise operators.\n"
    "  --layers  layer counts (the model's main repeated, each layer with its own weights)\n"
    "  --chains  lengths of the elementwise chains (empty: none)\n"
    "  --libs    none (default: every matmul a generated kernel) or openblas\n"
    "  --model   the layer (default: the source tree's examples/models/transformer_block.kir)\n"
    "  --time-passes  also print each pipeline pass's time to stderr\n";

}  // namespace

int main(int argc, char** argv) {
  std::string layer_list = "1,4,16,32";
  std::string chain_list = "1000,2000";
  std::string model_path = std::string(KILN_SOURCE_DIR) + "/examples/models/transformer_block.kir";
  bool openblas = false;
  bool time_passes = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> const char* {
      if (arg.rfind(flag + "=", 0) == 0) return argv[i] + flag.size() + 1;
      if (arg == flag && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--time-passes") {
      time_passes = true;
    } else if (const char* v = value("--layers")) {
      layer_list = v;
    } else if (const char* v = value("--chains")) {
      chain_list = v;
    } else if (const char* v = value("--model")) {
      model_path = v;
    } else if (const char* v = value("--libs")) {
      if (std::string(v) != "none" && std::string(v) != "openblas") Die("--libs wants none or openblas");
      openblas = std::string(v) == "openblas";
    } else {
      std::fprintf(stderr, "compile_bench: unknown argument '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  const std::string model = OrDie(kiln::support::ReadFile(model_path), "read " + model_path);

  std::printf("%-28s %8s %12s %12s %12s\n", "module", "kernels", "pipeline ms", "codegen ms", "total ms");
  auto report = [&](const std::string& name, const Timing& t) {
    std::printf("%-28s %8d %12.1f %12.1f %12.1f\n", name.c_str(), t.kernels, t.pipeline_ms, t.codegen_ms,
                t.pipeline_ms + t.codegen_ms);
    std::fflush(stdout);
  };
  for (int layers : ParseList(layer_list)) {
    report(absl::StrCat("decoder x ", layers), Compile(StackedModel(model, layers), openblas, time_passes));
  }
  for (int length : ParseList(chain_list)) {
    report(absl::StrCat("elementwise chain of ", length), Compile(ElementwiseChain(length), openblas, time_passes));
  }
  return 0;
}
