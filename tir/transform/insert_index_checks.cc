#include "tir/transform/insert_index_checks.h"

#include "absl/strings/str_cat.h"
#include "tir/transform/data_check_inserter.h"

namespace kiln::tir::transform {
namespace {

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
      PrimExpr wide = i.dtype() == DataType::Int64() ? i : Cast(DataType::Int64(), i);
      PrimExpr extent = buffer.shape[d];
      if (extent.dtype() != DataType::Int64()) extent = Cast(DataType::Int64(), extent);
      PrimExpr ok = And(GE(wide, IntImm(DataType::Int64(), 0)), LT(wide, extent));
      AddCheck(ok, absl::StrCat("index {} is out of range for dim ", d, " of '", EscapeAssertText(buffer.name),
                                "' (extent {})"),
               {wide, extent});
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
