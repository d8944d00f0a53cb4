// Fast matmul (oneDNN) against the plain-loop oracle, plus small hand-checked cases for the
// oracle itself. Tolerances scale with Σ|a·b| (computed by the oracle on absolute values) and
// sqrt(K): a transposed or mis-strided operand gives O(1) relative errors, far above them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/kernels/matmul.h"
#include "engine/kernels/scoped_threads.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr int kThreadCounts[] = {1, 2};

// Sets the kernel thread count for one scope and restores the previous one.

std::vector<float> Abs(const std::vector<float>& x) {
  std::vector<float> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = std::fabs(x[i]);
  return r;
}

// A (rows, cols) matrix with row stride cols + pad; the padding holds NaN so that reading it
// poisons the result.
std::vector<float> Strided(testing::TestRng& rng, int64_t rows, int64_t cols, int64_t pad) {
  std::vector<float> m(rows * (cols + pad), kNaN);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) m[r * (cols + pad) + c] = rng.Uniform();
  }
  return m;
}

// |actual - expected| <= rtol * bound elementwise (bound = the same sum over |terms|).
::testing::AssertionResult WithinBound(const std::vector<float>& actual,
                                       const std::vector<float>& expected,
                                       const std::vector<float>& bound, double rtol) {
  for (size_t i = 0; i < actual.size(); ++i) {
    const double err = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    if (!(err <= rtol * bound[i] + 1e-30)) {
      return ::testing::AssertionFailure()
             << "at [" << i << "] actual " << actual[i] << " expected " << expected[i]
             << " bound " << bound[i] << " rtol " << rtol;
    }
  }
  return ::testing::AssertionSuccess();
}

double Rtol(int64_t K) { return 1e-5 * std::sqrt(static_cast<double>(K) + 1.0); }

void CheckGemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
               int64_t pad, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "ta=" << ta << " tb=" << tb << " M=" << M << " N=" << N
                                    << " K=" << K << " alpha=" << alpha << " beta=" << beta
                                    << " pad=" << pad);
  testing::TestRng rng(seed);
  const int64_t a_rows = ta ? K : M, a_cols = ta ? M : K;
  const int64_t b_rows = tb ? N : K, b_cols = tb ? K : N;
  const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = N + pad;
  std::vector<float> A = Strided(rng, a_rows, a_cols, pad);
  std::vector<float> B = Strided(rng, b_rows, b_cols, pad);
  std::vector<float> C0 = Strided(rng, M, N, pad);
  if (beta == 0.0f) {  // beta == 0 must not read C
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C0[i * ldc + j] = kNaN;
  }
  std::vector<float> fast = C0, expected = C0, bound = Abs(C0);
  Gemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, fast.data(), ldc);
  ref::Gemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, expected.data(), ldc);
  ref::Gemm(ta, tb, M, N, K, std::fabs(alpha), Abs(A).data(), lda, Abs(B).data(), ldb,
            std::fabs(beta), bound.data(), ldc);
  std::vector<float> f, e, b;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const int64_t at = i * ldc + j;
      if (j < N) {
        f.push_back(fast[at]);
        e.push_back(expected[at]);
        b.push_back(bound[at]);
      } else {  // padding between rows of C is left alone
        ASSERT_EQ(std::memcmp(&fast[at], &C0[at], sizeof(float)), 0) << "C padding written";
      }
    }
  }
  EXPECT_TRUE(WithinBound(f, e, b, Rtol(K)));
}

TEST(GemmTest, HandComputedAllTransposes) {
  // op(A) = [[1, 2, 3], [4, 5, 6]], op(B) = [[1, 0], [2, -1], [0, 3]] → [[5, 7], [14, 13]].
  const float a[] = {1, 2, 3, 4, 5, 6}, at[] = {1, 4, 2, 5, 3, 6};
  const float b[] = {1, 0, 2, -1, 0, 3}, bt[] = {1, 2, 0, 0, -1, 3};
  const float want[] = {2 * 5 + 1, 2 * 7 - 1, 2 * 14 + 1, 2 * 13 - 1};  // alpha 2, beta 1, C ±1
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (bool fast : {false, true}) {
        float c[] = {1, -1, 1, -1};
        (fast ? Gemm : ref::Gemm)(ta, tb, 2, 2, 3, 2.0f, ta ? at : a, ta ? 2 : 3, tb ? bt : b,
                                  tb ? 3 : 2, 1.0f, c, 2);
        for (int i = 0; i < 4; ++i) {
          EXPECT_EQ(c[i], want[i]) << "ta=" << ta << " tb=" << tb << " fast=" << fast;
        }
      }
    }
  }
}

