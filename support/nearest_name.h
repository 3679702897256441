// NearestName: the "did you mean" of error messages.
//
// What it promises: among `candidates`, the one closest to `name` by edit distance
// (insertions, deletions, substitutions and swaps of two neighbouring characters, each 1),
// when that distance is small against the name: at most 1 for names of up to 4 characters,
// 2 for longer ones (so a typo is found, and a different word is not offered). Case is
// ignored. Ties go to the first candidate; nothing when none is close, or when `name` itself
// is a candidate.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kiln::support {

std::optional<std::string> NearestName(std::string_view name, std::span<const std::string> candidates);

// ", did you mean 'X'?"-style suffix: " (did you mean 'X'?)" or "" when nothing is close.
std::string DidYouMean(std::string_view name, std::span<const std::string> candidates);

}  // namespace kiln::support
