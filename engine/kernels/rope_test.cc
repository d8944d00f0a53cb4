// Fast RoPE against the plain-loop oracle; the oracle against a hand-computed rotate-half case
// and an independent double-precision forward (and its central finite differences for the
// backward); and exact properties: v untouched, position 0 is the identity, backward inverts
// forward, rotation preserves each pair's norm.
#include "engine/kernels/rope.h"

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

using ::accel::testing::AllCloseToScale;
using ::accel::testing::Dot;
using ::accel::testing::NumericGrad;
using ::accel::testing::TestRng;
using ::accel::testing::ToDouble;

constexpr int kThreadCounts[] = {1, 2};

struct Shape {
  int64_t B, T, H, KV, D;
};
// Odd T and head counts, GQA (KV < H) and MHA (KV == H), D not a multiple of a vector; the
// last two are above the kernels' single-thread cutoff, so 2 threads really split them.
constexpr Shape kShapes[] = {{1, 1, 1, 1, 2},  {2, 5, 4, 2, 6},    {3, 7, 3, 1, 10},
                             {1, 17, 4, 4, 18}, {2, 33, 9, 3, 64}, {1, 129, 5, 5, 34}};

// Hugging Face's default: inv_freq[i] = 1 / theta^(2i / D).
std::vector<float> InvFreq(int64_t D, double theta = 10000.0) {
  std::vector<float> f(D / 2);
  for (int64_t i = 0; i < D / 2; ++i) {
    f[i] = static_cast<float>(1.0 / std::pow(theta, 2.0 * i / static_cast<double>(D)));
  }
  return f;
}

struct Table {
  std::vector<float> cos, sin;
};
Table MakeTable(int64_t T, int64_t D, bool fast) {
  Table tab{std::vector<float>(T * D / 2), std::vector<float>(T * D / 2)};
  const std::vector<float> inv_freq = InvFreq(D);
  (fast ? RopeTable : ref::RopeTable)(tab.cos.data(), tab.sin.data(), inv_freq.data(), T, D);
  return tab;
}

// The v part of every row of qkv (B, T, (H + 2 KV) D), in order.
std::vector<float> VPart(const std::vector<float>& qkv, const Shape& s) {
  const int64_t row = (s.H + 2 * s.KV) * s.D, v0 = (s.H + s.KV) * s.D;
  std::vector<float> v;
  for (int64_t r = 0; r < s.B * s.T; ++r) {
    v.insert(v.end(), qkv.begin() + r * row + v0, qkv.begin() + (r + 1) * row);
  }
  return v;
}

TEST(RopeTest, FastMatchesRefTableForwardAndBackward) {
  for (const Shape& s : kShapes) {
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(::testing::Message() << "B=" << s.B << " T=" << s.T << " H=" << s.H
                                        << " KV=" << s.KV << " D=" << s.D
                                        << " threads=" << threads);
      ScopedThreads scoped(threads);
      const Table tab = MakeTable(s.T, s.D, /*fast=*/false);
      const Table fast_tab = MakeTable(s.T, s.D, /*fast=*/true);
      EXPECT_EQ(fast_tab.cos, tab.cos);  // both round the double cos/sin once
      EXPECT_EQ(fast_tab.sin, tab.sin);

      TestRng rng(4000 + s.T * 13 + s.D);
      const int64_t n = s.B * s.T * (s.H + 2 * s.KV) * s.D;
      const std::vector<float> qkv = rng.NormalVector(n);
      std::vector<float> fwd_r = qkv, fwd_f = qkv;
      ref::RopeForward(fwd_r.data(), tab.cos.data(), tab.sin.data(), s.B, s.T, s.H, s.KV, s.D);
      RopeForward(fwd_f.data(), tab.cos.data(), tab.sin.data(), s.B, s.T, s.H, s.KV, s.D);
      EXPECT_TRUE(AllCloseToScale(fwd_f, fwd_r, 1e-6));
      EXPECT_EQ(VPart(fwd_r, s), VPart(qkv, s));
      EXPECT_EQ(VPart(fwd_f, s), VPart(qkv, s));

      std::vector<float> bwd_r = qkv, bwd_f = qkv;
      ref::RopeBackward(bwd_r.data(), tab.cos.data(), tab.sin.data(), s.B, s.T, s.H, s.KV, s.D);
      RopeBackward(bwd_f.data(), tab.cos.data(), tab.sin.data(), s.B, s.T, s.H, s.KV, s.D);
      EXPECT_TRUE(AllCloseToScale(bwd_f, bwd_r, 1e-6));
      EXPECT_EQ(VPart(bwd_f, s), VPart(qkv, s));
      if (s.T > 1) {  // the inverse is not the same rotation
        EXPECT_FALSE(AllCloseToScale(bwd_r, fwd_r, 1e-3));
      }
    }
  }
}

