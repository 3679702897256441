// einsum, by enumerating every assignment of values to the equation's letters and summing
// the operands' products into the output element the assignment names (in double, int64 for
// integers). The equation is rewritten first with "..." spelled out as private characters
// per broadcast dim, so the sum itself only sees letters.
#include <map>
#include <string>

#include "support/status_macros.h"
#include "tests/reference/kernels.h"

namespace kiln::reference {
namespace {

absl::StatusOr<RefValue> Einsum(const KernelCall& call) {
  if (call.args.empty() || call.args[0].kind() != RefValue::Kind::kTuple) return call.Error("expects a tuple");
  std::vector<const HostTensor*> xs;
  for (const RefValue& f : call.args[0].fields()) {
    if (!f.is_tensor()) return call.Error("operands must be tensors");
    xs.push_back(&f.tensor());
  }
  auto it = call.call.attrs.find("subscripts");
  if (it == call.call.attrs.end()) return call.Error("subscripts is required");
  std::string eq;
  for (char c : std::get<std::string>(it->second)) {
    if (c != ' ') eq += c;
  }
  const size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') {
      terms.emplace_back();
    } else {
      terms.back() += c;
    }
  }
  if (terms.size() != xs.size()) return call.Error("operand count");
  // Ellipsis dims become the characters '0', '1', ... (rightmost aligned).
  size_t ell = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    if (terms[k].find("...") != std::string::npos) ell = std::max(ell, xs[k]->shape().size() - (terms[k].size() - 3));
  }
  auto expand = [&](const std::string& term, size_t have) {
    const size_t at = term.find("...");
    if (at == std::string::npos) return term;
    std::string dots;
    for (size_t d = ell - have; d < ell; ++d) dots += static_cast<char>('0' + d);
    return term.substr(0, at) + dots + term.substr(at + 3);
  };
  std::map<char, int64_t> size;
  for (size_t k = 0; k < terms.size(); ++k) {
    const size_t named = terms[k].size() - (terms[k].find("...") != std::string::npos ? 3 : 0);
    terms[k] = expand(terms[k], xs[k]->shape().size() - named);
    if (terms[k].size() != xs[k]->shape().size()) return call.Error("operand ", k, " rank");
    for (size_t d = 0; d < terms[k].size(); ++d) {
      const char c = terms[k][d];
      const int64_t dim = xs[k]->shape()[d];
      auto [at, inserted] = size.try_emplace(c, dim);
      if (inserted || at->second == dim) continue;
      const bool is_ellipsis = c >= '0' && c <= '9';  // broadcasts
      if (is_ellipsis && dim == 1) continue;
      if (is_ellipsis && at->second == 1) {
        at->second = dim;
        continue;
      }
      return call.Error("dims of '", std::string(1, c), "' differ: ", at->second, " vs ", dim);
    }
  }
  std::string out_term;
  if (arrow != std::string::npos) {
    out_term = expand(eq.substr(arrow + 2), ell);
  } else {
    for (size_t d = 0; d < ell; ++d) out_term += static_cast<char>('0' + d);
    std::map<char, int> count;
    for (const std::string& t : terms) {
      for (char c : t) ++count[c];
    }
    for (const auto& [c, n] : count) {
      if (n == 1 && !(c >= '0' && c <= '9')) out_term += c;
    }
  }
  std::vector<int64_t> shape;
  for (char c : out_term) {
    if (!size.count(c)) return call.Error("output letter '", std::string(1, c), "' is in no input");
    shape.push_back(size[c]);
  }
  std::vector<char> letters;
  std::vector<int64_t> extents;
  for (const auto& [c, s] : size) {
    letters.push_back(c);
    extents.push_back(s);
  }
  KILN_RETURN_IF_ERROR(call.CheckElementCount(shape));
  const bool integer = ComputesInInt(xs[0]->dtype());
  std::vector<double> acc(static_cast<size_t>(NumElements(shape)), 0.0);
  // Integer products and sums wrap around as the kernels' two's-complement arithmetic does.
  std::vector<uint64_t> iacc(acc.size(), 0);
  std::map<char, int64_t> value;
  for (int64_t a = 0; a < NumElements(extents); ++a) {
    std::vector<int64_t> v = Unravel(a, extents);
    for (size_t i = 0; i < letters.size(); ++i) value[letters[i]] = v[i];
    double prod = 1;
    uint64_t iprod = 1;
    for (size_t k = 0; k < xs.size(); ++k) {
      std::vector<int64_t> index;
      for (size_t d = 0; d < terms[k].size(); ++d) index.push_back(xs[k]->shape()[d] == 1 ? 0 : value[terms[k][d]]);
      const int64_t flat = Ravel(index, xs[k]->shape());
      if (integer) {
        iprod *= static_cast<uint64_t>(xs[k]->GetInt(flat));
      } else {
        prod *= xs[k]->GetDouble(flat);
      }
    }
    std::vector<int64_t> o;
    for (char c : out_term) o.push_back(value[c]);
    const int64_t at = Ravel(o, shape);
    acc[static_cast<size_t>(at)] += prod;
    iacc[static_cast<size_t>(at)] += iprod;
  }
  HostTensor out(xs[0]->dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const auto at = static_cast<size_t>(i);
    integer ? out.SetInt(i, static_cast<int64_t>(iacc[at])) : out.SetDouble(i, acc[at]);
  }
  return RefValue(std::move(out));
}

}  // namespace

void AddEinsumKernels(KernelTable& t) { t["einsum"] = Einsum; }

}  // namespace kiln::reference
