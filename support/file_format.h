// FileFormatName: what a file is, judged by its first bytes, for error messages that meet
// a file of the wrong kind (a GGUF model given to `kiln run`, an executable to `kiln
// check`): "a GGUF model" says what to do where "bad magic number" does not.
//
// What it promises: for the leading bytes of a file (any number; 16 suffice), the name of
// a format it recognizes by its signature — "a Kiln executable (.kx)", "a GGUF model
// (.gguf)", "a NumPy array (.npy)", "a zip archive (e.g. a PyTorch .pt checkpoint)", "an
// ELF binary", "a safetensors file" — or "" when none matches. Never a guess from content
// that has no signature (IR text, ONNX protobuf).
#pragma once

#include <string>
#include <string_view>

namespace kiln::support {

std::string FileFormatName(std::string_view head);

}  // namespace kiln::support
