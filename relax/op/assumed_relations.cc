#include "relax/op/assumed_relations.h"

#include "relax/op/op_common.h"

namespace kiln::relax::op {
namespace {

// The innermost live recorder of this thread (inference runs on the thread that asked).
thread_local AssumedRelationRecorder* current_recorder = nullptr;

void Record(AssumedRelation::Kind kind, const CallNode& call, const PrimExpr& lhs, const PrimExpr& rhs,
            tir::Analyzer& analyzer, const std::string& what) {
  if (current_recorder == nullptr) return;
  PrimExpr a = analyzer.Simplify(lhs);
  PrimExpr b = analyzer.Simplify(rhs);
  if (a.as_int() && b.as_int()) return;  // inference decided constants itself
  switch (kind) {
    case AssumedRelation::Kind::kEqual:
      if (DimsEqual(a, b, analyzer)) return;
      break;
    case AssumedRelation::Kind::kAtMost:
      if (analyzer.CanProveLE(a, b)) return;
      break;
    case AssumedRelation::Kind::kDivisible:
      if (b.as_int() == 1 || analyzer.CanProveEqual(tir::FloorMod(a, b), Int(0))) return;
      break;
  }
  current_recorder->Add({kind, a, b, absl::StrCat(OpName(call), ": ", what)});
}

}  // namespace

AssumedRelationRecorder::AssumedRelationRecorder() : outer_(current_recorder) { current_recorder = this; }
AssumedRelationRecorder::~AssumedRelationRecorder() { current_recorder = outer_; }

void AssumeEqual(const CallNode& call, const PrimExpr& lhs, const PrimExpr& rhs, tir::Analyzer& analyzer,
                 const std::string& what) {
  Record(AssumedRelation::Kind::kEqual, call, lhs, rhs, analyzer, what);
}

void AssumeAtMost(const CallNode& call, const PrimExpr& lhs, const PrimExpr& rhs, tir::Analyzer& analyzer,
                  const std::string& what) {
  Record(AssumedRelation::Kind::kAtMost, call, lhs, rhs, analyzer, what);
}

void AssumeDivisible(const CallNode& call, const PrimExpr& lhs, const PrimExpr& rhs, tir::Analyzer& analyzer,
                     const std::string& what) {
  Record(AssumedRelation::Kind::kDivisible, call, lhs, rhs, analyzer, what);
}

}  // namespace kiln::relax::op
