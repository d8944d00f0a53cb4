// Fast SwiGLU against the plain-loop oracle (overwrite semantics included), the oracle's
// backward against central finite differences of an independent double-precision forward, and
// exact values in the saturated tails.
#include "engine/kernels/swiglu.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "engine/kernels/scoped_threads.h"
#include "engine/testing/grad_check.h"
#include "engine/testing/matchers.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels {
namespace {

using ::accel::testing::AllClose;
using ::accel::testing::AllCloseToScale;
using ::accel::testing::Dot;
using ::accel::testing::NumericGrad;
using ::accel::testing::TestRng;
using ::accel::testing::ToDouble;

constexpr int kThreadCounts[] = {1, 2};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Shape {
  int64_t N, I;
};
// The last shape is above the kernels' single-thread cutoff, so 2 threads really split it.
constexpr Shape kShapes[] = {{1, 1}, {3, 7}, {17, 65}, {5, 1537}, {33, 1000}};

TEST(SwiGluTest, FastMatchesRefAndBackwardOverwrites) {
  for (const Shape& s : kShapes) {
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(::testing::Message() << "N=" << s.N << " I=" << s.I << " threads=" << threads);
      ScopedThreads scoped(threads);
      TestRng rng(5000 + s.N * 3 + s.I);
      // Gates wide enough to reach both saturated tails of the sigmoid.
      const std::vector<float> gate_up = rng.UniformVector(s.N * 2 * s.I, -30.0f, 30.0f);
      std::vector<float> out_r(s.N * s.I, kNaN), out_f(s.N * s.I, kNaN);
      ref::SwiGluForward(out_r.data(), gate_up.data(), s.N, s.I);
      SwiGluForward(out_f.data(), gate_up.data(), s.N, s.I);
      EXPECT_TRUE(AllClose(out_f, out_r, 1e-6, 1e-5));  // elementwise, NaN fails

      const std::vector<float> dout = rng.NormalVector(s.N * s.I);
      // NaN to start with: the backward overwrites, so none may survive (or leak in).
      std::vector<float> d_r(s.N * 2 * s.I, kNaN), d_f(s.N * 2 * s.I, kNaN);
      ref::SwiGluBackward(d_r.data(), dout.data(), gate_up.data(), s.N, s.I);
      SwiGluBackward(d_f.data(), dout.data(), gate_up.data(), s.N, s.I);
      EXPECT_TRUE(AllClose(d_f, d_r, 1e-6, 1e-5));
      // Overwrite, not +=: a second call gives the same result.
      std::vector<float> again = d_f;
      SwiGluBackward(again.data(), dout.data(), gate_up.data(), s.N, s.I);
      EXPECT_EQ(again, d_f);
    }
  }
}

// Double-precision SwiGLU forward written independently of the kernels.
std::vector<double> SwiGluDouble(const std::vector<double>& gate_up, int64_t N, int64_t I) {
  std::vector<double> y(N * I);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t i = 0; i < I; ++i) {
      const double g = gate_up[n * 2 * I + i], u = gate_up[n * 2 * I + I + i];
      y[n * I + i] = g / (1.0 + std::exp(-g)) * u;
    }
  }
  return y;
}

TEST(SwiGluTest, RefMatchesDoubleForwardAndBackwardMatchesFiniteDifferences) {
  const int64_t N = 3, I = 9;
  TestRng rng(31);
  const std::vector<float> gate_up = rng.NormalVector(N * 2 * I, 0.0f, 3.0f);
  const std::vector<float> dout = rng.NormalVector(N * I);
  std::vector<float> out(N * I);
  ref::SwiGluForward(out.data(), gate_up.data(), N, I);
  const std::vector<double> want = SwiGluDouble(ToDouble(gate_up), N, I);
  EXPECT_TRUE(AllClose(out, std::vector<float>(want.begin(), want.end()), 1e-7, 1e-6));

  std::vector<float> dgate_up(N * 2 * I);
  ref::SwiGluBackward(dgate_up.data(), dout.data(), gate_up.data(), N, I);
  EXPECT_TRUE(AllCloseToScale(
      dgate_up,
      NumericGrad([&](const auto& x) { return Dot(SwiGluDouble(x, N, I), dout); },
                  ToDouble(gate_up), 1e-6),
      1e-5));
}

using ForwardFn = void (*)(float*, const float*, int64_t, int64_t);
using BackwardFn = void (*)(float*, const float*, const float*, int64_t, int64_t);

TEST(SwiGluTest, ExactValuesAndSaturatedTails) {
  // Rows [gate (4) | up (4)]: silu(0) = 0, silu(1) = 1 / (1 + e^-1), silu(100) = 100,
  // silu(-100) = -100 e^-100 ≈ -4e-42 (denormal or flushed: either way below 1e-40).
  const std::vector<float> gate_up = {0, 1, 100, -100, 3, 2, 0.5f, 7};
  const std::vector<float> dout = {1, 1, 1, 1};
  const double s1 = 1.0 / (1.0 + std::exp(-1.0));
  for (auto [fwd, bwd] : {std::pair<ForwardFn, BackwardFn>{&ref::SwiGluForward,
                                                           &ref::SwiGluBackward},
                          {&SwiGluForward, &SwiGluBackward}}) {
    std::vector<float> out(4);
    fwd(out.data(), gate_up.data(), 1, 4);
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_FLOAT_EQ(out[1], static_cast<float>(s1 * 2));
    EXPECT_EQ(out[2], 50.0f);
    EXPECT_LT(std::fabs(out[3]), 1e-40f);
    std::vector<float> d(8);
    bwd(d.data(), dout.data(), gate_up.data(), 1, 4);
    // dgate = up * silu'(g): silu'(0) = 1/2, silu'(1) = s (1 + (1 - s)), silu'(±100) = 1, 0.
    EXPECT_FLOAT_EQ(d[0], 1.5f);
    EXPECT_FLOAT_EQ(d[1], static_cast<float>(2 * s1 * (2 - s1)));
    EXPECT_EQ(d[2], 0.5f);
    EXPECT_LT(std::fabs(d[3]), 1e-38f);  // 7 s (1 - 100 (1 - s)) with s = e^-100
    // dup = silu(g).
    EXPECT_EQ(d[4], 0.0f);
    EXPECT_FLOAT_EQ(d[5], static_cast<float>(s1));
    EXPECT_EQ(d[6], 100.0f);
    EXPECT_LT(std::fabs(d[7]), 1e-40f);
  }
}

}  // namespace
}  // namespace accel::kernels
