// Causal multi-head self-attention (the part between the qkv projection and the output
// projection), GPT-2 layout:
//   qkv (B, T, 3C): for each position, [q | k | v], each C = NH * HS wide, head h at columns
//   [h*HS, (h+1)*HS) of its part.
//   att (B, NH, T, T): softmax(q·kᵀ / sqrt(HS)) with the causal mask; saved for backward. Entries
//   above the diagonal are written as 0.
//   out (B, T, C): att · v, heads concatenated.
// Backward accumulates (+=) into dqkv (B, T, 3C).
// kernels::ref is the plain-loop oracle; kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

#define ACCEL_ATTENTION_KERNELS                                                                \
  void AttentionForward(float* out, float* att, const float* qkv, int64_t B, int64_t T,       \
                        int64_t C, int64_t NH);                                                \
  void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,  \
                         int64_t B, int64_t T, int64_t C, int64_t NH);

ACCEL_ATTENTION_KERNELS
namespace ref {
ACCEL_ATTENTION_KERNELS
}  // namespace ref

}  // namespace accel::kernels
