// Encoding and decoding of the .kx file (see executable.h and docs/vm.md for the layout).
#include <algorithm>
#include <cstring>
#include <exception>
#include <msgpack.hpp>

#include "absl/strings/str_cat.h"
#include "support/file_format.h"
#include "support/hash.h"
#include "vm/executable.h"

namespace kiln::vm {
namespace {

constexpr size_t kHeaderSize = 8 + 2 + 2 + 4;
constexpr size_t kSectionEntrySize = 4 + 4 + 8 + 8 + 8;
constexpr uint32_t kMaxSections = 64;
constexpr uint32_t kMaxSectionId = static_cast<uint32_t>(SectionId::kDeviceCode);

using support::Checksum64;

const char* SectionName(uint32_t id) {
  static constexpr const char* kNames[] = {"?", "functions", "constants", "builtins", "kernels",
                                           "CPU kernel object", "devices", "weights", "target",
                                           "metadata", "device code"};
  return id <= kMaxSectionId ? kNames[id] : "?";
}

uint64_t AlignUp(uint64_t n) { return (n + kSectionAlignment - 1) / kSectionAlignment * kSectionAlignment; }

// Where a tensor constant's bytes are, the field after its shape.
enum class ConstantStorage : int { kInline = 0, kWeights = 1, kExternal = 2 };

template <typename T>
void PutLE(std::string* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

template <typename T>
T GetLE(const char* p) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(static_cast<uint8_t>(p[i])) << (8 * i);
  return value;
}

// ------------------------------------------------------------------ encoding

using Packer = msgpack::packer<msgpack::sbuffer>;

void PackOperand(Packer& pk, const Operand& o) {
  pk.pack_array(3);
  pk.pack(static_cast<int>(o.kind));
  pk.pack(o.debug_name);
  pk.pack(o.value);
}

void PackFunction(Packer& pk, const Function& f) {
  pk.pack_array(7);
  pk.pack(f.name);
  pk.pack_array(static_cast<uint32_t>(f.params.size()));
  for (const ParamSignature& p : f.params) {
    pk.pack_array(p.device != 0 ? 9 : 8);
    pk.pack(p.name);
    pk.pack(static_cast<int>(p.kind));
    pk.pack(p.check_dtype);
    pk.pack(static_cast<int>(p.dtype.code));
    pk.pack(static_cast<int>(p.dtype.bits));
    pk.pack(static_cast<int>(p.dtype.lanes));
    pk.pack(p.ndim);
    pk.pack_array(static_cast<uint32_t>(p.dims.size()));
    for (const Operand& d : p.dims) PackOperand(pk, d);
    if (p.device != 0) pk.pack(p.device);
  }
  pk.pack(f.num_registers);
  pk.pack_array(static_cast<uint32_t>(f.code.size()));
  for (const Instruction& in : f.code) {
    pk.pack_array(6);
    pk.pack(static_cast<int>(in.op));
    pk.pack(static_cast<int>(in.sub));
    pk.pack(in.dst);
    pk.pack(in.a);
    pk.pack(in.b);
    pk.pack(in.c);
  }
  pk.pack_array(static_cast<uint32_t>(f.operands.size()));
  for (const Operand& o : f.operands) PackOperand(pk, o);
  pk.pack(f.strings);
  pk.pack(f.instruction_names);
}

// A tensor constant's first five fields: kind, dtype code, bits, lanes, shape.
void PackTensorHead(Packer& pk, DLDataType dtype, const std::vector<int64_t>& shape, uint32_t fields) {
  pk.pack_array(fields);
  pk.pack(static_cast<int>(Value::Kind::kTensor));
  pk.pack(static_cast<int>(dtype.code));
  pk.pack(static_cast<int>(dtype.bits));
  pk.pack(static_cast<int>(dtype.lanes));
  pk.pack(shape);
}

// Small constants, inline in the constants document.
void PackConstant(Packer& pk, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kInt: pk.pack_array(2); pk.pack(static_cast<int>(v.kind())); pk.pack(v.as_int()); return;
    case Value::Kind::kDouble: pk.pack_array(2); pk.pack(static_cast<int>(v.kind())); pk.pack(v.as_double()); return;
    case Value::Kind::kBool: pk.pack_array(2); pk.pack(static_cast<int>(v.kind())); pk.pack(v.as_bool()); return;
    case Value::Kind::kString: pk.pack_array(2); pk.pack(static_cast<int>(v.kind())); pk.pack(v.as_string()); return;
    case Value::Kind::kShape: pk.pack_array(2); pk.pack(static_cast<int>(v.kind())); pk.pack(v.as_shape()); return;
    case Value::Kind::kTensor: {
      const Tensor& t = v.as_tensor();
      PackTensorHead(pk, t.dtype(), t.shape(), 7);
      pk.pack(static_cast<int>(ConstantStorage::kInline));
      pk.pack_bin(static_cast<uint32_t>(t.nbytes()));
      pk.pack_bin_body(static_cast<const char*>(t.data()), static_cast<uint32_t>(t.nbytes()));
      return;
    }
    default:
      pk.pack_array(1);
      pk.pack(static_cast<int>(Value::Kind::kNone));
      return;
  }
}

// ------------------------------------------------------------------ decoding

// Walks a msgpack document with a sticky error: after the first mismatch every read
// returns a harmless default and the error says where decoding stopped.
class Reader {
 public:
  explicit Reader(const char* section) : section_(section) {}
  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }

