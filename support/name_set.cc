#include "support/name_set.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::support {

std::string NameSet::Fresh(const std::string& base) {
  if (names_.insert(base).second) return base;
  int& next = next_suffix_[base];
  for (int i = std::max(next, 1);; ++i) {
    std::string name = absl::StrCat(base, "_", i);
    if (names_.insert(name).second) {
      next = i + 1;
      return name;
    }
  }
}

}  // namespace kiln::support
