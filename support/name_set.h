// NameSet: a set of names that makes fresh ones.
//
// What it promises: Fresh(base) returns `base` if it is not in the set, else the first of
// `base_1`, `base_2`, ... that is not, and adds it. A base's search resumes where its last
// one ended (names are never removed, so the names it skipped are still taken): n fresh names
// of one base cost O(n log n), not O(n^2) — a fused chain of a thousand kernels has a
// thousand loops and blocks of one name.
#pragma once

#include <set>
#include <string>
#include <unordered_map>

namespace kiln::support {

class NameSet {
 public:
  bool count(const std::string& name) const { return names_.count(name) > 0; }
  void insert(std::string name) { names_.insert(std::move(name)); }
  std::string Fresh(const std::string& base);

 private:
  std::set<std::string> names_;
  std::unordered_map<std::string, int> next_suffix_;
};

}  // namespace kiln::support
