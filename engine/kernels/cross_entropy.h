// Fused softmax + cross-entropy over the vocabulary.
//   logits (N, V), targets (N) in [0, V) (already validated).
//   SoftmaxCrossEntropyForward: losses[i] = -log softmax(logits[i])[targets[i]]  (N)
//   SoftmaxCrossEntropyBackward: also writes dlogits[i, j] = dloss * (softmax(logits[i])[j] -
//     1[j == targets[i]]), overwriting dlogits (it does not accumulate). dlogits may alias
//     logits (in place), so the full (N, V) probabilities are never materialised twice.
//   dloss is the gradient of the total loss w.r.t. each row's loss (1/N for a mean).
// Softmax is computed stably (max subtracted) with fp32 accumulation.
// kernels::ref is the plain-loop oracle; kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

#define ACCEL_CROSS_ENTROPY_KERNELS                                                           \
  void SoftmaxCrossEntropyForward(float* losses, const float* logits, const int32_t* targets, \
                                  int64_t N, int64_t V);                                      \
  void SoftmaxCrossEntropyBackward(float* dlogits, float* losses, const float* logits,        \
                                   const int32_t* targets, int64_t N, int64_t V, float dloss);

ACCEL_CROSS_ENTROPY_KERNELS
namespace ref {
ACCEL_CROSS_ENTROPY_KERNELS
}  // namespace ref

}  // namespace accel::kernels
