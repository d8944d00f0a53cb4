// Plain-loop oracle for the fused softmax cross-entropy (see engine/kernels/cross_entropy.h).
// Row sums in double. dlogits may alias logits: each row's statistics and target logit are read
// before any of its entries is overwritten, and each entry is read before it is written.
#include <cmath>
#include <cstdint>

#include "engine/kernels/cross_entropy.h"

namespace accel::kernels::ref {
namespace {

struct RowStats {
  double max;
  double sum_exp;  // Σ exp(logit - max)
};

RowStats ComputeRowStats(const float* row, int64_t V) {
  double max = -INFINITY;
  for (int64_t j = 0; j < V; ++j) max = row[j] > max ? row[j] : max;
  double sum = 0;
  for (int64_t j = 0; j < V; ++j) sum += std::exp(row[j] - max);
  return {max, sum};
}

}  // namespace

void SoftmaxCrossEntropyForward(float* losses, const float* logits, const int32_t* targets,
                                int64_t N, int64_t V) {
  for (int64_t i = 0; i < N; ++i) {
    if (targets[i] == kIgnoreIndex) {
      losses[i] = 0.0f;
      continue;
    }
    const float* row = logits + i * V;
    const RowStats st = ComputeRowStats(row, V);
    losses[i] = static_cast<float>(std::log(st.sum_exp) + st.max - row[targets[i]]);
  }
}

void SoftmaxCrossEntropyBackward(float* dlogits, float* losses, const float* logits,
                                 const int32_t* targets, int64_t N, int64_t V, float dloss) {
  for (int64_t i = 0; i < N; ++i) {
    const float* row = logits + i * V;
    float* drow = dlogits + i * V;
    if (targets[i] == kIgnoreIndex) {
      losses[i] = 0.0f;
      for (int64_t j = 0; j < V; ++j) drow[j] = 0.0f;
      continue;
    }
    const RowStats st = ComputeRowStats(row, V);
    const int64_t target = targets[i];
    losses[i] = static_cast<float>(std::log(st.sum_exp) + st.max - row[target]);
    for (int64_t j = 0; j < V; ++j) {
      const double p = std::exp(row[j] - st.max) / st.sum_exp;
      drow[j] = static_cast<float>(dloss * (p - (j == target ? 1.0 : 0.0)));
    }
  }
}

}  // namespace accel::kernels::ref
