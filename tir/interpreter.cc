#include "tir/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/math_intrinsic_arity.h"

namespace kiln::tir {

int64_t HostBuffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// One lane of a value: integers (int, uint, bool) in `i`, floats in `f`. An int lane holds
// the value sign-extended from its width, a uint lane zero-extended (uint64 as its bit
// pattern), bool 0 or 1; a float lane is a double already rounded to its dtype.
union Lane {
  int64_t i;
  double f;
};

Lane IntLane(int64_t v) {
  Lane l;
  l.i = v;
  return l;
}
Lane FloatLane(double v) {
  Lane l;
  l.f = v;
  return l;
}

struct Value {
  DataType dtype;
  Lane scalar{};
  std::vector<Lane> lanes;  // used when dtype.lanes() > 1

  explicit Value(DataType t = DataType::Int64()) : dtype(t) {
    if (t.lanes() > 1) lanes.resize(t.lanes(), IntLane(0));
  }
  Lane at(int l) const { return lanes.empty() ? scalar : lanes[l]; }
  void set(int l, Lane v) {
    if (lanes.empty()) {
      scalar = v;
    } else {
      lanes[l] = v;
    }
  }
  int count() const { return dtype.lanes(); }
};

bool IsFloatType(DataType t) { return t.is_floating(); }

// Rounds `x` to the nearest value (ties to even) of a binary format with `precision`
// significand bits, smallest normal exponent `min_exp`, largest finite value `max_finite`.
double RoundToFormat(double x, int precision, int min_exp, double max_finite) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  int e = 0;
  std::frexp(x, &e);  // |x| = m * 2^e with m in [0.5, 1): the leading bit is 2^(e - 1)
  const int quantum_exp = std::max(e - precision, min_exp - precision + 1);
  const double r = std::ldexp(std::nearbyint(std::ldexp(x, -quantum_exp)), quantum_exp);
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}

double RoundFloat(double x, DataType t) {
  if (t.is_bfloat()) return RoundToFormat(x, 8, -126, 3.3895313892515355e38);
  switch (t.bits()) {
    case 16: return RoundToFormat(x, 11, -14, 65504.0);
    case 32: return static_cast<double>(static_cast<float>(x));
    default: return x;
  }
}