  void Fail(const std::string& what) {
    if (status_.ok()) status_ = absl::DataLossError(absl::StrCat("malformed ", section_, " section: ", what));
  }

  // The elements of an array with at least `min_size` elements.
  const msgpack::object* Array(const msgpack::object& o, size_t min_size, size_t* size, const char* what) {
    *size = 0;
    if (!ok()) return nullptr;
    if (o.type != msgpack::type::ARRAY || o.via.array.size < min_size) {
      Fail(absl::StrCat("expected ", what));
      return nullptr;
    }
    *size = o.via.array.size;
    return o.via.array.ptr;
  }
  int64_t Int(const msgpack::object& o, const char* what, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) {
    if (!ok()) return 0;
    int64_t v = 0;
    if (o.type == msgpack::type::POSITIVE_INTEGER) {
      if (o.via.u64 > static_cast<uint64_t>(INT64_MAX)) return Fail(absl::StrCat(what, " out of range")), 0;
      v = static_cast<int64_t>(o.via.u64);
    } else if (o.type == msgpack::type::NEGATIVE_INTEGER) {
      v = o.via.i64;
    } else {
      return Fail(absl::StrCat("expected an integer for ", what)), 0;
    }
    if (v < lo || v > hi) return Fail(absl::StrCat(what, " out of range: ", v)), 0;
    return v;
  }
  double Double(const msgpack::object& o, const char* what) {
    if (!ok()) return 0;
    if (o.type == msgpack::type::FLOAT64 || o.type == msgpack::type::FLOAT32) return o.via.f64;
    // msgpack-c packs a double with an integral value (100000.0) as an integer.
    if (o.type == msgpack::type::POSITIVE_INTEGER) return static_cast<double>(o.via.u64);
    if (o.type == msgpack::type::NEGATIVE_INTEGER) return static_cast<double>(o.via.i64);
    return Fail(absl::StrCat("expected a float for ", what)), 0.0;
  }
  bool Bool(const msgpack::object& o, const char* what) {
    if (!ok()) return false;
    if (o.type == msgpack::type::BOOLEAN) return o.via.boolean;
    return Fail(absl::StrCat("expected a bool for ", what)), false;
  }
  std::string Str(const msgpack::object& o, const char* what) {
    if (!ok()) return {};
    if (o.type == msgpack::type::STR) return std::string(o.via.str.ptr, o.via.str.size);
    return Fail(absl::StrCat("expected a string for ", what)), std::string();
  }
  std::string Bin(const msgpack::object& o, const char* what) {
    if (!ok()) return {};
    if (o.type == msgpack::type::BIN) return std::string(o.via.bin.ptr, o.via.bin.size);
    return Fail(absl::StrCat("expected bytes for ", what)), std::string();
  }
  std::vector<int64_t> IntList(const msgpack::object& o, const char* what, int64_t lo = INT64_MIN) {
    size_t n = 0;
    const msgpack::object* items = Array(o, 0, &n, what);
    std::vector<int64_t> out;
    for (size_t i = 0; i < n && ok(); ++i) out.push_back(Int(items[i], what, lo));
    return out;
  }
  std::vector<std::string> StrList(const msgpack::object& o, const char* what) {
    size_t n = 0;
    const msgpack::object* items = Array(o, 0, &n, what);
    std::vector<std::string> out;
    for (size_t i = 0; i < n && ok(); ++i) out.push_back(Str(items[i], what));
    return out;
  }
  Operand ReadOperand(const msgpack::object& o) {
    size_t n = 0;
    const msgpack::object* f = Array(o, 3, &n, "operand");
    if (!ok()) return {};
    Operand op;
    op.kind = static_cast<Operand::Kind>(Int(f[0], "operand kind", 0, static_cast<int>(Operand::Kind::kAny)));
    op.debug_name = static_cast<int32_t>(Int(f[1], "operand name", -1, INT32_MAX));
    op.value = Int(f[2], "operand value");
    return op;
  }
  DLDataType DType(const msgpack::object& code, const msgpack::object& bits, const msgpack::object& lanes) {
    DLDataType t;
    t.code = static_cast<uint8_t>(Int(code, "dtype code", 0, 255));
    t.bits = static_cast<uint8_t>(Int(bits, "dtype bits", 0, 255));
    t.lanes = static_cast<uint16_t>(Int(lanes, "dtype lanes", 0, 65535));
    return t;
  }

