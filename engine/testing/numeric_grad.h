// Central finite differences for the kernels' gradient checks: each backward is compared with
// the numeric gradient of an independent double-precision forward.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace accel::testing {

// g[i] = (loss(x + eps·e_i) - loss(x - eps·e_i)) / (2·eps) for each element of x.
inline std::vector<float> NumericGrad(
    const std::function<double(const std::vector<double>&)>& loss, std::vector<double> x,
    double eps) {
  std::vector<float> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + eps;
    const double up = loss(x);
    x[i] = saved - eps;
    const double down = loss(x);
    x[i] = saved;
    g[i] = static_cast<float>((up - down) / (2 * eps));
  }
  return g;
}

}  // namespace accel::testing
