// A Relax function built by hand that holds every expression kind, both block kinds, a
// match_cast, a closure and call attributes of every type, for tests of the visitors and of
// structural equality. Each call builds fresh variables (Relax and symbolic); the suffix
// goes into every name, so two calls give alpha-equivalent functions whose names differ.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "relax/expr.h"
#include "relax/struct_info.h"
#include "tir/expr.h"

namespace kiln::relax::test_ir {

inline Expr SampleConstant(std::vector<uint8_t> bytes) {
  ConstantData data;
  data.dtype = DataType::UInt(8);
  data.shape = {static_cast<int64_t>(bytes.size())};
  data.bytes = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  return Constant(std::move(data));
}

inline Expr SampleFunction(const std::string& s) {
  const DataType f32 = DataType::Float32();
  tir::Var n = tir::Var::Shape("n" + s, 4096), m = tir::Var::Shape("m" + s), k = tir::Var::Shape("k" + s);
  StructInfo xs = TensorSInfo({n, m}, f32);
  StructInfo pair = TupleSInfo({xs, xs});
  Var x("x" + s, xs), y("y" + s, TensorSInfo({m}, f32));

  // dataflow { lv0 = add(x, y); lv1 = (lv0, x); lv2 = lv1[0]; gv = lv2 }
  Var lv0("lv0" + s, xs, /*dataflow=*/true), lv1("lv1" + s, pair, true), lv2("lv2" + s, xs, true);
  Var gv("gv" + s, xs);
  BindingBlock dataflow{{{lv0, Call(Op("add"), {x, y}, {}, {}, xs), StructInfo()},
                         {lv1, Tuple({lv0, x}, pair), StructInfo()},
                         {lv2, TupleGetItem(lv1, 0, xs), StructInfo()},
                         {gv, lv2, StructInfo()}},
                        true};

  // z = match_cast(gv, Tensor((k, 4))); f = closure; c = @helper(...); p = print(c); r = if ...
  StructInfo ks = TensorSInfo({k, 4}, f32);
  Var z("z" + s, ks);
  Var param("param" + s, ks);
  StructInfo closure_sinfo = FuncSInfo({ks}, ks, true);
  Var f("f" + s, closure_sinfo);
  Expr closure = Function({param}, SeqExpr({}, param, ks), ks, true);
  Attrs attrs{{"axis", int64_t{1}},  {"eps", 1e-5},       {"keepdims", true},
              {"mode", std::string("fast")}, {"dtype", f32}, {"axes", std::vector<int64_t>{0, 1}}};
  Var c("c" + s, ks);
  Expr helper = GlobalVar("helper", OpaqueFuncSInfo(ks, true));
  Expr call = Call(helper, {z, ShapeExpr({k, 4}), PrimValue(k), StringImm("tag"), SampleConstant({1, 2, 3})},
                   attrs, {ks}, ks);
  Var printed("printed" + s, ObjectSInfo());
  Expr print = Call(ExternFunc("vm.builtin.print", OpaqueFuncSInfo(ObjectSInfo(), false)), {c}, {}, {},
                    ObjectSInfo());
  Var r("r" + s, ks);
  Expr branch = If(PrimValue(tir::IntImm(DataType::Bool(), 1)), SeqExpr({}, c, ks),
                   SeqExpr({}, Call(f, {z}, {}, {}, ks), ks), ks);
  BindingBlock plain{{{z, gv, ks},
                      {f, closure, StructInfo()},
                      {c, call, StructInfo()},
                      {printed, print, StructInfo()},
                      {r, branch, StructInfo()}},
                     false};

  StructInfo ret = TensorSInfoOfNdim(2, f32);
  return Function({x, y}, SeqExpr({dataflow, plain}, r, ks), ret, /*is_pure=*/false,
                  {{"global_symbol", std::string("main")}});
}

}  // namespace kiln::relax::test_ir
