#include "support/nearest_name.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace kiln::support {
namespace {

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of one
// substring), over three rolling rows.
int EditDistance(std::string_view a, std::string_view b) {
  const size_t n = b.size();
  std::vector<int> before(n + 1), previous(n + 1), current(n + 1);
  for (size_t j = 0; j <= n; ++j) previous[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = static_cast<int>(i);
    for (size_t j = 1; j <= n; ++j) {
      const int substitution = Lower(a[i - 1]) == Lower(b[j - 1]) ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + substitution});
      if (i > 1 && j > 1 && Lower(a[i - 1]) == Lower(b[j - 2]) && Lower(a[i - 2]) == Lower(b[j - 1])) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[n];
}

}  // namespace

std::optional<std::string> NearestName(std::string_view name, std::span<const std::string> candidates) {
  if (name.empty()) return std::nullopt;
  const int limit = name.size() <= 4 ? 1 : 2;
  std::optional<std::string> best;
  int best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    if (candidate == name) return std::nullopt;
    // Lengths that differ by more than the limit cannot be within it.
    const size_t longer = std::max(candidate.size(), name.size()), shorter = std::min(candidate.size(), name.size());
    if (longer - shorter > static_cast<size_t>(limit)) continue;
    const int distance = EditDistance(name, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string DidYouMean(std::string_view name, std::span<const std::string> candidates) {
  std::optional<std::string> nearest = NearestName(name, candidates);
  return nearest ? " (did you mean '" + *nearest + "'?)" : std::string();
}

}  // namespace kiln::support
