// Every example module that normalizes is evaluated with arguments made up from its
// parameters' struct info (each symbolic size 3): whatever happens is a value or a status,
// never a crash, and a module without call_tir / extern calls yields a value.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "tests/reference/prim_eval.h"
#include "tests/reference/test_util.h"

namespace kiln::reference {
namespace {

// A value of struct info `s`; unbound symbolic variables become 3 as they are met.
RefValue MakeArgument(const relax::StructInfo& s, SymbolEnv& env) {
  auto dim = [&](const tir::PrimExpr& e) -> int64_t {
    if (const auto* v = e.as<tir::VarNode>(); v != nullptr && !env.count(v)) {
      env[v] = PrimScalar{DataType::Int64(), 3, 0};
    }
    auto r = EvalPrimExpr(e, env);
    return r.ok() ? std::max<int64_t>(r->AsInt(), 0) : 3;
  };
  auto dims = [&](const std::optional<std::vector<tir::PrimExpr>>& values, int ndim) {
    std::vector<int64_t> out;
    if (values) {
      for (const tir::PrimExpr& e : *values) out.push_back(dim(e));
    } else {
      out.assign(static_cast<size_t>(std::max(ndim, 1)), 3);
    }
    return out;
  };
  switch (s.kind()) {
    case relax::StructInfoKind::kPrim: {
      const auto* p = s.as<relax::PrimStructInfoNode>();
      if (p->dtype.is_bool()) return RefValue::Bool(true);
      if (p->dtype.is_floating()) return RefValue::Float(0.5, p->dtype);
      return RefValue::Int(p->value.defined() ? dim(p->value) : 3, p->dtype);
    }
    case relax::StructInfoKind::kShape: {
      const auto* sh = s.as<relax::ShapeStructInfoNode>();
      return RefValue::Shape(dims(sh->values, sh->ndim));
    }
    case relax::StructInfoKind::kTensor: {
      const auto* t = s.as<relax::TensorStructInfoNode>();
      HostTensor tensor(t->dtype.value_or(DataType::Float32()), dims(t->shape, t->ndim));
      for (int64_t i = 0; i < tensor.numel(); ++i) tensor.SetDouble(i, static_cast<double>(i % 5) * 0.25);
      return tensor;
    }
    case relax::StructInfoKind::kTuple: {
      std::vector<RefValue> fields;
      for (const relax::StructInfo& f : s.as<relax::TupleStructInfoNode>()->fields) fields.push_back(MakeArgument(f, env));
      return RefValue::Tuple(std::move(fields));
    }
    default:
      return RefValue::Int(0);
  }
}

TEST(AllModulesTest, EveryNormalizedModuleEvaluatesOrFailsCleanly) {
  std::filesystem::path dir = std::filesystem::path(testing::SourceDir()) / "tests/relax/modules";
  int evaluated = 0;
  for (const auto& file : std::filesystem::directory_iterator(dir)) {
    if (file.path().extension() != ".kir") continue;
    auto module = testing::ParseAndNormalize(testing::ReadSource("tests/relax/modules/" + file.path().filename().string()));
    if (!module.ok()) continue;  // tests/relax/normalize_modules_test.cc lists those
    for (const relax::IRModule::Entry& entry : module->entries()) {
      const relax::FunctionNode* fn = entry.relax_function();
      if (fn == nullptr) continue;
      SymbolEnv env;
      std::vector<RefValue> args;
      for (const relax::Var& p : fn->params) args.push_back(MakeArgument(p->struct_info(), env));
      auto result = Evaluate(*module, entry.name, args);
      SCOPED_TRACE(file.path().filename().string() + " @" + entry.name);
      if (std::getenv("KILN_REFERENCE_VERBOSE") != nullptr) {
        std::cerr << file.path().filename().string() << " @" << entry.name << ": "
                  << (result.ok() ? result->TypeString() : result.status().ToString()) << "\n";
      }
      if (result.ok()) {
        ++evaluated;
        continue;
      }
      // Only what the reference cannot do by design, or a run-time check the made-up
      // arguments fail (InvalidArgument), is acceptable.
      EXPECT_TRUE(result.status().code() == absl::StatusCode::kUnimplemented ||
                  result.status().code() == absl::StatusCode::kInvalidArgument)
          << result.status();
    }
  }
  EXPECT_GE(evaluated, 8);
}

}  // namespace
}  // namespace kiln::reference
