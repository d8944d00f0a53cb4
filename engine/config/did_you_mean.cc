#include "engine/config/did_you_mean.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace accel::config {
namespace {

char Fold(char c) {
  if (c == '-') return '_';
  if (c >= 'A' && c <= 'Z') return static_cast<char>(c - 'A' + 'a');
  return c;
}

size_t Allowed(size_t length) {
  if (length <= 4) return 1;
  if (length <= 10) return 2;
  return 3;
}

}  // namespace

size_t EditDistance(std::string_view a, std::string_view b) {
  // Config keys are short; inputs longer than this are not typos of a key.
  constexpr size_t kMax = 256;
  if (a.size() > kMax || b.size() > kMax) return std::max(a.size(), b.size());
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = Fold(a[i - 1]) == Fold(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && Fold(a[i - 1]) == Fold(b[j - 2]) && Fold(a[i - 2]) == Fold(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::string ClosestName(std::string_view name, const std::vector<std::string_view>& candidates) {
  std::string_view best;
  size_t best_distance = 0;
  for (std::string_view c : candidates) {
    const size_t dist = EditDistance(name, c);
    if (dist > Allowed(std::min(name.size(), c.size()))) continue;
    if (best.empty() || dist < best_distance) {
      best = c;
      best_distance = dist;
    }
  }
  return std::string(best);
}

std::string DidYouMean(std::string_view name, const std::vector<std::string_view>& candidates) {
  std::string best = ClosestName(name, candidates);
  if (best.empty()) return "";
  return absl::StrCat(" (did you mean \"", best, "\"?)");
}

}  // namespace accel::config
