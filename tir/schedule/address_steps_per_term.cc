// AddressStepsPerTerm: the accumulators of register steps of three or more whole vectors,
// named for the code generator's per-term addressing (tir/local_address_attr.h).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_join.h"
#include "tir/local_address_attr.h"
#include "tir/schedule/schedule.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"
#include "tir/target.h"

namespace kiln::tir::schedule_primitive {

using namespace schedule_internal;  // NOLINT

namespace {

// Every load, store and allocation of the mapped buffers made on their replacements (the
// base mutator's buffer map does the work).
class BufferRenamer : public StmtExprMutator {
 public:
  explicit BufferRenamer(const std::map<const BufferNode*, Buffer>& renamed) {
    buffer_remap_.insert(renamed.begin(), renamed.end());
  }
};

}  // namespace

PrimFunc AddressStepsPerTerm(const PrimFunc& func) {
  // The vector width of the function's target (AVX2's 256 bits without one).
  absl::StatusOr<std::optional<Target>> target = TargetOf(func);
  int vector_bits = 256;
  if (target.ok() && target->has_value() && (*target)->is_cpu() && (*target)->vector_bits > 0) {
    vector_bits = (*target)->vector_bits;
  }
  // A step: an unrolled loop of at least 3 iterations around a loop of one vector's lanes
  // (the packed wide tiles' 4 x 3 step, VectorizeInWholeVectors' tiles) that updates a local
  // buffer. Copies of one buffer share its name (the printer numbers them), so each stepped
  // buffer is renamed NAME_steps: the name then tells it from the function's other tiles.
  std::map<const BufferNode*, Buffer> renamed;
  std::set<std::string> names;
  ForEachStmt(func->body, [&](const Stmt& st) {
    const auto* step = st.as<ForNode>();
    if (!step || step->for_kind != ForKind::kUnrolled || step->extent.as_int().value_or(0) < 3) return;
    const auto* vector = step->body.as<ForNode>();
    if (!vector || vector->for_kind != ForKind::kVectorized) return;
    ForEachStmt(vector->body, [&](const Stmt& inner) {
      const auto* store = inner.as<BufferStoreNode>();
      if (!store || store->buffer->scope != "local" || renamed.count(store->buffer.get())) return;
      const BufferNode* b = store->buffer.get();
      if (vector->extent.as_int() != vector_bits / std::max(b->dtype.bits(), 1)) return;
      // Accumulators only (the store reads the buffer it writes): a packed panel's copy is
      // written in such steps too (a weight row's run as single vectors), and read in the
      // register steps at addresses LLVM keeps apart without per-term chains.
      if (!AccessesOf(inner).reads.count(b)) return;
      renamed[b] = Buffer(b->name + "_steps", b->dtype, b->shape, b->strides, b->scope);
      names.insert(b->name + "_steps");
    });
  });
  if (renamed.empty()) return func;
  std::map<std::string, std::string> attrs = func->attrs;
  attrs[kLocalAddressPerTermAttr] = absl::StrJoin(names, ",");
  return PrimFunc(func->params, BufferRenamer(renamed).VisitStmt(func->body), std::move(attrs));
}

}  // namespace kiln::tir::schedule_primitive
