// "Did you mean" for near-miss key and value names. Names are compared case-insensitively with
// '-' and '_' treated alike, by optimal-string-alignment distance (an adjacent swap costs 1).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace accel::config {

// Edit distance between a and b under the comparison above.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `name` when it is close enough to be a typo (distance at most 1 for
// names up to 4 characters, 2 up to 10, 3 beyond), else "". Ties go to the earlier candidate.
std::string ClosestName(std::string_view name, const std::vector<std::string_view>& candidates);

// " (did you mean \"x\"?)" for the closest candidate, or "".
std::string DidYouMean(std::string_view name, const std::vector<std::string_view>& candidates);

}  // namespace accel::config
