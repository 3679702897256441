#include "vm/npy.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "support/file_io.h"

namespace kiln::vm {
namespace {

absl::StatusOr<DLDataType> DescrToDType(const std::string& descr) {
  if (descr.size() < 3) return absl::InvalidArgumentError(absl::StrCat("unsupported dtype '", descr, "'"));
  char order = descr[0], kind = descr[1];
  int bytes = 0;
  if (order == '>' || !absl::SimpleAtoi(descr.substr(2), &bytes)) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported dtype '", descr, "' (only little-endian is read)"));
  }
  uint8_t bits = static_cast<uint8_t>(bytes * 8);
  switch (kind) {
    case 'f': if (bytes == 2 || bytes == 4 || bytes == 8) return DLDataType{kDLFloat, bits, 1}; break;
    case 'i': if (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8) return DLDataType{kDLInt, bits, 1}; break;
    case 'u': if (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8) return DLDataType{kDLUInt, bits, 1}; break;
    case 'b': if (bytes == 1) return DLDataType{kDTypeBool, 8, 1}; break;
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat("unsupported dtype '", descr, "'"));
}

absl::StatusOr<std::string> DTypeToDescr(DLDataType t) {
  if (t.lanes != 1) return absl::InvalidArgumentError("vector dtypes cannot be saved as .npy");
  std::string bytes = absl::StrCat(t.bits / 8);
  switch (t.code) {
    case kDLFloat: return absl::StrCat("<f", bytes);
    case kDLInt: return t.bits == 8 ? "|i1" : absl::StrCat("<i", bytes);
    case kDLUInt: return t.bits == 8 ? "|u1" : absl::StrCat("<u", bytes);
    case kDTypeBool: return std::string("|b1");
    default: return absl::InvalidArgumentError(absl::StrCat(DTypeToString(t), " cannot be saved as .npy"));
  }
}

// The value of 'key' in the header dict, e.g. "'<f4'" or "(7, 784)".
absl::StatusOr<std::string> HeaderField(const std::string& header, const std::string& key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return absl::InvalidArgumentError(absl::StrCat("header has no '", key, "'"));
  size_t colon = header.find(':', at);
  if (colon == std::string::npos) return absl::InvalidArgumentError("malformed header");
  size_t begin = colon + 1;
  while (begin < header.size() && header[begin] == ' ') ++begin;
  size_t end = begin;
  if (begin < header.size() && header[begin] == '(') {
    end = header.find(')', begin);
    if (end == std::string::npos) return absl::InvalidArgumentError("malformed shape in header");
    ++end;
  } else {
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  }
  return std::string(absl::StripAsciiWhitespace(header.substr(begin, end - begin)));
}

}  // namespace

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  absl::StatusOr<std::string> file = support::ReadFile(path);
  if (!file.ok()) return file.status();
  const std::string& data = *file;
  auto bad = [&](const std::string& why) { return absl::InvalidArgumentError(absl::StrCat(path, ": not a readable .npy file: ", why)); };
  if (data.size() < 10 || std::memcmp(data.data(), "\x93NUMPY", 6) != 0) return bad("bad magic");
  int major = static_cast<uint8_t>(data[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<uint8_t>(data[8]) | static_cast<size_t>(static_cast<uint8_t>(data[9])) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) return bad("truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<uint8_t>(data[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return bad(absl::StrCat("format version ", major));
  }
  if (header_len > data.size() - header_start) return bad("truncated header");
  std::string header = data.substr(header_start, header_len);
  absl::StatusOr<std::string> descr = HeaderField(header, "descr");
  absl::StatusOr<std::string> fortran = HeaderField(header, "fortran_order");
  absl::StatusOr<std::string> shape_text = HeaderField(header, "shape");
  if (!descr.ok() || !fortran.ok() || !shape_text.ok()) return bad("incomplete header");
  if (*fortran != "False") return bad("Fortran-order arrays are not supported");
  absl::StatusOr<DLDataType> dtype = DescrToDType(std::string(absl::StripSuffix(absl::StripPrefix(*descr, "'"), "'")));
  if (!dtype.ok()) return bad(std::string(dtype.status().message()));
  std::vector<int64_t> shape;
  std::string dims = shape_text->substr(1, shape_text->size() - 2);
  for (absl::string_view piece : absl::StrSplit(dims, ',', absl::SkipWhitespace())) {
    int64_t d;
    if (!absl::SimpleAtoi(piece, &d) || d < 0) return bad("bad shape");
    shape.push_back(d);
  }
  absl::StatusOr<Tensor> tensor = Tensor::Empty(shape, *dtype);
  if (!tensor.ok()) return tensor.status();
  size_t payload = data.size() - header_start - header_len;
  if (payload != static_cast<size_t>(tensor->nbytes())) {
    return bad(absl::StrCat("expected ", tensor->nbytes(), " bytes of data, found ", payload));
  }
  if (payload > 0) std::memcpy(tensor->data(), data.data() + header_start + header_len, payload);
  return tensor;
}

absl::Status WriteNpy(const std::string& path, const Tensor& tensor) {
  absl::StatusOr<std::string> descr = DTypeToDescr(tensor.dtype());
  if (!descr.ok()) return descr.status();
  if (tensor.device().device_type != kDLCPU || !tensor.is_contiguous()) {
    return absl::InvalidArgumentError("only contiguous CPU tensors can be saved as .npy");
  }
  std::string shape;
  for (int64_t d : tensor.shape()) absl::StrAppend(&shape, d, ",", tensor.ndim() > 1 ? " " : "");
  if (tensor.ndim() > 1) shape.pop_back(), shape.pop_back();
  std::string header = absl::StrCat("{'descr': '", *descr, "', 'fortran_order': False, 'shape': (", shape, "), }");
  // Pad with spaces so the data starts at a multiple of 64 bytes; end with a newline.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(static_cast<const char*>(tensor.data()), static_cast<size_t>(tensor.nbytes()));
  return support::WriteFile(path, out);
}

}  // namespace kiln::vm
