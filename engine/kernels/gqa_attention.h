// Grouped-query causal self-attention (Llama / Mistral / Qwen2): H query heads share KV key/value
// heads, each kv head serving H / KV consecutive query heads (Hugging Face's repeat_kv). The
// part between the qkv projection and the output projection:
//   qkv (B, T, (H + 2·KV)·D): for each position [q (H·D) | k (KV·D) | v (KV·D)], head h at
//   columns [h·D, (h+1)·D) of its part. Query head h reads kv head h / (H / KV).
//   att (B, H, T, T): softmax(q·kᵀ / sqrt(D)) with the causal mask; saved for backward. Entries
//   above the diagonal are written as 0.
//   window (Mistral's sliding window): 0 for full causal attention; w > 0 lets query t see key t2
//   only when 0 <= t - t2 < w, and the entries left of the window are written as 0 too. With
//   w >= T the window does not bind and the results are bit-identical to window 0.
//   out (B, T, H·D): att · v, query heads concatenated.
// Backward accumulates (+=) into dqkv (B, T, (H + 2·KV)·D); the k and v gradients of a kv head
// are summed over the query heads it serves. It needs no window: it reads the mask from att, whose
// masked entries are exactly 0, so every term they would contribute (att·dout into dv, and
// ds = att ⊙ (datt − Σ att·datt) into dq and dk) is exactly 0.
// Preconditions (not checked, as the other CPU kernels): H, KV, D > 0 and H divisible by KV.
// With KV == H and D = C / H the layout is GPT-2's and the results are AttentionForward /
// AttentionBackward's (engine/kernels/attention.h).
// kernels::ref is the plain-loop oracle; kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

#define ACCEL_GQA_ATTENTION_KERNELS                                                           \
  void GqaAttentionForward(float* out, float* att, const float* qkv, int64_t B, int64_t T,    \
                           int64_t H, int64_t KV, int64_t D, int64_t window = 0);             \
  void GqaAttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att, \
                            int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D);

ACCEL_GQA_ATTENTION_KERNELS
namespace ref {
ACCEL_GQA_ATTENTION_KERNELS
}  // namespace ref

}  // namespace accel::kernels
