#include "frontends/onnx/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/narrow_types.h"
#include "frontends/onnx/tensor_file.h"
#include "onnx/onnx-data_pb.h"
#include "support/file_io.h"
#include "support/packed_strings.h"
#include "support/status_macros.h"
#include "tir/string_type.h"

namespace kiln::frontends::onnx {
namespace {

using tir::DataType;
using TP = ::onnx::TensorProto;

std::string TensorLabel(const TP& tensor) {
  return tensor.name().empty() ? std::string("tensor") : absl::StrCat("tensor '", tensor.name(), "'");
}

// Copies `count` values of the typed field into `out` as `dtype` elements.
template <typename Field, typename Convert>
void CopyTyped(const Field& field, int64_t count, uint8_t* out, int elem_bytes, Convert convert) {
  for (int64_t i = 0; i < count; ++i) convert(field.Get(static_cast<int>(i)), out + i * elem_bytes);
}

template <typename T>
void Store(T value, uint8_t* out) {
  std::memcpy(out, &value, sizeof(T));
}

// Reads external data: `location` relative to base_dir, never leaving it.
absl::StatusOr<std::string> ReadExternal(const TP& tensor, const std::string& base_dir, int64_t want_bytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& entry : tensor.external_data()) {
    auto number = [&](int64_t* out) -> absl::Status {
      try {
        size_t used = 0;
        long long v = std::stoll(entry.value(), &used);
        if (used != entry.value().size() || v < 0) throw std::invalid_argument("");
        *out = v;
      } catch (...) {
        return absl::InvalidArgumentError(absl::StrCat(TensorLabel(tensor), ": external data ", entry.key(), " '",
                                                       entry.value(), "' is not a non-negative integer"));
      }
      return absl::OkStatus();
    };
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset") {
      KILN_RETURN_IF_ERROR(number(&offset));
    } else if (entry.key() == "length") {
      KILN_RETURN_IF_ERROR(number(&length));
    }
  }
  if (location.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(TensorLabel(tensor), ": external data without a location"));
  }
  if (base_dir.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(tensor), ": external data '", location, "' but the model was not read from a file"));
  }
  namespace fs = std::filesystem;
  fs::path relative(location);
  if (relative.is_absolute()) {
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(tensor), ": external data location '", location, "' must be relative to the model"));
  }
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::path(base_dir), ec);
  fs::path full = fs::weakly_canonical(base / relative, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(tensor), ": external data location '", location, "': ", ec.message()));
  }
  // The resolved path (symbolic links and '..' followed) must lie inside the model's folder.
  auto [base_end, full_it] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (base_end != base.end()) {
    return absl::InvalidArgumentError(absl::StrCat(TensorLabel(tensor), ": external data location '", location,
                                                   "' points outside the model's folder ", base.string()));
  }
  std::ifstream in(full, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(TensorLabel(tensor), ": cannot open external data file ", full.string()));
  }
  in.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(in.tellg());
  if (length < 0) length = want_bytes;
  if (length != want_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(TensorLabel(tensor), ": external data length ", length,
                                                   " does not match the ", want_bytes, " bytes its dims need"));
  }
  if (offset > size || length > size - offset) {
    return absl::InvalidArgumentError(absl::StrCat(TensorLabel(tensor), ": external data [", offset, ", ",
                                                   offset + length, ") lies outside ", full.string(), " (", size,
                                                   " bytes)"));
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) return absl::DataLossError(absl::StrCat(TensorLabel(tensor), ": reading ", full.string(), " failed"));
  return bytes;
}

// Counts the elements of `tensor`'s dims into `shape`; an error past `max_elements`.
absl::StatusOr<int64_t> ElementCount(const TP& tensor, int64_t max_elements, std::vector<int64_t>* shape) {
  int64_t count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat(TensorLabel(tensor), ": negative dim ", d));
    if (d > 0 && count > max_elements / d) {
      return absl::InvalidArgumentError(
          absl::StrCat(TensorLabel(tensor), ": dims too large (more than ", max_elements, " elements)"));
    }
    count *= d;
    shape->push_back(d);
  }
  return count;
}