 private:
  const char* section_;
  absl::Status status_;
};

absl::StatusOr<msgpack::object_handle> Unpack(const char* data, size_t size, const char* section) {
  // Limits tie every count to the section's length, so a corrupt count cannot make the
  // decoder allocate more than a small multiple of the input.
  msgpack::unpack_limit limit(size, 0, size, size, 0, 32);
  try {
    size_t offset = 0;
    msgpack::object_handle handle = msgpack::unpack(data, size, offset, nullptr, nullptr, limit);
    if (offset != size) {
      return absl::DataLossError(absl::StrCat("malformed ", section, " section: trailing bytes"));
    }
    return handle;
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat("malformed ", section, " section: ", e.what()));
  }
}

absl::Status DecodeFunctions(const msgpack::object& root, std::vector<Function>* out) {
  Reader r("functions");
  size_t count = 0;
  const msgpack::object* fns = r.Array(root, 0, &count, "a function list");
  for (size_t i = 0; i < count && r.ok(); ++i) {
    size_t n = 0;
    const msgpack::object* f = r.Array(fns[i], 7, &n, "a function");
    if (!r.ok()) break;
    Function fn;
    fn.name = r.Str(f[0], "function name");
    size_t num_params = 0;
    const msgpack::object* params = r.Array(f[1], 0, &num_params, "a parameter list");
    for (size_t p = 0; p < num_params && r.ok(); ++p) {
      size_t m = 0;
      const msgpack::object* ps = r.Array(params[p], 8, &m, "a parameter");
      if (!r.ok()) break;
      ParamSignature sig;
      sig.name = r.Str(ps[0], "parameter name");
      sig.kind = static_cast<Value::Kind>(r.Int(ps[1], "parameter kind", 0, static_cast<int>(Value::Kind::kObject)));
      sig.check_dtype = r.Bool(ps[2], "parameter dtype flag");
      sig.dtype = r.DType(ps[3], ps[4], ps[5]);
      sig.ndim = static_cast<int32_t>(r.Int(ps[6], "parameter ndim", -1, 64));
      size_t num_dims = 0;
      const msgpack::object* dims = r.Array(ps[7], 0, &num_dims, "parameter dims");
      for (size_t d = 0; d < num_dims && r.ok(); ++d) sig.dims.push_back(r.ReadOperand(dims[d]));
      if (m > 8) sig.device = static_cast<int32_t>(r.Int(ps[8], "parameter device", 0, INT32_MAX));
      fn.params.push_back(std::move(sig));
    }
    fn.num_registers = static_cast<int32_t>(r.Int(f[2], "register count", 0, 1 << 20));
    size_t num_code = 0;
    const msgpack::object* code = r.Array(f[3], 0, &num_code, "code");
    for (size_t c = 0; c < num_code && r.ok(); ++c) {
      size_t m = 0;
      const msgpack::object* in = r.Array(code[c], 6, &m, "an instruction");
      if (!r.ok()) break;
      Instruction instr;
      instr.op = static_cast<Opcode>(r.Int(in[0], "opcode", 0, static_cast<int>(Opcode::kNumOpcodes) - 1));
      instr.sub = static_cast<uint8_t>(r.Int(in[1], "instruction sub-kind", 0, 255));
      instr.dst = static_cast<int32_t>(r.Int(in[2], "instruction dst", INT32_MIN, INT32_MAX));
      instr.a = static_cast<int32_t>(r.Int(in[3], "instruction operand a", INT32_MIN, INT32_MAX));
      instr.b = static_cast<int32_t>(r.Int(in[4], "instruction operand b", INT32_MIN, INT32_MAX));
      instr.c = static_cast<int32_t>(r.Int(in[5], "instruction operand c", INT32_MIN, INT32_MAX));
      fn.code.push_back(instr);
    }
    size_t num_operands = 0;
    const msgpack::object* operands = r.Array(f[4], 0, &num_operands, "operands");
    for (size_t o = 0; o < num_operands && r.ok(); ++o) fn.operands.push_back(r.ReadOperand(operands[o]));
    fn.strings = r.StrList(f[5], "debug strings");
    for (int64_t v : r.IntList(f[6], "instruction names", -1)) fn.instruction_names.push_back(static_cast<int32_t>(std::min<int64_t>(v, INT32_MAX)));
    out->push_back(std::move(fn));
  }
  return r.status();
}

// The part of the file holding the weights section, for constants that point into it.
struct WeightsSpan {
  std::shared_ptr<const support::MappedFile> image;
  uint64_t offset = 0;  // 0 size: no weights section
  uint64_t size = 0;
  bool present = false;
};

