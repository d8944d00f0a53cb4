// Rotary position embedding (RoPE) in Hugging Face's rotate-half convention (Llama, Mistral,
// Qwen2; not GPT-J's interleaved pairs). For a head vector x of size D with half = D / 2, the
// pair (x[i], x[i + half]) at position t rotates by the angle t * inv_freq[i]:
//   y[i]        = x[i] * cos - x[i + half] * sin
//   y[i + half] = x[i + half] * cos + x[i] * sin
// D must be even (the head size of every model in the family is).
//
// RopeTable fills cos, sin (T, D / 2) for positions 0..T-1 from inv_freq (D / 2), which the
// caller computes as HF does (1 / theta^(2i / D), possibly rescaled). Each angle t * inv_freq[i]
// is formed in double and its cos and sin rounded to float once: at t ~ 10^4 an fp32 angle is
// already off by ~10^-3 rad.
//
// RopeForward rotates in place the packed attention input qkv (B, T, (H + 2 KV) * D), whose row
// at (b, t) is [q (H heads of D) | k (KV heads of D) | v (KV heads of D)]: every query and key
// head at position t is rotated with row t of the table; v is untouched. KV == H is plain
// multi-head attention, KV < H grouped-query attention.
// RopeBackward, in place on the gradient dqkv of the same layout, applies the transpose (the
// inverse rotation, angle -t * inv_freq[i]) to the q and k parts; the v part is untouched.
// kernels::ref is the plain-loop oracle; kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

#define ACCEL_ROPE_KERNELS                                                                    \
  void RopeTable(float* cos, float* sin, const float* inv_freq, int64_t T, int64_t D);         \
  void RopeForward(float* qkv, const float* cos, const float* sin, int64_t B, int64_t T,       \
                   int64_t H, int64_t KV, int64_t D);                                         \
  void RopeBackward(float* dqkv, const float* cos, const float* sin, int64_t B, int64_t T,     \
                    int64_t H, int64_t KV, int64_t D);

ACCEL_ROPE_KERNELS
namespace ref {
ACCEL_ROPE_KERNELS
}  // namespace ref

}  // namespace accel::kernels