// A bfloat16 / float8 / float4 / int4 / int2 tensor, decoded into its storage dtype
// (narrow_types.h). The encoded bytes come from raw_data, external data, or int32_data (one
// encoded byte per entry: a float8 element, or two 4-bit / four 2-bit elements packed; a
// bfloat16 element's two bytes).
absl::StatusOr<relax::ConstantData> NarrowTensorFromProto(const TP& tensor, const NarrowType& narrow,
                                                          const std::string& base_dir, int64_t max_bytes) {
  relax::ConstantData out;
  out.dtype = narrow.storage;
  const int elem = narrow.storage.bytes();
  KILN_ASSIGN_OR_RETURN(int64_t count, ElementCount(tensor, max_bytes / elem, &out.shape));
  const int64_t packed_bytes = NarrowPackedBytes(narrow, count);
  std::string packed;
  if (tensor.data_location() == TP::EXTERNAL) {
    KILN_ASSIGN_OR_RETURN(packed, ReadExternal(tensor, base_dir, packed_bytes));
  } else if (tensor.has_raw_data()) {
    packed = tensor.raw_data();
  } else {
    // One element per entry: its low `bits` bits (bfloat16: two bytes, little-endian).
    for (int32_t v : tensor.int32_data()) {
      for (int b = 0; b < std::max(narrow.bits, 8); b += 8) packed.push_back(static_cast<char>(static_cast<uint8_t>(v >> b)));
    }
  }
  if (static_cast<int64_t>(packed.size()) != packed_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(TensorLabel(tensor), ": ", narrow.name, " data holds ",
                                                   packed.size(), " bytes, its dims need ", packed_bytes));
  }
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(count * elem));
  UnpackNarrow(narrow, reinterpret_cast<const uint8_t*>(packed.data()), count, bytes->data());
  out.bytes = std::move(bytes);
  return out;
}

// A STRING tensor: its string_data, as packed strings (support/packed_strings.h).
absl::StatusOr<relax::ConstantData> StringTensorFromProto(const TP& tensor, int64_t max_bytes) {
  relax::ConstantData out;
  out.dtype = tir::StringType();
  KILN_ASSIGN_OR_RETURN(int64_t count, ElementCount(tensor, max_bytes / 8, &out.shape));
  if (tensor.data_location() == TP::EXTERNAL || tensor.has_raw_data()) {
    return absl::InvalidArgumentError(absl::StrCat(TensorLabel(tensor), ": STRING data must be in string_data"));
  }
  if (tensor.string_data_size() != count) {
    return absl::InvalidArgumentError(absl::StrCat(TensorLabel(tensor), ": string_data holds ", tensor.string_data_size(),
                                                   " strings, its dims need ", count));
  }
  std::vector<std::string> strings(tensor.string_data().begin(), tensor.string_data().end());
  out.bytes = std::make_shared<std::vector<uint8_t>>(support::PackStrings(strings));
  if (static_cast<int64_t>(out.bytes->size()) > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(TensorLabel(tensor), ": strings take more than ", max_bytes, " bytes"));
  }
  return out;
}

}  // namespace

absl::StatusOr<DataType> DataTypeFromOnnx(int32_t onnx_type) {
  switch (onnx_type) {
    case TP::FLOAT: return DataType::Float(32);
    case TP::DOUBLE: return DataType::Float(64);
    case TP::FLOAT16: return DataType::Float(16);
    case TP::BOOL: return DataType::Bool();
    case TP::INT8: return DataType::Int(8);
    case TP::INT16: return DataType::Int(16);
    case TP::INT32: return DataType::Int(32);
    case TP::INT64: return DataType::Int(64);
    case TP::UINT8: return DataType::UInt(8);
    case TP::UINT16: return DataType::UInt(16);
    case TP::UINT32: return DataType::UInt(32);
    case TP::UINT64: return DataType::UInt(64);
    case TP::STRING: return tir::StringType();
    default:
      // bfloat16 / float8 / float4 / int4 / int2: held widened (narrow_types.h).
      if (const NarrowType* narrow = FindNarrowType(onnx_type)) return narrow->storage;
      return absl::UnimplementedError(absl::StrCat("element type ", OnnxDataTypeName(onnx_type), " is not supported"));
  }
}

int32_t OnnxDataTypeOf(DataType dtype) {
  if (dtype.is_float()) return dtype.bits() == 32 ? TP::FLOAT : dtype.bits() == 64 ? TP::DOUBLE : dtype.bits() == 16 ? TP::FLOAT16 : 0;
  if (dtype.is_bfloat()) return TP::BFLOAT16;
  if (tir::IsStringType(dtype)) return TP::STRING;
  if (dtype.is_bool()) return TP::BOOL;
  if (dtype.is_int()) {
    switch (dtype.bits()) {
      case 8: return TP::INT8;
      case 16: return TP::INT16;
      case 32: return TP::INT32;
      case 64: return TP::INT64;
    }
  }
  if (dtype.is_uint()) {
    switch (dtype.bits()) {
      case 8: return TP::UINT8;
      case 16: return TP::UINT16;
      case 32: return TP::UINT32;
      case 64: return TP::UINT64;
    }
  }
  return TP::UNDEFINED;
}