// The byte size of a tensor constant, or an error if its dtype or shape is impossible.
absl::StatusOr<uint64_t> ConstantBytes(DLDataType dtype, const std::vector<int64_t>& shape) {
  if (shape.size() > 64 || dtype.bits == 0 || dtype.lanes == 0) {
    return absl::DataLossError(absl::StrCat("impossible dtype or rank (", DTypeToString(dtype), ", ", shape.size(), " dims)"));
  }
  absl::StatusOr<int64_t> numel = ShapeNumel(shape);
  int64_t elem = DTypeBytes(dtype);
  if (!numel.ok() || (*numel > 0 && elem > INT64_MAX / *numel)) {
    return absl::DataLossError(absl::StrCat("shape ", ShapeToString(shape), " is too large"));
  }
  return static_cast<uint64_t>(*numel * elem);
}

absl::Status DecodeConstants(const msgpack::object& root, const WeightsSpan& weights, std::vector<Value>* out,
                             std::vector<ExternalWeight>* external) {
  Reader r("constants");
  size_t count = 0;
  const msgpack::object* items = r.Array(root, 0, &count, "a constant list");
  for (size_t i = 0; i < count && r.ok(); ++i) {
    size_t n = 0;
    const msgpack::object* c = r.Array(items[i], 1, &n, "a constant");
    if (!r.ok()) break;
    auto kind = static_cast<Value::Kind>(r.Int(c[0], "constant kind", 0, static_cast<int>(Value::Kind::kObject)));
    if (kind != Value::Kind::kNone && n < 2) {
      r.Fail("constant without a value");
      break;
    }
    switch (kind) {
      case Value::Kind::kNone: out->push_back(Value()); break;
      case Value::Kind::kInt: out->push_back(Value(r.Int(c[1], "int constant"))); break;
      case Value::Kind::kDouble: out->push_back(Value(r.Double(c[1], "float constant"))); break;
      case Value::Kind::kBool: out->push_back(Value(r.Bool(c[1], "bool constant"))); break;
      case Value::Kind::kString: out->push_back(Value::FromString(r.Str(c[1], "string constant"))); break;
      case Value::Kind::kShape: out->push_back(Value::FromShape(r.IntList(c[1], "shape constant", 0))); break;
      case Value::Kind::kTensor: {
        if (n < 7) {
          r.Fail(absl::StrCat("tensor constant ", i, " needs at least 7 fields, has ", n));
          break;
        }
        DLDataType dtype = r.DType(c[1], c[2], c[3]);
        std::vector<int64_t> shape = r.IntList(c[4], "tensor constant shape", 0);
        auto storage = static_cast<ConstantStorage>(r.Int(c[5], "tensor constant storage", 0, 2));
        if (!r.ok()) break;
        std::string what = absl::StrCat("tensor constant ", i, " (", DTypeToString(dtype), ShapeToString(shape), ")");
        absl::StatusOr<uint64_t> bytes = ConstantBytes(dtype, shape);
        if (!bytes.ok()) {
          r.Fail(absl::StrCat(what, ": ", bytes.status().message()));
          break;
        }
        if (storage == ConstantStorage::kInline) {
          std::string data = r.Bin(c[6], "tensor constant data");
          if (!r.ok()) break;
          if (data.size() != *bytes) {
            r.Fail(absl::StrCat(what, ": ", data.size(), " bytes of data, its shape and dtype need ", *bytes));
            break;
          }
          absl::StatusOr<Tensor> t = Tensor::Empty(shape, dtype);
          if (!t.ok()) {
            r.Fail(std::string(t.status().message()));
            break;
          }
          if (!data.empty()) std::memcpy(t->data(), data.data(), data.size());
          out->push_back(Value(*t));
        } else if (storage == ConstantStorage::kWeights) {
          if (n < 8) {
            r.Fail(absl::StrCat(what, ": a constant in the weights section needs an offset and a size"));
            break;
          }
          auto offset = static_cast<uint64_t>(r.Int(c[6], "weights offset", 0));
          auto size = static_cast<uint64_t>(r.Int(c[7], "weights size", 0));
          if (!r.ok()) break;
          std::string where = absl::StrCat(what, ": weights [offset ", offset, ", ", size, " bytes]");
          if (size != *bytes) {
            r.Fail(absl::StrCat(where, " do not match its shape and dtype (", *bytes, " bytes)"));
          } else if (offset % kSectionAlignment != 0) {
            r.Fail(absl::StrCat(where, " are misaligned: the offset is not a multiple of ", kSectionAlignment));
          } else if (!weights.present) {
            r.Fail(absl::StrCat(where, " but the file has no weights section"));
          } else if (offset > weights.size || size > weights.size - offset) {
            r.Fail(absl::StrCat(where, " run past the end of the weights section (", weights.size, " bytes)"));
          }
          if (!r.ok()) break;
          // A view into the image: the tensor's owner keeps the whole image alive.
          std::shared_ptr<void> owner(weights.image, const_cast<char*>(weights.image->data()));
          out->push_back(Value(Tensor::View(std::move(owner), const_cast<char*>(weights.image->data()),
                                            weights.offset + offset, shape, dtype, CpuDevice()->dl_device())));
        } else {
          std::string name = r.Str(c[6], "external weight name");
          if (!r.ok()) break;
          if (name.empty()) {
            r.Fail(absl::StrCat(what, ": an external weight needs a name"));
            break;
          }
          external->push_back({static_cast<int32_t>(out->size()), name, dtype, shape});
          out->push_back(Value());
        }
        break;
      }
      default: r.Fail("unsupported constant kind"); break;
    }
  }
  return r.status();
}

