// Fast causal softmax (forward and backward) against the plain-loop oracle in double, over row
// lengths that leave every vector tail (AVX2's 8 and AVX-512's 16 lanes), row blocks that do not
// start at 0, sliding windows, and extreme scores; and exact properties of the rows.
#include "engine/kernels/softmax.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/testing/matchers.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels {
namespace {

using ::accel::testing::AllClose;
using ::accel::testing::TestRng;

struct Block {
  int64_t T, r0, r1, window;
};
// Row lengths 1 .. 257 cover every remainder modulo 8 and 16; r0 > 0 is how attention calls it
// (blocks of 64 rows); windows shorter and longer than the rows.
constexpr Block kBlocks[] = {{1, 0, 1, 0},     {7, 0, 7, 0},      {17, 3, 17, 0},
                             {70, 64, 70, 0},  {150, 0, 64, 5},   {150, 128, 150, 33},
                             {257, 192, 257, 0}, {40, 0, 40, 100}};

TEST(SoftmaxTest, FastMatchesRefForwardAndBackward) {
  for (const Block& b : kBlocks) {
    SCOPED_TRACE(::testing::Message() << "T=" << b.T << " rows=[" << b.r0 << ", " << b.r1
                                      << ") window=" << b.window);
    TestRng rng(4000 + b.T * 7 + b.r0 + b.window);
    const int64_t n = (b.r1 - b.r0) * b.T;
    // Scale 4: far from uniform, with entries near exp's underflow after the max is subtracted.
    const std::vector<float> scores = rng.NormalVector(n, 0.0f, 4.0f);
    std::vector<float> att_r = scores, att_f = scores;
    ref::CausalSoftmaxForward(att_r.data(), b.T, b.r0, b.r1, b.window);
    CausalSoftmaxForward(att_f.data(), b.T, b.r0, b.r1, b.window);
    EXPECT_TRUE(AllClose(att_f, att_r, 1e-7, 1e-5));

    // Columns from r1 on must stay as they were: fill them with a marker.
    std::vector<float> datt = rng.NormalVector(n);
    for (int64_t t = b.r0; t < b.r1; ++t) {
      for (int64_t j = b.r1; j < b.T; ++j) datt[(t - b.r0) * b.T + j] = 42.0f;
    }
    std::vector<float> ds_r = datt, ds_f = datt;
    ref::CausalSoftmaxBackward(ds_r.data(), att_r.data(), b.T, b.r0, b.r1, 0.125f);
    CausalSoftmaxBackward(ds_f.data(), att_r.data(), b.T, b.r0, b.r1, 0.125f);
    EXPECT_TRUE(AllClose(ds_f, ds_r, 1e-7, 1e-5));
    for (int64_t t = b.r0; t < b.r1; ++t) {
      for (int64_t j = b.r1; j < b.T; ++j) ASSERT_EQ(ds_f[(t - b.r0) * b.T + j], 42.0f);
    }
  }
}

TEST(SoftmaxTest, RowsAreWindowedDistributions) {
  const int64_t T = 37, window = 9;
  TestRng rng(4100);
  std::vector<float> att = rng.NormalVector(T * T, 0.0f, 3.0f);
  CausalSoftmaxForward(att.data(), T, 0, T, window);
  for (int64_t t = 0; t < T; ++t) {
    double sum = 0.0;
    for (int64_t j = 0; j < T; ++j) {
      const float p = att[t * T + j];
      if (j > t || j < t - window + 1) {
        EXPECT_EQ(p, 0.0f) << "t=" << t << " j=" << j;
      } else {
        EXPECT_GT(p, 0.0f) << "t=" << t << " j=" << j;
      }
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-6) << "t=" << t;
  }
}

TEST(SoftmaxTest, ExtremeScoresStayFinite) {
  // A huge spread: exp of (score - max) underflows to 0 for all but the largest entries.
  const int64_t T = 19;
  std::vector<float> att(T * T);
  for (int64_t i = 0; i < T * T; ++i) att[i] = (i % 3 == 0 ? 1e4f : -1e4f) * (i % 7 + 1);
  std::vector<float> ref_att = att;
  CausalSoftmaxForward(att.data(), T, 0, T, 0);
  ref::CausalSoftmaxForward(ref_att.data(), T, 0, T, 0);
  for (float p : att) ASSERT_TRUE(std::isfinite(p));
  EXPECT_TRUE(AllClose(att, ref_att, 1e-7, 1e-6));
}

}  // namespace
}  // namespace accel::kernels
