// ONNX Runtime as transformer_bench's peer: the same transformer block written as an ONNX
// graph by benchmarks/transformer_block_ort.py, run by PyPI's onnxruntime with the same
// thread count on the same weights and inputs. The benchmark's weights and each input go to
// a temporary folder as raw float32 files; the script (one Python process per sequence
// length, started with the interpreter of a virtual environment that has onnxruntime, onnx
// and numpy) times ONNX Runtime and writes its output back, so the benchmark can check that
// both ran the same computation before comparing their times.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vm/tensor.h"

namespace kiln::bench {

class OnnxRuntimeBlockPeer {
 public:
  struct Result {
    double ms = 0;            // median milliseconds of one ONNX Runtime call
    std::vector<float> out;   // ONNX Runtime's output, row-major
  };

  // Writes `weights` (the block's parameters after x, in the model's order) to a new
  // temporary folder; `python` runs `script` (transformer_block_ort.py).
  static absl::StatusOr<OnnxRuntimeBlockPeer> Create(const std::string& python, const std::string& script,
                                                     const std::vector<vm::Tensor>& weights, int threads) {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-ort-peer-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("cannot make a temporary folder " + pattern);
    OnnxRuntimeBlockPeer peer(python, script, pattern, threads);
    for (size_t i = 0; i < weights.size(); ++i) {
      if (absl::Status s = peer.Write("w" + std::to_string(i) + ".bin", weights[i]); !s.ok()) return s;
    }
    return peer;
  }

  OnnxRuntimeBlockPeer(OnnxRuntimeBlockPeer&& other) noexcept
      : python_(std::move(other.python_)), script_(std::move(other.script_)), dir_(std::move(other.dir_)),
        threads_(other.threads_) {
    other.dir_.clear();
  }
  OnnxRuntimeBlockPeer(const OnnxRuntimeBlockPeer&) = delete;
  OnnxRuntimeBlockPeer& operator=(const OnnxRuntimeBlockPeer&) = delete;
  ~OnnxRuntimeBlockPeer() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

  // Runs the block on x (n x 64) in ONNX Runtime: its median time and its output.
  absl::StatusOr<Result> Run(const vm::Tensor& x, int64_t n) {
    const std::string tag = std::to_string(n);
    if (absl::Status s = Write("x_" + tag + ".bin", x); !s.ok()) return s;
    const std::string command = Quote(python_) + " " + Quote(script_) + " --dir " + Quote(dir_) + " --n " + tag +
                                " --threads " + std::to_string(threads_);
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return absl::InternalError("cannot run " + command);
    std::string output;
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    const int status = pclose(pipe);
    const size_t at = output.rfind("ms=");
    if (status != 0 || at == std::string::npos) {
      return absl::InternalError("ONNX Runtime peer failed (" + command + "): " + output);
    }
    Result result;
    result.ms = std::strtod(output.c_str() + at + 3, nullptr);
    std::ifstream file(dir_ + "/out_" + tag + ".bin", std::ios::binary);
    result.out.resize(static_cast<size_t>(x.numel()));
    file.read(reinterpret_cast<char*>(result.out.data()), static_cast<std::streamsize>(result.out.size() * 4));
    if (!file) return absl::InternalError("ONNX Runtime peer wrote no full output for n=" + tag);
    return result;
  }

 private:
  OnnxRuntimeBlockPeer(std::string python, std::string script, std::string dir, int threads)
      : python_(std::move(python)), script_(std::move(script)), dir_(std::move(dir)), threads_(threads) {}

  absl::Status Write(const std::string& name, const vm::Tensor& t) const {
    std::ofstream file(dir_ + "/" + name, std::ios::binary);
    file.write(reinterpret_cast<const char*>(t.data_as<float>()), static_cast<std::streamsize>(t.numel() * 4));
    return file ? absl::OkStatus() : absl::InternalError("cannot write " + dir_ + "/" + name);
  }

  // A word the shell passes through unchanged: single quotes, each ' written as '\''.
  static std::string Quote(const std::string& word) {
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
  }

  std::string python_, script_, dir_;
  int threads_;
};

}  // namespace kiln::bench
