// Fast GELU and residual add against the plain-loop oracle, the oracle's GELU derivative against
// central finite differences in double, and exact values of both.
#include "engine/kernels/elementwise.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/kernels/scoped_threads.h"
#include "engine/testing/matchers.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels {
namespace {

using ::accel::testing::AllClose;
using ::accel::testing::AllCloseToScale;
using ::accel::testing::TestRng;

constexpr int kThreadCounts[] = {1, 2};
// The last size is above the kernels' single-thread cutoff, so 2 threads really split it.
constexpr int64_t kSizes[] = {1, 7, 1000, 40001};


std::vector<float> Plus(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] + b[i];
  return r;
}

double GeluDouble(double x) {
  const double pi = 3.14159265358979323846;
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}

TEST(GeluTest, FastMatchesRefForwardAndBackward) {
  for (int64_t n : kSizes) {
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " threads=" << threads);
      ScopedThreads scoped(threads);
      TestRng rng(3000 + n);
      // Wide enough to reach both saturated tails (and the clamp at |x| = 10).
      const std::vector<float> inp = rng.UniformVector(n, -12.0f, 12.0f);
      std::vector<float> out_r(n), out_f(n);
      ref::GeluForward(out_r.data(), inp.data(), n);
      GeluForward(out_f.data(), inp.data(), n);
      // Elementwise: the relative error of each value, not just of the largest.
      EXPECT_TRUE(AllClose(out_f, out_r, 1e-6, 1e-5));

      const std::vector<float> dout = rng.NormalVector(n);
      const std::vector<float> dinp0 = rng.NormalVector(n);  // += is checked, not just =
      std::vector<float> dinp_z(n, 0.0f), dinp_r = dinp0, dinp_f = dinp0;
      ref::GeluBackward(dinp_z.data(), inp.data(), dout.data(), n);
      ref::GeluBackward(dinp_r.data(), inp.data(), dout.data(), n);
      EXPECT_TRUE(AllClose(dinp_r, Plus(dinp0, dinp_z), 1e-6, 1e-6));
      GeluBackward(dinp_f.data(), inp.data(), dout.data(), n);
      EXPECT_TRUE(AllClose(dinp_f, dinp_r, 1e-6, 1e-5));
    }
  }
}

TEST(GeluTest, RefDerivativeMatchesFiniteDifferences) {
  std::vector<float> x;
  for (float v = -6.0f; v <= 6.0f; v += 0.37f) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  const std::vector<float> ones(n, 1.0f);
  std::vector<float> grad(n, 0.0f), numeric(n);
  ref::GeluBackward(grad.data(), x.data(), ones.data(), n);
  const double eps = 1e-6;
  for (int64_t i = 0; i < n; ++i) {
    numeric[i] = static_cast<float>((GeluDouble(x[i] + eps) - GeluDouble(x[i] - eps)) / (2 * eps));
  }
  EXPECT_TRUE(AllClose(grad, numeric, 1e-6, 1e-5));
}

using GeluFn = void (*)(float*, const float*, int64_t);
using GeluBackwardFn = void (*)(float*, const float*, const float*, int64_t);

TEST(GeluTest, KnownValuesAndSaturatedTails) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {0.0f, 1.0f, -1.0f, 30.0f, -30.0f, 1e30f, -1e30f};
  const int64_t n = static_cast<int64_t>(x.size());
  for (auto [fwd, bwd] : {std::pair<GeluFn, GeluBackwardFn>{&ref::GeluForward, &ref::GeluBackward},
                          {&GeluForward, &GeluBackward}}) {
    std::vector<float> y(n), dy(n, 0.0f);
    const std::vector<float> ones(n, 1.0f);
    fwd(y.data(), x.data(), n);
    bwd(dy.data(), x.data(), ones.data(), n);
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_NEAR(y[1], GeluDouble(1.0), 1e-6);
    EXPECT_NEAR(y[2], GeluDouble(-1.0), 1e-6);
    EXPECT_EQ(y[3], 30.0f);
    EXPECT_EQ(y[4], 0.0f);
    EXPECT_EQ(y[5], 1e30f);
    EXPECT_EQ(y[6], 0.0f);
    EXPECT_EQ(dy[0], 0.5f);  // gelu'(0) = 1/2
    EXPECT_EQ(dy[3], 1.0f);
    EXPECT_EQ(dy[4], 0.0f);
    EXPECT_EQ(dy[5], 1.0f);
    EXPECT_EQ(dy[6], 0.0f);
    for (float v : y) EXPECT_NE(std::fabs(v), inf);
  }
}

TEST(ResidualTest, FastMatchesRefAndAccumulatesExactly) {
  for (int64_t n : kSizes) {
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " threads=" << threads);
      ScopedThreads scoped(threads);
      TestRng rng(4000 + n);
      const std::vector<float> a = rng.NormalVector(n), b = rng.NormalVector(n);
      std::vector<float> out_r(n), out_f(n);
      ref::ResidualForward(out_r.data(), a.data(), b.data(), n);
      ResidualForward(out_f.data(), a.data(), b.data(), n);
      EXPECT_EQ(out_f, out_r);
      EXPECT_EQ(out_r, Plus(a, b));
      // out may alias a or b.
      std::vector<float> in_a = a, in_b = b;
      ResidualForward(in_a.data(), in_a.data(), b.data(), n);
      ResidualForward(in_b.data(), a.data(), in_b.data(), n);
      EXPECT_EQ(in_a, out_r);
      EXPECT_EQ(in_b, out_r);
      in_a = a;
      ref::ResidualForward(in_a.data(), in_a.data(), b.data(), n);
      EXPECT_EQ(in_a, out_r);

      const std::vector<float> dout = rng.NormalVector(n);
      const std::vector<float> da0 = rng.NormalVector(n), db0 = rng.NormalVector(n);
      std::vector<float> da_r = da0, db_r = db0, da_f = da0, db_f = db0;
      ref::ResidualBackward(da_r.data(), db_r.data(), dout.data(), n);
      ResidualBackward(da_f.data(), db_f.data(), dout.data(), n);
      EXPECT_EQ(da_r, Plus(da0, dout));
      EXPECT_EQ(db_r, Plus(db0, dout));
      EXPECT_EQ(da_f, da_r);
      EXPECT_EQ(db_f, db_r);
    }
  }
}

}  // namespace
}  // namespace accel::kernels
