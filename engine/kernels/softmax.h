// The causal (optionally sliding-window) softmax of attention scores and its backward, row by row
// in place: the softmax that attention.h and gqa_attention.h run between the GEMMs of one head
// (cpu/attention_head.h), as an op of its own so it has a reference, a test and a benchmark.
//   att, ds: rows t in [r0, r1) of a row-major (T, T) matrix; the pointers address row r0 and the
//   row stride is T. Row t "sees" keys [lo(t), t], lo(t) = 0, or max(0, t - window + 1) when
//   window > 0.
//   CausalSoftmaxForward: the seen entries of each row become their softmax (max subtracted),
//     every other entry of the row 0.
//   CausalSoftmaxBackward: on entry ds holds datt = dL/datt in columns [0, r1); on return, with
//     w = Σ_k att[t, k] datt[t, k], ds[t, j] = scale * att[t, j] * (datt[t, j] - w) for j <= t and
//     0 for t < j < r1 (columns from r1 on are not touched). att is the forward's output.
// Both are single-threaded: their callers already run one head per OpenMP thread.
// kernels::ref is the plain-loop oracle (in double); kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

#define ACCEL_SOFTMAX_KERNELS                                                                 \
  void CausalSoftmaxForward(float* att, int64_t T, int64_t r0, int64_t r1, int64_t window);   \
  void CausalSoftmaxBackward(float* ds, const float* att, int64_t T, int64_t r0, int64_t r1,  \
                             float scale);

ACCEL_SOFTMAX_KERNELS
namespace ref {
ACCEL_SOFTMAX_KERNELS
}  // namespace ref

}  // namespace accel::kernels
