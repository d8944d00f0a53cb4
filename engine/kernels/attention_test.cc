// Fast causal attention against the plain-loop oracle, the oracle's backward against central
// finite differences of a double-precision forward, and exact properties of the causal softmax.
#include "engine/kernels/attention.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

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

constexpr int kThreadCounts[] = {1, 2};


struct Shape {
  int64_t B, T, C, NH;
};
// The last three are above the kernels' single-thread cutoff, so 2 threads really split them;
// T = 150 spans three of the fast path's 64-row causal blocks.
constexpr Shape kShapes[] = {{1, 1, 4, 1},   {2, 5, 12, 3},  {3, 17, 64, 4},
                             {2, 64, 96, 2}, {1, 35, 60, 5}, {1, 150, 32, 2}};

TEST(AttentionTest, FastMatchesRefForwardAndBackward) {
  for (const Shape& s : kShapes) {
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(::testing::Message() << "B=" << s.B << " T=" << s.T << " C=" << s.C
                                        << " NH=" << s.NH << " threads=" << threads);
      ScopedThreads scoped(threads);
      TestRng rng(2000 + s.B * 31 + s.T * 7 + s.C);
      const int64_t n_qkv = s.B * s.T * 3 * s.C, n_out = s.B * s.T * s.C;
      const int64_t n_att = s.B * s.NH * s.T * s.T;
      // Scale 2 makes the softmax far from uniform.
      const std::vector<float> qkv = rng.NormalVector(n_qkv, 0.0f, 2.0f);

      // att starts as garbage: the kernels must write every entry, zeros above the diagonal.
      std::vector<float> out_r(n_out), att_r(n_att, 5.0f), out_f(n_out), att_f(n_att, -5.0f);
      ref::AttentionForward(out_r.data(), att_r.data(), qkv.data(), s.B, s.T, s.C, s.NH);
      AttentionForward(out_f.data(), att_f.data(), qkv.data(), s.B, s.T, s.C, s.NH);
      EXPECT_TRUE(AllCloseToScale(out_f, out_r, 1e-5));
      EXPECT_TRUE(AllCloseToScale(att_f, att_r, 1e-5));

      const std::vector<float> dout = rng.NormalVector(n_out);
      const std::vector<float> dqkv0 = rng.NormalVector(n_qkv);  // += is checked, not just =
      std::vector<float> dqkv_z(n_qkv, 0.0f), dqkv_r = dqkv0, dqkv_f = dqkv0;
      ref::AttentionBackward(dqkv_z.data(), dout.data(), qkv.data(), att_r.data(), s.B, s.T, s.C,
                             s.NH);
      ref::AttentionBackward(dqkv_r.data(), dout.data(), qkv.data(), att_r.data(), s.B, s.T, s.C,
                             s.NH);
      EXPECT_TRUE(AllCloseToScale(dqkv_r, Plus(dqkv0, dqkv_z), 1e-6));
      AttentionBackward(dqkv_f.data(), dout.data(), qkv.data(), att_r.data(), s.B, s.T, s.C, s.NH);
      EXPECT_TRUE(AllCloseToScale(dqkv_f, dqkv_r, 1e-5));
    }
  }
}

// Double-precision causal attention written independently of the kernels: out (B, T, C).
std::vector<double> AttentionDouble(const std::vector<double>& qkv, int64_t B, int64_t T, int64_t C,
                                    int64_t NH) {
  const int64_t HS = C / NH;
  std::vector<double> out(B * T * C, 0.0);
  auto at = [&](int64_t b, int64_t t, int64_t part, int64_t h, int64_t i) {
    return qkv[((b * T + t) * 3 + part) * C + h * HS + i];
  };
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < NH; ++h) {
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> w(t + 1);
        double z = 0;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          double dot = 0;
          for (int64_t i = 0; i < HS; ++i) dot += at(b, t, 0, h, i) * at(b, t2, 1, h, i);
          w[t2] = std::exp(dot / std::sqrt(static_cast<double>(HS)));
          z += w[t2];
        }
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          for (int64_t i = 0; i < HS; ++i) {
            out[(b * T + t) * C + h * HS + i] += w[t2] / z * at(b, t2, 2, h, i);
          }
        }
      }
    }
  }
  return out;
}