TEST(GemmTest, FastMatchesRefOddSizesTransposesAndScalars) {
  const int64_t dims[] = {1, 3, 17, 65};
  const float scalars[][2] = {{1.0f, 0.0f}, {-0.5f, 1.0f}, {2.0f, 0.25f}};
  uint64_t seed = 1;
  for (int threads : kThreadCounts) {
    ScopedThreads scoped(threads);
    for (int64_t M : dims)
      for (int64_t N : dims)
        for (int64_t K : dims)
          for (int t = 0; t < 4; ++t)
            for (const auto& s : scalars) {
              CheckGemm(t & 1, t & 2, M, N, K, s[0], s[1], /*pad=*/(seed % 3), seed);
              ++seed;
            }
  }
}

TEST(GemmTest, FastMatchesRefModelSizedK) {
  for (int threads : kThreadCounts) {
    ScopedThreads scoped(threads);
    for (int t = 0; t < 4; ++t) {
      CheckGemm(t & 1, t & 2, 64, 96, 768, 1.0f, 1.0f, 0, 100 + t);
      CheckGemm(t & 1, t & 2, 33, 200, 300, 1.0f, 0.0f, 5, 200 + t);
    }
  }
}

TEST(GemmTest, ZeroSizedDimensions) {
  for (int threads : kThreadCounts) {
    ScopedThreads scoped(threads);
    for (int t = 0; t < 4; ++t) {
      for (float beta : {0.0f, 0.5f}) {
        CheckGemm(t & 1, t & 2, 0, 3, 5, 1.0f, beta, 1, 7);
        CheckGemm(t & 1, t & 2, 3, 0, 5, 1.0f, beta, 1, 8);
        CheckGemm(t & 1, t & 2, 4, 3, 0, 1.0f, beta, 1, 9);
      }
    }
    // K == 0 is an empty sum: C = beta * C exactly, and beta == 0 clears NaN.
    float c[] = {2.0f, -4.0f, kNaN, kNaN};
    Gemm(false, false, 1, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c, 2);
    EXPECT_EQ(c[0], 1.0f);
    EXPECT_EQ(c[1], -2.0f);
    Gemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, c, 2);
    for (float x : c) EXPECT_EQ(x, 0.0f);
  }
}

TEST(GemmDeathTest, BadLeadingDimensionAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<float> a(12, 1.0f), b(12, 1.0f), c(12, 0.0f);
  // op(A) is (3, 4) stored untransposed, so lda must be >= 4.
  EXPECT_DEATH(Gemm(false, false, 3, 3, 4, 1.0f, a.data(), 3, b.data(), 3, 0.0f, c.data(), 3),
               "lda");
}

TEST(MatmulTest, HandComputedForwardAndBackward) {
  // inp (2, 2), weight (2, 3), bias (3).
  const float inp[] = {1, 2, 3, 4}, w[] = {1, 0, -1, 2, 1, 0}, bias[] = {0.5f, -1, 2};
  const float want_out[] = {5.5f, 1, 1, 11.5f, 3, -1};
  const float dout[] = {1, 0, 2, -1, 1, 1};
  // dinp = dout · wᵀ; dweight = inpᵀ · dout; dbias = column sums; each += 1 from the start.
  const float want_dinp[] = {1 - 1, 2 + 1, 1 - 2, 1 - 1};
  const float want_dw[] = {1 + 1 - 3, 1 + 3, 1 + 2 + 3, 1 + 2 - 4, 1 + 4, 1 + 4 + 4};
  const float want_db[] = {1 + 0, 1 + 1, 1 + 3};
  for (bool fast : {false, true}) {
    SCOPED_TRACE(fast ? "fast" : "ref");
    float out[6];
    (fast ? MatmulForward : ref::MatmulForward)(out, inp, w, bias, 2, 2, 3);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], want_out[i]) << i;
    float dinp[4], dw[6], db[3];
    std::fill_n(dinp, 4, 1.0f);
    std::fill_n(dw, 6, 1.0f);
    std::fill_n(db, 3, 1.0f);
    (fast ? MatmulBackward : ref::MatmulBackward)(dinp, dw, db, dout, inp, w, 2, 2, 3);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(dinp[i], want_dinp[i]) << i;
    for (int i = 0; i < 6; ++i) EXPECT_EQ(dw[i], want_dw[i]) << i;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(db[i], want_db[i]) << i;
  }
}

