// A PrimFunc built by hand that holds every TIR expression and statement kind, for tests of
// the visitors and of structural equality. Each call builds fresh variables and buffers; the
// suffix goes into every name, so two calls give alpha-equivalent functions whose names
// differ.
#pragma once

#include <string>

#include "tir/buffer.h"
#include "tir/expr.h"
#include "tir/stmt.h"

namespace kiln::tir::test_ir {

inline PrimFunc SamplePrimFunc(const std::string& s) {
  const DataType f32 = DataType::Float32();
  Var n = Var::Shape("n" + s, 4096);
  Var alpha("alpha" + s, f32);
  Buffer a("A" + s, f32, {n, 4});
  Buffer b("B" + s, f32, {n});

  // A reduction block under two loops: B[vi] += select(vj < 2, exp(A[vi, vj]), cast(vj)) * alpha.
  Var i("i" + s), j("j" + s), vi("vi" + s), vj("vj" + s);
  Buffer acc("acc" + s, f32, {1}, {}, "local");
  PrimExpr term = Select(LT(vj, PrimExpr(2)), Call("exp", {a.Load({vi, vj})}), Cast(f32, vj));
  Stmt update = BufferStore(b, b.Load({vi}) + term * alpha, {vi});
  Stmt init = BufferStore(b, FloatImm(f32, 0.0), {vi});
  Stmt block = Block("reduce", {{vi, n, IterType::kSpatial, i}, {vj, 4, IterType::kReduction, j}},
                     update, init, Not(EQ(i, PrimExpr(-1))), {acc});
  Stmt loops = For(i, 0, n, ForKind::kParallel, For(j, 0, 4, ForKind::kSerial, block));

  // Vector code in a local allocation, then scalar integer and logic arithmetic.
  Buffer tmp("tmp" + s, f32, {4}, {}, "local");
  Stmt vector_store = BufferStore(tmp, Broadcast(Div(alpha, alpha), 4), {Ramp(0, 1, 4)});
  Var t("t" + s), l("l" + s), tx("tx" + s);
  PrimExpr arith = FloorDiv(t, 2) + FloorMod(t, 3) - Min(t, 1) * Max(t, 2);
  PrimExpr logic = Or(And(EQ(t, 1), NE(t, 2)), And(LE(t, 3), Or(GT(t, 4), GE(t, 5))));
  Stmt branch = IfThenElse(logic, Evaluate(arith), Evaluate(tx));
  Stmt let = LetStmt(t, Let(l, n, l * 2), branch);
  Stmt threads = For(tx, 0, 32, ForKind::kThreadBinding, let, "threadIdx.x");
  Stmt check = Assert(GE(n, PrimExpr(1)), "n is {}, at least 1 expected", {n});
  Stmt body = SeqStmt({loops, check, Allocate(tmp, vector_store), threads});
  return PrimFunc({{a, Var()}, {b, Var()}, {Buffer(), alpha}}, body, {{"op_pattern", "reduce"}});
}

}  // namespace kiln::tir::test_ir