TEST(RopeTest, RefRotatesHalvesNotInterleavedPairs) {
  // One query head, D = 4, at position 1 with inv_freq (1, 0.5): pairs (x0, x2) and (x1, x3).
  const float inv_freq[] = {1.0f, 0.5f};
  float cos[4], sin[4];
  ref::RopeTable(cos, sin, inv_freq, 2, 4);
  EXPECT_EQ(cos[0], 1.0f);
  EXPECT_EQ(sin[1], 0.0f);
  EXPECT_EQ(cos[2], static_cast<float>(std::cos(1.0)));
  EXPECT_EQ(sin[3], static_cast<float>(std::sin(0.5)));
  // B = 1, T = 2, H = 1, KV = 0: rows [q] at t = 0 and t = 1.
  float qkv[] = {1, 2, 3, 4, 1, 2, 3, 4};
  ref::RopeForward(qkv, cos, sin, 1, 2, 1, 0, 4);
  const double c1 = std::cos(1.0), s1 = std::sin(1.0), c5 = std::cos(0.5), s5 = std::sin(0.5);
  const double want[] = {1, 2, 3, 4, 1 * c1 - 3 * s1, 2 * c5 - 4 * s5, 3 * c1 + 1 * s1,
                         4 * c5 + 2 * s5};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(qkv[i], want[i], 1e-6) << i;
}

// Double-precision RoPE forward written independently of the kernels (angles from inv_freq).
std::vector<double> RopeDouble(std::vector<double> x, const std::vector<float>& inv_freq,
                               const Shape& s) {
  const int64_t half = s.D / 2, row = (s.H + 2 * s.KV) * s.D;
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t t = 0; t < s.T; ++t) {
      for (int64_t h = 0; h < s.H + s.KV; ++h) {  // q heads, then k heads
        double* v = x.data() + (b * s.T + t) * row + h * s.D;
        for (int64_t i = 0; i < half; ++i) {
          const double a = t * static_cast<double>(inv_freq[i]);
          const double x1 = v[i], x2 = v[i + half];
          v[i] = x1 * std::cos(a) - x2 * std::sin(a);
          v[i + half] = x2 * std::cos(a) + x1 * std::sin(a);
        }
      }
    }
  }
  return x;
}

TEST(RopeTest, RefMatchesDoubleForwardAndBackwardMatchesFiniteDifferences) {
  const Shape s{2, 3, 2, 1, 4};
  const int64_t n = s.B * s.T * (s.H + 2 * s.KV) * s.D;
  TestRng rng(23);
  const std::vector<float> x = rng.NormalVector(n);
  const std::vector<float> dout = rng.NormalVector(n);
  // Large angles (t * 2.5) so that every pair really turns.
  const std::vector<float> inv_freq = {2.5f, 0.7f};
  std::vector<float> cos(s.T * s.D / 2), sin(s.T * s.D / 2);
  ref::RopeTable(cos.data(), sin.data(), inv_freq.data(), s.T, s.D);

  std::vector<float> y = x;
  ref::RopeForward(y.data(), cos.data(), sin.data(), s.B, s.T, s.H, s.KV, s.D);
  const std::vector<double> want = RopeDouble(ToDouble(x), inv_freq, s);
  EXPECT_TRUE(AllCloseToScale(y, std::vector<float>(want.begin(), want.end()), 1e-6));

  std::vector<float> dx = dout;
  ref::RopeBackward(dx.data(), cos.data(), sin.data(), s.B, s.T, s.H, s.KV, s.D);
  EXPECT_TRUE(AllCloseToScale(
      dx, NumericGrad([&](const auto& xp) { return Dot(RopeDouble(xp, inv_freq, s), dout); },
                      ToDouble(x), 1e-6),
      1e-5));
}

using RopeFn = void (*)(float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t,
                        int64_t);

TEST(RopeTest, BackwardInvertsForwardAndRotationsPreservePairNorms) {
  const Shape s{2, 40, 6, 2, 16};
  const int64_t half = s.D / 2, n = s.B * s.T * (s.H + 2 * s.KV) * s.D;
  for (auto [fwd, bwd] : {std::pair<RopeFn, RopeFn>{&ref::RopeForward, &ref::RopeBackward},
                          {&RopeForward, &RopeBackward}}) {
    const Table tab = MakeTable(s.T, s.D, /*fast=*/false);
    TestRng rng(29);
    const std::vector<float> x = rng.NormalVector(n);
    std::vector<float> y = x;
    fwd(y.data(), tab.cos.data(), tab.sin.data(), s.B, s.T, s.H, s.KV, s.D);
    for (int64_t j = 0; j < n; j += s.D) {  // every head vector, v included
      for (int64_t i = 0; i < half; ++i) {
        const double before = std::hypot(x[j + i], x[j + i + half]);
        EXPECT_NEAR(std::hypot(y[j + i], y[j + i + half]), before, 1e-6 * (1 + before));
      }
    }
    // Position 0's rotation is the identity (cos 1, sin 0 exactly).
    const int64_t row = (s.H + 2 * s.KV) * s.D;
    for (int64_t j = 0; j < row; ++j) EXPECT_EQ(y[j], x[j]) << j;
    bwd(y.data(), tab.cos.data(), tab.sin.data(), s.B, s.T, s.H, s.KV, s.D);
    EXPECT_TRUE(AllCloseToScale(y, x, 1e-6));
  }
}

}  // namespace
}  // namespace accel::kernels
