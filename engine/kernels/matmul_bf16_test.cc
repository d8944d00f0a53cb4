// bf16 matmul (oneDNN) against the oracle (widen to fp32, accumulate in double). The operands
// are exact bf16 values, so the only differences are fp32 accumulation order: the tolerance
// scales with Σ|a·b| and sqrt(K) as in matmul_test.cc; a transposed or mis-strided operand
// gives O(1) relative errors, far above it.
#include "engine/kernels/matmul_bf16.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "engine/kernels/matmul.h"
#include "engine/kernels/scoped_threads.h"
#include "engine/tensor/dtype.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr uint16_t kBf16NaN = 0x7fc0;

// A (rows, cols) bf16 matrix with row stride cols + pad; the padding holds NaN, so that reading
// it poisons the result.
std::vector<uint16_t> RandomBf16(testing::TestRng& rng, int64_t rows, int64_t cols, int64_t pad) {
  std::vector<uint16_t> m(rows * (cols + pad), kBf16NaN);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) m[r * (cols + pad) + c] = FloatToBf16(rng.Uniform());
  }
  return m;
}

std::vector<uint16_t> AbsBf16(std::vector<uint16_t> x) {
  for (uint16_t& v : x) v &= 0x7fff;
  return x;
}

::testing::AssertionResult Close(const float* actual, const float* expected, const float* bound,
                                 int64_t n, double rtol) {
  for (int64_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    if (!(err <= rtol * std::fabs(bound[i]) + 1e-30)) {
      return ::testing::AssertionFailure() << "at [" << i << "] actual " << actual[i]
                                           << " expected " << expected[i] << " bound " << bound[i];
    }
  }
  return ::testing::AssertionSuccess();
}

double Rtol(int64_t K) { return 1e-5 * std::sqrt(static_cast<double>(K) + 1.0); }

void CheckGemmBf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float beta, int64_t pad,
                   uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "ta=" << ta << " tb=" << tb << " M=" << M << " N=" << N
                                    << " K=" << K << " beta=" << beta << " pad=" << pad);
  testing::TestRng rng(seed);
  const int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  std::vector<uint16_t> A = RandomBf16(rng, ta ? K : M, ta ? M : K, pad);
  std::vector<uint16_t> B = RandomBf16(rng, tb ? N : K, tb ? K : N, pad);
  std::vector<float> C0(M * ldc, kNaN);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) C0[i * ldc + j] = beta == 0.0f ? kNaN : rng.Uniform();
  }
  std::vector<float> fast = C0, expected = C0, bound = C0;
  for (float& b : bound) b = std::isnan(b) ? 0.0f : std::fabs(b);
  GemmBf16(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, beta, fast.data(), ldc);
  ref::GemmBf16(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, beta, expected.data(), ldc);
  ref::GemmBf16(ta, tb, M, N, K, AbsBf16(A).data(), lda, AbsBf16(B).data(), ldb, std::fabs(beta),
                bound.data(), ldc);
  for (int64_t i = 0; i < M; ++i) {
    ASSERT_TRUE(Close(&fast[i * ldc], &expected[i * ldc], &bound[i * ldc], N, Rtol(K)))
        << "row " << i;
    for (int64_t j = N; j < ldc; ++j) {  // padding between rows of C is left alone
      ASSERT_TRUE(std::isnan(fast[i * ldc + j])) << "C padding written at row " << i;
    }
  }
}

TEST(GemmBf16Test, HandComputedAllTransposes) {
  // op(A) = [[1, 2, 3], [4, 5, 6]], op(B) = [[1, 0], [2, -1], [0, 3]] → [[5, 7], [14, 13]],
  // plus beta 1 on C = ±1. Small integers are exact in bf16.
  auto bf = [](std::initializer_list<float> v) {
    std::vector<uint16_t> r;
    for (float x : v) r.push_back(FloatToBf16(x));
    return r;
  };
  const auto a = bf({1, 2, 3, 4, 5, 6}), at = bf({1, 4, 2, 5, 3, 6});
  const auto b = bf({1, 0, 2, -1, 0, 3}), bt = bf({1, 2, 0, 0, -1, 3});
  const float want[] = {5 + 1, 7 - 1, 14 + 1, 13 - 1};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (bool fast : {false, true}) {
        float c[] = {1, -1, 1, -1};
        (fast ? GemmBf16 : ref::GemmBf16)(ta, tb, 2, 2, 3, (ta ? at : a).data(), ta ? 2 : 3,
                                          (tb ? bt : b).data(), tb ? 3 : 2, 1.0f, c, 2);
        for (int i = 0; i < 4; ++i) {
          EXPECT_EQ(c[i], want[i]) << "ta=" << ta << " tb=" << tb << " fast=" << fast;
        }
      }
    }
  }
}

