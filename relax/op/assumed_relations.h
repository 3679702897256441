// Relations between symbolic dimensions that an operator's struct-info inference assumed
// without proving them, so that the compiler can check them at run time.
//
// Inference accepts what it cannot refute (matmul inner dims n vs m, broadcasting n against
// 4, a reshape of (n, m) into (k, 8)): the result is only right if the relation holds when
// the call runs, and the kernels built from it read out of bounds if it does not. Each such
// site calls AssumeEqual / AssumeAtMost / AssumeDivisible. When an AssumedRelationRecorder is
// alive on the thread (the pass relax/transform/insert_shape_checks.h re-infers every call
// under one) the relation is recorded; otherwise the call does nothing, so inference itself
// stays a pure function of its inputs. Relations the analyzer proves, and relations between
// constants, are not recorded (constants were decided by inference already).
#pragma once

#include <string>
#include <vector>

#include "relax/expr.h"
#include "tir/analyzer.h"

namespace kiln::relax::op {

struct AssumedRelation {
  enum class Kind {
    kEqual,      // lhs == rhs
    kAtMost,     // lhs <= rhs
    kDivisible,  // lhs % rhs == 0 (rhs > 0)
  };
  Kind kind = Kind::kEqual;
  PrimExpr lhs;
  PrimExpr rhs;
  // "<op>: <what failed>", with the first "{}" standing for lhs's run-time value and the
  // second for rhs's: "matmul: inner dimensions differ at run time: lhs dim 1 is {}, rhs dim 0 is {}".
  std::string message;
};

// Collects the relations recorded on this thread while it lives. Recorders nest: the
// innermost one collects.
class AssumedRelationRecorder {
 public:
  AssumedRelationRecorder();
  ~AssumedRelationRecorder();
  AssumedRelationRecorder(const AssumedRelationRecorder&) = delete;
  AssumedRelationRecorder& operator=(const AssumedRelationRecorder&) = delete;

  const std::vector<AssumedRelation>& relations() const { return relations_; }
  void Add(AssumedRelation relation) { relations_.push_back(std::move(relation)); }

 private:
  AssumedRelationRecorder* outer_;
  std::vector<AssumedRelation> relations_;
};

// `what` is the message after the op's name (see AssumedRelation::message).
void AssumeEqual(const CallNode& call, const PrimExpr& lhs, const PrimExpr& rhs, tir::Analyzer& analyzer,
                 const std::string& what);
void AssumeAtMost(const CallNode& call, const PrimExpr& lhs, const PrimExpr& rhs, tir::Analyzer& analyzer,
                  const std::string& what);
void AssumeDivisible(const CallNode& call, const PrimExpr& lhs, const PrimExpr& rhs, tir::Analyzer& analyzer,
                     const std::string& what);

}  // namespace kiln::relax::op
