// Seeded random data for tests: deterministic across runs and machines (std::mt19937_64 with an
// explicit transform, not std::normal_distribution, whose output is implementation-defined).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace accel::testing {

class TestRng {
 public:
  explicit TestRng(uint64_t seed) : gen_(seed) {}
  // Uniform in [lo, hi).
  float Uniform(float lo = -1.f, float hi = 1.f) {
    double u = static_cast<double>(gen_() >> 11) * 0x1.0p-53;
    return static_cast<float>(lo + (hi - lo) * u);
  }
  // Box-Muller normal.
  float Normal(float mean = 0.f, float stddev = 1.f) {
    double u1 = (static_cast<double>(gen_() >> 11) + 1.0) * 0x1.0p-53;
    double u2 = static_cast<double>(gen_() >> 11) * 0x1.0p-53;
    return static_cast<float>(mean + stddev * std::sqrt(-2.0 * std::log(u1)) *
                                         std::cos(6.283185307179586 * u2));
  }
  int32_t Int(int32_t lo, int32_t hi_exclusive) {
    return lo + static_cast<int32_t>(gen_() % static_cast<uint64_t>(hi_exclusive - lo));
  }
  std::vector<float> UniformVector(size_t n, float lo = -1.f, float hi = 1.f) {
    std::vector<float> v(n);
    for (float& x : v) x = Uniform(lo, hi);
    return v;
  }
  std::vector<float> NormalVector(size_t n, float mean = 0.f, float stddev = 1.f) {
    std::vector<float> v(n);
    for (float& x : v) x = Normal(mean, stddev);
    return v;
  }
  std::vector<int32_t> IntVector(size_t n, int32_t lo, int32_t hi_exclusive) {
    std::vector<int32_t> v(n);
    for (int32_t& x : v) x = Int(lo, hi_exclusive);
    return v;
  }

 private:
  std::mt19937_64 gen_;
};

}  // namespace accel::testing
