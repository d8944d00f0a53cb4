// Fast RMSNorm against the plain-loop oracle, the oracle's forward and backward against an
// independent double-precision forward (and its central finite differences), and exact
// properties of the normalisation.
#include "engine/kernels/rmsnorm.h"

#include <cmath>
#include <cstdint>
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
using ::accel::testing::Plus;
using ::accel::testing::TestRng;
using ::accel::testing::ToDouble;

constexpr int kThreadCounts[] = {1, 2};
constexpr float kEps = 1e-6f;

struct Shape {
  int64_t N, C;
};
// The last shape is above the kernels' single-thread cutoff, so 2 threads really split it.
constexpr Shape kShapes[] = {{1, 1}, {1, 4}, {10, 12}, {51, 64}, {3, 33}, {7, 577}, {67, 771}};

// Double-precision RMSNorm forward written independently of the kernels.
std::vector<double> RmsNormDouble(const std::vector<double>& x, const std::vector<double>& w,
                                  int64_t N, int64_t C, double eps) {
  std::vector<double> y(N * C);
  for (int64_t i = 0; i < N; ++i) {
    double ms = 0;
    for (int64_t c = 0; c < C; ++c) ms += x[i * C + c] * x[i * C + c] / C;
    for (int64_t c = 0; c < C; ++c) y[i * C + c] = x[i * C + c] / std::sqrt(ms + eps) * w[c];
  }
  return y;
}

TEST(RmsNormTest, FastMatchesRefForwardAndBackward) {
  for (const Shape& s : kShapes) {
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(::testing::Message() << "N=" << s.N << " C=" << s.C << " threads=" << threads);
      ScopedThreads scoped(threads);
      TestRng rng(2000 + s.N * 7 + s.C);
      const int64_t n = s.N * s.C;
      const std::vector<float> inp = rng.NormalVector(n, 0.5f, 2.0f);
      const std::vector<float> weight = rng.NormalVector(s.C, 1.0f, 0.2f);

      std::vector<float> out_r(n), rstd_r(s.N), out_f(n), rstd_f(s.N);
      ref::RmsNormForward(out_r.data(), rstd_r.data(), inp.data(), weight.data(), s.N, s.C, kEps);
      RmsNormForward(out_f.data(), rstd_f.data(), inp.data(), weight.data(), s.N, s.C, kEps);
      EXPECT_TRUE(AllClose(out_f, out_r, 1e-6, 1e-5));
      EXPECT_TRUE(AllClose(rstd_f, rstd_r, 0.0, 1e-6));

      // Gradients start non-zero so that += is checked, not just =.
      const std::vector<float> dout = rng.NormalVector(n);
      const std::vector<float> dinp0 = rng.NormalVector(n);
      const std::vector<float> dw0 = rng.NormalVector(s.C);
      std::vector<float> dinp_z(n, 0.0f), dw_z(s.C, 0.0f);
      ref::RmsNormBackward(dinp_z.data(), dw_z.data(), dout.data(), inp.data(), weight.data(),
                           rstd_r.data(), s.N, s.C);
      std::vector<float> dinp_r = dinp0, dw_r = dw0;
      ref::RmsNormBackward(dinp_r.data(), dw_r.data(), dout.data(), inp.data(), weight.data(),
                           rstd_r.data(), s.N, s.C);
      EXPECT_TRUE(AllCloseToScale(dinp_r, Plus(dinp0, dinp_z), 1e-6));
      EXPECT_TRUE(AllCloseToScale(dw_r, Plus(dw0, dw_z), 1e-6));

      std::vector<float> dinp_f = dinp0, dw_f = dw0;
      RmsNormBackward(dinp_f.data(), dw_f.data(), dout.data(), inp.data(), weight.data(),
                      rstd_r.data(), s.N, s.C);
      EXPECT_TRUE(AllCloseToScale(dinp_f, dinp_r, 1e-5));
      EXPECT_TRUE(AllCloseToScale(dw_f, dw_r, 1e-5));
    }
  }
}

