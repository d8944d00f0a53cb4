#include "server/core/retention.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace accel::server {

std::vector<std::string> ExpiredJobs(const std::vector<JobRecord>& jobs,
                                     const RetentionPolicy& policy, int64_t now_us) {
  std::vector<const JobRecord*> ended;
  for (const JobRecord& j : jobs) {
    if (IsTerminal(j.state)) ended.push_back(&j);
  }
  std::sort(ended.begin(), ended.end(), [](const JobRecord* a, const JobRecord* b) {
    return a->end_us != b->end_us ? a->end_us < b->end_us : a->number < b->number;
  });
  size_t drop = 0;  // a prefix of `ended`
  if (policy.keep_finished > 0 && ended.size() > static_cast<size_t>(policy.keep_finished)) {
    drop = ended.size() - static_cast<size_t>(policy.keep_finished);
  }
  if (policy.finished_ttl > absl::ZeroDuration()) {
    const int64_t cutoff = now_us - absl::ToInt64Microseconds(policy.finished_ttl);
    while (drop < ended.size() && ended[drop]->end_us <= cutoff) ++drop;
  }
  std::vector<std::string> ids;
  ids.reserve(drop);
  for (size_t i = 0; i < drop; ++i) ids.push_back(ended[i]->id);
  return ids;
}

absl::StatusOr<absl::Duration> ParseRetentionDuration(const std::string& text,
                                                      const std::string& flag) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": '", text, "' is not a duration; give a number with s, m, h or d (e.g. 7d), or 0"));
  };
  if (text == "0") return absl::ZeroDuration();
  if (text.size() < 2) return bad();
  const char unit = text.back();
  double seconds_per_unit = 0;
  switch (unit) {
    case 's': seconds_per_unit = 1; break;
    case 'm': seconds_per_unit = 60; break;
    case 'h': seconds_per_unit = 3600; break;
    case 'd': seconds_per_unit = 86400; break;
    default: return bad();
  }
  double count = 0;
  if (!absl::SimpleAtod(text.substr(0, text.size() - 1), &count) || !std::isfinite(count) ||
      count < 0 || count * seconds_per_unit > 100.0 * 365 * 86400) {
    return bad();
  }
  return absl::Seconds(count * seconds_per_unit);
}

}  // namespace accel::server