std::string OnnxDataTypeName(int32_t onnx_type) {
  if (const NarrowType* narrow = FindNarrowType(onnx_type)) return narrow->name;
  if (TP::DataType_IsValid(onnx_type)) return TP::DataType_Name(static_cast<TP::DataType>(onnx_type));
  return absl::StrCat("<unknown ", onnx_type, ">");
}

absl::StatusOr<relax::ConstantData> TensorFromProto(const TP& tensor, const std::string& base_dir, int64_t max_bytes) {
  if (const NarrowType* narrow = FindNarrowType(tensor.data_type())) return NarrowTensorFromProto(tensor, *narrow, base_dir, max_bytes);
  if (tensor.data_type() == TP::STRING) return StringTensorFromProto(tensor, max_bytes);
  absl::StatusOr<DataType> dtype = DataTypeFromOnnx(tensor.data_type());
  if (!dtype.ok()) return absl::UnimplementedError(absl::StrCat(TensorLabel(tensor), ": ", dtype.status().message()));
  relax::ConstantData out;
  out.dtype = *dtype;
  KILN_ASSIGN_OR_RETURN(int64_t count, ElementCount(tensor, max_bytes, &out.shape));
  const int elem = dtype->bytes();
  if (count > max_bytes / elem) {
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(tensor), ": ", count, " elements take more than ", max_bytes, " bytes"));
  }
  const int64_t nbytes = count * elem;
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(nbytes));
  auto mismatch = [&](const char* where, int64_t have) {
    return absl::InvalidArgumentError(absl::StrCat(TensorLabel(tensor), ": ", where, " holds ", have,
                                                   have == 1 ? " value" : " values", ", its dims need ",
                                                   where == std::string("raw_data") ? nbytes : count));
  };
  if (tensor.data_location() == TP::EXTERNAL) {
    KILN_ASSIGN_OR_RETURN(std::string raw, ReadExternal(tensor, base_dir, nbytes));
    std::memcpy(bytes->data(), raw.data(), raw.size());
  } else if (tensor.has_raw_data()) {
    if (static_cast<int64_t>(tensor.raw_data().size()) != nbytes) {
      return mismatch("raw_data", static_cast<int64_t>(tensor.raw_data().size()));
    }
    if (nbytes > 0) std::memcpy(bytes->data(), tensor.raw_data().data(), nbytes);
  } else {
    uint8_t* p = bytes->data();
    switch (tensor.data_type()) {
      case TP::FLOAT:
        if (tensor.float_data_size() != count) return mismatch("float_data", tensor.float_data_size());
        CopyTyped(tensor.float_data(), count, p, 4, [](float v, uint8_t* o) { Store(v, o); });
        break;
      case TP::DOUBLE:
        if (tensor.double_data_size() != count) return mismatch("double_data", tensor.double_data_size());
        CopyTyped(tensor.double_data(), count, p, 8, [](double v, uint8_t* o) { Store(v, o); });
        break;
      case TP::INT64:
        if (tensor.int64_data_size() != count) return mismatch("int64_data", tensor.int64_data_size());
        CopyTyped(tensor.int64_data(), count, p, 8, [](int64_t v, uint8_t* o) { Store(v, o); });
        break;
      case TP::UINT32:
        if (tensor.uint64_data_size() != count) return mismatch("uint64_data", tensor.uint64_data_size());
        CopyTyped(tensor.uint64_data(), count, p, 4, [](uint64_t v, uint8_t* o) { Store(static_cast<uint32_t>(v), o); });
        break;
      case TP::UINT64:
        if (tensor.uint64_data_size() != count) return mismatch("uint64_data", tensor.uint64_data_size());
        CopyTyped(tensor.uint64_data(), count, p, 8, [](uint64_t v, uint8_t* o) { Store(v, o); });
        break;
      case TP::INT32:
      case TP::INT16:
      case TP::INT8:
      case TP::UINT16:
      case TP::UINT8:
      case TP::BOOL:
      case TP::FLOAT16:
      case TP::BFLOAT16: {
        // int32_data carries every narrower type, one element per int32 (16-bit floats as
        // their bit patterns); the low bytes are the element, little-endian.
        if (tensor.int32_data_size() != count) return mismatch("int32_data", tensor.int32_data_size());
        CopyTyped(tensor.int32_data(), count, p, elem, [elem](int32_t v, uint8_t* o) {
          if (elem == 4) {
            Store(v, o);
          } else if (elem == 2) {
            Store(static_cast<uint16_t>(v), o);
          } else {
            Store(static_cast<uint8_t>(v), o);
          }
        });
        if (tensor.data_type() == TP::BOOL) {
          for (int64_t i = 0; i < count; ++i) p[i] = p[i] != 0;
        }
        break;
      }
      default:
        return absl::UnimplementedError(absl::StrCat(TensorLabel(tensor), ": element type ",
                                                     OnnxDataTypeName(tensor.data_type()), " is not supported"));
    }
  }
  out.bytes = std::move(bytes);
  return out;
}

