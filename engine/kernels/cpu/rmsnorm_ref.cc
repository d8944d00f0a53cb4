// Plain-loop oracle for RMSNorm (see engine/kernels/rmsnorm.h). The row statistic and the
// backward's reductions accumulate in double so the oracle is more accurate than the fast path
// it checks.
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/kernels/rmsnorm.h"

namespace accel::kernels::ref {

void RmsNormForward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                    int64_t C, float eps) {
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    double sq = 0;
    for (int64_t c = 0; c < C; ++c) sq += static_cast<double>(x[c]) * x[c];
    const double s = 1.0 / std::sqrt(sq / C + eps);
    float* y = out + i * C;
    for (int64_t c = 0; c < C; ++c) y[c] = static_cast<float>(x[c] * s * weight[c]);
    rstd[i] = static_cast<float>(s);
  }
}

// With r = rstd, xhat = x * r and g = weight * dout (d r / d x_j = -r³ x_j / C):
//   dx = r * (g - xhat * mean(g * xhat)),  dweight += dout * xhat.
void RmsNormBackward(float* dinp, float* dweight, const float* dout, const float* inp,
                     const float* weight, const float* rstd, int64_t N, int64_t C) {
  std::vector<double> dw(C, 0.0);
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    const float* dy = dout + i * C;
    const double s = rstd[i];
    double g_xhat_sum = 0;
    for (int64_t c = 0; c < C; ++c) {
      g_xhat_sum += static_cast<double>(weight[c]) * dy[c] * (x[c] * s);
    }
    const double g_xhat_mean = g_xhat_sum / C;
    float* dx = dinp + i * C;
    for (int64_t c = 0; c < C; ++c) {
      const double xhat = x[c] * s;
      const double g = static_cast<double>(weight[c]) * dy[c];
      dx[c] += static_cast<float>(s * (g - xhat * g_xhat_mean));
      dw[c] += xhat * dy[c];
    }
  }
  for (int64_t c = 0; c < C; ++c) dweight[c] += static_cast<float>(dw[c]);
}

}  // namespace accel::kernels::ref
