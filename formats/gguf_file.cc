#include "formats/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "support/mapped_file.h"
#include "support/status_macros.h"

namespace kiln::formats {
namespace {

// Names and keys come from the file: escape them and keep messages short.
std::string Quote(std::string_view text) {
  constexpr size_t kMax = 80;
  text = text.substr(0, kMax);
  std::string quoted = absl::StrCat("'", absl::CHexEscape(absl::string_view(text.data(), text.size())), "'");
  if (text.size() > kMax) quoted.insert(quoted.size() - 1, "...");
  return quoted;
}

// Smallest encodings, to bound counts by the bytes left: a metadata entry is a key length
// (8), a type (4) and a one-byte value; a tensor info is a name length (8), a dimension count
// (4), a type (4) and an offset (8).
constexpr uint64_t kMinMetadataBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;
constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

uint64_t MinElementBytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kString: return 8;               // the length
    case GgufValueType::kArray: return 4 + 8;            // element type and count
    default: return GgufScalarBytes(type);
  }
}

// absl::StrCat takes Debian's absl::string_view, which is not std::string_view.
absl::string_view TypeName(GgufValueType type) {
  std::string_view name = GgufValueTypeName(type);
  return absl::string_view(name.data(), name.size());
}

}  // namespace

// Reads one file front to back. `where_` describes the item being read (e.g. "tensor 3
// ('blk.0.attn_q.weight')"), built only when an error needs it.
class GgufParser {
 public:
  GgufParser(std::string_view bytes, const std::string& name) : bytes_(bytes), name_(name) {}

  absl::Status Parse(GgufFile* file) {
    KILN_RETURN_IF_ERROR(ReadHeader(file));
    for (uint64_t i = 0; i < metadata_count_; ++i) KILN_RETURN_IF_ERROR(ReadMetadata(file, i));
    KILN_RETURN_IF_ERROR(ReadAlignment(file));
    file->tensors_.reserve(tensor_count_);
    for (uint64_t i = 0; i < tensor_count_; ++i) KILN_RETURN_IF_ERROR(ReadTensorInfo(file, i));
    return PlaceTensors(file);
  }

 private:
  uint64_t Remaining() const { return bytes_.size() - pos_; }

