// Sliding-window grouped-query attention (gqa_attention.h's `window`, Mistral's semantics: query
// t sees key t2 when 0 <= t - t2 < window): the oracle against an independent double-precision
// forward and its finite-difference gradient, the fast path against the oracle (windows of one
// key, shorter than a 64-row causal block, spanning blocks), the masked entries exactly 0, and a
// window that does not bind (>= T) bit-identical to full causal attention.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/kernels/gqa_attention.h"
#include "engine/kernels/scoped_threads.h"
#include "engine/testing/grad_check.h"
#include "engine/testing/matchers.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels {
namespace {

using ::accel::testing::AllCloseToScale;
using ::accel::testing::NumericGrad;
using ::accel::testing::TestRng;

struct Shape {
  int64_t B, T, H, KV, D, window;
  int64_t Width() const { return (H + 2 * KV) * D; }
  int64_t Qkv() const { return B * T * Width(); }
  int64_t Out() const { return B * T * H * D; }
  int64_t Att() const { return B * H * T * T; }
};

::testing::Message Describe(const Shape& s) {
  return ::testing::Message() << "B=" << s.B << " T=" << s.T << " H=" << s.H << " KV=" << s.KV
                              << " D=" << s.D << " window=" << s.window;
}

// Written from the contract, not from the kernels: for each query, a softmax over the keys
// t2 with t - window < t2 <= t, then the weighted sum of their values.
std::vector<double> WindowedAttentionDouble(const std::vector<double>& qkv, const Shape& s) {
  std::vector<double> out(s.Out(), 0.0);
  auto at = [&](int64_t b, int64_t t, int part, int64_t h, int64_t i) {
    const int64_t col = part == 0 ? h * s.D : (s.H + (part - 1) * s.KV + h) * s.D;
    return qkv[(b * s.T + t) * s.Width() + col + i];
  };
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t h = 0; h < s.H; ++h) {
      const int64_t g = h / (s.H / s.KV);
      for (int64_t t = 0; t < s.T; ++t) {
        std::vector<int64_t> keys;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          if (t - t2 < s.window) keys.push_back(t2);
        }
        std::vector<double> w;
        double z = 0;
        for (int64_t t2 : keys) {
          double dot = 0;
          for (int64_t i = 0; i < s.D; ++i) dot += at(b, t, 0, h, i) * at(b, t2, 1, g, i);
          w.push_back(std::exp(dot / std::sqrt(static_cast<double>(s.D))));
          z += w.back();
        }
        for (size_t j = 0; j < keys.size(); ++j) {
          for (int64_t i = 0; i < s.D; ++i) {
            out[(b * s.T + t) * s.H * s.D + h * s.D + i] += w[j] / z * at(b, keys[j], 2, g, i);
          }
        }
      }
    }
  }
  return out;
}

TEST(SlidingWindowAttentionTest, RefMatchesDoubleForwardAndFiniteDifferences) {
  for (const Shape& s : {Shape{2, 6, 4, 2, 3, 2}, Shape{1, 5, 3, 1, 2, 1},
                         Shape{1, 7, 2, 2, 3, 4}}) {
    SCOPED_TRACE(Describe(s));
    TestRng rng(17 + s.window);
    const std::vector<float> qkv = rng.NormalVector(s.Qkv());
    const std::vector<float> dout = rng.NormalVector(s.Out());
    std::vector<float> out(s.Out()), att(s.Att());
    ref::GqaAttentionForward(out.data(), att.data(), qkv.data(), s.B, s.T, s.H, s.KV, s.D,
                             s.window);
    const std::vector<double> want = WindowedAttentionDouble({qkv.begin(), qkv.end()}, s);
    EXPECT_TRUE(AllCloseToScale(out, std::vector<float>(want.begin(), want.end()), 1e-6));
    std::vector<float> dqkv(qkv.size(), 0.0f);
    ref::GqaAttentionBackward(dqkv.data(), dout.data(), qkv.data(), att.data(), s.B, s.T, s.H,
                              s.KV, s.D);
    const std::vector<float> numeric = NumericGrad(
        [&](const std::vector<double>& x) {
          const std::vector<double> y = WindowedAttentionDouble(x, s);
          double l = 0;
          for (size_t j = 0; j < y.size(); ++j) l += y[j] * dout[j];
          return l;
        },
        {qkv.begin(), qkv.end()}, 1e-6);
    EXPECT_TRUE(AllCloseToScale(dqkv, numeric, 1e-4));
  }
}

