#include "job/cluster_values.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace accel::job {
namespace {

absl::Status Invalid(const std::string& what) { return absl::InvalidArgumentError(what); }

bool AllDigits(absl::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
}

constexpr char kSlurmForms[] =
    "minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes, "
    "days-hours:minutes:seconds, or UNLIMITED";

}  // namespace

absl::Status CheckSlurmTime(const std::string& v) {
  if (absl::EqualsIgnoreCase(v, "UNLIMITED") || absl::EqualsIgnoreCase(v, "INFINITE")) {
    return absl::OkStatus();
  }
  const std::string not_a_time =
      absl::StrCat("'", v, "' is not a Slurm time limit (", kSlurmForms, ")");
  const std::vector<absl::string_view> by_dash = absl::StrSplit(v, '-');
  if (by_dash.size() > 2) return Invalid(not_a_time);
  const bool has_days = by_dash.size() == 2;
  const std::vector<absl::string_view> fields = absl::StrSplit(by_dash.back(), ':');
  if (fields.size() > 3) return Invalid(not_a_time);
  // Each number with its name and largest value (-1: the leading field, any count).
  struct Field {
    absl::string_view text;
    const char* name;
    int64_t seconds_each;
    int64_t max;
  };
  std::vector<Field> parts;
  if (has_days) parts.push_back({by_dash[0], "days", 86400, -1});
  static const char* const kNames[3] = {"hours", "minutes", "seconds"};
  static const int64_t kSeconds[3] = {3600, 60, 1};
  static const int64_t kMax[3] = {23, 59, 59};
  // Which unit the fields after the dash (or without one) start at.
  const int first = has_days ? 0 : fields.size() == 3 ? 0 : 1;
  for (size_t i = 0; i < fields.size(); ++i) {
    const int unit = first + static_cast<int>(i);
    parts.push_back({fields[i], kNames[unit], kSeconds[unit], parts.empty() ? -1 : kMax[unit]});
  }
  int64_t total = 0;
  constexpr int64_t kMaxSeconds = int64_t{kMaxSlurmTimeDays} * 86400;
  for (const Field& f : parts) {
    int64_t n = 0;
    // At most 12 digits: anything longer is over the limit anyway, and cannot overflow below.
    if (!AllDigits(f.text) || f.text.size() > 12 || !absl::SimpleAtoi(f.text, &n)) {
      return Invalid(not_a_time);
    }
    if (f.max >= 0 && n > f.max) {
      return Invalid(absl::StrCat("'", v, "': ", f.name, " ", n, " is out of range (0 to ", f.max,
                                  " here; ", kSlurmForms, ")"));
    }
    total += n * f.seconds_each;  // 12 digits of days: 8.64e16 s, far from overflowing
  }
  if (total > kMaxSeconds) {
    return Invalid(absl::StrCat("'", v, "' is longer than ", kMaxSlurmTimeDays,
                                " days; give UNLIMITED for no time limit"));
  }
  return absl::OkStatus();
}

absl::Status CheckKubernetesQuantity(const std::string& v, QuantityOf what) {
  const bool cpu = what == QuantityOf::kCpu;
  const std::string not_a_quantity =
      absl::StrCat("'", v, "' is not a Kubernetes quantity (a number and an optional suffix, e.g. ",
                   cpu ? "2, 1.5, 500m" : "512Mi, 4Gi, 1.5G, 1e9", ")");
  absl::string_view rest = v;
  bool negative = false;
  if (!rest.empty() && (rest.front() == '+' || rest.front() == '-')) {
    negative = rest.front() == '-';
    rest.remove_prefix(1);
  }
  // The number: digits with at most one '.', at least one digit.
  size_t end = 0;
  int dots = 0, digits = 0;
  for (; end < rest.size() && (rest[end] == '.' || absl::ascii_isdigit(rest[end])); ++end) {
    (rest[end] == '.' ? dots : digits) += 1;
  }
  double number = 0;
  if (digits == 0 || dots > 1 ||
      !absl::SimpleAtod(absl::StrCat("0", rest.substr(0, end)), &number)) {
    return Invalid(not_a_quantity);
  }
  const absl::string_view suffix = rest.substr(end);
  double scale = 1;
  static const std::vector<std::pair<absl::string_view, double>> kSuffixes = {
      {"", 1},        {"n", 1e-9},    {"u", 1e-6},    {"m", 1e-3},   {"k", 1e3},     {"M", 1e6},
      {"G", 1e9},     {"T", 1e12},    {"P", 1e15},    {"E", 1e18},   {"Ki", 0x1p10}, {"Mi", 0x1p20},
      {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60}};
  const auto known = std::find_if(kSuffixes.begin(), kSuffixes.end(),
                                  [&](const auto& s) { return s.first == suffix; });
  if (known != kSuffixes.end()) {
    scale = known->second;
  } else {
    // A decimal exponent: e or E, an optional sign, digits ("E" alone is exa, above).
    absl::string_view exponent = suffix.substr(1);
    if (!exponent.empty() && (exponent.front() == '+' || exponent.front() == '-')) {
      exponent.remove_prefix(1);
    }
    int e = 0;
    if ((suffix.front() != 'e' && suffix.front() != 'E') || !AllDigits(exponent) ||
        exponent.size() > 3 || !absl::SimpleAtoi(suffix.substr(1), &e)) {
      return Invalid(not_a_quantity);
    }
    scale = std::pow(10.0, e);
  }
  const double value = number * scale;  // cores or bytes
  if (negative || !(value > 0)) {
    return Invalid(
        absl::StrCat("'", v, "' must be positive (a ", cpu ? "CPU" : "memory", " request)"));
  }
  constexpr double kMaxUnits = 0x1p63;
  if (cpu) {
    const double millis = value * 1000;
    if (!(millis < kMaxUnits)) return Invalid(absl::StrCat("'", v, "' is too large"));
    if (millis < 1 - 1e-9) {
      return Invalid(absl::StrCat("'", v, "' is below 1m, the smallest CPU request"));
    }
    if (std::abs(millis - std::round(millis)) > 1e-6 * millis) {
      return Invalid(absl::StrCat("'", v,
                                  "' is finer than 1m; Kubernetes takes CPU in whole "
                                  "millicores"));
    }
    return absl::OkStatus();
  }
  if (!(value < kMaxUnits)) return Invalid(absl::StrCat("'", v, "' is too large"));
  if (value < 1) {
    return Invalid(absl::StrCat("'", v, "' is less than one byte",
                                suffix == "m" ? " (m is milli; did you mean Mi?)" : ""));
  }
  return absl::OkStatus();
}

}  // namespace accel::job