  absl::Status Error(absl::string_view item, absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": ", item, item.empty() ? "" : ": ", message));
  }

  absl::Status Truncated(absl::string_view item, absl::string_view field, uint64_t need) const {
    return Error(item, absl::StrCat(field, " at offset ", pos_, " needs ", need, " bytes but the file ends at ",
                                    bytes_.size(), " bytes (truncated?)"));
  }

  absl::Status Take(absl::string_view item, absl::string_view field, uint64_t size, const char** out) {
    if (size > Remaining()) return Truncated(item, field, size);
    *out = bytes_.data() + pos_;
    pos_ += size;
    return absl::OkStatus();
  }

  template <typename T>
  absl::Status ReadScalar(absl::string_view item, absl::string_view field, T* out) {
    const char* raw = nullptr;
    KILN_RETURN_IF_ERROR(Take(item, field, sizeof(T), &raw));
    std::memcpy(out, raw, sizeof(T));
    return absl::OkStatus();
  }

  // `index` >= 0 names an array element ("string 12"); the name is built only for errors,
  // since a vocabulary has tens of thousands of strings.
  absl::Status ReadString(absl::string_view item, absl::string_view field, std::string_view* out,
                          int64_t index = -1) {
    auto name = [&] { return index < 0 ? std::string(field) : absl::StrCat(field, " ", index); };
    if (Remaining() < 8) return Truncated(item, absl::StrCat(name(), " length"), 8);
    uint64_t length = 0;
    std::memcpy(&length, bytes_.data() + pos_, 8);
    pos_ += 8;
    if (length > Remaining()) {
      return Error(item, absl::StrCat(name(), " of ", length, " bytes at offset ", pos_,
                                      " runs past the end of the file (", bytes_.size(), " bytes)"));
    }
    *out = bytes_.substr(pos_, length);
    pos_ += length;
    return absl::OkStatus();
  }

  absl::Status ReadHeader(GgufFile* file) {
    const char* magic = nullptr;
    KILN_RETURN_IF_ERROR(Take("header", "magic", 4, &magic));
    if (std::memcmp(magic, "GGUF", 4) != 0) {
      return Error("", absl::StrCat("not a GGUF file (magic ", Quote(std::string_view(magic, 4)),
                                    ", expected 'GGUF')"));
    }
    uint32_t version = 0;
    KILN_RETURN_IF_ERROR(ReadScalar("header", "version", &version));
    if (version == 1) return Error("header", "GGUF version 1 is not supported (versions 2 and 3 are)");
    if (version != 2 && version != 3) {
      // A big-endian file stores 3 as 0x03000000.
      if ((version & 0xffff) == 0 && (version >> 24) >= 1 && (version >> 24) <= 3) {
        return Error("header", "big-endian GGUF files are not supported");
      }
      return Error("header", absl::StrCat("unsupported GGUF version ", version, " (versions 2 and 3 are)"));
    }
    file->version_ = version;
    KILN_RETURN_IF_ERROR(ReadScalar("header", "tensor count", &tensor_count_));
    KILN_RETURN_IF_ERROR(ReadScalar("header", "metadata count", &metadata_count_));
    if (metadata_count_ > Remaining() / kMinMetadataBytes) {
      return Error("header", absl::StrCat("metadata count ", metadata_count_, " cannot fit in the ", Remaining(),
                                          " bytes after the header"));
    }
    if (tensor_count_ > Remaining() / kMinTensorInfoBytes) {
      return Error("header", absl::StrCat("tensor count ", tensor_count_, " cannot fit in the ", Remaining(),
                                          " bytes after the header"));
    }
    return absl::OkStatus();
  }

  absl::Status ReadMetadata(GgufFile* file, uint64_t index) {
    std::string item = absl::StrCat("metadata ", index);
    std::string_view key;
    KILN_RETURN_IF_ERROR(ReadString(item, "key", &key));
    absl::StrAppend(&item, " (", Quote(key), ")");
    if (key.empty()) return Error(item, "the key is empty");
    uint32_t type = 0;
    KILN_RETURN_IF_ERROR(ReadScalar(item, "value type", &type));
    GgufValue value;
    KILN_RETURN_IF_ERROR(ReadValue(item, type, 0, &value));
    auto [it, inserted] = file->metadata_index_.emplace(key, file->metadata_.size());
    if (!inserted) return Error(item, absl::StrCat("the key appears twice (first as metadata ", it->second, ")"));
    file->metadata_.push_back({key, std::move(value)});
    return absl::OkStatus();
  }

  absl::Status ReadValue(absl::string_view item, uint32_t type_id, int depth, GgufValue* out) {
    if (!IsGgufValueType(type_id)) return Error(item, absl::StrCat("unknown value type ", type_id));
    const auto type = static_cast<GgufValueType>(type_id);
    if (type == GgufValueType::kString) {
      std::string_view text;
      KILN_RETURN_IF_ERROR(ReadString(item, "string value", &text));
      *out = GgufValue::String(text);
      return absl::OkStatus();
    }
    if (type != GgufValueType::kArray) {
      const char* raw = nullptr;
      KILN_RETURN_IF_ERROR(Take(item, absl::StrCat(TypeName(type), " value"), GgufScalarBytes(type), &raw));
      *out = GgufValue::Scalar(type, raw);
      return absl::OkStatus();
    }
    if (depth >= GgufFile::kMaxArrayDepth) {
      return Error(item, absl::StrCat("arrays nested more than ", GgufFile::kMaxArrayDepth, " deep"));
    }
    uint32_t element_id = 0;
    KILN_RETURN_IF_ERROR(ReadScalar(item, "array element type", &element_id));
    if (!IsGgufValueType(element_id)) return Error(item, absl::StrCat("unknown array element type ", element_id));
    const auto element_type = static_cast<GgufValueType>(element_id);
    uint64_t count = 0;
    KILN_RETURN_IF_ERROR(ReadScalar(item, "array length", &count));
    const uint64_t min_bytes = MinElementBytes(element_type);
    if (count > Remaining() / min_bytes) {
      return Error(item, absl::StrCat("array of ", count, " ", TypeName(element_type), " at offset ", pos_,
                                      " runs past the end of the file (", bytes_.size(), " bytes)"));
    }
    if (element_type == GgufValueType::kString) {
      std::vector<std::string_view> strings(count);
      for (uint64_t i = 0; i < count; ++i) {
        KILN_RETURN_IF_ERROR(ReadString(item, "string", &strings[i], static_cast<int64_t>(i)));
      }
      *out = GgufValue::StringArray(std::move(strings));
    } else if (element_type == GgufValueType::kArray) {
      std::vector<GgufValue> arrays(count);
      for (uint64_t i = 0; i < count; ++i) {
        KILN_RETURN_IF_ERROR(ReadValue(item, element_id, depth + 1, &arrays[i]));
      }
      *out = GgufValue::NestedArray(std::move(arrays));
    } else {
      const char* raw = nullptr;
      KILN_RETURN_IF_ERROR(Take(item, "array elements", count * min_bytes, &raw));
      *out = GgufValue::ScalarArray(element_type, count, raw);
    }
    return absl::OkStatus();
  }

  absl::Status ReadAlignment(GgufFile* file) {
    const GgufValue* value = file->Find("general.alignment");
    if (value == nullptr) return absl::OkStatus();
    if (value->type() != GgufValueType::kUint32) {
      return Error("metadata 'general.alignment'",
                   absl::StrCat("has type ", TypeName(value->type()), ", expected uint32"));
    }
    uint64_t alignment = *value->AsUint64();
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      return Error("metadata 'general.alignment'", absl::StrCat("is ", alignment, ", not a power of two"));
    }
    file->alignment_ = alignment;
    return absl::OkStatus();
  }

  absl::Status ReadTensorInfo(GgufFile* file, uint64_t index) {
    std::string item = absl::StrCat("tensor ", index);
    GgufTensor tensor;
    KILN_RETURN_IF_ERROR(ReadString(item, "name", &tensor.name));
    absl::StrAppend(&item, " (", Quote(tensor.name), ")");
    uint32_t ndim = 0;
    KILN_RETURN_IF_ERROR(ReadScalar(item, "dimension count", &ndim));
    if (ndim > kMaxDims) return Error(item, absl::StrCat(ndim, " dimensions (at most ", kMaxDims, ")"));
    uint64_t dims[kMaxDims] = {};
    int64_t elements = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < ndim; ++d) {
      KILN_RETURN_IF_ERROR(ReadScalar(item, absl::StrCat("dimension ", d), &dims[d]));
      if (dims[d] > static_cast<uint64_t>(INT64_MAX)) {
        return Error(item, absl::StrCat("dimension ", d, " is ", dims[d], " (more than 2^63 - 1)"));
      }
      const auto dim = static_cast<int64_t>(dims[d]);
      if (dim != 0 && elements > INT64_MAX / dim) overflow = true;
      elements = overflow ? 0 : elements * dim;
    }
    if (overflow) return Error(item, "the element count overflows 64 bits");
    uint32_t type_id = 0;
    KILN_RETURN_IF_ERROR(ReadScalar(item, "type", &type_id));
    std::optional<GgmlTypeInfo> type = FindGgmlType(type_id);
    if (!type.has_value()) {
      const std::string_view name = UnknownGgmlTypeName(type_id);
      if (!name.empty()) {
        return Error(item, absl::StrCat("has type ", std::string(name), " (ggml type ", type_id, "), which Kiln does not support "
                                        "(docs/llm.md lists the weight types it runs)"));
      }
      return Error(item, absl::StrCat("unknown ggml type ", type_id));
    }
    KILN_RETURN_IF_ERROR(ReadScalar(item, "data offset", &tensor.offset));
    const uint64_t row = ndim == 0 ? 1 : dims[0];
    if (row % static_cast<uint64_t>(type->block_size) != 0) {
      return Error(item, absl::StrCat("rows of ", row, " ", std::string(type->name), " elements are not a whole number of ",
                                      type->block_size, "-element blocks"));
    }
    tensor.type = type->type;
    tensor.num_elements = elements;
    for (uint32_t d = ndim; d > 0; --d) tensor.shape.push_back(static_cast<int64_t>(dims[d - 1]));
    const uint64_t blocks = static_cast<uint64_t>(elements / type->block_size);
    const auto block_bytes = static_cast<uint64_t>(type->block_bytes);
    // Sizes beyond the file are refused in PlaceTensors; saturate instead of overflowing.
    tensor.nbytes = blocks > UINT64_MAX / block_bytes ? UINT64_MAX : blocks * block_bytes;
    auto [it, inserted] = file->tensor_index_.emplace(tensor.name, file->tensors_.size());
    if (!inserted) return Error(item, absl::StrCat("the name appears twice (first as tensor ", it->second, ")"));
    file->tensors_.push_back(std::move(tensor));
    return absl::OkStatus();
  }

  absl::Status PlaceTensors(GgufFile* file) {
    const uint64_t alignment = file->alignment_;
    // pos_ <= size, and size is far below 2^64 - alignment.
    const uint64_t data_start = (pos_ + alignment - 1) / alignment * alignment;
    file->data_offset_ = data_start;
    const uint64_t size = bytes_.size();
    std::vector<size_t> order;
    order.reserve(file->tensors_.size());
    for (size_t i = 0; i < file->tensors_.size(); ++i) {
      GgufTensor& tensor = file->tensors_[i];
      std::string item = absl::StrCat("tensor ", i, " (", Quote(tensor.name), ")");
      if (tensor.offset % alignment != 0) {
        return Error(item, absl::StrCat("data offset ", tensor.offset, " is not a multiple of the alignment ",
                                        alignment));
      }
      const uint64_t relative = tensor.offset;
      if (data_start > size || relative > size - data_start || tensor.nbytes > size - data_start - relative) {
        return Error(item, absl::StrCat("data [offset ", absl::StrCat(relative > UINT64_MAX - data_start
                                                                          ? UINT64_MAX
                                                                          : data_start + relative),
                                        ", ", tensor.nbytes, " bytes] runs past the end of the file (", size,
                                        " bytes)"));
      }
      tensor.offset = data_start + relative;
      tensor.data = bytes_.data() + tensor.offset;
      order.push_back(i);
    }
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return file->tensors_[a].offset < file->tensors_[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const GgufTensor& prev = file->tensors_[order[k - 1]];
      const GgufTensor& next = file->tensors_[order[k]];
      if (prev.nbytes > 0 && next.nbytes > 0 && prev.offset + prev.nbytes > next.offset) {
        return Error(absl::StrCat("tensor ", order[k - 1], " (", Quote(prev.name), ")"),
                     absl::StrCat("data [offset ", prev.offset, ", ", prev.nbytes, " bytes] overlaps tensor ",
                                  order[k], " (", Quote(next.name), ") at offset ", next.offset));
      }
    }
    return absl::OkStatus();
  }

  std::string_view bytes_;
  const std::string& name_;
  uint64_t pos_ = 0;
  uint64_t tensor_count_ = 0;
  uint64_t metadata_count_ = 0;
};