TEST(GemmBf16Test, FastMatchesRefOddSizesTransposesStridesAndBeta) {
  const int64_t dims[] = {1, 3, 17, 65};
  uint64_t seed = 1;
  for (int threads : {1, 2}) {
    ScopedThreads scoped(threads);
    for (int64_t M : dims)
      for (int64_t N : dims)
        for (int64_t K : dims)
          for (int t = 0; t < 4; ++t) {
            CheckGemmBf16(t & 1, t & 2, M, N, K, (seed % 2) ? 1.0f : 0.0f, seed % 3, seed);
            ++seed;
          }
  }
}

TEST(GemmBf16Test, FastMatchesRefModelShapes) {
  // GPT-2-like linear shapes at a few tokens: forward, dinp (B transposed), dweight (A
  // transposed, accumulating).
  for (int threads : {1, 2}) {
    ScopedThreads scoped(threads);
    CheckGemmBf16(false, false, 64, 288, 96, 0.0f, 0, 11);
    CheckGemmBf16(false, true, 64, 96, 384, 1.0f, 0, 12);
    CheckGemmBf16(true, false, 96, 384, 64, 1.0f, 0, 13);
    CheckGemmBf16(false, true, 32, 1000, 96, 0.0f, 0, 14);  // lm_head: lnf · wteᵀ
  }
}

TEST(GemmBf16Test, DecodeRowsMatchRefInEveryBlockAndTail) {
  // M <= 4 (not transposed) runs the GEMV of cpu/gemv_bf16.h: whole column blocks (64 columns
  // under AVX2, 128 under AVX-512) and their tails, vector and scalar parts of each dot product.
  uint64_t seed = 100;
  for (int threads : {1, 2}) {
    ScopedThreads scoped(threads);
    for (int64_t M : {1, 2, 4}) {
      for (int64_t N : {64, 129, 300, 1000}) {
        for (int64_t K : {5, 16, 37, 768}) {
          for (bool tb : {false, true}) {
            CheckGemmBf16(false, tb, M, N, K, (seed % 2) ? 0.5f : 0.0f, seed % 3, seed);
            ++seed;
          }
        }
      }
    }
  }
}

TEST(GemmBf16Test, ZeroSizedKIsAnEmptySum) {
  float c[] = {2.0f, -4.0f};
  GemmBf16(false, false, 1, 2, 0, nullptr, 1, nullptr, 2, 0.5f, c, 2);
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_EQ(c[1], -2.0f);
  float d[] = {kNaN, kNaN};
  GemmBf16(false, false, 1, 2, 0, nullptr, 1, nullptr, 2, 0.0f, d, 2);
  EXPECT_EQ(d[0], 0.0f);
  EXPECT_EQ(d[1], 0.0f);
}

TEST(GemmBf16DeathTest, BadLeadingDimensionAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<uint16_t> a(12, 0), b(12, 0);
  std::vector<float> c(12, 0.0f);
  EXPECT_DEATH(GemmBf16(false, false, 3, 3, 4, a.data(), 3, b.data(), 3, 0.0f, c.data(), 3),
               "lda");
}

using ForwardBf16Fn = void (*)(float*, const uint16_t*, const uint16_t*, const float*, int64_t,
                               int64_t, int64_t);
using BackwardBf16Fn = void (*)(float*, float*, float*, const float*, const uint16_t*,
                                const uint16_t*, const uint16_t*, int64_t, int64_t, int64_t);

// A linear layer's fast forward and backward against the oracle, for either weight orientation
// (both hold IC * OC values).
void CheckLinearBf16(ForwardBf16Fn fwd, ForwardBf16Fn ref_fwd, BackwardBf16Fn bwd,
                     BackwardBf16Fn ref_bwd) {
  struct Shape { int64_t N, IC, OC; };
  for (const Shape s : {Shape{3, 17, 65}, Shape{64, 96, 288}, Shape{65, 3, 17}}) {
    SCOPED_TRACE(::testing::Message() << "N=" << s.N << " IC=" << s.IC << " OC=" << s.OC);
    testing::TestRng rng(s.N * 1000 + s.OC);
    const auto inp = RandomBf16(rng, s.N, s.IC, 0), w = RandomBf16(rng, s.IC, s.OC, 0);
    const std::vector<float> bias = rng.UniformVector(s.OC), dout = rng.UniformVector(s.N * s.OC);
    std::vector<uint16_t> dout16(dout.size());
    FloatToBf16(dout.data(), dout16.data(), dout.size());
    std::vector<float> out(s.N * s.OC), want(s.N * s.OC);
    fwd(out.data(), inp.data(), w.data(), bias.data(), s.N, s.IC, s.OC);
    ref_fwd(want.data(), inp.data(), w.data(), bias.data(), s.N, s.IC, s.OC);
    for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], want[i], 1e-4 * s.IC) << i;
    // Backward accumulates into non-zero gradients.
    std::vector<float> dinp(s.N * s.IC, 0.5f), dw(s.IC * s.OC, -0.5f), db(s.OC, 1.0f);
    std::vector<float> dinp_ref = dinp, dw_ref = dw, db_ref = db;
    bwd(dinp.data(), dw.data(), db.data(), dout.data(), dout16.data(), inp.data(), w.data(), s.N,
        s.IC, s.OC);
    ref_bwd(dinp_ref.data(), dw_ref.data(), db_ref.data(), dout.data(), dout16.data(),
            inp.data(), w.data(), s.N, s.IC, s.OC);
    for (size_t i = 0; i < dinp.size(); ++i) EXPECT_NEAR(dinp[i], dinp_ref[i], 1e-4 * s.OC) << i;
    for (size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(dw[i], dw_ref[i], 1e-4 * s.N) << i;
    for (size_t i = 0; i < db.size(); ++i) EXPECT_NEAR(db[i], db_ref[i], 1e-4 * s.N) << i;
  }
}

