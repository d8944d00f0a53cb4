// One (sequence, head) of causal attention, the fast path shared by AttentionForward
// (attention.cc, GPT-2) and GqaAttentionForward (gqa_attention.cc, grouped-query): the products
// with K and V are GEMMs (kernels::Gemm, oneDNN; the callers run these inside their own OpenMP
// region over heads, where nested OpenMP is inactive and each GEMM runs on its calling thread);
// the softmax and its backward are vector loops (softmax.h). Against plain vector loops this was
// 3x faster at T = 64 and 5x at T = 1024 (one thread, B = 4, C = 768, NH = 12).
//
// Causality: query rows go in blocks of kAttentionRowBlock, and a block [r0, r1) only multiplies
// against keys [0, r1), so for long sequences about half of the T x T work is skipped; inside a
// block the entries above the diagonal are computed by the GEMM and then overwritten with 0.
//
// Sliding window (window > 0): row t's softmax runs over keys [t - window + 1, t] and the entries
// left of it are 0 as those above the diagonal are; the GEMMs still multiply the whole causal
// block (the zeros add nothing), so window >= T takes exactly the path of window 0.
//
// Matrices are row-major views with their own row strides (ld_*), so a head is read in place
// from the packed qkv rows: q, k, v (T, D); att (T, T) contiguous; out / dout (T, D).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/kernels/matmul.h"
#include "engine/kernels/softmax.h"

namespace accel::kernels::cpu {

// Below this much work (heads * T * T * D) the kernels stay on one thread: a parallel region
// costs a few microseconds.
inline constexpr int64_t kAttentionParallelMinWork = int64_t{1} << 16;
// Query rows per causal block: T = 64 (the benchmarks) is a single block; at T = 1024 the
// skipped upper blocks halve the work (128 and 256 measured no faster).
inline constexpr int64_t kAttentionRowBlock = 64;

// Floats of scratch CausalAttentionHeadBackward needs.
inline int64_t AttentionHeadScratch(int64_t T) { return std::min(T, kAttentionRowBlock) * T; }

// att = causal softmax(scale · q kᵀ) (zeros above the diagonal and, with a window, left of it);
// out = att · v.
inline void CausalAttentionHeadForward(float* out, int64_t ld_out, float* att, const float* q,
                                       const float* k, const float* v, int64_t ld_qkv, int64_t T,
                                       int64_t D, float scale, int64_t window = 0) {
  for (int64_t r0 = 0; r0 < T; r0 += kAttentionRowBlock) {
    const int64_t r1 = std::min(T, r0 + kAttentionRowBlock);
    float* att_blk = att + r0 * T;
    // scores[r0:r1, 0:r1] = scale * q[r0:r1] · k[0:r1]ᵀ
    Gemm(false, true, r1 - r0, r1, D, scale, q + r0 * ld_qkv, ld_qkv, k, ld_qkv, 0.0f, att_blk, T);
    CausalSoftmaxForward(att_blk, T, r0, r1, window);
    // out[r0:r1] = att[r0:r1, 0:r1] · v[0:r1]
    Gemm(false, false, r1 - r0, D, r1, 1.0f, att_blk, T, v, ld_qkv, 0.0f, out + r0 * ld_out,
         ld_out);
  }
}

// Accumulates (+=) dq (row stride ld_dq) and dk, dv (row stride ld_dkv). For a block of query
// rows R = [r0, r1) and keys K = [0, r1) (att is zero above the diagonal):
//   dv[K] += att[R, K]ᵀ · dout[R];  datt[R, K] = dout[R] · v[K]ᵀ
//   ds[t, t2] = scale * att[t, t2] (datt[t, t2] - Σ_j att[t, j] datt[t, j])
//   dq[R] += ds · k[K];  dk[K] += dsᵀ · q[R]
// ds: AttentionHeadScratch(T) floats, overwritten.
inline void CausalAttentionHeadBackward(float* dq, int64_t ld_dq, float* dk, float* dv,
                                        int64_t ld_dkv, const float* dout, int64_t ld_dout,
                                        const float* q, const float* k, const float* v,
                                        int64_t ld_qkv, const float* att, float* ds, int64_t T,
                                        int64_t D, float scale) {
  for (int64_t r0 = 0; r0 < T; r0 += kAttentionRowBlock) {
    const int64_t r1 = std::min(T, r0 + kAttentionRowBlock);
    const int64_t rows = r1 - r0;
    const float* att_blk = att + r0 * T;
    const float* dout_blk = dout + r0 * ld_dout;
    Gemm(true, false, r1, D, rows, 1.0f, att_blk, T, dout_blk, ld_dout, 1.0f, dv, ld_dkv);
    Gemm(false, true, rows, r1, D, 1.0f, dout_blk, ld_dout, v, ld_qkv, 0.0f, ds, T);
    CausalSoftmaxBackward(ds, att_blk, T, r0, r1, scale);
    Gemm(false, false, rows, D, r1, 1.0f, ds, T, k, ld_qkv, 1.0f, dq + r0 * ld_dq, ld_dq);
    Gemm(true, false, r1, D, rows, 1.0f, ds, T, q + r0 * ld_qkv, ld_qkv, 1.0f, dk, ld_dkv);
  }
}

}  // namespace accel::kernels::cpu