double HalfBitsToDouble(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else {
    v = std::ldexp(static_cast<double>(mant | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

// `x` must already be a float16 value (RoundFloat).
uint16_t DoubleToHalfBits(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return 0x7e00;
  const double a = std::fabs(x);
  if (std::isinf(a)) return sign | 0x7c00;
  if (a == 0) return sign;
  int e = 0;
  std::frexp(a, &e);
  if (e - 1 < -14) return sign | static_cast<uint16_t>(std::ldexp(a, 24));
  const uint16_t mant = static_cast<uint16_t>(std::ldexp(a, 11 - e)) & 0x3ff;
  return sign | static_cast<uint16_t>((e - 1 + 15) << 10) | mant;
}

double BFloatBitsToDouble(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t DoubleToBFloatBits(double x) {
  if (std::isnan(x)) return 0x7fc0;
  const float f = static_cast<float>(x);  // exact: x is already a bfloat16 value
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);
}

// Whether the interpreter handles elements of `t` (scalar element types only).
bool SupportedElement(DataType t) {
  if (t.lanes() != 1) return false;
  if (t.is_bool()) return true;
  if (t.is_sub_byte()) return 8 % t.bits() == 0;
  if (t.is_integer()) return t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  if (t.is_float()) return t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  if (t.is_bfloat()) return t.bits() == 16;
  return false;
}

Lane ReadElement(const uint8_t* p, DataType t) {
  if (t.is_bool()) return IntLane(*p != 0 ? 1 : 0);
  if (t.is_bfloat()) {
    uint16_t b;
    std::memcpy(&b, p, 2);
    return FloatLane(BFloatBitsToDouble(b));
  }
  if (t.is_float()) {
    switch (t.bits()) {
      case 16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return FloatLane(HalfBitsToDouble(h));
      }
      case 32: {
        float f;
        std::memcpy(&f, p, 4);
        return FloatLane(f);
      }
      default: {
        double d;
        std::memcpy(&d, p, 8);
        return FloatLane(d);
      }
    }
  }
  uint64_t u = 0;
  std::memcpy(&u, p, t.bytes());  // little-endian host
  return IntLane(WrapInt(static_cast<int64_t>(u), t));
}

void WriteElement(uint8_t* p, DataType t, Lane v) {
  if (t.is_bool()) {
    *p = v.i != 0 ? 1 : 0;
    return;
  }
  if (t.is_bfloat()) {
    const uint16_t b = DoubleToBFloatBits(v.f);
    std::memcpy(p, &b, 2);
    return;
  }
  if (t.is_float()) {
    switch (t.bits()) {
      case 16: {
        const uint16_t h = DoubleToHalfBits(v.f);
        std::memcpy(p, &h, 2);
        return;
      }
      case 32: {
        const float f = static_cast<float>(v.f);
        std::memcpy(p, &f, 4);
        return;
      }
      default: std::memcpy(p, &v.f, 8); return;
    }
  }
  const uint64_t u = static_cast<uint64_t>(v.i);
  std::memcpy(p, &u, t.bytes());
}

std::string LaneText(Lane v, DataType t) {
  if (IsFloatType(t)) return absl::StrCat(v.f);
  if (t.is_uint()) return absl::StrCat(static_cast<uint64_t>(v.i));
  return absl::StrCat(v.i);
}

// The storage and layout of a buffer while it is live.
struct BufferState {
  const BufferNode* node = nullptr;
  DataType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements
  uint8_t* data = nullptr;
  int64_t capacity = 0;  // elements addressable from data (packed for sub-byte types)
  bool read_only = false;
  std::unique_ptr<uint8_t[]> owned;
};

std::vector<int64_t> CompactStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int k = static_cast<int>(shape.size()) - 2; k >= 0; --k) strides[k] = strides[k + 1] * shape[k + 1];
  return strides;
}

class Interpreter {
 public:
  explicit Interpreter(const InterpreterOptions& options) : options_(options) {}

  absl::Status Run(const PrimFunc& func, const std::vector<InterpreterArg>& args) {
    KILN_RETURN_IF_ERROR(BindParams(func, args));
    Exec(func->body);
    return status_;
  }

 private:
  // ---- errors ----
  void Fail(absl::Status status) {
    if (status_.ok()) status_ = std::move(status);
  }
  void Undefined(const std::string& what) { Fail(absl::InvalidArgumentError(what)); }
  void Unsupported(const std::string& what) { Fail(absl::UnimplementedError(what)); }
  bool ok() const { return status_.ok(); }

  bool Step() {
    if (++steps_ > options_.max_steps) {
      Fail(absl::ResourceExhaustedError(absl::StrCat("the interpreter gave up after ", options_.max_steps, " steps")));
      return false;
    }
    return true;
  }

  // ---- parameters ----
  absl::Status BindParams(const PrimFunc& func, const std::vector<InterpreterArg>& args) {
    const auto& params = func->params;
    if (args.size() != params.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the PrimFunc takes ", params.size(), " arguments, got ", args.size()));
    }
    // Compound dims and strides, checked once every plain variable is bound.
    std::vector<std::pair<PrimExpr, int64_t>> deferred;
    std::vector<std::string> deferred_what;
    for (size_t p = 0; p < params.size(); ++p) {
      const PrimFuncParam& param = params[p];
      if (!param.is_buffer()) {
        const VarNode* var = param.var.get();
        const DataType t = var->dtype();
        Value v(t);
        if (!t.is_scalar() || !SupportedElement(t)) {
          return absl::UnimplementedError(absl::StrCat("scalar parameter ", var->name, " of type ", t.ToString()));
        }
        if (const auto* i = std::get_if<int64_t>(&args[p])) {
          v.scalar = IsFloatType(t) ? FloatLane(RoundFloat(static_cast<double>(*i), t))
                                    : IntLane(t.is_bool() ? (*i != 0) : WrapInt(*i, t));
        } else if (const auto* d = std::get_if<double>(&args[p]); d != nullptr && IsFloatType(t)) {
          v.scalar = FloatLane(RoundFloat(*d, t));
        } else {
          return absl::InvalidArgumentError(
              absl::StrCat("argument ", p, " (", var->name, "): expected a ", t.ToString(), " number"));
        }
        env_[var] = v;
        continue;
      }
      const BufferNode* node = param.buffer.get();
      const auto* host_ptr = std::get_if<HostBuffer*>(&args[p]);
      if (host_ptr == nullptr || *host_ptr == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("argument ", p, " (", node->name, "): expected a buffer"));
      }
      const HostBuffer& host = **host_ptr;
      if (!SupportedElement(node->dtype)) {
        return absl::UnimplementedError(
            absl::StrCat("buffer ", node->name, " of element type ", node->dtype.ToString()));
      }
      if (host.dtype != node->dtype) {
        return absl::InvalidArgumentError(absl::StrCat("argument ", p, " (", node->name, "): expected dtype ",
                                                       node->dtype.ToString(), ", got ", host.dtype.ToString()));
      }
      if (host.shape.size() != node->shape.size()) {
        return absl::InvalidArgumentError(absl::StrCat("argument ", p, " (", node->name, "): expected rank ",
                                                       node->shape.size(), ", got ", host.shape.size()));
      }
      if (host.data == nullptr && host.numel() != 0) {
        return absl::InvalidArgumentError(absl::StrCat("argument ", p, " (", node->name, "): no data"));
      }
      const std::vector<int64_t> compact = CompactStrides(host.shape);
      auto bind = [&](const PrimExpr& declared, int64_t actual, const std::string& what) -> absl::Status {
        if (const auto imm = declared.as_int()) {
          if (*imm != actual) {
            return absl::InvalidArgumentError(absl::StrCat("argument ", p, " (", node->name, ") ", what,
                                                           ": expected ", *imm, ", got ", actual));
          }
          return absl::OkStatus();
        }
        if (declared.kind() == ExprKind::kVar) {
          const auto* var = static_cast<const VarNode*>(declared.get());
          auto it = env_.find(var);
          if (it == env_.end()) {
            Value v(var->dtype());
            v.scalar = IntLane(WrapInt(actual, var->dtype()));
            env_[var] = v;
            return absl::OkStatus();
          }
          if (it->second.scalar.i != actual) {
            return absl::InvalidArgumentError(absl::StrCat("argument ", p, " (", node->name, ") ", what, ": expected ",
                                                           it->second.scalar.i, " (", var->name, "), got ", actual));
          }
          return absl::OkStatus();
        }
        deferred.emplace_back(declared, actual);
        deferred_what.push_back(absl::StrCat("argument ", p, " (", node->name, ") ", what));
        return absl::OkStatus();
      };
      for (size_t k = 0; k < host.shape.size(); ++k) {
        KILN_RETURN_IF_ERROR(bind(node->shape[k], host.shape[k], absl::StrCat("dimension ", k)));
      }
      if (!node->strides.empty()) {
        if (node->strides.size() != host.shape.size()) {
          return absl::InvalidArgumentError(absl::StrCat("buffer ", node->name, ": ", node->strides.size(),
                                                         " strides for ", host.shape.size(), " dimensions"));
        }
        for (size_t k = 0; k < compact.size(); ++k) {
          // An extent-1 dimension's stride is never used to address anything.
          if (host.shape[k] == 1) continue;
          KILN_RETURN_IF_ERROR(bind(node->strides[k], compact[k], absl::StrCat("stride ", k)));
        }
      }
      BufferState state;
      state.node = node;
      state.dtype = node->dtype;
      state.shape = host.shape;
      state.strides = compact;
      state.data = host.data;
      state.capacity = host.numel();
      state.read_only = host.read_only;
      buffers_[node] = std::move(state);
    }
    for (size_t k = 0; k < deferred.size(); ++k) {
      Value v = Eval(deferred[k].first);
      if (!ok()) return status_;
      if (v.scalar.i != deferred[k].second) {
        return absl::InvalidArgumentError(absl::StrCat(deferred_what[k], ": expected ", v.scalar.i, " (",
                                                       ToString(deferred[k].first), "), got ", deferred[k].second));
      }
    }
    return absl::OkStatus();
  }

  // ---- buffers ----
  BufferState* FindBuffer(const BufferNode* node) {
    auto it = buffers_.find(node);
    if (it == buffers_.end()) {
      Undefined(absl::StrCat("buffer ", node->name, " is used where it is not defined"));
      return nullptr;
    }
    return &it->second;
  }

  bool Allocate(const Buffer& buffer) {
    const BufferNode* node = buffer.get();
    if (!SupportedElement(node->dtype)) {
      Unsupported(absl::StrCat("buffer ", node->name, " of element type ", node->dtype.ToString()));
      return false;
    }
    BufferState state;
    state.node = node;
    state.dtype = node->dtype;
    for (const PrimExpr& d : node->shape) {
      Value v = Eval(d);
      if (!ok()) return false;
      if (v.scalar.i < 0) {
        Undefined(absl::StrCat("buffer ", node->name, " has negative extent ", v.scalar.i));
        return false;
      }
      state.shape.push_back(v.scalar.i);
    }
    if (node->strides.empty()) {
      state.strides = CompactStrides(state.shape);
    } else {
      if (node->strides.size() != state.shape.size()) {
        Undefined(absl::StrCat("buffer ", node->name, ": ", node->strides.size(), " strides for ",
                               state.shape.size(), " dimensions"));
        return false;
      }
      for (const PrimExpr& s : node->strides) {
        Value v = Eval(s);
        if (!ok()) return false;
        if (v.scalar.i < 0) {
          Undefined(absl::StrCat("buffer ", node->name, " has negative stride ", v.scalar.i));
          return false;
        }
        state.strides.push_back(v.scalar.i);
      }
    }
    // Elements needed: one past the largest reachable offset (none for an empty buffer).
    const int64_t limit = options_.max_allocation_bytes / std::max(1, node->dtype.bytes());
    int64_t elements = 1;
    for (size_t k = 0; k < state.shape.size(); ++k) {
      if (state.shape[k] == 0) {
        elements = 0;
        break;
      }
    }
    if (elements != 0) {
      for (size_t k = 0; k < state.shape.size(); ++k) {
        const int64_t span = state.shape[k] - 1;
        if (span != 0 && state.strides[k] > (limit - elements) / span) {
          elements = limit + 1;
          break;
        }
        elements += span * state.strides[k];
      }
    }
    const int64_t bytes = node->dtype.StorageBytes(elements);
    if (elements > limit || allocated_bytes_ + bytes > options_.max_allocation_bytes) {
      Fail(absl::ResourceExhaustedError(absl::StrCat("buffer ", node->name, " needs more than the ",
                                                     options_.max_allocation_bytes, " bytes the interpreter allows")));
      return false;
    }
    allocated_bytes_ += bytes;
    state.owned = std::make_unique<uint8_t[]>(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    std::memset(state.owned.get(), 0, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    state.data = state.owned.get();
    state.capacity = elements;
    buffers_[node] = std::move(state);
    return true;
  }

  void Release(const Buffer& buffer) {
    auto it = buffers_.find(buffer.get());
    if (it == buffers_.end()) return;
    allocated_bytes_ -= it->second.dtype.StorageBytes(it->second.capacity);
    buffers_.erase(it);
  }

  // The element offset of lane `l` of `indices` in `buffer`, or -1 after an error.
  int64_t Address(const BufferState& buffer, const std::vector<Value>& indices, int l) {
    if (indices.size() != buffer.shape.size()) {
      Undefined(absl::StrCat("buffer ", buffer.node->name, " of rank ", buffer.shape.size(), " indexed with ",
                             indices.size(), " indices"));
      return -1;
    }
    int64_t offset = 0;
    for (size_t k = 0; k < indices.size(); ++k) {
      const Value& index = indices[k];
      const int64_t i = index.at(index.count() == 1 ? 0 : l).i;
      if (i < 0 || i >= buffer.shape[k]) {
        Undefined(absl::StrCat("buffer ", buffer.node->name, ": index ", i, " is outside [0, ", buffer.shape[k],
                               ") in dimension ", k));
        return -1;
      }
      offset += i * buffer.strides[k];
    }
    if (offset >= buffer.capacity) {
      Undefined(absl::StrCat("buffer ", buffer.node->name, ": element ", offset, " is outside its ", buffer.capacity,
                             " elements"));
      return -1;
    }
    return offset;
  }

  // Sub-byte elements are packed low bits first (tir/data_type.h): a load shifts and
  // masks its byte, a store rewrites its byte keeping the other elements' bits.
  static Lane LoadAt(const BufferState& buffer, int64_t offset) {
    const DataType t = buffer.dtype;
    if (!t.is_sub_byte()) return ReadElement(buffer.data + offset * t.bytes(), t);
    const int64_t bit = offset * t.bits();
    const unsigned mask = (1u << t.bits()) - 1;
    const unsigned value = (buffer.data[bit / 8] >> (bit % 8)) & mask;
    return IntLane(WrapInt(value, t));
  }

  static void StoreAt(const BufferState& buffer, int64_t offset, Lane v) {
    const DataType t = buffer.dtype;
    if (!t.is_sub_byte()) {
      WriteElement(buffer.data + offset * t.bytes(), t, v);
      return;
    }
    const int64_t bit = offset * t.bits();
    const unsigned shift = static_cast<unsigned>(bit % 8);
    const unsigned mask = ((1u << t.bits()) - 1) << shift;
    uint8_t& byte = buffer.data[bit / 8];
    byte = static_cast<uint8_t>((byte & ~mask) | ((static_cast<unsigned>(v.i) << shift) & mask));
  }

  std::vector<Value> EvalIndices(const std::vector<PrimExpr>& indices) {
    std::vector<Value> out;
    out.reserve(indices.size());
    for (const PrimExpr& index : indices) {
      out.push_back(Eval(index));
      if (!out.back().dtype.is_integer()) {
        Undefined(absl::StrCat("index ", ToString(index), " is not an integer"));
      }
    }
    return out;
  }

  // ---- expressions ----
  Value Eval(const PrimExpr& e) {
    if (!ok()) return Value(e.dtype());
    switch (e.kind()) {
      case ExprKind::kIntImm: {
        Value v(e.dtype());
        const auto* imm = static_cast<const IntImmNode*>(e.get());
        if (IsFloatType(e.dtype())) {
          v.set(0, FloatLane(RoundFloat(static_cast<double>(imm->value), e.dtype())));
        } else {
          v.set(0, IntLane(WrapInt(imm->value, e.dtype())));
        }
        return v;
      }
      case ExprKind::kFloatImm: {
        Value v(e.dtype());
        v.set(0, FloatLane(RoundFloat(static_cast<const FloatImmNode*>(e.get())->value, e.dtype())));
        return v;
      }
      case ExprKind::kVar: {
        const auto* var = static_cast<const VarNode*>(e.get());
        auto it = env_.find(var);
        if (it == env_.end()) {
          Undefined(absl::StrCat("variable ", var->name, " is used where it is not defined"));
          return Value(e.dtype());
        }
        return it->second;
      }
      case ExprKind::kNot: {
        Value a = Eval(static_cast<const NotNode*>(e.get())->a);
        Value r(e.dtype());
        for (int l = 0; l < r.count(); ++l) r.set(l, IntLane(a.at(l).i == 0 ? 1 : 0));
        return r;
      }
      case ExprKind::kBitNot: {
        Value a = Eval(static_cast<const BitNotNode*>(e.get())->a);
        Value r(e.dtype());
        for (int l = 0; l < r.count(); ++l) r.set(l, IntLane(EvalBitNot(e.dtype(), a.at(l).i)));
        return r;
      }
      case ExprKind::kReinterpret: {
        // Through memory, as a bit cast is: the lanes of the value little-endian one after
        // the other, read back as lanes of the new type.
        const auto* node = static_cast<const ReinterpretNode*>(e.get());
        Value a = Eval(node->value);
        const DataType from = node->value.dtype().element_of();
        const DataType to = e.dtype().element_of();
        if (!SupportedElement(from) || !SupportedElement(to) || from.is_bool() || to.is_bool()) {
          Unsupported(absl::StrCat("reinterpret from ", node->value.dtype().ToString(), " to ", e.dtype().ToString()));
          return Value(e.dtype());
        }
        std::vector<uint8_t> bytes(static_cast<size_t>(node->value.dtype().bytes()));
        for (int l = 0; l < a.count(); ++l) WriteElement(bytes.data() + l * from.bytes(), from, a.at(l));
        Value r(e.dtype());
        for (int l = 0; l < r.count(); ++l) r.set(l, ReadElement(bytes.data() + l * to.bytes(), to));
        return r;
      }
      case ExprKind::kSelect: {
        const auto* s = static_cast<const SelectNode*>(e.get());
        // Both sides are evaluated: TIR expressions have no effects, and generated code does
        // the same, so a side that would divide by zero is undefined even when not chosen.
        // Except a buffer load as the true side: only its chosen lanes are read (the code
        // generator makes it a masked load), so the others may lie outside the buffer (a
        // column edge's lanes past the end, docs/ir.md).
        Value c = Eval(s->condition);
        const auto* masked = static_cast<const BufferLoadNode*>(
            s->true_value.kind() == ExprKind::kBufferLoad ? s->true_value.get() : nullptr);
        if (masked != nullptr && (masked->buffer->dtype.is_sub_byte() || masked->buffer->dtype.is_bool())) {
          masked = nullptr;
        }
        Value t = masked ? Value(e.dtype()) : Eval(s->true_value);
        if (masked != nullptr) {
          if (BufferState* buffer = FindBuffer(masked->buffer.get())) {
            std::vector<Value> indices = EvalIndices(masked->indices);
            for (int l = 0; l < t.count() && ok(); ++l) {
              if (c.at(c.count() == 1 ? 0 : l).i == 0) continue;
              const int64_t offset = Address(*buffer, indices, l);
              if (offset >= 0) t.set(l, LoadAt(*buffer, offset));
            }
          }
        }
        Value f = Eval(s->false_value);
        Value r(e.dtype());
        for (int l = 0; l < r.count(); ++l) {
          r.set(l, c.at(c.count() == 1 ? 0 : l).i != 0 ? t.at(l) : f.at(l));
        }
        return r;
      }
      case ExprKind::kCast: {
        const auto* c = static_cast<const CastNode*>(e.get());
        Value a = Eval(c->value);
        Value r(e.dtype());
        for (int l = 0; l < r.count() && ok(); ++l) r.set(l, CastLane(a.at(l), c->value.dtype(), e.dtype()));
        return r;
      }
      case ExprKind::kCall: return EvalCall(static_cast<const CallNode*>(e.get()));
      case ExprKind::kBufferLoad: {
        const auto* load = static_cast<const BufferLoadNode*>(e.get());
        Value r(e.dtype());
        BufferState* buffer = FindBuffer(load->buffer.get());
        if (buffer == nullptr) return r;
        std::vector<Value> indices = EvalIndices(load->indices);
        for (int l = 0; l < r.count() && ok(); ++l) {
          const int64_t offset = Address(*buffer, indices, l);
          if (offset >= 0) r.set(l, LoadAt(*buffer, offset));
        }
        return r;
      }
      case ExprKind::kRamp: {
        const auto* ramp = static_cast<const RampNode*>(e.get());
        Value base = Eval(ramp->base);
        Value stride = Eval(ramp->stride);
        Value r(e.dtype());
        const DataType t = ramp->base.dtype();
        for (int l = 0; l < r.count(); ++l) {
          if (IsFloatType(t)) {
            r.set(l, FloatLane(RoundFloat(base.scalar.f + RoundFloat(stride.scalar.f * l, t), t)));
          } else {
            r.set(l, IntLane(WrapInt(static_cast<int64_t>(static_cast<uint64_t>(base.scalar.i) +
                                                          static_cast<uint64_t>(stride.scalar.i) * l),
                                     t)));
          }
        }
        return r;
      }
      case ExprKind::kBroadcast: {
        const auto* b = static_cast<const BroadcastNode*>(e.get());
        Value v = Eval(b->value);
        Value r(e.dtype());
        for (int l = 0; l < r.count(); ++l) r.set(l, v.scalar);
        return r;
      }
      case ExprKind::kLet: {
        const auto* let = static_cast<const LetNode*>(e.get());
        Value v = Eval(let->value);
        auto saved = Bind(let->var.get(), std::move(v));
        Value r = Eval(let->body);
        Unbind(let->var.get(), std::move(saved));
        return r;
      }
      default: return EvalBinary(static_cast<const BinaryNode*>(e.get()));
    }
  }

  Lane CastLane(Lane v, DataType from, DataType to) {
    if (to.is_bool()) return IntLane(IsFloatType(from) ? (v.f != 0 || std::isnan(v.f)) : v.i != 0);
    if (IsFloatType(to)) {
      if (IsFloatType(from)) return FloatLane(RoundFloat(v.f, to));
      if (from.is_uint()) {
        const uint64_t u = static_cast<uint64_t>(v.i);
        return FloatLane(to.bits() == 32 && !to.is_bfloat() ? static_cast<double>(static_cast<float>(u))
                                                           : RoundFloat(static_cast<double>(u), to));
      }
      return FloatLane(to.bits() == 32 && !to.is_bfloat() ? static_cast<double>(static_cast<float>(v.i))
                                                         : RoundFloat(static_cast<double>(v.i), to));
    }
    if (!to.is_integer()) {
      Unsupported(absl::StrCat("cast to ", to.ToString()));
      return IntLane(0);
    }
    if (!IsFloatType(from)) return IntLane(WrapInt(v.i, to));
    // Float to integer truncates; a value the target cannot hold is undefined.
    const double t = std::trunc(v.f);
    const double lo = to.is_int() ? -std::ldexp(1.0, to.bits() - 1) : 0.0;
    const double hi = to.is_int() ? std::ldexp(1.0, to.bits() - 1) : std::ldexp(1.0, to.bits());
    if (std::isnan(v.f) || t < lo || t >= hi) {
      Undefined(absl::StrCat("cast of ", v.f, " from ", from.ToString(), " to ", to.ToString(),
                             " is out of range"));
      return IntLane(0);
    }
    if (to.is_uint()) return IntLane(static_cast<int64_t>(static_cast<uint64_t>(t)));
    return IntLane(static_cast<int64_t>(t));
  }

  Value EvalCall(const CallNode* call) {
    Value r(call->dtype());
    const std::string& op = call->op;
    const size_t arity = MathIntrinsicArity(op);
    if (!IsMathIntrinsic(op)) {
      Unsupported(absl::StrCat("intrinsic ", op));
      return r;
    }
    if (call->args.size() != arity) {
      Undefined(absl::StrCat(op, " takes ", arity, " argument(s), got ", call->args.size()));
      return r;
    }
    const DataType t = call->dtype();
    if (!IsFloatType(t)) {
      Unsupported(absl::StrCat(op, " of ", t.ToString(), " (math intrinsics take floats)"));
      return r;
    }
    Value x = Eval(call->args[0]);
    Value y = arity >= 2 ? Eval(call->args[1]) : Value(t);
    Value z = arity >= 3 ? Eval(call->args[2]) : Value(t);
    for (int l = 0; l < r.count() && ok(); ++l) {
      const double a = x.at(l).f;
      const double b = y.at(l).f;
      const double c = z.at(l).f;
      double out = 0;
      if (t.bits() == 64) {
        out = Math<double>(op, a, b, c);
      } else {
        // Narrower floats compute in float, as the C library's float entry points do.
        out = static_cast<double>(
            Math<float>(op, static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
      }
      r.set(l, FloatLane(RoundFloat(out, t)));
    }
    return r;
  }

  // In the precision of T (float for float32 and narrower, as generated code computes).
  template <typename T>
  static T Math(const std::string& op, T x, T y, T z) {
    const T one = 1;
    if (op == "exp") return std::exp(x);
    if (op == "log") return std::log(x);
    if (op == "sqrt") return std::sqrt(x);
    if (op == "rsqrt") return one / std::sqrt(x);
    if (op == "tanh") return std::tanh(x);
    if (op == "sigmoid") return one / (one + std::exp(-x));
    if (op == "erf") return std::erf(x);
    if (op == "fabs") return std::fabs(x);
    if (op == "floor") return std::floor(x);
    if (op == "ceil") return std::ceil(x);
    if (op == "round") return std::nearbyint(x);
    if (op == "pow") return std::pow(x, y);
    if (op == "sin") return std::sin(x);
    if (op == "cos") return std::cos(x);
    if (op == "tan") return std::tan(x);
    if (op == "asin") return std::asin(x);
    if (op == "acos") return std::acos(x);
    if (op == "atan") return std::atan(x);
    if (op == "sinh") return std::sinh(x);
    if (op == "cosh") return std::cosh(x);
    if (op == "asinh") return std::asinh(x);
    if (op == "acosh") return std::acosh(x);
    if (op == "atanh") return std::atanh(x);
    if (op == "log1p") return std::log1p(x);
    if (op == "expm1") return std::expm1(x);
    if (op == "fmod") return std::fmod(x, y);
    if (op == "fma") return std::fma(x, y, z);
    return std::numeric_limits<T>::quiet_NaN();  // unreachable: IsMathIntrinsic checked
  }

  Value EvalBinary(const BinaryNode* op) {
    Value a = Eval(op->a);
    Value b = Eval(op->b);
    Value r(op->dtype());
    const DataType t = op->a.dtype();
    for (int l = 0; l < r.count() && ok(); ++l) r.set(l, BinaryLane(op->kind(), t, a.at(l), b.at(l)));
    return r;
  }

  Lane BinaryLane(ExprKind kind, DataType t, Lane a, Lane b) {
    if (IsLogical(kind)) {
      const bool x = a.i != 0;
      const bool y = b.i != 0;
      return IntLane(kind == ExprKind::kAnd ? (x && y) : (x || y));
    }
    if (IsFloatType(t)) {
      const double x = a.f;
      const double y = b.f;
      switch (kind) {
        case ExprKind::kAdd: return FloatLane(RoundFloat(x + y, t));
        case ExprKind::kSub: return FloatLane(RoundFloat(x - y, t));
        case ExprKind::kMul: return FloatLane(RoundFloat(x * y, t));
        case ExprKind::kDiv: return FloatLane(RoundFloat(x / y, t));
        case ExprKind::kFloorDiv: return FloatLane(std::floor(RoundFloat(x / y, t)));
        case ExprKind::kFloorMod: {
          const double q = std::floor(RoundFloat(x / y, t));
          return FloatLane(RoundFloat(x - RoundFloat(q * y, t), t));
        }
        // NaN-propagating (tir/expr.h): a NaN operand is the result.
        case ExprKind::kMin: return FloatLane(std::isnan(x) ? x : std::isnan(y) ? y : x < y ? x : y);
        case ExprKind::kMax: return FloatLane(std::isnan(x) ? x : std::isnan(y) ? y : x > y ? x : y);
        case ExprKind::kEQ: return IntLane(x == y);
        case ExprKind::kNE: return IntLane(x != y);
        case ExprKind::kLT: return IntLane(x < y);
        case ExprKind::kLE: return IntLane(x <= y);
        case ExprKind::kGT: return IntLane(x > y);
        case ExprKind::kGE: return IntLane(x >= y);
        default: break;
      }
      Unsupported(absl::StrCat("operator ", KindName(kind), " on ", t.ToString()));
      return FloatLane(0);
    }
    if (!t.is_integer() && !t.is_bool()) {
      Unsupported(absl::StrCat("operator ", KindName(kind), " on ", t.ToString()));
      return IntLane(0);
    }
    // Integers: signed compare for int, unsigned for uint and bool.
    const bool is_signed = t.is_int();
    const int64_t x = a.i;
    const int64_t y = b.i;
    const uint64_t ux = static_cast<uint64_t>(x);
    const uint64_t uy = static_cast<uint64_t>(y);
    auto less = [&](int64_t p, int64_t q) {
      return is_signed ? p < q : static_cast<uint64_t>(p) < static_cast<uint64_t>(q);
    };
    auto wrap = [&](uint64_t v) { return IntLane(WrapInt(static_cast<int64_t>(v), t)); };
    switch (kind) {
      case ExprKind::kAdd: return wrap(ux + uy);
      case ExprKind::kSub: return wrap(ux - uy);
      case ExprKind::kMul: return wrap(ux * uy);
      case ExprKind::kDiv:
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod: {
        if (y == 0) {
          Undefined(absl::StrCat("integer division by zero (", LaneText(a, t), " ", KindName(kind), " 0)"));
          return IntLane(0);
        }
        if (!is_signed) {
          return kind == ExprKind::kFloorMod ? wrap(ux % uy) : wrap(ux / uy);
        }
        if (y == -1) {  // x / -1 overflows only for the minimum value; it wraps
          return kind == ExprKind::kFloorMod ? IntLane(0) : wrap(uint64_t{0} - ux);
        }
        int64_t q = x / y;
        int64_t m = x % y;
        if (kind == ExprKind::kDiv) return wrap(static_cast<uint64_t>(q));
        const bool adjust = m != 0 && ((m < 0) != (y < 0));
        if (kind == ExprKind::kFloorDiv) return wrap(static_cast<uint64_t>(adjust ? q - 1 : q));
        return wrap(static_cast<uint64_t>(adjust ? m + y : m));
      }
      case ExprKind::kMin: return IntLane(less(x, y) ? x : y);
      case ExprKind::kMax: return IntLane(less(y, x) ? x : y);
      case ExprKind::kEQ: return IntLane(x == y);
      case ExprKind::kNE: return IntLane(x != y);
      case ExprKind::kLT: return IntLane(less(x, y));
      case ExprKind::kLE: return IntLane(!less(y, x));
      case ExprKind::kGT: return IntLane(less(y, x));
      case ExprKind::kGE: return IntLane(!less(x, y));
      case ExprKind::kBitAnd: case ExprKind::kBitOr: case ExprKind::kBitXor:
      case ExprKind::kShl: case ExprKind::kShr:
        if (t.is_bool()) break;
        return IntLane(EvalBitwise(kind, t, x, y));
      default: break;
    }
    Unsupported(absl::StrCat("operator ", KindName(kind), " on ", t.ToString()));
    return IntLane(0);
  }

  // ---- variables ----
  // Binds `var`, returning its previous binding: a pass that copies a loop may leave one
  // variable node defined by nested statements, and the outer binding must survive.
  std::optional<Value> Bind(const VarNode* var, Value v) {
    auto it = env_.find(var);
    std::optional<Value> saved;
    if (it != env_.end()) {
      saved = std::move(it->second);
      it->second = std::move(v);
    } else {
      env_.emplace(var, std::move(v));
    }
    return saved;
  }
  void Unbind(const VarNode* var, std::optional<Value> saved) {
    if (saved) {
      env_[var] = std::move(*saved);
    } else {
      env_.erase(var);
    }
  }

  bool IsTrue(const PrimExpr& condition) {
    Value c = Eval(condition);
    if (c.count() != 1) {
      Undefined(absl::StrCat("condition ", ToString(condition), " is a vector"));
      return false;
    }
    return ok() && c.scalar.i != 0;
  }

  // ---- statements ----
  void Exec(const Stmt& s) {
    if (!ok() || !s.defined()) return;
    switch (s.kind()) {
      case StmtKind::kBufferStore: {
        if (!Step()) return;
        const auto* store = static_cast<const BufferStoreNode*>(s.get());
        BufferState* buffer = FindBuffer(store->buffer.get());
        if (buffer == nullptr) return;
        if (buffer->read_only) {
          Undefined(absl::StrCat("store into the read-only buffer ", buffer->node->name));
          return;
        }
        Value value = Eval(store->value);
        std::vector<Value> indices = EvalIndices(store->indices);
        for (int l = 0; l < value.count() && ok(); ++l) {
          const int64_t offset = Address(*buffer, indices, l);
          if (offset >= 0) StoreAt(*buffer, offset, value.at(l));
        }
        return;
      }
      case StmtKind::kFor: {
        const auto* loop = static_cast<const ForNode*>(s.get());
        Value min = Eval(loop->min);
        Value extent = Eval(loop->extent);
        if (!ok()) return;
        const VarNode* var = loop->loop_var.get();
        const DataType t = var->dtype();
        auto saved = Bind(var, Value(t));
        for (int64_t i = 0; i < extent.scalar.i && ok(); ++i) {
          if (!Step()) break;
          env_[var].scalar = IntLane(WrapInt(min.scalar.i + i, t));
          Exec(loop->body);
        }
        Unbind(var, std::move(saved));
        return;
      }
      case StmtKind::kBlock: ExecBlock(static_cast<const BlockNode*>(s.get())); return;
      case StmtKind::kIfThenElse: {
        const auto* node = static_cast<const IfThenElseNode*>(s.get());
        const bool c = IsTrue(node->condition);
        if (!ok()) return;
        Exec(c ? node->then_case : node->else_case);
        return;
      }
      case StmtKind::kSeqStmt:
        for (const Stmt& child : static_cast<const SeqStmtNode*>(s.get())->seq) {
          Exec(child);
          if (!ok()) return;
        }
        return;
      case StmtKind::kAllocate: {
        const auto* node = static_cast<const AllocateNode*>(s.get());
        if (!Allocate(node->buffer)) return;
        Exec(node->body);
        Release(node->buffer);
        return;
      }
      case StmtKind::kLetStmt: {
        const auto* let = static_cast<const LetStmtNode*>(s.get());
        Value v = Eval(let->value);
        if (!ok()) return;
        auto saved = Bind(let->var.get(), std::move(v));
        Exec(let->body);
        Unbind(let->var.get(), std::move(saved));
        return;
      }
      case StmtKind::kEvaluate: {
        const PrimExpr& value = static_cast<const EvaluateNode*>(s.get())->value;
        const auto* call = value.as<CallNode>();
        if (call && call->op == "prefetch") return;  // a cache hint: nothing to compute
        Eval(value);
        return;
      }
      case StmtKind::kAssert: {
        const auto* node = static_cast<const AssertNode*>(s.get());
        if (IsTrue(node->condition) || !ok()) return;
        std::vector<int64_t> values;
        for (const PrimExpr& v : node->values) {
          Value value = Eval(v);
          if (!ok()) return;
          values.push_back(value.scalar.i);
        }
        Fail(absl::InvalidArgumentError(FormatAssertMessage(node->message, values)));
        return;
      }
      case StmtKind::kDeclBuffer:
        // Lowered TIR (pointers into memory the interpreter does not model).
        Fail(absl::InvalidArgumentError("decl_buffer (lowered TIR) cannot be interpreted"));
        return;
    }
  }

  void ExecBlock(const BlockNode* block) {
    if (!Step()) return;
    std::vector<Value> values;
    values.reserve(block->iter_vars.size());
    for (const IterVar& iv : block->iter_vars) values.push_back(Eval(iv.value));
    if (!ok()) return;
    std::vector<std::optional<Value>> saved;
    saved.reserve(values.size());
    for (size_t k = 0; k < values.size(); ++k) saved.push_back(Bind(block->iter_vars[k].var.get(), values[k]));
    auto unbind_all = [&] {
      for (size_t k = values.size(); k-- > 0;) Unbind(block->iter_vars[k].var.get(), std::move(saved[k]));
    };
    if (block->predicate.defined() && !IsTrue(block->predicate)) {
      unbind_all();
      return;
    }
    bool first_visit = true;
    for (size_t k = 0; k < values.size() && ok(); ++k) {
      const IterVar& iv = block->iter_vars[k];
      Value extent = Eval(iv.extent);
      if (!ok()) break;
      const int64_t v = values[k].scalar.i;
      if (v < 0 || v >= extent.scalar.i) {
        Undefined(absl::StrCat("block \"", block->name, "\": iteration variable ", iv.var->name, " = ", v,
                               " is outside [0, ", extent.scalar.i, ")"));
        break;
      }
      if (iv.type == IterType::kReduction && v != 0) first_visit = false;
    }
    size_t allocated = 0;
    for (; allocated < block->alloc_buffers.size() && ok(); ++allocated) {
      if (!Allocate(block->alloc_buffers[allocated])) break;
    }
    if (ok() && block->init.defined() && first_visit) Exec(block->init);
    Exec(block->body);
    for (size_t k = 0; k < allocated; ++k) Release(block->alloc_buffers[k]);
    unbind_all();
  }

  const InterpreterOptions& options_;
  absl::Status status_;
  int64_t steps_ = 0;
  int64_t allocated_bytes_ = 0;
  std::unordered_map<const VarNode*, Value> env_;
  std::unordered_map<const BufferNode*, BufferState> buffers_;
};

}  // namespace

absl::Status RunPrimFunc(const PrimFunc& func, const std::vector<InterpreterArg>& args,
                         const InterpreterOptions& options) {
  if (!func.defined()) return absl::InvalidArgumentError("the PrimFunc is undefined");
  Interpreter interpreter(options);
  return interpreter.Run(func, args);
}

}  // namespace kiln::tir
