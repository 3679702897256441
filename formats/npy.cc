#include "formats/npy.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "support/file_io.h"

namespace kiln::formats {
namespace {

bool ValidType(NpyType t) {
  switch (t.kind) {
    case 'b': return t.bytes == 1;
    case 'i':
    case 'u': return t.bytes == 1 || t.bytes == 2 || t.bytes == 4 || t.bytes == 8;
    case 'f': return t.bytes == 2 || t.bytes == 4 || t.bytes == 8;
    case 'U': return t.bytes >= 4 && t.bytes % 4 == 0;  // '<U0' (no characters) is refused
    default: return false;
  }
}

std::string TypeName(NpyType t) {
  if (t.kind == 'b') return "bool";
  if (t.kind == 'U') return absl::StrCat("str", t.bytes / 4);
  const char* base = t.kind == 'f' ? "float" : t.kind == 'u' ? "uint" : "int";
  return absl::StrCat(base, t.bytes * 8);
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), shape.size() == 1 ? ",)" : ")");
}

absl::StatusOr<NpyType> ParseDescr(absl::string_view descr) {
  NpyType t;
  // '<' little-endian, '|' not applicable (one byte), '=' native (little-endian on x86-64).
  if (descr.size() >= 3 && (descr[0] == '<' || descr[0] == '|' || descr[0] == '=') &&
      absl::SimpleAtoi(descr.substr(2), &t.bytes)) {
    t.kind = descr[1];
    if (t.kind == '?') t.kind = 'b';
    if (t.kind == 'U' && t.bytes > 0 && t.bytes <= (1 << 28)) t.bytes *= 4;  // '<U5': 5 UTF-32 code units
    if (ValidType(t)) return t;
  }
  if (descr == "|O") {
    return absl::InvalidArgumentError(
        "dtype 'O' (an object array: pickled Python objects) is not read; save strings as a fixed-width "
        "Unicode array (np.array(values, dtype=str), dtype '<U<n>')");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unsupported dtype '", descr, "' (little-endian bool, int8-64, uint8-64, float16/32/64 and '<U<n>' strings are read)"));
}

absl::StatusOr<std::string> TypeDescr(NpyType t) {
  if (!ValidType(t)) return absl::InvalidArgumentError(absl::StrCat("no .npy type for kind '", std::string(1, t.kind), "' of ", t.bytes, " bytes"));
  if (t.kind == 'b') return std::string("|b1");
  if (t.kind == 'U') return absl::StrCat("<U", t.bytes / 4);
  return absl::StrCat(t.bytes == 1 ? "|" : "<", std::string(1, t.kind), t.bytes);
}

// The text of 'key''s value in the header dict, e.g. "'<f4'" or "(7, 784)".
absl::StatusOr<std::string> HeaderField(absl::string_view header, const std::string& key) {
  size_t at = header.find("'" + key + "'");
  if (at == absl::string_view::npos) return absl::InvalidArgumentError(absl::StrCat("the header has no '", key, "'"));
  // NumPy's reader evaluates the dict, so a repeated key means its last value; this reader
  // would take the first and read other data than NumPy does. NumPy never writes one.
  if (header.find("'" + key + "'", at + 1) != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("the header names '", key, "' twice"));
  }
  size_t colon = header.find(':', at);
  if (colon == absl::string_view::npos) return absl::InvalidArgumentError(absl::StrCat("the header's '", key, "' has no value"));
  size_t begin = colon + 1;
  while (begin < header.size() && header[begin] == ' ') ++begin;
  size_t end = begin;
  if (begin < header.size() && header[begin] == '(') {
    end = header.find(')', begin);
    if (end == absl::string_view::npos) return absl::InvalidArgumentError("the header's shape has no closing parenthesis");
    ++end;
  } else {
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  }
  return std::string(absl::StripAsciiWhitespace(header.substr(begin, end - begin)));
}

}  // namespace

absl::StatusOr<NpyArray> ReadNpy(const std::string& path) {
  absl::StatusOr<std::shared_ptr<const support::MappedFile>> file = support::MappedFile::Open(path);
  if (!file.ok()) return file.status();
  return ParseNpy(*std::move(file));
}