absl::StatusOr<std::shared_ptr<const GgufFile>> GgufFile::Open(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const support::MappedFile> mapped, support::MappedFile::Open(path));
  std::string_view bytes = mapped->view();
  return Parse(bytes, path, std::move(mapped));
}

absl::StatusOr<std::shared_ptr<const GgufFile>> GgufFile::Parse(std::string_view bytes, std::string name,
                                                                 std::shared_ptr<const void> owner) {
  std::shared_ptr<GgufFile> file(new GgufFile());
  file->name_ = std::move(name);
  file->owner_ = std::move(owner);
  file->bytes_ = bytes;
  GgufParser parser(bytes, file->name_);
  KILN_RETURN_IF_ERROR(parser.Parse(file.get()));
  return std::shared_ptr<const GgufFile>(std::move(file));
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

absl::StatusOr<const GgufValue*> GgufFile::Get(std::string_view key, GgufValueType type) const {
  const GgufValue* value = Find(key);
  if (value == nullptr) return absl::NotFoundError(absl::StrCat(name_, ": key ", Quote(key), " is missing"));
  if (value->type() != type) {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": key ", Quote(key), " has type ",
                                                   TypeName(value->type()), ", expected ",
                                                   TypeName(type)));
  }
  return value;
}

absl::StatusOr<uint32_t> GgufFile::GetUint32(std::string_view key) const {
  KILN_ASSIGN_OR_RETURN(const GgufValue* value, Get(key, GgufValueType::kUint32));
  return static_cast<uint32_t>(*value->AsUint64());
}

