// Plain-loop oracle for grouped-query causal attention (see engine/kernels/gqa_attention.h). One
// query row at a time, dot products and softmax sums in double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/kernels/gqa_attention.h"

namespace accel::kernels::ref {

void GqaAttentionForward(float* out, float* att, const float* qkv, int64_t B, int64_t T, int64_t H,
                         int64_t KV, int64_t D, int64_t window) {
  const int64_t W = (H + 2 * KV) * D;  // row width of qkv
  const int64_t group = H / KV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> score(T);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t k_col = H * D + (h / group) * D;  // this head's k; its v is KV·D further
      const int64_t v_col = k_col + KV * D;
      for (int64_t t = 0; t < T; ++t) {
        const float* q = qkv + (b * T + t) * W + h * D;
        float* att_row = att + ((b * H + h) * T + t) * T;
        // Keys [first, t]: the whole prefix, or the last `window` positions.
        const int64_t first = window > 0 ? std::max<int64_t>(0, t - window + 1) : 0;
        double max_score = -INFINITY;
        for (int64_t t2 = first; t2 <= t; ++t2) {
          const float* k = qkv + (b * T + t2) * W + k_col;
          double dot = 0;
          for (int64_t i = 0; i < D; ++i) dot += static_cast<double>(q[i]) * k[i];
          score[t2] = dot * scale;
          max_score = std::max(max_score, score[t2]);
        }
        double sum = 0;
        for (int64_t t2 = first; t2 <= t; ++t2) {
          score[t2] = std::exp(score[t2] - max_score);
          sum += score[t2];
        }
        for (int64_t t2 = 0; t2 < T; ++t2) {
          att_row[t2] = t2 >= first && t2 <= t ? static_cast<float>(score[t2] / sum) : 0.0f;
        }
        float* o = out + (b * T + t) * H * D + h * D;
        for (int64_t i = 0; i < D; ++i) {
          double acc = 0;
          for (int64_t t2 = first; t2 <= t; ++t2) {
            acc += static_cast<double>(att_row[t2]) * qkv[(b * T + t2) * W + v_col + i];
          }
          o[i] = static_cast<float>(acc);
        }
      }
    }
  }
}

// Per query head h and row t (att = softmax(s), s = scale * q·k, kv head g = h / group):
//   datt[t2] = dout[t]·v_g[t2];  dv_g[t2] += att[t2] dout[t]
//   ds[t2] = att[t2] (datt[t2] - Σ_j att[j] datt[j])
//   dq[t] += scale Σ_t2 ds[t2] k_g[t2];  dk_g[t2] += scale ds[t2] q[t]
// dk_g and dv_g collect these over every query head of the group.
void GqaAttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                          int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D) {
  const int64_t W = (H + 2 * KV) * D;
  const int64_t group = H / KV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> datt(T), ds(T);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t k_col = H * D + (h / group) * D;
      const int64_t v_col = k_col + KV * D;
      for (int64_t t = 0; t < T; ++t) {
        const float* att_row = att + ((b * H + h) * T + t) * T;
        const float* dout_t = dout + (b * T + t) * H * D + h * D;
        const float* q = qkv + (b * T + t) * W + h * D;
        float* dq = dqkv + (b * T + t) * W + h * D;
        double weighted = 0;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (b * T + t2) * W + v_col;
          float* dv = dqkv + (b * T + t2) * W + v_col;
          double dot = 0;
          for (int64_t i = 0; i < D; ++i) {
            dot += static_cast<double>(v[i]) * dout_t[i];
            dv[i] += att_row[t2] * dout_t[i];
          }
          datt[t2] = dot;
          weighted += att_row[t2] * dot;
        }
        for (int64_t t2 = 0; t2 <= t; ++t2) ds[t2] = att_row[t2] * (datt[t2] - weighted);
        for (int64_t i = 0; i < D; ++i) {
          double acc = 0;
          for (int64_t t2 = 0; t2 <= t; ++t2) acc += ds[t2] * qkv[(b * T + t2) * W + k_col + i];
          dq[i] += static_cast<float>(scale * acc);
        }
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          float* dk = dqkv + (b * T + t2) * W + k_col;
          for (int64_t i = 0; i < D; ++i) dk[i] += static_cast<float>(scale * ds[t2] * q[i]);
        }
      }
    }
  }
}

}  // namespace accel::kernels::ref
