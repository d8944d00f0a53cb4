// Fast fused softmax cross-entropy against the plain-loop oracle, the oracle's backward against
// central finite differences in double, and exact properties (uniform logits, in place).
#include "engine/kernels/cross_entropy.h"

#include <cmath>
#include <cstdint>
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


struct Shape {
  int64_t N, V;
};
// The last two are above the kernels' single-thread cutoff, so 2 threads really split them;
// 50257 is GPT-2's vocabulary.
constexpr Shape kShapes[] = {{1, 97}, {7, 97}, {5, 1001}, {9, 4099}, {3, 50257}};

TEST(CrossEntropyTest, FastMatchesRefForwardAndBackward) {
  for (const Shape& s : kShapes) {
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(::testing::Message() << "N=" << s.N << " V=" << s.V << " threads=" << threads);
      ScopedThreads scoped(threads);
      TestRng rng(5000 + s.N * 13 + s.V);
      // Offset and spread like real logits; the offset checks the max subtraction.
      const std::vector<float> logits = rng.NormalVector(s.N * s.V, 20.0f, 3.0f);
      const std::vector<int32_t> targets = rng.IntVector(s.N, 0, static_cast<int32_t>(s.V));
      const float dloss = 1.0f / static_cast<float>(s.N);

      std::vector<float> loss_r(s.N), loss_f(s.N);
      ref::SoftmaxCrossEntropyForward(loss_r.data(), logits.data(), targets.data(), s.N, s.V);
      SoftmaxCrossEntropyForward(loss_f.data(), logits.data(), targets.data(), s.N, s.V);
      EXPECT_TRUE(AllClose(loss_f, loss_r, 1e-5, 1e-5));

      // dlogits starts as garbage: the backward overwrites, it does not accumulate.
      std::vector<float> dl_r(s.N * s.V, 3.0f), dl_f(s.N * s.V, -3.0f);
      std::vector<float> bl_r(s.N), bl_f(s.N);
      ref::SoftmaxCrossEntropyBackward(dl_r.data(), bl_r.data(), logits.data(), targets.data(), s.N,
                                       s.V, dloss);
      SoftmaxCrossEntropyBackward(dl_f.data(), bl_f.data(), logits.data(), targets.data(), s.N, s.V,
                                  dloss);
      EXPECT_TRUE(AllClose(bl_r, loss_r, 0.0, 1e-6));
      EXPECT_TRUE(AllClose(bl_f, loss_f, 0.0, 1e-6));
      // Entries are probabilities times dloss: compare each against the row's scale (dloss).
      EXPECT_TRUE(AllClose(dl_f, dl_r, 1e-5 * dloss, 1e-5));
      for (int64_t i = 0; i < s.N; ++i) {  // each row of dlogits sums to 0 (Σp = 1)
        double sum = 0;
        for (int64_t j = 0; j < s.V; ++j) sum += dl_f[i * s.V + j];
        EXPECT_NEAR(sum, 0.0, 1e-5 * dloss) << "row " << i;
      }
    }
  }
}

// Σ_i dloss * loss_i in double, written independently of the kernels.
double TotalLossDouble(const std::vector<double>& logits, const std::vector<int32_t>& targets,
                       int64_t N, int64_t V, double dloss) {
  double total = 0;
  for (int64_t i = 0; i < N; ++i) {
    double z = 0;
    for (int64_t j = 0; j < V; ++j) z += std::exp(logits[i * V + j]);
    total += dloss * (std::log(z) - logits[i * V + targets[i]]);
  }
  return total;
}

TEST(CrossEntropyTest, RefBackwardMatchesFiniteDifferences) {
  const int64_t N = 3, V = 7;
  const double dloss = 0.7;
  TestRng rng(9);
  const std::vector<float> logits = rng.NormalVector(N * V, 0.0f, 2.0f);
  const std::vector<int32_t> targets = {0, 6, 3};
  std::vector<float> dlogits(N * V), losses(N);
  ref::SoftmaxCrossEntropyBackward(dlogits.data(), losses.data(), logits.data(), targets.data(), N,
                                   V, static_cast<float>(dloss));

  std::vector<double> x(logits.begin(), logits.end());
  std::vector<float> numeric(x.size());
  const double eps = 1e-6;
  for (size_t k = 0; k < x.size(); ++k) {
    const double saved = x[k];
    x[k] = saved + eps;
    const double up = TotalLossDouble(x, targets, N, V, dloss);
    x[k] = saved - eps;
    const double down = TotalLossDouble(x, targets, N, V, dloss);
    x[k] = saved;
    numeric[k] = static_cast<float>((up - down) / (2 * eps));
  }
  EXPECT_TRUE(AllCloseToScale(dlogits, numeric, 1e-5));
  std::vector<float> expected_losses(N);
  for (int64_t i = 0; i < N; ++i) {
    std::vector<double> row(x.begin() + i * V, x.begin() + (i + 1) * V);
    expected_losses[i] = static_cast<float>(TotalLossDouble(row, {targets[i]}, 1, V, 1.0));
  }
  EXPECT_TRUE(AllClose(losses, expected_losses, 0.0, 1e-6));
}