absl::StatusOr<uint64_t> GgufFile::GetUint64(std::string_view key) const {
  KILN_ASSIGN_OR_RETURN(const GgufValue* value, Get(key, GgufValueType::kUint64));
  return *value->AsUint64();
}

absl::StatusOr<int32_t> GgufFile::GetInt32(std::string_view key) const {
  KILN_ASSIGN_OR_RETURN(const GgufValue* value, Get(key, GgufValueType::kInt32));
  return static_cast<int32_t>(*value->AsInt64());
}

absl::StatusOr<float> GgufFile::GetFloat32(std::string_view key) const {
  KILN_ASSIGN_OR_RETURN(const GgufValue* value, Get(key, GgufValueType::kFloat32));
  return static_cast<float>(value->AsDouble());
}

absl::StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  KILN_ASSIGN_OR_RETURN(const GgufValue* value, Get(key, GgufValueType::kBool));
  return value->AsBool();
}

absl::StatusOr<std::string_view> GgufFile::GetString(std::string_view key) const {
  KILN_ASSIGN_OR_RETURN(const GgufValue* value, Get(key, GgufValueType::kString));
  return value->AsString();
}

absl::StatusOr<int64_t> GgufFile::GetInteger(std::string_view key) const {
  const GgufValue* value = Find(key);
  if (value == nullptr) return absl::NotFoundError(absl::StrCat(name_, ": key ", Quote(key), " is missing"));
  if (!IsGgufInteger(value->type())) {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": key ", Quote(key), " has type ",
                                                   TypeName(value->type()), ", expected an integer"));
  }
  std::optional<int64_t> result = value->AsInt64();
  if (!result.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": key ", Quote(key), " is ", *value->AsUint64(),
                                                   ", more than 2^63 - 1"));
  }
  return *result;
}

absl::StatusOr<double> GgufFile::GetFloat(std::string_view key) const {
  const GgufValue* value = Find(key);
  if (value == nullptr) return absl::NotFoundError(absl::StrCat(name_, ": key ", Quote(key), " is missing"));
  if (!IsGgufFloat(value->type())) {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": key ", Quote(key), " has type ",
                                                   TypeName(value->type()), ", expected a float"));
  }
  return value->AsDouble();
}

absl::StatusOr<GgufValue> GgufFile::GetArray(std::string_view key, GgufValueType element_type) const {
  KILN_ASSIGN_OR_RETURN(const GgufValue* value, Get(key, GgufValueType::kArray));
  if (value->element_type() != element_type) {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": key ", Quote(key), " has type array of ",
                                                   TypeName(value->element_type()), ", expected array of ",
                                                   TypeName(element_type)));
  }
  return *value;
}

const GgufTensor* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

absl::StatusOr<const GgufTensor*> GgufFile::GetTensor(std::string_view name) const {
  const GgufTensor* tensor = FindTensor(name);
  if (tensor == nullptr) return absl::NotFoundError(absl::StrCat(name_, ": tensor ", Quote(name), " is missing"));
  return tensor;
}

}  // namespace kiln::formats
