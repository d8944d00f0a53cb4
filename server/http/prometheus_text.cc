#include "server/http/prometheus_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>


namespace accel::server {
namespace {

// Appends text pieces (std::string_view, which Debian's absl::StrAppend does not take).
template <typename... Parts>
void Put(std::string& out, const Parts&... parts) {
  (out.append(std::string_view(parts)), ...);
}

}  // namespace

void LatencyHistogram::Observe(double seconds) {
  size_t bucket = 0;
  while (bucket < kLatencyBuckets.size() && seconds > kLatencyBuckets[bucket]) ++bucket;
  ++counts[bucket];
  sum += seconds;
  ++count;
}

void PrometheusText::Family(std::string_view name, std::string_view help, Type type) {
  const char* type_name = type == Type::kGauge     ? "gauge"
                          : type == Type::kCounter ? "counter"
                                                   : "histogram";
  Put(out_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type_name, "\n");
}

void PrometheusText::Sample(std::string_view name, std::initializer_list<PromLabel> labels,
                            double value) {
  out_.append(name);
  Labels(labels);
  Value(value);
}

void PrometheusText::Histogram(std::string_view name, std::initializer_list<PromLabel> labels,
                               const LatencyHistogram& h) {
  int64_t cumulative = 0;
  char le[32];
  for (size_t b = 0; b < h.counts.size(); ++b) {
    cumulative += h.counts[b];
    if (b < kLatencyBuckets.size()) {
      std::snprintf(le, sizeof(le), "%g", kLatencyBuckets[b]);
    } else {
      std::snprintf(le, sizeof(le), "+Inf");
    }
    Put(out_, name, "_bucket");
    Labels(labels, le);
    Value(static_cast<double>(cumulative));
  }
  Put(out_, name, "_sum");
  Labels(labels);
  Value(h.sum);
  Put(out_, name, "_count");
  Labels(labels);
  Value(static_cast<double>(h.count));
}

void PrometheusText::Labels(std::initializer_list<PromLabel> labels, std::string_view le) {
  if (labels.size() == 0 && le.empty()) return;
  out_.push_back('{');
  bool first = true;
  auto add = [&](std::string_view key, std::string_view value) {
    if (!first) out_.push_back(',');
    first = false;
    Put(out_, key, "=\"");
    for (char c : value) {
      if (c == '\\') {
        out_.append("\\\\");
      } else if (c == '"') {
        out_.append("\\\"");
      } else if (c == '\n') {
        out_.append("\\n");
      } else {
        out_.push_back(c);
      }
    }
    out_.push_back('"');
  };
  for (const auto& [key, value] : labels) add(key, value);
  if (!le.empty()) add("le", le);
  out_.push_back('}');
}

void PrometheusText::Value(double v) {
  out_.push_back(' ');
  if (std::isnan(v)) {
    out_.append("NaN");
  } else if (std::isinf(v)) {
    out_.append(v > 0 ? "+Inf" : "-Inf");
  } else if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {
    out_.append(std::to_string(static_cast<int64_t>(v)));
  } else {
    // The shortest of 15 and 17 digits that reads back as the same double.
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.15g", v);
    if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof(buf), "%.17g", v);
    out_.append(buf);
  }
  out_.push_back('\n');
}

}  // namespace accel::server
