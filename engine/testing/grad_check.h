// Helpers for the kernels' gradient tests: central finite differences of a double-precision loss
// and the small vector arithmetic the "+= not =" checks need.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace accel::testing {

// Central differences (loss(x + eps e_i) - loss(x - eps e_i)) / 2 eps for every element i of x.
// The loss is evaluated in double, so eps can be small (1e-6) without cancellation swamping it.
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

inline std::vector<double> ToDouble(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// Σ y[i] * w[i]: the scalar loss whose gradient with respect to y is w (the upstream dout).
inline double Dot(const std::vector<double>& y, const std::vector<float>& w) {
  double l = 0;
  for (size_t i = 0; i < y.size(); ++i) l += y[i] * w[i];
  return l;
}

// Elementwise a + b.
inline std::vector<float> Plus(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] + b[i];
  return r;
}

}  // namespace accel::testing
