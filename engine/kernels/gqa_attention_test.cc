// Grouped-query attention: the fast path against the plain-loop oracle (KV == H, KV == 1,
// H / KV = 3, both backward schedules), the oracle's backward against central finite differences
// of an independent double-precision forward, and both against GPT-2 attention (attention.h):
// the fast path equal to it when KV == H, and both equal to it on repeat_kv-expanded inputs;
// and the sliding window.
#include "engine/kernels/gqa_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/kernels/attention.h"
#include "engine/kernels/scoped_threads.h"
#include "engine/testing/matchers.h"
#include "engine/testing/grad_check.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels {
namespace {

using ::accel::testing::AllCloseToScale;
using ::accel::testing::NumericGrad;
using ::accel::testing::Plus;
using ::accel::testing::TestRng;

struct Shape {
  int64_t B, T, H, KV, D;
  int64_t window = 0;  // sliding window (gqa_attention.h), 0 for none
  int64_t Width() const { return (H + 2 * KV) * D; }
  int64_t Qkv() const { return B * T * Width(); }
  int64_t Out() const { return B * T * H * D; }
  int64_t Att() const { return B * H * T * T; }
};

::testing::Message Describe(const Shape& s) {
  return ::testing::Message() << "B=" << s.B << " T=" << s.T << " H=" << s.H << " KV=" << s.KV
                              << " D=" << s.D << " window=" << s.window;
}

// The first four stay under the fast path's single-thread cutoff. The rest are split between
// threads; where B·KV is below the thread count (B·KV = 1 at 2 and 3 threads, B·KV = 2 at 3) the
// backward takes its by-head schedule, elsewhere the by-group one. T = 150 spans three 64-row
// causal blocks; H / KV = 3 with D = 20 and 12 (not powers of 2).
constexpr Shape kShapes[] = {{1, 1, 1, 1, 4},    {2, 5, 3, 1, 4},     {2, 7, 6, 2, 5},
                             {3, 9, 4, 4, 8},    {1, 150, 4, 1, 16},  {2, 70, 6, 2, 12},
                             {1, 35, 9, 3, 20},  {2, 64, 4, 4, 24},   {1, 66, 6, 2, 20}};

TEST(GqaAttentionTest, FastMatchesRefForwardAndBackward) {
  for (const Shape& s : kShapes) {
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(Describe(s) << " threads=" << threads);
      ScopedThreads scoped(threads);
      TestRng rng(4000 + s.B * 31 + s.T * 7 + s.H * 5 + s.KV);
      // Scale 2 makes the softmax far from uniform.
      const std::vector<float> qkv = rng.NormalVector(s.Qkv(), 0.0f, 2.0f);
      // att starts as garbage: the kernels must write every entry, zeros above the diagonal.
      std::vector<float> out_r(s.Out()), att_r(s.Att(), 5.0f), out_f(s.Out()),
          att_f(s.Att(), -5.0f);
      ref::GqaAttentionForward(out_r.data(), att_r.data(), qkv.data(), s.B, s.T, s.H, s.KV, s.D);
      GqaAttentionForward(out_f.data(), att_f.data(), qkv.data(), s.B, s.T, s.H, s.KV, s.D);
      EXPECT_TRUE(AllCloseToScale(out_f, out_r, 1e-5));
      EXPECT_TRUE(AllCloseToScale(att_f, att_r, 1e-5));

      const std::vector<float> dout = rng.NormalVector(s.Out());
      const std::vector<float> dqkv0 = rng.NormalVector(s.Qkv());  // += is checked, not just =
      std::vector<float> dqkv_z(s.Qkv(), 0.0f), dqkv_r = dqkv0, dqkv_f = dqkv0;
      ref::GqaAttentionBackward(dqkv_z.data(), dout.data(), qkv.data(), att_r.data(), s.B, s.T,
                                s.H, s.KV, s.D);
      ref::GqaAttentionBackward(dqkv_r.data(), dout.data(), qkv.data(), att_r.data(), s.B, s.T,
                                s.H, s.KV, s.D);
      EXPECT_TRUE(AllCloseToScale(dqkv_r, Plus(dqkv0, dqkv_z), 1e-6));
      GqaAttentionBackward(dqkv_f.data(), dout.data(), qkv.data(), att_r.data(), s.B, s.T, s.H,
                           s.KV, s.D);
      EXPECT_TRUE(AllCloseToScale(dqkv_f, dqkv_r, 1e-5));
    }
  }
}

