// Sampler: the next token from one position's logits, as Hugging Face's generate() picks it.
//
//   temperature 0        greedy: the arg max (the first of equal maxima, as torch.argmax);
//   temperature t > 0    softmax(logits / t), then top_k (keep the k largest; 0 = all), then
//                        top_p (keep the smallest set of the largest probabilities whose sum
//                        reaches p, at least one; 1 = all), renormalised, and one draw.
// The draws come from a 64-bit generator seeded with `seed` (SplitMix64, whose sequence is fixed
// by its definition), so a seed gives the same tokens on every machine and build.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace accel::generate {

struct SamplingOptions {
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
};

class Sampler {
 public:
  // InvalidArgument naming the flag: temperature negative or not finite, top_k negative, top_p
  // outside (0, 1].
  [[nodiscard]] static absl::StatusOr<Sampler> Create(const SamplingOptions& options);
  // logits: V floats (not modified).
  int32_t Next(const float* logits, int64_t V);
  // A uniform double in [0, 1) (53 bits).
  double Uniform();

 private:
  explicit Sampler(const SamplingOptions& o) : o_(o), state_(o.seed) {}
  SamplingOptions o_;
  uint64_t state_;
  std::vector<std::pair<double, int32_t>> sorted_;  // scratch: (probability, token)
};

}  // namespace accel::generate
