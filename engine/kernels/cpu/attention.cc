// Fast causal self-attention: OpenMP over (batch, head) pairs, one pair per thread, each pair
// the blocked GEMM + vector-softmax path of cpu/attention_head.h. dq, dk and dv of one (b, h)
// touch only that head's columns of dqkv, so pairs never write the same element.
#include "engine/kernels/attention.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/kernels/cpu/attention_head.h"

namespace accel::kernels {
using cpu::AttentionHeadScratch;
using cpu::CausalAttentionHeadBackward;
using cpu::CausalAttentionHeadForward;
using cpu::kAttentionParallelMinWork;

void AttentionForward(float* out, float* att, const float* qkv, int64_t B, int64_t T, int64_t C,
                      int64_t NH) {
  const int64_t HS = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
#pragma omp parallel for collapse(2) schedule(static) if (B * NH * T * T * HS >= \
                                                              kAttentionParallelMinWork)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < NH; ++h) {
      const float* q = qkv + b * T * 3 * C + h * HS;  // (T, HS), row stride 3C
      CausalAttentionHeadForward(out + b * T * C + h * HS, C, att + (b * NH + h) * T * T, q,
                                 q + C, q + 2 * C, 3 * C, T, HS, scale);
    }
  }
}

void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                       int64_t B, int64_t T, int64_t C, int64_t NH) {
  const int64_t HS = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
#pragma omp parallel if (B * NH * T * T * HS >= kAttentionParallelMinWork)
  {
    std::vector<float> ds(AttentionHeadScratch(T));
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < NH; ++h) {
        const float* q = qkv + b * T * 3 * C + h * HS;  // (T, HS), row stride 3C
        float* dq = dqkv + b * T * 3 * C + h * HS;
        CausalAttentionHeadBackward(dq, 3 * C, dq + C, dq + 2 * C, 3 * C, dout + b * T * C + h * HS,
                                    C, q, q + C, q + 2 * C, 3 * C, att + (b * NH + h) * T * T,
                                    ds.data(), T, HS, scale);
      }
    }
  }
}

}  // namespace accel::kernels