// Double-precision grouped-query attention written independently of the kernels, from the
// header's contract: out (B, T, H·D). With a window, query t attends to the keys t2 with
// t - window < t2 <= t.
std::vector<double> GqaAttentionDouble(const std::vector<double>& qkv, const Shape& s) {
  std::vector<double> out(s.Out(), 0.0);
  // part 0: q head h; part 1: k of kv head h; part 2: v of kv head h.
  auto at = [&](int64_t b, int64_t t, int part, int64_t h, int64_t i) {
    const int64_t col = part == 0 ? h * s.D : (s.H + (part - 1) * s.KV + h) * s.D;
    return qkv[(b * s.T + t) * s.Width() + col + i];
  };
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t h = 0; h < s.H; ++h) {
      const int64_t g = h * s.KV / s.H;  // == h / (H / KV)
      for (int64_t t = 0; t < s.T; ++t) {
        const int64_t first = s.window > 0 ? std::max<int64_t>(0, t - s.window + 1) : 0;
        std::vector<double> w(t + 1);
        double z = 0;
        for (int64_t t2 = first; t2 <= t; ++t2) {
          double dot = 0;
          for (int64_t i = 0; i < s.D; ++i) dot += at(b, t, 0, h, i) * at(b, t2, 1, g, i);
          w[t2] = std::exp(dot / std::sqrt(static_cast<double>(s.D)));
          z += w[t2];
        }
        for (int64_t t2 = first; t2 <= t; ++t2) {
          for (int64_t i = 0; i < s.D; ++i) {
            out[(b * s.T + t) * s.H * s.D + h * s.D + i] += w[t2] / z * at(b, t2, 2, g, i);
          }
        }
      }
    }
  }
  return out;
}

TEST(GqaAttentionTest, RefBackwardMatchesFiniteDifferences) {
  for (const Shape& s : {Shape{2, 4, 4, 2, 3}, Shape{1, 5, 3, 1, 2}, Shape{1, 3, 2, 2, 3}}) {
    SCOPED_TRACE(Describe(s));
    TestRng rng(5 + s.H);
    const std::vector<float> qkv = rng.NormalVector(s.Qkv());
    const std::vector<float> dout = rng.NormalVector(s.Out());  // loss = Σ out * dout
    std::vector<float> out(s.Out()), att(s.Att());
    ref::GqaAttentionForward(out.data(), att.data(), qkv.data(), s.B, s.T, s.H, s.KV, s.D);
    std::vector<float> dqkv(qkv.size(), 0.0f);
    ref::GqaAttentionBackward(dqkv.data(), dout.data(), qkv.data(), att.data(), s.B, s.T, s.H,
                              s.KV, s.D);

    // The double forward checks the oracle's values too, not only its gradient.
    const std::vector<double> y0 = GqaAttentionDouble(std::vector<double>(qkv.begin(), qkv.end()), s);
    EXPECT_TRUE(AllCloseToScale(out, std::vector<float>(y0.begin(), y0.end()), 1e-6));
    const std::vector<float> numeric = NumericGrad(
        [&](const std::vector<double>& x) {
          const std::vector<double> y = GqaAttentionDouble(x, s);
          double l = 0;
          for (size_t j = 0; j < y.size(); ++j) l += y[j] * dout[j];
          return l;
        },
        std::vector<double>(qkv.begin(), qkv.end()), 1e-6);
    EXPECT_TRUE(AllCloseToScale(dqkv, numeric, 1e-4));
    // The first query attends only to itself, so its q gets no gradient (softmax of one entry).
    for (int64_t i = 0; i < s.H * s.D; ++i) EXPECT_EQ(dqkv[i], 0.0f);
  }
}

// With KV == H the packed layout is GPT-2's (C = H·D), so the fast paths must agree (the GPT-2
// oracle is the grouped-query one with KV = H, so only the fast paths are compared here).
TEST(GqaAttentionTest, EqualsGpt2AttentionWhenKvEqualsH) {
  for (const Shape& s : {Shape{2, 5, 3, 3, 4}, Shape{3, 17, 4, 4, 16}, Shape{1, 150, 2, 2, 16}}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(Describe(s) << " threads=" << threads);
      ScopedThreads scoped(threads);
      const int64_t C = s.H * s.D;
      TestRng rng(s.T);
      const std::vector<float> qkv = rng.NormalVector(s.Qkv(), 0.0f, 2.0f);
      const std::vector<float> dout = rng.NormalVector(s.Out());
      const std::vector<float> dqkv0 = rng.NormalVector(s.Qkv());
      std::vector<float> out_g(s.Out()), att_g(s.Att()), out_a(s.Out()), att_a(s.Att());
      std::vector<float> dqkv_g = dqkv0, dqkv_a = dqkv0;
      GqaAttentionForward(out_g.data(), att_g.data(), qkv.data(), s.B, s.T, s.H, s.KV, s.D);
      AttentionForward(out_a.data(), att_a.data(), qkv.data(), s.B, s.T, C, s.H);
      GqaAttentionBackward(dqkv_g.data(), dout.data(), qkv.data(), att_g.data(), s.B, s.T, s.H,
                           s.KV, s.D);
      AttentionBackward(dqkv_a.data(), dout.data(), qkv.data(), att_a.data(), s.B, s.T, C, s.H);
      EXPECT_TRUE(AllCloseToScale(out_g, out_a, 1e-6));
      EXPECT_TRUE(AllCloseToScale(att_g, att_a, 1e-6));
      EXPECT_TRUE(AllCloseToScale(dqkv_g, dqkv_a, 1e-6));
    }
  }
}