absl::Status DecodeTarget(const msgpack::object& root, Executable::Contents* out) {
  Reader r("target");
  size_t n = 0;
  const msgpack::object* fields = r.Array(root, 2, &n, "[cpu name, cpu features]");
  if (!r.ok()) return r.status();
  out->cpu_name = r.Str(fields[0], "cpu name");
  out->cpu_features = r.StrList(fields[1], "cpu features");
  return r.status();
}

absl::Status DecodeMetadata(const msgpack::object& root, std::map<std::string, std::string>* out) {
  Reader r("metadata");
  std::vector<std::string> flat = r.StrList(root, "metadata strings");
  if (r.ok() && flat.size() % 2 != 0) r.Fail("an odd number of strings (key, value pairs expected)");
  for (size_t i = 0; r.ok() && i + 1 < flat.size(); i += 2) {
    if (!out->emplace(flat[i], flat[i + 1]).second) r.Fail(absl::StrCat("key '", flat[i], "' appears twice"));
  }
  return r.status();
}

// [[kind, [[kernel name, [param types]]...], [[format, arch, bytes]...], source]...]
absl::Status DecodeDeviceCode(const msgpack::object& root, std::vector<DeviceCode>* out) {
  Reader r("device code");
  size_t count = 0;
  const msgpack::object* modules = r.Array(root, 0, &count, "a list of device code modules");
  for (size_t i = 0; i < count && r.ok(); ++i) {
    size_t n = 0;
    const msgpack::object* m = r.Array(modules[i], 4, &n, "[kind, kernels, binaries, source]");
    if (!r.ok()) break;
    DeviceCode code;
    code.kind = r.Str(m[0], "device code kind");
    size_t kernels = 0;
    const msgpack::object* ks = r.Array(m[1], 0, &kernels, "a device kernel list");
    for (size_t k = 0; k < kernels && r.ok(); ++k) {
      size_t fields = 0;
      const msgpack::object* f = r.Array(ks[k], 2, &fields, "[device kernel name, parameter types]");
      if (!r.ok()) break;
      code.kernels.push_back({r.Str(f[0], "device kernel name"), r.StrList(f[1], "device kernel parameter types")});
    }
    size_t binaries = 0;
    const msgpack::object* bs = r.Array(m[2], 0, &binaries, "a device binary list");
    for (size_t b = 0; b < binaries && r.ok(); ++b) {
      size_t fields = 0;
      const msgpack::object* f = r.Array(bs[b], 3, &fields, "[format, arch, bytes]");
      if (!r.ok()) break;
      code.binaries.push_back({r.Str(f[0], "device binary format"), r.Str(f[1], "device binary arch"),
                               r.Bin(f[2], "device binary")});
    }
    code.source = r.Str(m[3], "device source");
    out->push_back(std::move(code));
  }
  return r.status();
}

absl::Status DecodeBuiltins(const msgpack::object& root, std::vector<BuiltinDecl>* out) {
  Reader r("builtins");
  size_t count = 0;
  const msgpack::object* items = r.Array(root, 0, &count, "a builtin list");
  for (size_t i = 0; i < count && r.ok(); ++i) {
    size_t n = 0;
    const msgpack::object* b = r.Array(items[i], 2, &n, "a builtin");
    if (!r.ok()) break;
    out->push_back({r.Str(b[0], "builtin name"), r.Str(b[1], "builtin signature")});
  }
  return r.status();
}

absl::Status DecodeKernels(const msgpack::object& root, std::vector<KernelDecl>* out) {
  Reader r("kernels");
  size_t count = 0;
  const msgpack::object* items = r.Array(root, 0, &count, "a kernel list");
  for (size_t i = 0; i < count && r.ok(); ++i) {
    size_t n = 0;
    const msgpack::object* k = r.Array(items[i], 3, &n, "a kernel");
    if (!r.ok()) break;
    KernelDecl decl;
    decl.name = r.Str(k[0], "kernel name");
    decl.source = static_cast<KernelDecl::Source>(r.Int(k[1], "kernel source", 0, 1));
    decl.arg_signature = r.Str(k[2], "kernel argument signature");
    if (n > 3) decl.device = static_cast<int32_t>(r.Int(k[3], "kernel device", 0, INT32_MAX));
    out->push_back(std::move(decl));
  }
  return r.status();
}

}  // namespace

