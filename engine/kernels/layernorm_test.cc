// Fast LayerNorm against the plain-loop oracle, the oracle's backward against central finite
// differences of a double-precision forward, and exact properties of the normalisation.
#include "engine/kernels/layernorm.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/kernels/scoped_threads.h"
#include "engine/testing/matchers.h"
#include "engine/testing/numeric_grad.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels {
namespace {

using ::accel::testing::AllClose;
using ::accel::testing::AllCloseToScale;
using ::accel::testing::NumericGrad;
using ::accel::testing::TestRng;

constexpr int kThreadCounts[] = {1, 2};


struct Shape {
  int64_t N, C;
};
// The last shape is above the kernels' single-thread cutoff, so 2 threads really split it.
constexpr Shape kShapes[] = {{1, 4}, {10, 12}, {51, 64}, {128, 96}, {3, 33}, {67, 771}};

std::vector<float> Plus(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] + b[i];
  return r;
}

TEST(LayerNormTest, FastMatchesRefForwardAndBackward) {
  for (const Shape& s : kShapes) {
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(::testing::Message() << "N=" << s.N << " C=" << s.C << " threads=" << threads);
      ScopedThreads scoped(threads);
      TestRng rng(1000 + s.N * 7 + s.C);
      const int64_t n = s.N * s.C;
      const std::vector<float> inp = rng.NormalVector(n, 0.5f, 2.0f);
      const std::vector<float> weight = rng.NormalVector(s.C, 1.0f, 0.2f);
      const std::vector<float> bias = rng.NormalVector(s.C, 0.0f, 0.5f);

      std::vector<float> out_r(n), mean_r(s.N), rstd_r(s.N);
      std::vector<float> out_f(n), mean_f(s.N), rstd_f(s.N);
      ref::LayerNormForward(out_r.data(), mean_r.data(), rstd_r.data(), inp.data(), weight.data(),
                            bias.data(), s.N, s.C);
      LayerNormForward(out_f.data(), mean_f.data(), rstd_f.data(), inp.data(), weight.data(),
                       bias.data(), s.N, s.C);
      EXPECT_TRUE(AllCloseToScale(out_f, out_r, 1e-5));
      EXPECT_TRUE(AllCloseToScale(mean_f, mean_r, 1e-5));
      EXPECT_TRUE(AllClose(rstd_f, rstd_r, 0.0, 1e-5));

      // Gradients start non-zero so that += is checked, not just =.
      const std::vector<float> dout = rng.NormalVector(n);
      const std::vector<float> dinp0 = rng.NormalVector(n);
      const std::vector<float> dw0 = rng.NormalVector(s.C);
      const std::vector<float> db0 = rng.NormalVector(s.C);
      std::vector<float> dinp_z(n, 0.0f), dw_z(s.C, 0.0f), db_z(s.C, 0.0f);
      ref::LayerNormBackward(dinp_z.data(), dw_z.data(), db_z.data(), dout.data(), inp.data(),
                             weight.data(), mean_r.data(), rstd_r.data(), s.N, s.C);
      std::vector<float> dinp_r = dinp0, dw_r = dw0, db_r = db0;
      ref::LayerNormBackward(dinp_r.data(), dw_r.data(), db_r.data(), dout.data(), inp.data(),
                             weight.data(), mean_r.data(), rstd_r.data(), s.N, s.C);
      EXPECT_TRUE(AllCloseToScale(dinp_r, Plus(dinp0, dinp_z), 1e-6));
      EXPECT_TRUE(AllCloseToScale(dw_r, Plus(dw0, dw_z), 1e-6));
      EXPECT_TRUE(AllCloseToScale(db_r, Plus(db0, db_z), 1e-6));

      std::vector<float> dinp_f = dinp0, dw_f = dw0, db_f = db0;
      LayerNormBackward(dinp_f.data(), dw_f.data(), db_f.data(), dout.data(), inp.data(),
                        weight.data(), mean_r.data(), rstd_r.data(), s.N, s.C);
      EXPECT_TRUE(AllCloseToScale(dinp_f, dinp_r, 1e-5));
      EXPECT_TRUE(AllCloseToScale(dw_f, dw_r, 1e-5));
      EXPECT_TRUE(AllCloseToScale(db_f, db_r, 1e-5));
    }
  }
}

// Double-precision LayerNorm forward written independently of the kernels.
std::vector<double> LayerNormDouble(const std::vector<double>& x, const std::vector<double>& w,
                                    const std::vector<double>& b, int64_t N, int64_t C) {
  std::vector<double> y(N * C);
  for (int64_t i = 0; i < N; ++i) {
    double m = 0, v = 0;
    for (int64_t c = 0; c < C; ++c) m += x[i * C + c] / C;
    for (int64_t c = 0; c < C; ++c) v += (x[i * C + c] - m) * (x[i * C + c] - m) / C;
    for (int64_t c = 0; c < C; ++c) {
      y[i * C + c] = (x[i * C + c] - m) / std::sqrt(v + 1e-5) * w[c] + b[c];
    }
  }
  return y;
}

std::vector<double> ToDouble(const std::vector<float>& v) { return {v.begin(), v.end()}; }