TEST(MatmulBf16Test, LinearForwardAndBackwardMatchRef) {
  CheckLinearBf16(MatmulForwardBf16, ref::MatmulForwardBf16, MatmulBackwardBf16,
                  ref::MatmulBackwardBf16);
}

TEST(LinearBf16Test, ForwardAndBackwardMatchRef) {
  CheckLinearBf16(LinearForwardBf16, ref::LinearForwardBf16, LinearBackwardBf16,
                  ref::LinearBackwardBf16);
}

TEST(LinearBf16Test, RefIsTheFp32LinearOfTheWidenedOperands) {
  // Small integers are exact in bf16, so the bf16 oracle must equal the fp32 nn.Linear oracle
  // on the same values exactly; and the fast path must match it (fp32 sums of exact products).
  const int64_t N = 3, IC = 5, OC = 4;
  std::vector<float> inp(N * IC), w(OC * IC), dout(N * OC), bias(OC);
  for (size_t i = 0; i < inp.size(); ++i) inp[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
  for (size_t i = 0; i < dout.size(); ++i) dout[i] = static_cast<float>(static_cast<int>(i % 3) - 1);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.5f * static_cast<float>(i);
  std::vector<uint16_t> inp16(inp.size()), w16(w.size()), dout16(dout.size());
  FloatToBf16(inp.data(), inp16.data(), inp.size());
  FloatToBf16(w.data(), w16.data(), w.size());
  FloatToBf16(dout.data(), dout16.data(), dout.size());
  std::vector<float> want(N * OC), want_dinp(N * IC, 1.0f), want_dw(OC * IC, -1.0f),
      want_db(OC, 2.0f);
  ref::LinearForward(want.data(), inp.data(), w.data(), bias.data(), N, IC, OC);
  ref::LinearBackward(want_dinp.data(), want_dw.data(), want_db.data(), dout.data(), inp.data(),
                      w.data(), N, IC, OC);
  for (bool fast : {false, true}) {
    SCOPED_TRACE(fast ? "fast" : "ref");
    std::vector<float> out(N * OC, kNaN), dinp(N * IC, 1.0f), dw(OC * IC, -1.0f), db(OC, 2.0f);
    (fast ? LinearForwardBf16 : ref::LinearForwardBf16)(out.data(), inp16.data(), w16.data(),
                                                        bias.data(), N, IC, OC);
    (fast ? LinearBackwardBf16 : ref::LinearBackwardBf16)(dinp.data(), dw.data(), db.data(),
                                                          dout.data(), dout16.data(),
                                                          inp16.data(), w16.data(), N, IC, OC);
    EXPECT_EQ(out, want);
    EXPECT_EQ(dinp, want_dinp);
    EXPECT_EQ(dw, want_dw);
    EXPECT_EQ(db, want_db);
  }
}

TEST(MatmulBf16Test, ConcurrentCallersKeepTheirOwnPrimitives) {
  // Ranks run as threads in tests: two threads multiplying different shapes at once must both
  // get the oracle's answer.
  auto work = [](int64_t M, uint64_t seed, bool* ok) {
    testing::TestRng rng(seed);
    const auto a = RandomBf16(rng, M, 96, 0), b = RandomBf16(rng, 96, 80, 0);
    std::vector<float> fast(M * 80), want(M * 80);
    for (int rep = 0; rep < 20; ++rep) {
      GemmBf16(false, false, M, 80, 96, a.data(), 96, b.data(), 80, 0.0f, fast.data(), 80);
    }
    ref::GemmBf16(false, false, M, 80, 96, a.data(), 96, b.data(), 80, 0.0f, want.data(), 80);
    *ok = true;
    for (size_t i = 0; i < fast.size(); ++i) *ok = *ok && std::fabs(fast[i] - want[i]) < 1e-3;
  };
  bool ok1 = false, ok2 = false;
  std::thread t1(work, 33, 1, &ok1), t2(work, 47, 2, &ok2);
  t1.join();
  t2.join();
  EXPECT_TRUE(ok1);
  EXPECT_TRUE(ok2);
}

}  // namespace
}  // namespace accel::kernels
