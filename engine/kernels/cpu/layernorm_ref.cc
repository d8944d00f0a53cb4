// Plain-loop oracle for LayerNorm (see engine/kernels/layernorm.h). Row statistics and the
// backward's row reductions accumulate in double so the oracle is more accurate than the fast
// path it checks.
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/kernels/layernorm.h"

namespace accel::kernels::ref {

void LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                      const float* bias, int64_t N, int64_t C) {
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    double sum = 0;
    for (int64_t c = 0; c < C; ++c) sum += x[c];
    const double m = sum / C;
    double sq = 0;
    for (int64_t c = 0; c < C; ++c) sq += (x[c] - m) * (x[c] - m);
    const double s = 1.0 / std::sqrt(sq / C + kLayerNormEps);
    float* y = out + i * C;
    for (int64_t c = 0; c < C; ++c) {
      y[c] = static_cast<float>((x[c] - m) * s * weight[c] + bias[c]);
    }
    mean[i] = static_cast<float>(m);
    rstd[i] = static_cast<float>(s);
  }
}

// With xhat = (x - mean) * rstd and g = weight * dout:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
void LayerNormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, const float* mean, const float* rstd,
                       int64_t N, int64_t C) {
  std::vector<double> dw(C, 0.0), db(C, 0.0);
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    const float* dy = dout + i * C;
    const double m = mean[i];
    const double s = rstd[i];
    double g_sum = 0, g_xhat_sum = 0;
    for (int64_t c = 0; c < C; ++c) {
      const double xhat = (x[c] - m) * s;
      const double g = static_cast<double>(weight[c]) * dy[c];
      g_sum += g;
      g_xhat_sum += g * xhat;
    }
    const double g_mean = g_sum / C;
    const double g_xhat_mean = g_xhat_sum / C;
    float* dx = dinp + i * C;
    for (int64_t c = 0; c < C; ++c) {
      const double xhat = (x[c] - m) * s;
      const double g = static_cast<double>(weight[c]) * dy[c];
      dx[c] += static_cast<float>(s * (g - g_mean - xhat * g_xhat_mean));
      dw[c] += xhat * dy[c];
      db[c] += dy[c];
    }
  }
  for (int64_t c = 0; c < C; ++c) {
    dweight[c] += static_cast<float>(dw[c]);
    dbias[c] += static_cast<float>(db[c]);
  }
}

}  // namespace accel::kernels::ref