// repeat_kv: GQA on qkv equals multi-head attention on qkv with each kv head copied to the H / KV
// query heads it serves, and the GQA k, v gradients are the copies' gradients summed per group.
TEST(GqaAttentionTest, EqualsGpt2AttentionOnRepeatedKv) {
  for (const Shape& s : {Shape{2, 9, 6, 2, 4}, Shape{1, 70, 4, 1, 8}, Shape{2, 33, 6, 3, 12}}) {
    SCOPED_TRACE(Describe(s));
    const int64_t C = s.H * s.D, W = s.Width(), group = s.H / s.KV;
    TestRng rng(s.T + s.H);
    const std::vector<float> qkv = rng.NormalVector(s.Qkv(), 0.0f, 2.0f);
    const std::vector<float> dout = rng.NormalVector(s.Out());
    // Expanded (B, T, 3C): q as is; k, v of query head h from kv head h / group.
    std::vector<float> wide(s.B * s.T * 3 * C);
    for (int64_t bt = 0; bt < s.B * s.T; ++bt) {
      for (int64_t h = 0; h < s.H; ++h) {
        for (int64_t i = 0; i < s.D; ++i) {
          const float* row = qkv.data() + bt * W;
          float* wrow = wide.data() + bt * 3 * C;
          wrow[h * s.D + i] = row[h * s.D + i];
          wrow[C + h * s.D + i] = row[(s.H + h / group) * s.D + i];
          wrow[2 * C + h * s.D + i] = row[(s.H + s.KV + h / group) * s.D + i];
        }
      }
    }
    std::vector<float> out_w(s.Out()), att_w(s.Att()), dwide(wide.size(), 0.0f);
    ref::AttentionForward(out_w.data(), att_w.data(), wide.data(), s.B, s.T, C, s.H);
    ref::AttentionBackward(dwide.data(), dout.data(), wide.data(), att_w.data(), s.B, s.T, C, s.H);
    // Fold the expanded gradient back: dq as is, dk and dv summed over each group.
    std::vector<float> dfold(s.Qkv(), 0.0f);
    for (int64_t bt = 0; bt < s.B * s.T; ++bt) {
      for (int64_t h = 0; h < s.H; ++h) {
        for (int64_t i = 0; i < s.D; ++i) {
          const float* wrow = dwide.data() + bt * 3 * C;
          float* row = dfold.data() + bt * W;
          row[h * s.D + i] = wrow[h * s.D + i];
          row[(s.H + h / group) * s.D + i] += wrow[C + h * s.D + i];
          row[(s.H + s.KV + h / group) * s.D + i] += wrow[2 * C + h * s.D + i];
        }
      }
    }
    for (bool fast : {false, true}) {
      SCOPED_TRACE(fast ? "fast" : "ref");
      std::vector<float> out(s.Out()), att(s.Att()), dqkv(s.Qkv(), 0.0f);
      (fast ? GqaAttentionForward : ref::GqaAttentionForward)(out.data(), att.data(), qkv.data(),
                                                              s.B, s.T, s.H, s.KV, s.D,
                                                              /*window=*/0);
      (fast ? GqaAttentionBackward : ref::GqaAttentionBackward)(
          dqkv.data(), dout.data(), qkv.data(), att.data(), s.B, s.T, s.H, s.KV, s.D);
      EXPECT_TRUE(AllCloseToScale(out, out_w, 1e-5));
      EXPECT_TRUE(AllCloseToScale(att, att_w, 1e-5));
      EXPECT_TRUE(AllCloseToScale(dqkv, dfold, 1e-5));
    }
  }
}

// Sliding window (Mistral's semantics: query t sees key t2 when 0 <= t - t2 < window): the
// oracle against the double forward and its finite-difference gradient, the fast path against
// the oracle (windows of one key, shorter than a 64-row causal block, spanning blocks), the
// masked entries exactly 0, and a window that does not bind (>= T) bit-identical to none.
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
    const std::vector<double> want = GqaAttentionDouble({qkv.begin(), qkv.end()}, s);
    EXPECT_TRUE(AllCloseToScale(out, std::vector<float>(want.begin(), want.end()), 1e-6));
    std::vector<float> dqkv(qkv.size(), 0.0f);
    ref::GqaAttentionBackward(dqkv.data(), dout.data(), qkv.data(), att.data(), s.B, s.T, s.H,
                              s.KV, s.D);
    const std::vector<float> numeric = NumericGrad(
        [&](const std::vector<double>& x) {
          const std::vector<double> y = GqaAttentionDouble(x, s);
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