struct LinearShape {
  int64_t N, IC, OC;
};
constexpr LinearShape kShapes[] = {{1, 1, 1},   {3, 17, 65},  {17, 65, 3}, {65, 3, 17},
                                   {64, 768, 96}, {300, 40, 130}, {0, 3, 4},   {3, 0, 4},
                                   {3, 4, 0}};

using LinearForwardFn = void (*)(float*, const float*, const float*, const float*, int64_t,
                                int64_t, int64_t);
using LinearBackwardFn = void (*)(float*, float*, float*, const float*, const float*,
                                  const float*, int64_t, int64_t, int64_t);

// Fast forward against the oracle, for either weight orientation (both hold IC * OC values).
void CheckForwardMatchesRef(LinearForwardFn fast_fn, LinearForwardFn ref_fn) {
  uint64_t seed = 11;
  for (int threads : kThreadCounts) {
    ScopedThreads scoped(threads);
    for (const LinearShape& s : kShapes) {
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "threads=" << threads << " N=" << s.N << " IC="
                                          << s.IC << " OC=" << s.OC << " bias=" << with_bias);
        testing::TestRng rng(seed++);
        auto inp = rng.UniformVector(s.N * s.IC), w = rng.UniformVector(s.IC * s.OC);
        auto bias = rng.UniformVector(s.OC);
        const float* b = with_bias ? bias.data() : nullptr;
        std::vector<float> fast(s.N * s.OC, kNaN), want(s.N * s.OC), bound(s.N * s.OC);
        fast_fn(fast.data(), inp.data(), w.data(), b, s.N, s.IC, s.OC);
        ref_fn(want.data(), inp.data(), w.data(), b, s.N, s.IC, s.OC);
        ref_fn(bound.data(), Abs(inp).data(), Abs(w).data(),
               with_bias ? Abs(bias).data() : nullptr, s.N, s.IC, s.OC);
        EXPECT_TRUE(WithinBound(fast, want, bound, Rtol(s.IC)));
      }
    }
  }
}

// Fast backward against the oracle (+= into non-zero gradients, each output optional).
void CheckBackwardMatchesRef(LinearBackwardFn fast_fn, LinearBackwardFn ref_fn) {
  uint64_t seed = 101;
  for (int threads : kThreadCounts) {
    ScopedThreads scoped(threads);
    for (const LinearShape& s : kShapes) {
      for (int mask = 0; mask < 8; ++mask) {
        SCOPED_TRACE(::testing::Message() << "threads=" << threads << " N=" << s.N << " IC="
                                          << s.IC << " OC=" << s.OC << " mask=" << mask);
        testing::TestRng rng(seed++);
        auto dout = rng.UniformVector(s.N * s.OC), inp = rng.UniformVector(s.N * s.IC);
        auto w = rng.UniformVector(s.IC * s.OC);
        // Non-zero starting gradients: the contract is +=.
        auto dinp0 = rng.UniformVector(s.N * s.IC), dw0 = rng.UniformVector(s.IC * s.OC);
        auto db0 = rng.UniformVector(s.OC);
        auto fdinp = dinp0, fdw = dw0, fdb = db0, rdinp = dinp0, rdw = dw0, rdb = db0;
        auto bdinp = Abs(dinp0), bdw = Abs(dw0), bdb = Abs(db0);
        const bool want_dinp = mask & 1, want_dw = mask & 2, want_db = mask & 4;
        fast_fn(want_dinp ? fdinp.data() : nullptr, want_dw ? fdw.data() : nullptr,
                want_db ? fdb.data() : nullptr, dout.data(), inp.data(), w.data(), s.N, s.IC,
                s.OC);
        ref_fn(rdinp.data(), rdw.data(), rdb.data(), dout.data(), inp.data(), w.data(), s.N,
               s.IC, s.OC);
        ref_fn(bdinp.data(), bdw.data(), bdb.data(), Abs(dout).data(), Abs(inp).data(),
               Abs(w).data(), s.N, s.IC, s.OC);
        if (want_dinp) {
          EXPECT_TRUE(WithinBound(fdinp, rdinp, bdinp, Rtol(s.OC)));
        } else {
          EXPECT_EQ(fdinp, dinp0);
        }
        if (want_dw) {
          EXPECT_TRUE(WithinBound(fdw, rdw, bdw, Rtol(s.N)));
        } else {
          EXPECT_EQ(fdw, dw0);
        }
        if (want_db) {
          EXPECT_TRUE(WithinBound(fdb, rdb, bdb, Rtol(s.N)));
        } else {
          EXPECT_EQ(fdb, db0);
        }
      }
    }
  }
}