std::string Executable::Encode(const Contents& contents) {
  struct Section {
    SectionId id;
    std::string body;  // empty for the weights section, which is copied piece by piece
    uint64_t size = 0;
  };
  std::vector<Section> sections;
  auto pack = [&](SectionId id, auto&& body) {
    msgpack::sbuffer buffer;
    Packer pk(buffer);
    body(pk);
    sections.push_back({id, std::string(buffer.data(), buffer.size()), buffer.size()});
  };

  // Large tensors go to the weights section, each at a 64-byte-aligned offset.
  std::vector<const ExternalWeight*> external(contents.constants.size(), nullptr);
  for (const ExternalWeight& w : contents.external_weights) {
    if (w.constant >= 0 && static_cast<size_t>(w.constant) < external.size()) external[static_cast<size_t>(w.constant)] = &w;
  }
  std::vector<std::pair<uint64_t, const Tensor*>> weights;
  uint64_t weights_size = 0;
  pack(SectionId::kFunctions, [&](Packer& pk) {
    pk.pack_array(static_cast<uint32_t>(contents.functions.size()));
    for (const Function& f : contents.functions) PackFunction(pk, f);
  });
  pack(SectionId::kConstants, [&](Packer& pk) {
    pk.pack_array(static_cast<uint32_t>(contents.constants.size()));
    for (size_t i = 0; i < contents.constants.size(); ++i) {
      const Value& v = contents.constants[i];
      if (const ExternalWeight* w = external[i]) {
        PackTensorHead(pk, w->dtype, w->shape, 7);
        pk.pack(static_cast<int>(ConstantStorage::kExternal));
        pk.pack(w->name);
      } else if (v.kind() == Value::Kind::kTensor && v.as_tensor().nbytes() > kInlineConstantMaxBytes) {
        const Tensor& t = v.as_tensor();
        uint64_t offset = AlignUp(weights_size);
        weights.emplace_back(offset, &t);
        weights_size = offset + static_cast<uint64_t>(t.nbytes());
        PackTensorHead(pk, t.dtype(), t.shape(), 8);
        pk.pack(static_cast<int>(ConstantStorage::kWeights));
        pk.pack(offset);
        pk.pack(static_cast<uint64_t>(t.nbytes()));
      } else {
        PackConstant(pk, v);
      }
    }
  });
  pack(SectionId::kBuiltins, [&](Packer& pk) {
    pk.pack_array(static_cast<uint32_t>(contents.builtins.size()));
    for (const BuiltinDecl& b : contents.builtins) {
      pk.pack_array(2);
      pk.pack(b.name);
      pk.pack(b.signature);
    }
  });
  pack(SectionId::kKernels, [&](Packer& pk) {
    pk.pack_array(static_cast<uint32_t>(contents.kernels.size()));
    for (const KernelDecl& k : contents.kernels) {
      pk.pack_array(k.device != 0 ? 4 : 3);
      pk.pack(k.name);
      pk.pack(static_cast<int>(k.source));
      pk.pack(k.arg_signature);
      if (k.device != 0) pk.pack(k.device);
    }
  });
  if (contents.devices != std::vector<std::string>{"cpu"}) {
    pack(SectionId::kDevices, [&](Packer& pk) { pk.pack(contents.devices); });
  }
  if (!contents.cpu_name.empty() || !contents.cpu_features.empty()) {
    pack(SectionId::kTarget, [&](Packer& pk) {
      pk.pack_array(2);
      pk.pack(contents.cpu_name);
      pk.pack(contents.cpu_features);
    });
  }
  if (!contents.metadata.empty()) {
    pack(SectionId::kMetadata, [&](Packer& pk) {
      std::vector<std::string> flat;  // key, value, key, value, ...
      for (const auto& [key, value] : contents.metadata) {
        flat.push_back(key);
        flat.push_back(value);
      }
      pk.pack(flat);
    });
  }
  if (!contents.device_code.empty()) {
    pack(SectionId::kDeviceCode, [&](Packer& pk) {
      pk.pack_array(static_cast<uint32_t>(contents.device_code.size()));
      for (const DeviceCode& code : contents.device_code) {
        pk.pack_array(4);
        pk.pack(code.kind);
        pk.pack_array(static_cast<uint32_t>(code.kernels.size()));
        for (const DeviceKernelInfo& k : code.kernels) {
          pk.pack_array(2);
          pk.pack(k.name);
          pk.pack(k.param_types);
        }
        pk.pack_array(static_cast<uint32_t>(code.binaries.size()));
        for (const DeviceBinary& b : code.binaries) {
          pk.pack_array(3);
          pk.pack(b.format);
          pk.pack(b.arch);
          pk.pack_bin(static_cast<uint32_t>(b.bytes.size()));
          pk.pack_bin_body(b.bytes.data(), static_cast<uint32_t>(b.bytes.size()));
        }
        pk.pack(code.source);
      }
    });
  }
  if (!contents.cpu_object.empty()) {
    sections.push_back({SectionId::kCpuObject, contents.cpu_object, contents.cpu_object.size()});
  }
  // Last, so the small sections a loader reads first sit together at the start of the file.
  if (!weights.empty()) sections.push_back({SectionId::kWeights, std::string(), weights_size});

  std::vector<uint64_t> offsets;
  uint64_t end = kHeaderSize + kSectionEntrySize * sections.size();
  for (const Section& section : sections) {
    offsets.push_back(AlignUp(end));
    end = offsets.back() + section.size;
  }
  std::string out(static_cast<size_t>(end), '\0');
  std::memcpy(out.data(), kExecutableMagic, sizeof(kExecutableMagic));
  std::string header;
  PutLE<uint16_t>(&header, kFormatMajor);
  PutLE<uint16_t>(&header, kFormatMinor);
  PutLE<uint32_t>(&header, static_cast<uint32_t>(sections.size()));
  for (size_t i = 0; i < sections.size(); ++i) {
    char* body = out.data() + offsets[i];
    if (sections[i].id == SectionId::kWeights) {
      for (const auto& [offset, tensor] : weights) {
        if (tensor->nbytes() > 0) std::memcpy(body + offset, tensor->data(), static_cast<size_t>(tensor->nbytes()));
      }
    } else {
      std::memcpy(body, sections[i].body.data(), sections[i].body.size());
    }
    PutLE<uint32_t>(&header, static_cast<uint32_t>(sections[i].id));
    PutLE<uint32_t>(&header, 0);
    PutLE<uint64_t>(&header, offsets[i]);
    PutLE<uint64_t>(&header, sections[i].size);
    PutLE<uint64_t>(&header, Checksum64(body, sections[i].size));
  }
  std::memcpy(out.data() + sizeof(kExecutableMagic), header.data(), header.size());
  return out;
}

