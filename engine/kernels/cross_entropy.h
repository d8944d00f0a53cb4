// Fused softmax + cross-entropy over the vocabulary.
//   logits (N, V), targets (N) in [0, V) or kIgnoreIndex (already validated).
//   SoftmaxCrossEntropyForward: losses[i] = -log softmax(logits[i])[targets[i]]  (N)
//   SoftmaxCrossEntropyBackward: also writes dlogits[i, j] = dloss * (softmax(logits[i])[j] -
//     1[j == targets[i]]), overwriting dlogits (it does not accumulate). dlogits may alias
//     logits (in place), so the full (N, V) probabilities are never materialised twice.
//   dloss is the gradient of the total loss w.r.t. each row's loss (1/n for a mean over n rows).
// A row whose target is kIgnoreIndex (PyTorch's ignore_index=-100: a masked position, see
// docs/data.md "Loss mask") has loss 0 and a zero gradient row; its logits are not read.
// Softmax is computed stably (max subtracted) with fp32 accumulation.
// kernels::ref is the plain-loop oracle; kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

// The target of a position whose loss does not count (torch.nn.functional.cross_entropy's
// default ignore_index).
inline constexpr int32_t kIgnoreIndex = -100;

// The number of targets in targets[0, n) that count (!= kIgnoreIndex).
inline int64_t CountLossTargets(const int32_t* targets, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += targets[i] != kIgnoreIndex;
  return count;
}

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