using ForwardFn = void (*)(float*, const float*, const int32_t*, int64_t, int64_t);
using BackwardFn = void (*)(float*, float*, const float*, const int32_t*, int64_t, int64_t, float);

TEST(CrossEntropyTest, UniformLogitsGiveLogV) {
  for (int64_t V : {97, 1001, 50257}) {
    const int64_t N = 4;
    const std::vector<float> logits(N * V, 12.5f);
    const std::vector<int32_t> targets = {0, 1, static_cast<int32_t>(V - 1), 5};
    for (auto [fwd, bwd] : {std::pair<ForwardFn, BackwardFn>{&ref::SoftmaxCrossEntropyForward,
                                                             &ref::SoftmaxCrossEntropyBackward},
                            {&SoftmaxCrossEntropyForward, &SoftmaxCrossEntropyBackward}}) {
      std::vector<float> losses(N);
      fwd(losses.data(), logits.data(), targets.data(), N, V);
      for (float l : losses) EXPECT_NEAR(l, std::log(static_cast<double>(V)), 2e-6 * std::log(V));
      std::vector<float> dlogits(N * V), blosses(N);
      bwd(dlogits.data(), blosses.data(), logits.data(), targets.data(), N, V, 2.0f);
      const float p = 2.0f / static_cast<float>(V);
      for (int64_t i = 0; i < N; ++i) {
        for (int64_t j = 0; j < V; ++j) {
          const float expected = j == targets[i] ? p - 2.0f : p;
          ASSERT_NEAR(dlogits[i * V + j], expected, 1e-6f * 2.0f) << "i=" << i << " j=" << j;
        }
      }
    }
  }
}

TEST(CrossEntropyTest, InPlaceBackwardEqualsOutOfPlace) {
  const int64_t N = 6, V = 4099;
  for (int threads : kThreadCounts) {
    ScopedThreads scoped(threads);
    TestRng rng(21);
    const std::vector<float> logits = rng.NormalVector(N * V, -4.0f, 5.0f);
    const std::vector<int32_t> targets = rng.IntVector(N, 0, static_cast<int32_t>(V));
    for (BackwardFn bwd : {BackwardFn{&ref::SoftmaxCrossEntropyBackward},
                           BackwardFn{&SoftmaxCrossEntropyBackward}}) {
      std::vector<float> out_of_place(N * V), losses(N), in_place = logits, losses_ip(N);
      bwd(out_of_place.data(), losses.data(), logits.data(), targets.data(), N, V, 0.25f);
      bwd(in_place.data(), losses_ip.data(), in_place.data(), targets.data(), N, V, 0.25f);
      EXPECT_EQ(in_place, out_of_place);
      EXPECT_EQ(losses_ip, losses);
    }
  }
}

TEST(CrossEntropyTest, ExtremeLogitsStayFinite) {
  // One logit dominates by 1e4: softmax is one-hot, no overflow or NaN.
  const int64_t N = 2, V = 101;
  std::vector<float> logits(N * V, -5000.0f);
  logits[3] = 5000.0f;       // row 0: target has it, loss 0
  logits[V + 50] = 5000.0f;  // row 1: target does not, loss 1e4
  const std::vector<int32_t> targets = {3, 7};
  for (auto [fwd, bwd] : {std::pair<ForwardFn, BackwardFn>{&ref::SoftmaxCrossEntropyForward,
                                                           &ref::SoftmaxCrossEntropyBackward},
                          {&SoftmaxCrossEntropyForward, &SoftmaxCrossEntropyBackward}}) {
    std::vector<float> losses(N), dlogits(N * V), blosses(N);
    fwd(losses.data(), logits.data(), targets.data(), N, V);
    EXPECT_EQ(losses[0], 0.0f);
    EXPECT_EQ(losses[1], 10000.0f);
    bwd(dlogits.data(), blosses.data(), logits.data(), targets.data(), N, V, 1.0f);
    EXPECT_EQ(dlogits[3], 0.0f);
    EXPECT_EQ(dlogits[V + 50], 1.0f);
    EXPECT_EQ(dlogits[V + 7], -1.0f);
    EXPECT_EQ(dlogits[0], 0.0f);
  }
}