TEST(AttentionTest, RefBackwardMatchesFiniteDifferences) {
  const int64_t B = 2, T = 4, C = 6, NH = 2;
  TestRng rng(5);
  const std::vector<float> qkv = rng.NormalVector(B * T * 3 * C);
  const std::vector<float> dout = rng.NormalVector(B * T * C);  // loss = Σ out * dout
  std::vector<float> out(B * T * C), att(B * NH * T * T);
  ref::AttentionForward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  std::vector<float> dqkv(qkv.size(), 0.0f);
  ref::AttentionBackward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);

  const std::vector<float> numeric = NumericGrad(
      [&](const std::vector<double>& x) {
        const std::vector<double> y = AttentionDouble(x, B, T, C, NH);
        double l = 0;
        for (size_t j = 0; j < y.size(); ++j) l += y[j] * dout[j];
        return l;
      },
      std::vector<double>(qkv.begin(), qkv.end()), 1e-6);
  EXPECT_TRUE(AllCloseToScale(dqkv, numeric, 1e-4));
  // The first query attends only to itself, so its q gets no gradient (softmax of one entry).
  for (int64_t i = 0; i < C; ++i) EXPECT_EQ(dqkv[i], 0.0f);
}

using ForwardFn = void (*)(float*, float*, const float*, int64_t, int64_t, int64_t, int64_t);

TEST(AttentionTest, RowsAreCausalDistributions) {
  const int64_t B = 2, T = 19, C = 24, NH = 3, HS = C / NH;
  for (ForwardFn fwd : {ForwardFn{&ref::AttentionForward}, ForwardFn{&AttentionForward}}) {
    TestRng rng(3);
    const std::vector<float> qkv = rng.NormalVector(B * T * 3 * C, 0.0f, 3.0f);
    std::vector<float> out(B * T * C), att(B * NH * T * T, 9.0f);
    fwd(out.data(), att.data(), qkv.data(), B, T, C, NH);
    for (int64_t bh = 0; bh < B * NH; ++bh) {
      for (int64_t t = 0; t < T; ++t) {
        const float* row = att.data() + (bh * T + t) * T;
        double sum = 0;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          EXPECT_GE(row[t2], 0.0f);
          sum += row[t2];
        }
        EXPECT_NEAR(sum, 1.0, 1e-6) << "bh=" << bh << " t=" << t;
        for (int64_t t2 = t + 1; t2 < T; ++t2) EXPECT_EQ(row[t2], 0.0f);
      }
    }
    // Position 0 sees only itself: att = 1 and its output is its own v.
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < NH; ++h) {
        EXPECT_EQ(att[((b * NH + h) * T) * T], 1.0f);
        for (int64_t i = 0; i < HS; ++i) {
          EXPECT_EQ(out[b * T * C + h * HS + i], qkv[b * T * 3 * C + 2 * C + h * HS + i]);
        }
      }
    }
  }
}

TEST(AttentionTest, EqualKeysAverageTheValues) {
  // All keys equal: every query attends uniformly to its prefix, so out[t] is the mean of v[0..t].
  const int64_t B = 1, T = 6, C = 8, NH = 2;
  TestRng rng(17);
  std::vector<float> qkv = rng.NormalVector(B * T * 3 * C);
  for (int64_t t = 1; t < T; ++t) {
    for (int64_t c = 0; c < C; ++c) qkv[t * 3 * C + C + c] = qkv[C + c];
  }
  for (ForwardFn fwd : {ForwardFn{&ref::AttentionForward}, ForwardFn{&AttentionForward}}) {
    std::vector<float> out(B * T * C), att(B * NH * T * T);
    fwd(out.data(), att.data(), qkv.data(), B, T, C, NH);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t c = 0; c < C; ++c) {
        double mean = 0;
        for (int64_t t2 = 0; t2 <= t; ++t2) mean += qkv[t2 * 3 * C + 2 * C + c];
        mean /= static_cast<double>(t + 1);
        EXPECT_NEAR(out[t * C + c], mean, 1e-6) << "t=" << t << " c=" << c;
      }
    }
  }
}

}  // namespace
}  // namespace accel::kernels
