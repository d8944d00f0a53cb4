// Fast grouped-query causal attention: each (batch, query head) pair is the blocked GEMM +
// vector-softmax path of cpu/attention_head.h, reading its q and its group's k, v in place from
// the packed qkv rows (row stride (H + 2·KV)·D).
//
// Forward: OpenMP over (batch, query head) pairs; each pair writes only its own att and out.
// Backward: the query heads of one group all add into their kv head's dk and dv, so they must not
// run concurrently on those columns. Two schedules:
//   - by group (the default): OpenMP over (batch, kv head), the group's query heads one after
//     another on that thread, adding straight into dqkv. No extra memory or passes;
//   - by head, when there are fewer (batch, kv head) pairs than threads (say B = 1, KV = 1 with
//     many threads): OpenMP over (batch, query head), each head's dk, dv into its own zeroed
//     slice of a scratch buffer (B·H·T·2D floats), then a parallel pass over positions adds the
//     slices of each group into dqkv in head order.
// Both schedules add the heads of a group in the same order, so they agree to rounding.
#include "engine/kernels/gqa_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/kernels/cpu/attention_head.h"
#include "engine/kernels/threading.h"

namespace accel::kernels {
using cpu::AttentionHeadScratch;
using cpu::CausalAttentionHeadBackward;
using cpu::CausalAttentionHeadForward;
using cpu::kAttentionParallelMinWork;

void GqaAttentionForward(float* out, float* att, const float* qkv, int64_t B, int64_t T, int64_t H,
                         int64_t KV, int64_t D, int64_t window) {
  const int64_t W = (H + 2 * KV) * D;
  const int64_t group = H / KV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
#pragma omp parallel for collapse(2) schedule(static) if (B * H * T * T * D >= \
                                                              kAttentionParallelMinWork)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const float* seq = qkv + b * T * W;
      const float* k = seq + (H + h / group) * D;
      CausalAttentionHeadForward(out + b * T * H * D + h * D, H * D, att + (b * H + h) * T * T,
                                 seq + h * D, k, k + KV * D, W, T, D, scale, window);
    }
  }
}

void GqaAttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                          int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D) {
  const int64_t W = (H + 2 * KV) * D;
  const int64_t group = H / KV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool parallel = B * H * T * T * D >= kAttentionParallelMinWork;
  // Query head h of sequence b: its dq gets += directly; dk, dv go to (dk, dv, ld_dkv).
  auto head = [&](int64_t b, int64_t h, float* dk, float* dv, int64_t ld_dkv, float* ds) {
    const float* seq = qkv + b * T * W;
    const float* k = seq + (H + h / group) * D;
    CausalAttentionHeadBackward(dqkv + b * T * W + h * D, W, dk, dv, ld_dkv,
                                dout + b * T * H * D + h * D, H * D, seq + h * D, k, k + KV * D, W,
                                att + (b * H + h) * T * T, ds, T, D, scale);
  };

  if (group == 1 || !parallel || B * KV >= NumThreads()) {
#pragma omp parallel if (parallel)
    {
      std::vector<float> ds(AttentionHeadScratch(T));
#pragma omp for collapse(2) schedule(static)
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t g = 0; g < KV; ++g) {
          float* dk = dqkv + b * T * W + (H + g) * D;
          for (int64_t h = g * group; h < (g + 1) * group; ++h) {
            head(b, h, dk, dk + KV * D, W, ds.data());
          }
        }
      }
    }
    return;
  }

  // By head: slice (b, h) of dkv is (T, 2D), rows [dk | dv].
  const int64_t slice = T * 2 * D;
  std::unique_ptr<float[]> dkv(new float[B * H * slice]);
#pragma omp parallel
  {
    std::vector<float> ds(AttentionHeadScratch(T));
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < H; ++h) {
        float* dk = dkv.get() + (b * H + h) * slice;
        std::fill(dk, dk + slice, 0.0f);
        head(b, h, dk, dk + D, 2 * D, ds.data());
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t g = 0; g < KV; ++g) {
          float* dst = dqkv + (b * T + t) * W + (H + g) * D;  // dk; dv is KV·D further
          for (int64_t h = g * group; h < (g + 1) * group; ++h) {
            const float* src = dkv.get() + (b * H + h) * slice + t * 2 * D;
#pragma omp simd
            for (int64_t i = 0; i < D; ++i) {
              dst[i] += src[i];
              dst[KV * D + i] += src[D + i];
            }
          }
        }
      }
    }
  }
}

}  // namespace accel::kernels
