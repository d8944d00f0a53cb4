#include "engine/generate/sampler.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace accel::generate {

absl::StatusOr<Sampler> Sampler::Create(const SamplingOptions& o) {
  if (!std::isfinite(o.temperature) || o.temperature < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--temperature ", o.temperature, " must be 0 (greedy) or positive"));
  }
  if (o.top_k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--top-k ", o.top_k, " must be 0 (all tokens) or positive"));
  }
  if (!(o.top_p > 0 && o.top_p <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("--top-p ", o.top_p, " must be in (0, 1]"));
  }
  return Sampler(o);
}

double Sampler::Uniform() {
  // SplitMix64 (Steele, Lea, Flood 2014).
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

int32_t Sampler::Next(const float* logits, int64_t V) {
  if (o_.temperature == 0) {
    return static_cast<int32_t>(std::max_element(logits, logits + V) - logits);
  }
  // Softmax of logits / t in double, with the maximum subtracted.
  const double max = *std::max_element(logits, logits + V);
  sorted_.resize(V);
  for (int64_t v = 0; v < V; ++v) {
    sorted_[v] = {std::exp((logits[v] - max) / o_.temperature), static_cast<int32_t>(v)};
  }
  // Largest first; ties by token id, so the order (and the draw) is fully determined.
  auto by_prob = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  int64_t keep = V;
  if (o_.top_k > 0 && o_.top_k < V) {
    keep = o_.top_k;
    std::partial_sort(sorted_.begin(), sorted_.begin() + keep, sorted_.end(), by_prob);
  } else {
    std::sort(sorted_.begin(), sorted_.end(), by_prob);
  }
  double kept = 0;
  for (int64_t i = 0; i < keep; ++i) kept += sorted_[i].first;
  if (o_.top_p < 1) {
    // The smallest prefix whose share of the kept mass reaches top_p.
    double cumulative = 0;
    for (int64_t i = 0; i < keep; ++i) {
      cumulative += sorted_[i].first / kept;
      if (cumulative >= o_.top_p) {
        keep = i + 1;
        break;
      }
    }
    kept = 0;
    for (int64_t i = 0; i < keep; ++i) kept += sorted_[i].first;
  }
  const double u = Uniform() * kept;
  double cumulative = 0;
  for (int64_t i = 0; i < keep; ++i) {
    cumulative += sorted_[i].first;
    if (u < cumulative) return sorted_[i].second;
  }
  return sorted_[keep - 1].second;
}

}  // namespace accel::generate