absl::StatusOr<NamedTensor> ReadTensorFile(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, support::ReadFile(path));
  TP proto;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) || !proto.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a serialized ONNX TensorProto"));
  }
  absl::StatusOr<relax::ConstantData> data = TensorFromProto(proto, "");
  if (!data.ok()) return absl::Status(data.status().code(), absl::StrCat(path, ": ", data.status().message()));
  return NamedTensor{proto.name(), *std::move(data)};
}

namespace {

absl::Status AddSequence(const ::onnx::SequenceProto& seq, const std::string& path, OnnxValue* out) {
  if (seq.elem_type() != ::onnx::SequenceProto::TENSOR && seq.elem_type() != ::onnx::SequenceProto::UNDEFINED) {
    return absl::UnimplementedError(
        absl::StrCat(path, ": only sequences of tensors are supported (element type ", seq.elem_type(), ")"));
  }
  out->is_sequence = true;
  for (const TP& tensor : seq.tensor_values()) {
    absl::StatusOr<relax::ConstantData> data = TensorFromProto(tensor, "");
    if (!data.ok()) return absl::Status(data.status().code(), absl::StrCat(path, ": ", data.status().message()));
    out->tensors.push_back(*std::move(data));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OnnxValue> ReadValueFile(const std::string& path, OnnxValueKind kind) {
  if (kind == OnnxValueKind::kTensor) {
    KILN_ASSIGN_OR_RETURN(NamedTensor tensor, ReadTensorFile(path));
    OnnxValue out;
    out.name = tensor.name;
    out.tensors.push_back(std::move(tensor.data));
    return out;
  }
  KILN_ASSIGN_OR_RETURN(std::string bytes, support::ReadFile(path));
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": too large"));
  }
  OnnxValue out;
  if (kind == OnnxValueKind::kSequence) {
    ::onnx::SequenceProto seq;
    if (!seq.ParseFromString(bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": not a serialized ONNX SequenceProto"));
    }
    out.name = seq.name();
    KILN_RETURN_IF_ERROR(AddSequence(seq, path, &out));
    return out;
  }
  ::onnx::OptionalProto opt;
  if (!opt.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a serialized ONNX OptionalProto"));
  }
  out.name = opt.name();
  if (opt.has_tensor_value()) {
    absl::StatusOr<relax::ConstantData> data = TensorFromProto(opt.tensor_value(), "");
    if (!data.ok()) return absl::Status(data.status().code(), absl::StrCat(path, ": ", data.status().message()));
    out.tensors.push_back(*std::move(data));
  } else if (opt.has_sequence_value()) {
    KILN_RETURN_IF_ERROR(AddSequence(opt.sequence_value(), path, &out));
  } else if (opt.has_sparse_tensor_value() || opt.has_map_value() || opt.has_optional_value()) {
    return absl::UnimplementedError(absl::StrCat(path, ": only optionals of tensors or sequences are supported"));
  } else {
    out.present = false;
  }
  return out;
}

relax::ConstantData BFloat16BitsAsFloat32(const relax::ConstantData& bits) {
  if (bits.dtype != DataType::UInt(16) || bits.is_external()) return bits;
  relax::ConstantData out;
  out.dtype = DataType::Float32();
  out.shape = bits.shape;
  const int64_t n = bits.numel();
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n * 4));
  for (int64_t i = 0; i < n; ++i) {
    uint16_t code;
    std::memcpy(&code, bits.bytes->data() + 2 * i, 2);
    const uint32_t wide = uint32_t{code} << 16;  // bfloat16 is float32's upper half
    std::memcpy(bytes->data() + 4 * i, &wide, 4);
  }
  out.bytes = std::move(bytes);
  return out;
}

}  // namespace kiln::frontends::onnx