TEST(SlidingWindowAttentionTest, FastMatchesRefAndMasksLeftOfTheWindow) {
  // T = 150 spans three 64-row causal blocks; windows of 1, 3, 64 and 100 keys.
  for (const Shape& s : {Shape{2, 9, 4, 2, 8, 1}, Shape{2, 9, 4, 2, 8, 3},
                         Shape{1, 150, 4, 1, 16, 64}, Shape{2, 150, 6, 2, 12, 100},
                         Shape{1, 35, 9, 3, 20, 7}}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(Describe(s) << " threads=" << threads);
      ScopedThreads scoped(threads);
      TestRng rng(900 + s.T + s.window);
      const std::vector<float> qkv = rng.NormalVector(s.Qkv(), 0.0f, 2.0f);
      std::vector<float> out_r(s.Out()), att_r(s.Att(), 5.0f), out_f(s.Out()),
          att_f(s.Att(), -5.0f);
      ref::GqaAttentionForward(out_r.data(), att_r.data(), qkv.data(), s.B, s.T, s.H, s.KV, s.D,
                               s.window);
      GqaAttentionForward(out_f.data(), att_f.data(), qkv.data(), s.B, s.T, s.H, s.KV, s.D,
                          s.window);
      EXPECT_TRUE(AllCloseToScale(out_f, out_r, 1e-5));
      EXPECT_TRUE(AllCloseToScale(att_f, att_r, 1e-5));
      // Every entry outside [t - window + 1, t] is exactly 0 in both.
      int64_t masked = 0;
      for (int64_t row = 0; row < s.B * s.H * s.T; ++row) {
        const int64_t t = row % s.T;
        for (int64_t t2 = 0; t2 < s.T; ++t2) {
          if (t2 <= t && t - t2 < s.window) continue;
          ++masked;
          ASSERT_EQ(att_r[row * s.T + t2], 0.0f) << "row " << row << " key " << t2;
          ASSERT_EQ(att_f[row * s.T + t2], 0.0f) << "row " << row << " key " << t2;
        }
      }
      EXPECT_GT(masked, s.B * s.H * s.T * (s.T - 1) / 2) << "the window binds";

      const std::vector<float> dout = rng.NormalVector(s.Out());
      const std::vector<float> dqkv0 = rng.NormalVector(s.Qkv());
      std::vector<float> dqkv_r = dqkv0, dqkv_f = dqkv0;
      ref::GqaAttentionBackward(dqkv_r.data(), dout.data(), qkv.data(), att_r.data(), s.B, s.T,
                                s.H, s.KV, s.D);
      GqaAttentionBackward(dqkv_f.data(), dout.data(), qkv.data(), att_r.data(), s.B, s.T, s.H,
                           s.KV, s.D);
      EXPECT_TRUE(AllCloseToScale(dqkv_f, dqkv_r, 1e-5));
    }
  }
}

// A window of T or more keys never binds: the same bytes as full causal attention, so a model
// whose config names a long window (Mistral's 4096) trains at a shorter seq_len exactly as before.
TEST(SlidingWindowAttentionTest, WindowThatDoesNotBindIsBitIdentical) {
  for (const Shape& s : {Shape{2, 9, 4, 2, 8, 9}, Shape{1, 150, 4, 1, 16, 4096}}) {
    SCOPED_TRACE(Describe(s));
    TestRng rng(31 + s.T);
    const std::vector<float> qkv = rng.NormalVector(s.Qkv(), 0.0f, 2.0f);
    for (bool fast : {false, true}) {
      SCOPED_TRACE(fast ? "fast" : "ref");
      auto forward = fast ? GqaAttentionForward : ref::GqaAttentionForward;
      std::vector<float> out0(s.Out()), att0(s.Att()), outw(s.Out()), attw(s.Att());
      forward(out0.data(), att0.data(), qkv.data(), s.B, s.T, s.H, s.KV, s.D, 0);
      forward(outw.data(), attw.data(), qkv.data(), s.B, s.T, s.H, s.KV, s.D, s.window);
      EXPECT_EQ(std::memcmp(out0.data(), outw.data(), out0.size() * sizeof(float)), 0);
      EXPECT_EQ(std::memcmp(att0.data(), attw.data(), att0.size() * sizeof(float)), 0);
    }
  }
}

}  // namespace
}  // namespace accel::kernels