TEST(RmsNormTest, RefMatchesDoubleForwardAndFiniteDifferences) {
  const int64_t N = 3, C = 7;
  const double eps = 1e-5;  // a model's eps, large enough to matter for the small rows below
  TestRng rng(17);
  std::vector<float> inp = rng.NormalVector(N * C, 0.3f, 1.5f);
  for (int64_t c = 0; c < C; ++c) inp[2 * C + c] *= 3e-3f;  // mean square ~ eps: eps matters
  const std::vector<float> weight = rng.NormalVector(C, 1.0f, 0.3f);
  const std::vector<float> dout = rng.NormalVector(N * C);  // loss = Σ out * dout
  const std::vector<double> x = ToDouble(inp), w = ToDouble(weight);

  std::vector<float> out(N * C), rstd(N);
  ref::RmsNormForward(out.data(), rstd.data(), inp.data(), weight.data(), N, C,
                      static_cast<float>(eps));
  const std::vector<double> want = RmsNormDouble(x, w, N, C, static_cast<float>(eps));
  EXPECT_TRUE(AllClose(out, std::vector<float>(want.begin(), want.end()), 1e-7, 1e-6));

  std::vector<float> dinp(N * C, 0.0f), dw(C, 0.0f);
  ref::RmsNormBackward(dinp.data(), dw.data(), dout.data(), inp.data(), weight.data(),
                       rstd.data(), N, C);
  // Per row, since rows differ in scale by 1000x (as do their input gradients).
  const std::vector<float> num_dx = NumericGrad(
      [&](const auto& xp) {
        return Dot(RmsNormDouble(xp, w, N, C, static_cast<float>(eps)), dout);
      },
      x, 1e-7);
  for (int64_t i = 0; i < N; ++i) {
    SCOPED_TRACE(::testing::Message() << "row " << i);
    EXPECT_TRUE(AllCloseToScale(std::vector<float>(dinp.begin() + i * C, dinp.begin() + (i + 1) * C),
                                std::vector<float>(num_dx.begin() + i * C,
                                                   num_dx.begin() + (i + 1) * C),
                                1e-4));
  }
  EXPECT_TRUE(AllCloseToScale(
      dw,
      NumericGrad(
          [&](const auto& wp) {
            return Dot(RmsNormDouble(x, wp, N, C, static_cast<float>(eps)), dout);
          },
          w, 1e-6),
      1e-4));
}

using ForwardFn = void (*)(float*, float*, const float*, const float*, int64_t, int64_t, float);
using BackwardFn = void (*)(float*, float*, const float*, const float*, const float*,
                            const float*, int64_t, int64_t);

TEST(RmsNormTest, NormalisesRowsAndInputGradientIsOrthogonalToTheRow) {
  const int64_t N = 9, C = 257;
  for (auto [fwd, bwd] :
       {std::pair<ForwardFn, BackwardFn>{&ref::RmsNormForward, &ref::RmsNormBackward},
        {&RmsNormForward, &RmsNormBackward}}) {
    TestRng rng(11);
    const std::vector<float> inp = rng.NormalVector(N * C, -3.0f, 4.0f);
    const std::vector<float> ones(C, 1.0f);
    std::vector<float> out(N * C), rstd(N);
    fwd(out.data(), rstd.data(), inp.data(), ones.data(), N, C, kEps);
    for (int64_t i = 0; i < N; ++i) {
      double sq = 0, x_sq = 0;
      for (int64_t c = 0; c < C; ++c) {
        sq += static_cast<double>(out[i * C + c]) * out[i * C + c];
        x_sq += static_cast<double>(inp[i * C + c]) * inp[i * C + c];
      }
      EXPECT_NEAR(sq / C, 1.0, 1e-5) << "row " << i;  // ms / (ms + eps) with ms ≈ 25
      EXPECT_NEAR(rstd[i], 1.0 / std::sqrt(x_sq / C + kEps), 1e-6 * rstd[i]) << "row " << i;
    }
    // Scaling a row does not change the output (up to eps), so the row's input gradient is
    // orthogonal to the row: Σ_c x_c dx_c = r Σ g x · eps / (ms + eps) ≈ 0.
    const std::vector<float> weight = rng.NormalVector(C, 1.0f, 0.5f);
    const std::vector<float> dout = rng.NormalVector(N * C);
    std::vector<float> dinp(N * C, 0.0f), dw(C, 0.0f);
    bwd(dinp.data(), dw.data(), dout.data(), inp.data(), weight.data(), rstd.data(), N, C);
    for (int64_t i = 0; i < N; ++i) {
      double dot = 0, dot_abs = 0;
      for (int64_t c = 0; c < C; ++c) {
        dot += static_cast<double>(dinp[i * C + c]) * inp[i * C + c];
        dot_abs += std::fabs(static_cast<double>(dinp[i * C + c]) * inp[i * C + c]);
      }
      EXPECT_LT(std::fabs(dot), 1e-5 * dot_abs) << "row " << i;
    }
  }
}

TEST(RmsNormTest, ZeroRowGivesZeroOutputAndEpsilonRstd) {
  const int64_t N = 2, C = 5;
  const std::vector<float> inp = {0, 0, 0, 0, 0, 2, 2, 2, 2, 2};
  const std::vector<float> weight = {1, 2, 3, 4, 5};
  const float eps = 1e-5f;
  for (ForwardFn fwd : {ForwardFn{&ref::RmsNormForward}, ForwardFn{&RmsNormForward}}) {
    std::vector<float> out(N * C), rstd(N);
    fwd(out.data(), rstd.data(), inp.data(), weight.data(), N, C, eps);
    EXPECT_FLOAT_EQ(rstd[0], 1.0f / std::sqrt(eps));
    EXPECT_FLOAT_EQ(rstd[1], static_cast<float>(1.0 / std::sqrt(4.0 + eps)));
    for (int64_t c = 0; c < C; ++c) {
      EXPECT_EQ(out[c], 0.0f);
      EXPECT_NEAR(out[C + c], weight[c], 1e-5);  // 2 / sqrt(4 + eps) ≈ 1
    }
  }
}

}  // namespace
}  // namespace accel::kernels
