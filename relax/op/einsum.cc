// einsum (operands: Tuple of tensors), attribute subscripts (string, required): numpy/ONNX
// Einsum. "ij,jk->ik" names each operand's dims by letters; letters of the output (after
// "->") index the result, the others are summed over; a letter repeated within an operand
// reads its diagonal ("ii->i"). Without "->" the output is "..." followed by the letters
// that appear exactly once, in alphabetical order (uppercase before lowercase, numpy).
// "..." stands for the dims not named by letters; operands' ellipsis dims broadcast against
// each other as numpy does (aligned from the right, a dim of 1 stretches). Dims sharing a
// letter must be equal (provably different is an error, otherwise checked at run time).
// Operands share one dtype; the result has it (float16 products are summed in float32).
#include "relax/op/einsum_equation.h"

#include <algorithm>
#include <map>

#include "relax/op/op_common.h"
#include "support/status_macros.h"

namespace kiln::relax::op {

absl::StatusOr<EinsumEquation> ParseEinsumEquation(const std::string& equation, const std::vector<int>& ndims) {
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("subscripts \"", equation, "\": ", what));
  };
  std::string text;
  for (char c : equation) {
    if (c != ' ') text += c;
  }
  std::string lhs = text, rhs;
  const bool explicit_output = text.find("->") != std::string::npos;
  if (explicit_output) {
    lhs = text.substr(0, text.find("->"));
    rhs = text.substr(text.find("->") + 2);
  }
  // Split the operands' terms.
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ndims.size()) {
    return error(absl::StrCat("names ", terms.size(), " operands, got ", ndims.size()));
  }
  // Each term as letters and the position of "..." (-1 if none).
  struct Term {
    std::string letters;
    int ellipsis_at = -1;
  };
  auto parse_term = [&](const std::string& term) -> absl::StatusOr<Term> {
    Term t;
    for (size_t i = 0; i < term.size(); ++i) {
      const char c = term[i];
      if (c == '.') {
        if (term.compare(i, 3, "...") != 0 || t.ellipsis_at >= 0) return error("a '.' outside a single \"...\"");
        t.ellipsis_at = static_cast<int>(t.letters.size());
        i += 2;
      } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        t.letters += c;
      } else {
        return error(absl::StrCat("unexpected character '", std::string(1, c), "'"));
      }
    }
    return t;
  };
  std::vector<Term> in_terms;
  EinsumEquation eq;
  for (size_t k = 0; k < terms.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(Term t, parse_term(terms[k]));
    const int named = static_cast<int>(t.letters.size());
    if (t.ellipsis_at < 0 ? named != ndims[k] : named > ndims[k]) {
      return error(absl::StrCat("operand ", k, " has ", ndims[k], " dims but its term \"", terms[k], "\" names ", named));
    }
    if (t.ellipsis_at >= 0) eq.ellipsis_rank = std::max(eq.ellipsis_rank, ndims[k] - named);
    in_terms.push_back(t);
  }
  for (int e = 0; e < eq.ellipsis_rank; ++e) eq.names.push_back(absl::StrCat("...", e));
  std::map<char, int> label_of;
  std::map<char, int> count;
  auto label = [&](char c) {
    auto it = label_of.find(c);
    if (it != label_of.end()) return it->second;
    const int id = static_cast<int>(eq.names.size());
    eq.names.push_back(std::string(1, c));
    label_of[c] = id;
    return id;
  };
  bool any_ellipsis = false;
  for (size_t k = 0; k < in_terms.size(); ++k) {
    const Term& t = in_terms[k];
    std::vector<int> dims;
    for (int i = 0; i <= static_cast<int>(t.letters.size()); ++i) {
      if (i == t.ellipsis_at) {
        any_ellipsis = true;
        const int e = ndims[k] - static_cast<int>(t.letters.size());
        for (int d = eq.ellipsis_rank - e; d < eq.ellipsis_rank; ++d) dims.push_back(d);
      }
      if (i < static_cast<int>(t.letters.size())) {
        dims.push_back(label(t.letters[static_cast<size_t>(i)]));
        ++count[t.letters[static_cast<size_t>(i)]];
      }
    }
    eq.inputs.push_back(dims);
  }
  if (explicit_output) {
    KILN_ASSIGN_OR_RETURN(Term out, parse_term(rhs));
    if (out.ellipsis_at >= 0 && !any_ellipsis && eq.ellipsis_rank == 0) {
      // numpy accepts "..." in the output of operands without it: it covers no dims.
      out.ellipsis_at = -1;
    }
    if (out.ellipsis_at < 0 && eq.ellipsis_rank > 0) {
      return error("the inputs' \"...\" dims must appear in the output as \"...\"");
    }
    for (int i = 0; i <= static_cast<int>(out.letters.size()); ++i) {
      if (i == out.ellipsis_at) {
        for (int d = 0; d < eq.ellipsis_rank; ++d) eq.output.push_back(d);
      }
      if (i == static_cast<int>(out.letters.size())) break;
      const char c = out.letters[static_cast<size_t>(i)];
      auto it = label_of.find(c);
      if (it == label_of.end()) return error(absl::StrCat("output letter '", std::string(1, c), "' is in no input"));
      if (std::find(eq.output.begin(), eq.output.end(), it->second) != eq.output.end()) {
        return error(absl::StrCat("output letter '", std::string(1, c), "' repeats"));
      }
      eq.output.push_back(it->second);
    }
  } else {
    for (int d = 0; d < eq.ellipsis_rank; ++d) eq.output.push_back(d);
    for (const auto& [c, n] : count) {  // std::map: ASCII order, uppercase first
      if (n == 1) eq.output.push_back(label_of[c]);
    }
  }
  eq.num_labels = static_cast<int>(eq.names.size());
  return eq;
}

