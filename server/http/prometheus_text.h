// PrometheusText: writes the Prometheus text exposition format (version 0.0.4), which acceld's
// /metrics serves. A family's `# HELP` and `# TYPE` lines come once, before its samples; label
// values are escaped (backslash, double quote, newline); values print exactly (integers up to
// 2^53 as integers, other numbers with 17 significant digits, NaN and ±Inf as Prometheus
// spells them). Names are the caller's: docs/observability.md lists acceld's.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace accel::server {

using PromLabel = std::pair<std::string_view, std::string_view>;

// Request latencies in seconds: the bucket upper bounds (the +Inf bucket is implied).
inline constexpr std::array<double, 12> kLatencyBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30};

struct LatencyHistogram {
  std::array<int64_t, kLatencyBuckets.size() + 1> counts{};  // per bucket, not cumulative
  double sum = 0;
  int64_t count = 0;
  void Observe(double seconds);
};

class PrometheusText {
 public:
  enum class Type { kGauge, kCounter, kHistogram };

  // `# HELP name help` and `# TYPE name type`.
  void Family(std::string_view name, std::string_view help, Type type);
  // `name{k="v",...} value`.
  void Sample(std::string_view name, std::initializer_list<PromLabel> labels, double value);
  // The histogram's `_bucket` (cumulative, with `le`), `_sum` and `_count` lines.
  void Histogram(std::string_view name, std::initializer_list<PromLabel> labels,
                 const LatencyHistogram& h);

  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Labels(std::initializer_list<PromLabel> labels, std::string_view le = {});
  void Value(double v);

  std::string out_;
};

}  // namespace accel::server