absl::StatusOr<Executable::Contents> Executable::Decode(const std::string& bytes) {
  return Decode(support::MappedFile::FromBytes(bytes));
}

absl::StatusOr<Executable::Contents> Executable::Decode(std::shared_ptr<const support::MappedFile> image) {
  if (image == nullptr) return absl::InvalidArgumentError("Executable::Decode: no image");
  const char* data = image->data();
  const uint64_t file_size = image->size();
  if (file_size == 0) return absl::InvalidArgumentError("not a Kiln executable (the file is empty)");
  if (std::memcmp(data, kExecutableMagic, std::min<size_t>(file_size, sizeof(kExecutableMagic))) != 0) {
    // Name what it is when that is known: a GGUF or IR text given where a .kx belongs.
    const std::string format = support::FileFormatName(std::string_view(data, std::min<uint64_t>(file_size, 16)));
    // Models (ONNX, GGUF, IR text) become executables by 'kiln compile'; say so.
    constexpr char kCompileHint[] = "; models are compiled into a .kx by 'kiln compile'";
    if (!format.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("not a Kiln executable: the file is ", format,
                                                     format.find("model") != std::string::npos ? kCompileHint : ""));
    }
    const std::string_view head(data, std::min<uint64_t>(file_size, 64));
    if (std::all_of(head.begin(), head.end(), [](char c) { return (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' || c == '\r'; })) {
      return absl::InvalidArgumentError("not a Kiln executable: the file is text (IR text, a .kir, is compiled into a .kx by 'kiln compile')");
    }
    return absl::InvalidArgumentError(absl::StrCat("not a Kiln executable (bad magic number)", kCompileHint));
  }
  if (file_size < kHeaderSize) {
    return absl::DataLossError(absl::StrCat("truncated executable: the file is ", file_size,
                                            " bytes, shorter than the ", kHeaderSize, "-byte header"));
  }
  uint16_t major = GetLE<uint16_t>(data + 8);
  uint16_t minor = GetLE<uint16_t>(data + 10);
  if (major != kFormatMajor || minor > kFormatMinor) {
    return absl::FailedPreconditionError(absl::StrCat(
        "incompatible executable: file format ", major, ".", minor, ", this runtime reads ",
        kFormatMajor, ".0 to ", kFormatMajor, ".", kFormatMinor, "; recompile it with this version of kiln"));
  }
  uint32_t num_sections = GetLE<uint32_t>(data + 12);
  if (num_sections > kMaxSections) {
    return absl::DataLossError(absl::StrCat("corrupt executable: ", num_sections, " sections (at most ", kMaxSections, ")"));
  }
  const uint64_t table_end = kHeaderSize + kSectionEntrySize * num_sections;
  if (table_end > file_size) {
    return absl::DataLossError(absl::StrCat("truncated executable: the section table (", num_sections,
                                            " entries) should end at byte ", table_end, ", but the file is ",
                                            file_size, " bytes"));
  }
  // The table first, independently of the file's length: sections in ascending order, each
  // at the first 64-byte boundary after the previous one. A file shorter than the table
  // says is truncated; one longer has stray bytes.
  struct Span {
    uint32_t id;
    uint64_t offset, size, checksum;
  };
  std::vector<Span> spans;
  bool seen[kMaxSectionId + 1] = {};
  uint64_t end = table_end;
  for (uint32_t i = 0; i < num_sections; ++i) {
    const char* entry = data + kHeaderSize + kSectionEntrySize * i;
    Span s{GetLE<uint32_t>(entry), GetLE<uint64_t>(entry + 8), GetLE<uint64_t>(entry + 16), GetLE<uint64_t>(entry + 24)};
    if (s.id < 1 || s.id > kMaxSectionId) return absl::DataLossError(absl::StrCat("corrupt executable: unknown section id ", s.id));
    if (seen[s.id]) return absl::DataLossError(absl::StrCat("corrupt executable: section ", SectionName(s.id), " appears twice"));
    seen[s.id] = true;
    if (s.offset != AlignUp(end) || s.size > UINT64_MAX - s.offset) {
      return absl::DataLossError(absl::StrCat("corrupt executable: section ", SectionName(s.id), " (id ", s.id,
                                              ") is recorded at offset ", s.offset, " with ", s.size,
                                              " bytes; the previous section ends at byte ", end,
                                              ", so it should start at byte ", AlignUp(end)));
    }
    end = s.offset + s.size;
    spans.push_back(s);
  }
  if (end > file_size) {
    for (const Span& s : spans) {
      if (s.offset + s.size <= file_size) continue;
      return absl::DataLossError(absl::StrCat(
          "truncated executable: the file is ", file_size, " bytes, but its section table says it ends at byte ", end,
          "; section ", SectionName(s.id), " (bytes ", s.offset, " to ", s.offset + s.size, ") is ",
          s.offset >= file_size ? "missing" : "cut short"));
    }
  }
  if (end < file_size) {
    return absl::DataLossError(absl::StrCat("corrupt executable: ", file_size - end, " stray bytes after the last section (which ends at byte ",
                                            end, " of ", file_size, ")"));
  }
  for (SectionId required : {SectionId::kFunctions, SectionId::kConstants, SectionId::kBuiltins, SectionId::kKernels}) {
    auto id = static_cast<uint32_t>(required);
    if (!seen[id]) return absl::DataLossError(absl::StrCat("corrupt executable: required section ", SectionName(id), " is missing"));
  }
  for (const Span& s : spans) {
    if (Checksum64(data + s.offset, s.size) != s.checksum) {
      return absl::DataLossError(absl::StrCat("corrupt executable: section ", SectionName(s.id), " (bytes ", s.offset,
                                              " to ", s.offset + s.size, ") fails its checksum"));
    }
  }

  Contents contents;
  WeightsSpan weights{image};
  for (const Span& s : spans) {
    if (static_cast<SectionId>(s.id) == SectionId::kWeights) weights = {image, s.offset, s.size, true};
  }
  // Constants last: they may point into the weights section.
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return (a.id == static_cast<uint32_t>(SectionId::kConstants)) < (b.id == static_cast<uint32_t>(SectionId::kConstants));
  });
  for (const Span& s : spans) {
    auto section = static_cast<SectionId>(s.id);
    const char* body = data + s.offset;
    if (section == SectionId::kCpuObject) {
      contents.cpu_object.assign(body, s.size);
      continue;
    }
    if (section == SectionId::kWeights) continue;
    absl::StatusOr<msgpack::object_handle> handle = Unpack(body, s.size, SectionName(s.id));
    if (!handle.ok()) return handle.status();
    const msgpack::object& root = handle->get();
    absl::Status status;
    switch (section) {
      case SectionId::kFunctions: status = DecodeFunctions(root, &contents.functions); break;
      case SectionId::kConstants:
        status = DecodeConstants(root, weights, &contents.constants, &contents.external_weights);
        break;
      case SectionId::kBuiltins: status = DecodeBuiltins(root, &contents.builtins); break;
      case SectionId::kKernels: status = DecodeKernels(root, &contents.kernels); break;
      case SectionId::kDevices: {
        Reader r("devices");
        contents.devices = r.StrList(root, "device names");
        status = r.status();
        break;
      }
      case SectionId::kTarget: status = DecodeTarget(root, &contents); break;
      case SectionId::kMetadata: status = DecodeMetadata(root, &contents.metadata); break;
      case SectionId::kDeviceCode: status = DecodeDeviceCode(root, &contents.device_code); break;
      default: break;
    }
    if (!status.ok()) return status;
  }
  absl::Status verified = Verify(contents);
  if (!verified.ok()) return verified;
  return contents;
}

}  // namespace kiln::vm