TEST(MatmulTest, ForwardMatchesRef) { CheckForwardMatchesRef(MatmulForward, ref::MatmulForward); }

TEST(MatmulTest, BackwardAccumulatesAndSkipsNullOutputs) {
  CheckBackwardMatchesRef(MatmulBackward, ref::MatmulBackward);
}

TEST(LinearTest, ForwardMatchesRef) { CheckForwardMatchesRef(LinearForward, ref::LinearForward); }

TEST(LinearTest, BackwardAccumulatesAndSkipsNullOutputs) {
  CheckBackwardMatchesRef(LinearBackward, ref::LinearBackward);
}

// (rows, cols) -> (cols, rows).
std::vector<float> Transpose(const std::vector<float>& m, int64_t rows, int64_t cols) {
  std::vector<float> t(m.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
  }
  return t;
}

TEST(LinearTest, IsMatmulWithTheTransposedWeight) {
  // The oracles sum the same products in the same order, so with weight (OC, IC) = Wᵀ for W
  // (IC, OC) they agree exactly; this pins the nn.Linear orientation of weight and dweight.
  const int64_t N = 5, IC = 7, OC = 3;
  testing::TestRng rng(3);
  const auto inp = rng.UniformVector(N * IC), w = rng.UniformVector(IC * OC);
  const auto bias = rng.UniformVector(OC), dout = rng.UniformVector(N * OC);
  const auto wt = Transpose(w, IC, OC);
  std::vector<float> out_m(N * OC), out_l(N * OC);
  ref::MatmulForward(out_m.data(), inp.data(), w.data(), bias.data(), N, IC, OC);
  ref::LinearForward(out_l.data(), inp.data(), wt.data(), bias.data(), N, IC, OC);
  EXPECT_EQ(out_l, out_m);
  std::vector<float> dinp_m(N * IC, 1.0f), dw_m(IC * OC, 2.0f), db_m(OC, 3.0f);
  std::vector<float> dinp_l = dinp_m, dw_l = dw_m, db_l = db_m;
  ref::MatmulBackward(dinp_m.data(), dw_m.data(), db_m.data(), dout.data(), inp.data(), w.data(),
                      N, IC, OC);
  ref::LinearBackward(dinp_l.data(), dw_l.data(), db_l.data(), dout.data(), inp.data(),
                      wt.data(), N, IC, OC);
  EXPECT_EQ(dinp_l, dinp_m);
  EXPECT_EQ(dw_l, Transpose(dw_m, IC, OC));
  EXPECT_EQ(db_l, db_m);
  // The fast path agrees to fp32 rounding.
  std::vector<float> out_f(N * OC), dw_f(OC * IC, 2.0f);
  LinearForward(out_f.data(), inp.data(), wt.data(), bias.data(), N, IC, OC);
  LinearBackward(nullptr, dw_f.data(), nullptr, dout.data(), inp.data(), wt.data(), N, IC, OC);
  for (int64_t i = 0; i < N * OC; ++i) EXPECT_NEAR(out_f[i], out_m[i], 1e-5) << i;
  for (int64_t i = 0; i < OC * IC; ++i) EXPECT_NEAR(dw_f[i], dw_l[i], 1e-5) << i;
}

TEST(MatmulTest, LmHeadOrientationMatchesRef) {
  // logits (N, V) = x (N, C) · wteᵀ with wte (V, C): the tied-embedding GEMM, at a width that
  // is not a multiple of any vector length.
  const int64_t N = 8, C = 48, V = 1001;
  testing::TestRng rng(5);
  auto x = rng.UniformVector(N * C), wte = rng.UniformVector(V * C);
  for (int threads : kThreadCounts) {
    ScopedThreads scoped(threads);
    std::vector<float> fast(N * V, kNaN), want(N * V), bound(N * V);
    Gemm(false, true, N, V, C, 1.0f, x.data(), C, wte.data(), C, 0.0f, fast.data(), V);
    ref::Gemm(false, true, N, V, C, 1.0f, x.data(), C, wte.data(), C, 0.0f, want.data(), V);
    ref::Gemm(false, true, N, V, C, 1.0f, Abs(x).data(), C, Abs(wte).data(), C, 0.0f,
              bound.data(), V);
    EXPECT_TRUE(WithinBound(fast, want, bound, Rtol(C)));
  }
}

}  // namespace
}  // namespace accel::kernels