TEST(LayerNormTest, RefBackwardMatchesFiniteDifferences) {
  const int64_t N = 3, C = 5;
  TestRng rng(7);
  const std::vector<float> inp = rng.NormalVector(N * C, 0.3f, 1.5f);
  const std::vector<float> weight = rng.NormalVector(C, 1.0f, 0.3f);
  const std::vector<float> bias = rng.NormalVector(C);
  const std::vector<float> dout = rng.NormalVector(N * C);  // loss = Σ out * dout
  const std::vector<double> x = ToDouble(inp), w = ToDouble(weight), b = ToDouble(bias);
  auto dot_dout = [&](const std::vector<double>& y) {
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += y[i] * dout[i];
    return l;
  };

  std::vector<float> out(N * C), mean(N), rstd(N);
  ref::LayerNormForward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(),
                        bias.data(), N, C);
  std::vector<float> dinp(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
  ref::LayerNormBackward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), weight.data(),
                         mean.data(), rstd.data(), N, C);

  const double eps = 1e-6;
  EXPECT_TRUE(AllCloseToScale(
      dinp,
      NumericGrad([&](const auto& xp) { return dot_dout(LayerNormDouble(xp, w, b, N, C)); }, x,
                  eps),
      1e-4));
  EXPECT_TRUE(AllCloseToScale(
      dw,
      NumericGrad([&](const auto& wp) { return dot_dout(LayerNormDouble(x, wp, b, N, C)); }, w,
                  eps),
      1e-4));
  EXPECT_TRUE(AllCloseToScale(
      db,
      NumericGrad([&](const auto& bp) { return dot_dout(LayerNormDouble(x, w, bp, N, C)); }, b,
                  eps),
      1e-4));
}

using ForwardFn = void (*)(float*, float*, float*, const float*, const float*, const float*,
                           int64_t, int64_t);
using BackwardFn = void (*)(float*, float*, float*, const float*, const float*, const float*,
                            const float*, const float*, int64_t, int64_t);

TEST(LayerNormTest, NormalisesRowsAndInputGradientIsShiftInvariant) {
  const int64_t N = 9, C = 257;
  for (auto [fwd, bwd] :
       {std::pair<ForwardFn, BackwardFn>{&ref::LayerNormForward, &ref::LayerNormBackward},
        {&LayerNormForward, &LayerNormBackward}}) {
    TestRng rng(11);
    const std::vector<float> inp = rng.NormalVector(N * C, -3.0f, 4.0f);
    const std::vector<float> ones(C, 1.0f), zeros(C, 0.0f);
    std::vector<float> out(N * C), mean(N), rstd(N);
    fwd(out.data(), mean.data(), rstd.data(), inp.data(), ones.data(), zeros.data(), N, C);
    for (int64_t i = 0; i < N; ++i) {
      double m = 0, sq = 0;
      for (int64_t c = 0; c < C; ++c) m += out[i * C + c];
      for (int64_t c = 0; c < C; ++c) sq += out[i * C + c] * out[i * C + c];
      EXPECT_NEAR(m / C, 0.0, 1e-6);
      EXPECT_NEAR(sq / C, 1.0, 1e-5);  // var / (var + eps) with var ≈ 16
    }
    // Adding a constant to a row does not change the output, so the row's input gradient sums
    // to zero.
    const std::vector<float> weight = rng.NormalVector(C, 1.0f, 0.5f);
    const std::vector<float> dout = rng.NormalVector(N * C);
    std::vector<float> dinp(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
    bwd(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), weight.data(), mean.data(),
        rstd.data(), N, C);
    for (int64_t i = 0; i < N; ++i) {
      double sum = 0, sum_abs = 0;
      for (int64_t c = 0; c < C; ++c) {
        sum += dinp[i * C + c];
        sum_abs += std::fabs(dinp[i * C + c]);
      }
      EXPECT_LT(std::fabs(sum), 1e-5 * sum_abs) << "row " << i;
    }
  }
}

TEST(LayerNormTest, ConstantRowGivesBiasAndEpsilonRstd) {
  const int64_t N = 2, C = 5;
  const std::vector<float> inp = {3, 3, 3, 3, 3, -1.5f, -1.5f, -1.5f, -1.5f, -1.5f};
  const std::vector<float> weight = {1, 2, 3, 4, 5};
  const std::vector<float> bias = {0.5f, -0.5f, 0.25f, 0, 7};
  for (ForwardFn fwd : {ForwardFn{&ref::LayerNormForward}, ForwardFn{&LayerNormForward}}) {
    std::vector<float> out(N * C), mean(N), rstd(N);
    fwd(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C);
    EXPECT_EQ(mean[0], 3.0f);
    EXPECT_EQ(mean[1], -1.5f);
    EXPECT_FLOAT_EQ(rstd[0], 1.0f / std::sqrt(kLayerNormEps));
    EXPECT_FLOAT_EQ(rstd[1], 1.0f / std::sqrt(kLayerNormEps));
    for (int64_t i = 0; i < N; ++i) {
      for (int64_t c = 0; c < C; ++c) EXPECT_EQ(out[i * C + c], bias[c]);
    }
  }
}

}  // namespace
}  // namespace accel::kernels