namespace {

absl::StatusOr<StructInfo> InferEinsum(const CallNode& call, tir::Analyzer& analyzer) {
  const auto* tuple = call.args[0].struct_info().as<TupleStructInfoNode>();
  if (tuple == nullptr) return OpError(call, "expects a Tuple of tensors, got ", ToString(call.args[0].struct_info()));
  if (tuple->fields.empty()) return OpError(call, "expects at least one operand");
  auto it = call.attrs.find("subscripts");
  const auto* subscripts = it == call.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  if (subscripts == nullptr) return OpError(call, "attribute 'subscripts' (a string) is required");
  std::vector<const TensorStructInfoNode*> ts;
  std::optional<DataType> dtype;
  std::string device;
  std::vector<int> ndims;
  bool known = true;
  for (size_t i = 0; i < tuple->fields.size(); ++i) {
    const auto* t = tuple->fields[i].defined() ? tuple->fields[i].as<TensorStructInfoNode>() : nullptr;
    if (t == nullptr) return OpError(call, "operand ", i, " must be a Tensor, got ", ToString(tuple->fields[i]));
    const std::string what = absl::StrCat("operand ", i);
    KILN_ASSIGN_OR_RETURN(dtype, UnifyDType(call, dtype, "operand 0", t->dtype, what.c_str()));
    KILN_ASSIGN_OR_RETURN(device, UnifyDevice(call, device, "operand 0", t->device, what.c_str()));
    known &= t->shape.has_value();
    ndims.push_back(t->ndim);
    ts.push_back(t);
  }
  if (std::find(ndims.begin(), ndims.end(), kUnknownNdim) != ndims.end()) {
    return TensorSInfoOfNdim(kUnknownNdim, dtype, device);
  }
  absl::StatusOr<EinsumEquation> eq = ParseEinsumEquation(*subscripts, ndims);
  if (!eq.ok()) return OpError(call, eq.status().message());
  if (!known) return TensorSInfoOfNdim(static_cast<int>(eq->output.size()), dtype, device);
  // Each label's dim: letters must agree; ellipsis dims broadcast (a literal 1 stretches).
  std::vector<PrimExpr> dim(static_cast<size_t>(eq->num_labels));
  for (size_t k = 0; k < ts.size(); ++k) {
    for (size_t d = 0; d < eq->inputs[k].size(); ++d) {
      const int l = eq->inputs[k][d];
      const PrimExpr here = analyzer.Simplify((*ts[k]->shape)[d]);
      PrimExpr& have = dim[static_cast<size_t>(l)];
      const bool ellipsis = l < eq->ellipsis_rank;
      if (!have.defined() || (ellipsis && have.as_int() == 1)) {
        have = here;
        continue;
      }
      if (ellipsis && here.as_int() == 1) continue;
      if (DimsEqual(have, here, analyzer)) continue;
      if (DimsDiffer(have, here, analyzer)) {
        return OpError(call, "dims labelled '", eq->names[static_cast<size_t>(l)], "' differ: ", DimStr(have), " vs ",
                       DimStr(here), " (operand ", k, " dim ", d, ")");
      }
      AssumeEqual(call, here, have, analyzer,
                  absl::StrCat("dims labelled '", eq->names[static_cast<size_t>(l)], "' differ at run time: operand ", k,
                               " dim ", d, " is {}, another is {}"));
    }
  }
  std::vector<PrimExpr> out;
  for (int l : eq->output) out.push_back(dim[static_cast<size_t>(l)]);
  return TensorSInfo(std::move(out), dtype, device);
}

}  // namespace

void RegisterEinsumOps(OpRegistry& registry) {
  registry.Register({"einsum", 1, 1, true, {"subscripts"}, InferEinsum});
}

}  // namespace kiln::relax::op