absl::StatusOr<NpyArray> ParseNpy(std::shared_ptr<const support::MappedFile> file) {
  const std::string& name = file->name();
  absl::string_view data(file->data(), file->size());
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": not a readable .npy file: ", why));
  };
  if (data.size() < 10 || std::memcmp(data.data(), "\x93NUMPY", 6) != 0) {
    return bad(data.size() < 10 && std::memcmp(data.data(), "\x93NUMPY", std::min<size_t>(6, data.size())) == 0
                   ? absl::StrCat("truncated: ", data.size(), " bytes, shorter than the smallest header")
                   : std::string("bad magic (a .npy file starts with \\x93NUMPY)"));
  }
  int major = static_cast<uint8_t>(data[6]);
  uint64_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(data[8]) | static_cast<uint64_t>(static_cast<uint8_t>(data[9])) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) return bad(absl::StrCat("truncated: ", data.size(), " bytes, shorter than a version ", major, " header"));
    for (int i = 0; i < 4; ++i) header_len |= static_cast<uint64_t>(static_cast<uint8_t>(data[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return bad(absl::StrCat("format version ", major, " (versions 1 to 3 are read)"));
  }
  if (header_len > data.size() - header_start) {
    return bad(absl::StrCat("truncated: the header should end at byte ", header_start + header_len, ", but the file is ",
                            data.size(), " bytes"));
  }
  absl::string_view header = data.substr(header_start, header_len);
  absl::StatusOr<std::string> descr = HeaderField(header, "descr");
  if (!descr.ok()) return bad(std::string(descr.status().message()));
  absl::StatusOr<std::string> fortran = HeaderField(header, "fortran_order");
  if (!fortran.ok()) return bad(std::string(fortran.status().message()));
  absl::StatusOr<std::string> shape_text = HeaderField(header, "shape");
  if (!shape_text.ok()) return bad(std::string(shape_text.status().message()));
  if (*fortran == "True") return bad("Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  if (*fortran != "False") return bad(absl::StrCat("'fortran_order' must be True or False, got ", *fortran));
  absl::string_view quoted = *descr;
  if (quoted.size() < 2 || (quoted.front() != '\'' && quoted.front() != '"') || quoted.back() != quoted.front()) {
    return bad(absl::StrCat("descr ", quoted, " is not a type string (structured arrays are not supported)"));
  }
  absl::StatusOr<NpyType> type = ParseDescr(quoted.substr(1, quoted.size() - 2));
  if (!type.ok()) return bad(std::string(type.status().message()));

  NpyArray array;
  array.type = *type;
  absl::string_view dims = *shape_text;
  if (dims.size() < 2 || dims.front() != '(' || dims.back() != ')') return bad(absl::StrCat("bad shape ", dims));
  dims = dims.substr(1, dims.size() - 2);
  // Element count and byte size, with overflow checks: a hostile header must not make the
  // reader compute (or allocate) a wrong size.
  bool overflow = false;
  uint64_t numel = 1;
  for (absl::string_view piece : absl::StrSplit(dims, ',', absl::SkipWhitespace())) {
    int64_t d;
    if (!absl::SimpleAtoi(piece, &d) || d < 0) return bad(absl::StrCat("bad shape (", dims, ")"));
    array.shape.push_back(d);
    if (d != 0 && numel > UINT64_MAX / static_cast<uint64_t>(d)) overflow = true;
    numel *= static_cast<uint64_t>(d);
  }
  if (array.shape.size() > 64) return bad(absl::StrCat("shape of ", array.shape.size(), " dimensions (at most 64)"));
  uint64_t payload = data.size() - header_start - header_len;
  uint64_t item = static_cast<uint64_t>(array.type.bytes);
  if (overflow || numel > UINT64_MAX / item || numel * item > static_cast<uint64_t>(INT64_MAX)) {
    return bad(absl::StrCat("the header claims shape ", ShapeText(array.shape), " of ", TypeName(array.type),
                            ", too large to address, but the file holds ", payload, " bytes of data"));
  }
  if (numel * item != payload) {
    return bad(absl::StrCat("the header claims shape ", ShapeText(array.shape), " of ", TypeName(array.type), " = ",
                            numel * item, " bytes, but the file holds ", payload, " bytes of data after its ",
                            header_start + header_len, "-byte header (", data.size(), " bytes in all)"));
  }
  array.data = data.data() + header_start + header_len;
  array.nbytes = payload;
  array.file = std::move(file);
  return array;
}

absl::StatusOr<std::string> EncodeNpy(NpyType type, const std::vector<int64_t>& shape, const void* data, uint64_t nbytes) {
  absl::StatusOr<std::string> descr = TypeDescr(type);
  if (!descr.ok()) return descr.status();
  uint64_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<uint64_t>(d);
  if (numel * static_cast<uint64_t>(type.bytes) != nbytes) {
    return absl::InvalidArgumentError(absl::StrCat(".npy data of shape ", ShapeText(shape), " needs ",
                                                   numel * static_cast<uint64_t>(type.bytes), " bytes, got ", nbytes));
  }
  std::string header = absl::StrCat("{'descr': '", *descr, "', 'fortran_order': False, 'shape': ", ShapeText(shape), ", }");
  // Pad with spaces so the data starts at a multiple of 64 bytes; end with a newline.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  if (header.size() > 0xffff) return absl::InvalidArgumentError("shape too long for a version 1.0 .npy header");
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(static_cast<const char*>(data), static_cast<size_t>(nbytes));
  return out;
}

absl::Status WriteNpy(const std::string& path, NpyType type, const std::vector<int64_t>& shape, const void* data,
                      uint64_t nbytes) {
  absl::StatusOr<std::string> bytes = EncodeNpy(type, shape, data, nbytes);
  if (!bytes.ok()) return bytes.status();
  return support::WriteFile(path, *bytes);
}

}  // namespace kiln::formats
