// The reference evaluator: a naive interpreter of normalized Relax IRModules that gives the
// expected numbers for tests of the compiler (legalization, TIR, LLVM) while sharing no code
// with it.
//
// Promises:
//  - Interprets a module as NormalizeModule leaves it (A-normal form, struct info on every
//    Var): bindings run in order; match_cast checks the value and defines the symbolic
//    variables that first appear in its struct info (tir Var -> value environment, one per
//    function call); If, tuples, TupleGetItem, calls to the module's Relax functions
//    (directly or through a variable holding one), ShapeExpr / PrimValue (symbolic
//    expressions are evaluated), Constants.
//  - Each operator is a plain-loop kernel (tests/reference/kernels_*.cc) computing in double
//    (int64 for integer dtypes) and storing in the output dtype.
//  - Arguments are matched against the parameters' struct info: a wrong kind, rank, dtype
//    or dim is an InvalidArgument naming the function and the parameter; the parameters
//    define the symbolic variables of their shapes. Every binding's value is checked against
//    its Var's struct info as well, and the result against the function's return struct
//    info. A binding mismatch is an InvalidArgument naming the binding: either a condition
//    inference left to run time fails (dims n and m that must be equal are 1 and 3, which
//    the kernel alone would broadcast), or inference disagrees with the operator's semantics.
//  - call_tir, call_dps_library, call_builtin, print, PrimFuncs, extern functions and local
//    function definitions are Unimplemented errors: there is no TIR interpreter here.
//  - Never crashes on a well-formed normalized module; errors read
//    "function 'main', binding 'lv0': matmul: inner dimensions differ ...".
//
// Use: parse (relax/text_parser.h) or build a module, NormalizeModule it, then
//   Evaluate(module, "main", {HostTensor::FromDoubles(DataType::Float32(), {2, 3}, {...}),
//                             RefValue::Int(7), RefValue::Shape({4, 5})});
// Arguments follow the function's parameters; the result is a RefValue (tensor, Prim, shape
// or tuple).
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "relax/ir_module.h"
#include "tests/reference/ref_value.h"

namespace kiln::reference {

absl::StatusOr<RefValue> Evaluate(const relax::IRModule& normalized_module,
                                  std::string_view function, std::vector<RefValue> args);

}  // namespace kiln::reference
