#include "tir/transform/insert_index_checks.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "tir/structural_equal.h"
#include "tir/transform/data_check_inserter.h"

namespace kiln::tir::transform {
namespace {

// The r of an int64 index select(r < 0, r + dim, r) (relax/op's legalizations of take,
// gather and scatter), when `index` has that form.
std::optional<PrimExpr> WrappedIndex(const PrimExpr& index, const PrimExpr& dim) {
  const auto* select = index.as<SelectNode>();
  if (select == nullptr || index.dtype() != DataType::Int64()) return std::nullopt;
  const auto* negative = select->condition.as<BinaryNode>();
  const auto* plus = select->true_value.as<BinaryNode>();
  if (negative == nullptr || negative->kind() != ExprKind::kLT || negative->b.as_int() != int64_t{0} ||
      plus == nullptr || plus->kind() != ExprKind::kAdd || !StructuralEqual(negative->a, select->false_value) ||
      !StructuralEqual(plus->a, negative->a) || !StructuralEqual(plus->b, dim)) {
    return std::nullopt;
  }
  return negative->a;
}

class IndexChecker : public DataCheckInserter {
 public:
  using DataCheckInserter::DataCheckInserter;

  PrimExpr VisitExpr_(const BufferLoadNode* op, const PrimExpr& self) override {
    PrimExpr visited = StmtExprMutator::VisitExpr_(op, self);
    const auto* load = visited.as<BufferLoadNode>();
    bool changed = false;
    std::vector<PrimExpr> indices = Checked(*load->buffer, load->indices, &changed);
    if (!changed) return visited;
    return Buffer(load->buffer).Load(std::move(indices));
  }

  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    Stmt visited = StmtExprMutator::VisitStmt_(op, self);
    const auto* store = visited.as<BufferStoreNode>();
    bool changed = false;
    std::vector<PrimExpr> indices = Checked(*store->buffer.node(), store->indices, &changed);
    if (!changed) return visited;
    return BufferStore(store->buffer, store->value, std::move(indices));
  }

 private:
  // Adds a check for each data-dependent index; under a select's guard the index is also
  // replaced by select(ok, index, 0) (sets *changed).
  std::vector<PrimExpr> Checked(const BufferNode& buffer, std::vector<PrimExpr> indices, bool* changed) {
    if (indices.size() != buffer.shape.size()) return indices;  // flattened or unusual access
    for (size_t d = 0; d < indices.size(); ++d) {
      PrimExpr& i = indices[d];
      if (!i.dtype().is_integer() || !i.dtype().is_scalar() || !Depends(i)) continue;
      // Compared in int64, the type of extents: a narrower index widens without loss.
      PrimExpr extent = buffer.shape[d];
      if (extent.dtype() != DataType::Int64()) extent = Cast(DataType::Int64(), extent);
      PrimExpr ok;
      if (std::optional<PrimExpr> raw = WrappedIndex(i, buffer.shape[d])) {
        // take, gather and scatter count a negative index from the end: select(r < 0, r +
        // extent, r). The check reads the index given, r, valid in [-extent, extent), so
        // the message names it (-5 for extent 4, not the wrapped -1, which is valid).
        ok = And(GE(*raw, Sub(IntImm(DataType::Int64(), 0), extent)), LT(*raw, extent));
        AddCheck(ok, absl::StrCat("index {} is out of range for dim ", d, " of '", EscapeAssertText(buffer.name),
                                  "' (extent {}; a negative index counts from the end)"),
                 {*raw, extent});
      } else {
        PrimExpr wide = i.dtype() == DataType::Int64() ? i : Cast(DataType::Int64(), i);
        ok = And(GE(wide, IntImm(DataType::Int64(), 0)), LT(wide, extent));
        AddCheck(ok, absl::StrCat("index {} is out of range for dim ", d, " of '", EscapeAssertText(buffer.name),
                                  "' (extent {})"),
                 {wide, extent});
      }
      if (guarded()) {
        i = Select(ok, i, IntImm(i.dtype(), 0));
        *changed = true;
      }
    }
    return indices;
  }
};

}  // namespace

PrimFunc InsertIndexChecks(const PrimFunc& func) { return IndexChecker(func).VisitPrimFunc(func); }

}  // namespace kiln::tir::transform
