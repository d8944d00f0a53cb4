// Plain-loop oracle for causal self-attention (see engine/kernels/attention.h). One query row at
// a time, dot products and softmax sums in double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/kernels/attention.h"

namespace accel::kernels::ref {

void AttentionForward(float* out, float* att, const float* qkv, int64_t B, int64_t T, int64_t C,
                      int64_t NH) {
  const int64_t HS = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(HS));
  std::vector<double> score(T);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < NH; ++h) {
      for (int64_t t = 0; t < T; ++t) {
        const float* q = qkv + (b * T + t) * 3 * C + h * HS;
        float* att_row = att + ((b * NH + h) * T + t) * T;
        double max_score = -INFINITY;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (b * T + t2) * 3 * C + C + h * HS;
          double dot = 0;
          for (int64_t i = 0; i < HS; ++i) dot += static_cast<double>(q[i]) * k[i];
          score[t2] = dot * scale;
          max_score = std::max(max_score, score[t2]);
        }
        double sum = 0;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          score[t2] = std::exp(score[t2] - max_score);
          sum += score[t2];
        }
        for (int64_t t2 = 0; t2 < T; ++t2) {
          att_row[t2] = t2 <= t ? static_cast<float>(score[t2] / sum) : 0.0f;
        }
        float* o = out + (b * T + t) * C + h * HS;
        for (int64_t i = 0; i < HS; ++i) {
          double acc = 0;
          for (int64_t t2 = 0; t2 <= t; ++t2) {
            acc +=
                static_cast<double>(att_row[t2]) * qkv[(b * T + t2) * 3 * C + 2 * C + h * HS + i];
          }
          o[i] = static_cast<float>(acc);
        }
      }
    }
  }
}

// Per query row t (att = softmax(s), s = scale * q·k):
//   datt[t2] = dout[t]·v[t2];  dv[t2] += att[t2] dout[t]
//   ds[t2] = att[t2] (datt[t2] - Σ_j att[j] datt[j])
//   dq[t] += scale Σ_t2 ds[t2] k[t2];  dk[t2] += scale ds[t2] q[t]
void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                       int64_t B, int64_t T, int64_t C, int64_t NH) {
  const int64_t HS = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(HS));
  std::vector<double> datt(T), ds(T);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < NH; ++h) {
      for (int64_t t = 0; t < T; ++t) {
        const float* att_row = att + ((b * NH + h) * T + t) * T;
        const float* dout_t = dout + (b * T + t) * C + h * HS;
        const float* q = qkv + (b * T + t) * 3 * C + h * HS;
        float* dq = dqkv + (b * T + t) * 3 * C + h * HS;
        double weighted = 0;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (b * T + t2) * 3 * C + 2 * C + h * HS;
          float* dv = dqkv + (b * T + t2) * 3 * C + 2 * C + h * HS;
          double dot = 0;
          for (int64_t i = 0; i < HS; ++i) {
            dot += static_cast<double>(v[i]) * dout_t[i];
            dv[i] += att_row[t2] * dout_t[i];
          }
          datt[t2] = dot;
          weighted += att_row[t2] * dot;
        }
        for (int64_t t2 = 0; t2 <= t; ++t2) ds[t2] = att_row[t2] * (datt[t2] - weighted);
        for (int64_t i = 0; i < HS; ++i) {
          double acc = 0;
          for (int64_t t2 = 0; t2 <= t; ++t2) {
            acc += ds[t2] * qkv[(b * T + t2) * 3 * C + C + h * HS + i];
          }
          dq[i] += static_cast<float>(scale * acc);
        }
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          float* dk = dqkv + (b * T + t2) * 3 * C + C + h * HS;
          for (int64_t i = 0; i < HS; ++i) dk[i] += static_cast<float>(scale * ds[t2] * q[i]);
        }
      }
    }
  }
}

}  // namespace accel::kernels::ref
