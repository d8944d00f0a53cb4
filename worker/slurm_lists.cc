#include "worker/slurm_lists.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/base/status_macros.h"

namespace accel::worker {
namespace {

constexpr size_t kMaxHosts = 100000;

absl::Status Bad(absl::string_view name, absl::string_view list, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(name), "=", std::string(list), ": ", std::string(why)));
}

// Splits at commas outside brackets.
std::vector<absl::string_view> TopLevelItems(absl::string_view list) {
  std::vector<absl::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '[') ++depth;
    if (list[i] == ']') --depth;
    if (list[i] == ',' && depth == 0) {
      items.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  items.push_back(list.substr(start));
  return items;
}

// One item ("b[01-03]x", possibly several bracket groups), appended to `out`.
absl::Status ExpandItem(absl::string_view item, absl::string_view name, absl::string_view list,
                        std::vector<std::string>* out) {
  const size_t open = item.find('[');
  if (open == absl::string_view::npos) {
    if (item.find(']') != absl::string_view::npos) return Bad(name, list, "unbalanced ']'");
    if (item.empty()) return Bad(name, list, "empty host name");
    if (out->size() >= kMaxHosts) return Bad(name, list, "more than 100000 hosts");
    out->emplace_back(item);
    return absl::OkStatus();
  }
  const size_t close = item.find(']', open);
  if (close == absl::string_view::npos) return Bad(name, list, "unbalanced '['");
  const absl::string_view prefix = item.substr(0, open);
  const absl::string_view ranges = item.substr(open + 1, close - open - 1);
  const absl::string_view rest = item.substr(close + 1);
  if (ranges.find('[') != absl::string_view::npos) return Bad(name, list, "nested '['");
  for (absl::string_view range : absl::StrSplit(ranges, ',')) {
    std::pair<absl::string_view, absl::string_view> bounds = absl::StrSplit(range, '-');
    if (bounds.second.empty()) bounds.second = bounds.first;
    uint64_t lo = 0, hi = 0;
    if (bounds.first.empty() || !absl::SimpleAtoi(bounds.first, &lo) ||
        !absl::SimpleAtoi(bounds.second, &hi) || hi < lo) {
      return Bad(name, list, absl::StrCat("bad range \"", std::string(range), "\""));
    }
    if (hi - lo >= kMaxHosts) return Bad(name, list, "more than 100000 hosts");
    const size_t width = bounds.first.size();  // "01" pads to two digits
    for (uint64_t v = lo; v <= hi; ++v) {
      std::string digits = std::to_string(v);
      if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
      ACCEL_RETURN_IF_ERROR(
          ExpandItem(absl::StrCat(std::string(prefix), digits, std::string(rest)), name, list,
                     out));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandHostList(std::string_view list_in,
                                                        std::string_view name_in) {
  const absl::string_view list(list_in.data(), list_in.size());
  const absl::string_view name(name_in.data(), name_in.size());
  std::vector<std::string> hosts;
  if (list.empty()) return Bad(name, list, "empty host list");
  for (absl::string_view item : TopLevelItems(list)) {
    ACCEL_RETURN_IF_ERROR(ExpandItem(item, name, list, &hosts));
  }
  return hosts;
}

absl::StatusOr<std::vector<int>> ExpandTasksPerNode(std::string_view list_in,
                                                    std::string_view name_in) {
  const absl::string_view list(list_in.data(), list_in.size());
  const absl::string_view name(name_in.data(), name_in.size());
  std::vector<int> counts;
  if (list.empty()) return Bad(name, list, "empty");
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    absl::string_view count = item;
    int repeat = 1;
    if (const size_t paren = item.find('('); paren != absl::string_view::npos) {
      count = item.substr(0, paren);
      const absl::string_view times = item.substr(paren);
      if (times.size() < 4 || times.substr(0, 2) != "(x" || times.back() != ')' ||
          !absl::SimpleAtoi(times.substr(2, times.size() - 3), &repeat) || repeat < 1) {
        return Bad(name, list, absl::StrCat("\"", std::string(item), "\" is not N or N(xM)"));
      }
    }
    int n = 0;
    if (!absl::SimpleAtoi(count, &n) || n < 1) {
      return Bad(name, list, absl::StrCat("\"", std::string(item), "\" is not N or N(xM)"));
    }
    if (counts.size() + repeat > kMaxHosts) return Bad(name, list, "more than 100000 nodes");
    counts.insert(counts.end(), repeat, n);
  }
  return counts;
}

}  // namespace accel::worker