// Masked positions (target kIgnoreIndex): loss 0, a zero gradient row, and their logits are not
// read (NaN there changes nothing). The unmasked rows match a value computed by hand:
// logits (0, ln 3) with target 1 give p = (1/4, 3/4), loss ln(4/3), dlogits dloss·(1/4, -1/4).
TEST(CrossEntropyTest, IgnoredTargetsHandComputed) {
  const int64_t N = 3, V = 2;
  const float nan = std::nanf("");
  const std::vector<float> logits = {nan, nan, 0.0f, std::log(3.0f), nan, nan};
  const std::vector<int32_t> targets = {kIgnoreIndex, 1, kIgnoreIndex};
  EXPECT_EQ(CountLossTargets(targets.data(), N), 1);
  for (auto [fwd, bwd] : {std::pair<ForwardFn, BackwardFn>{&ref::SoftmaxCrossEntropyForward,
                                                           &ref::SoftmaxCrossEntropyBackward},
                          {&SoftmaxCrossEntropyForward, &SoftmaxCrossEntropyBackward}}) {
    std::vector<float> losses(N, 5.0f), dlogits(N * V, 5.0f), blosses(N, 5.0f);
    fwd(losses.data(), logits.data(), targets.data(), N, V);
    EXPECT_EQ(losses[0], 0.0f);
    EXPECT_NEAR(losses[1], std::log(4.0 / 3.0), 1e-6);
    EXPECT_EQ(losses[2], 0.0f);
    bwd(dlogits.data(), blosses.data(), logits.data(), targets.data(), N, V, 0.5f);
    EXPECT_EQ(blosses, losses);
    const std::vector<float> expected = {0.0f, 0.0f, 0.125f, -0.125f, 0.0f, 0.0f};
    EXPECT_TRUE(AllClose(dlogits, expected, 1e-7, 0.0));
  }
}

// Fast against reference with masked rows spread over a batch above the parallel cutoff, in place.
TEST(CrossEntropyTest, IgnoredTargetsFastMatchesRef) {
  const int64_t N = 9, V = 4099;
  for (int threads : kThreadCounts) {
    ScopedThreads scoped(threads);
    TestRng rng(31);
    const std::vector<float> logits = rng.NormalVector(N * V, 2.0f, 3.0f);
    std::vector<int32_t> targets = rng.IntVector(N, 0, static_cast<int32_t>(V));
    for (int64_t i : {0, 4, 5, 8}) targets[i] = kIgnoreIndex;
    const float dloss = 1.0f / static_cast<float>(CountLossTargets(targets.data(), N));
    std::vector<float> loss_r(N), loss_f(N);
    ref::SoftmaxCrossEntropyForward(loss_r.data(), logits.data(), targets.data(), N, V);
    SoftmaxCrossEntropyForward(loss_f.data(), logits.data(), targets.data(), N, V);
    EXPECT_TRUE(AllClose(loss_f, loss_r, 1e-5, 1e-5));
    std::vector<float> dl_r(N * V, 3.0f), dl_f = logits, bl_r(N), bl_f(N);
    ref::SoftmaxCrossEntropyBackward(dl_r.data(), bl_r.data(), logits.data(), targets.data(), N,
                                     V, dloss);
    SoftmaxCrossEntropyBackward(dl_f.data(), bl_f.data(), dl_f.data(), targets.data(), N, V,
                                dloss);
    EXPECT_TRUE(AllClose(dl_f, dl_r, 1e-5 * dloss, 1e-5));
    for (int64_t i : {0, 4, 5, 8}) {
      EXPECT_EQ(loss_f[i], 0.0f);
      for (int64_t j = 0; j < V; ++j) ASSERT_EQ(dl_f[i * V + j], 0.0f) << "row " << i;
    }
  }
}

}  // namespace
}  // namespace accel::kernels
