// Fast embedding against the plain-loop oracle (repeated tokens included), and exact sums for
// the backward, whose gradients are plain additions.
#include "engine/kernels/embedding.h"

#include <cstdint>
#include <vector>

#include "engine/kernels/scoped_threads.h"
#include "engine/testing/matchers.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels {
namespace {

using ::accel::testing::AllCloseToScale;
using ::accel::testing::TestRng;

constexpr int kThreadCounts[] = {1, 2};


struct Shape {
  int64_t B, T, C, V;
};
// Small vocabularies make tokens repeat; the last shape is above the kernels' single-thread
// cutoff, so 2 threads really split it.
constexpr Shape kShapes[] = {
    {1, 1, 4, 3}, {2, 5, 12, 3}, {3, 17, 64, 97}, {2, 64, 96, 5}, {3, 37, 300, 11}};

TEST(EmbeddingTest, FastMatchesRefForwardAndBackward) {
  for (const Shape& s : kShapes) {
    for (int threads : kThreadCounts) {
      SCOPED_TRACE(::testing::Message() << "B=" << s.B << " T=" << s.T << " C=" << s.C
                                        << " V=" << s.V << " threads=" << threads);
      ScopedThreads scoped(threads);
      TestRng rng(6000 + s.B * 17 + s.T * 3 + s.C);
      const int64_t max_t = s.T + 2;  // wpe has more rows than are used
      const std::vector<float> wte = rng.NormalVector(s.V * s.C);
      const std::vector<float> wpe = rng.NormalVector(max_t * s.C);
      const std::vector<int32_t> tokens = rng.IntVector(s.B * s.T, 0, static_cast<int32_t>(s.V));

      std::vector<float> out_r(s.B * s.T * s.C), out_f(s.B * s.T * s.C);
      ref::EmbeddingForward(out_r.data(), tokens.data(), wte.data(), wpe.data(), s.B, s.T, s.C);
      EmbeddingForward(out_f.data(), tokens.data(), wte.data(), wpe.data(), s.B, s.T, s.C);
      EXPECT_EQ(out_f, out_r);  // one addition per element: exact

      const std::vector<float> dout = rng.NormalVector(s.B * s.T * s.C);
      const std::vector<float> dwte0 = rng.NormalVector(s.V * s.C);  // += is checked
      const std::vector<float> dwpe0 = rng.NormalVector(max_t * s.C);
      std::vector<float> dwte_r = dwte0, dwpe_r = dwpe0, dwte_f = dwte0, dwpe_f = dwpe0;
      ref::EmbeddingBackward(dwte_r.data(), dwpe_r.data(), dout.data(), tokens.data(), s.B, s.T,
                             s.C);
      EmbeddingBackward(dwte_f.data(), dwpe_f.data(), dout.data(), tokens.data(), s.B, s.T, s.C);
      EXPECT_TRUE(AllCloseToScale(dwte_f, dwte_r, 1e-6));
      EXPECT_TRUE(AllCloseToScale(dwpe_f, dwpe_r, 1e-6));

      // Against sums in double from first principles: dwte[v] = dwte0[v] + Σ over positions
      // holding v; dwpe[t] = dwpe0[t] + Σ_b dout[b, t]; rows t >= T untouched.
      std::vector<double> dwte_d(dwte0.begin(), dwte0.end()), dwpe_d(dwpe0.begin(), dwpe0.end());
      for (int64_t bt = 0; bt < s.B * s.T; ++bt) {
        for (int64_t c = 0; c < s.C; ++c) {
          dwte_d[tokens[bt] * s.C + c] += dout[bt * s.C + c];
          dwpe_d[(bt % s.T) * s.C + c] += dout[bt * s.C + c];
        }
      }
      EXPECT_TRUE(AllCloseToScale(dwte_r, std::vector<float>(dwte_d.begin(), dwte_d.end()), 1e-6));
      EXPECT_TRUE(AllCloseToScale(dwpe_r, std::vector<float>(dwpe_d.begin(), dwpe_d.end()), 1e-6));
      for (int64_t i = s.T * s.C; i < max_t * s.C; ++i) {
        EXPECT_EQ(dwpe_f[i], dwpe0[i]);
        EXPECT_EQ(dwpe_r[i], dwpe0[i]);
      }
    }
  }
}

using ForwardFn = void (*)(float*, const int32_t*, const float*, const float*, int64_t, int64_t,
                           int64_t);
using BackwardFn = void (*)(float*, float*, const float*, const int32_t*, int64_t, int64_t,
                            int64_t);

TEST(EmbeddingTest, HandCheckedCase) {
  // B = 1, T = 3, C = 2, V = 4; token 2 appears twice.
  const std::vector<float> wte = {0, 1, 10, 11, 20, 21, 30, 31};
  const std::vector<float> wpe = {100, 200, 300, 400, 500, 600};
  const std::vector<int32_t> tokens = {2, 0, 2};
  const std::vector<float> dout = {1, 2, 3, 4, 5, 6};
  for (auto [fwd, bwd] :
       {std::pair<ForwardFn, BackwardFn>{&ref::EmbeddingForward, &ref::EmbeddingBackward},
        {&EmbeddingForward, &EmbeddingBackward}}) {
    std::vector<float> out(6);
    fwd(out.data(), tokens.data(), wte.data(), wpe.data(), 1, 3, 2);
    EXPECT_EQ(out, (std::vector<float>{120, 221, 300, 401, 520, 621}));
    std::vector<float> dwte(8, 0.5f), dwpe(6, -1.0f);
    bwd(dwte.data(), dwpe.data(), dout.data(), tokens.data(), 1, 3, 2);
    EXPECT_EQ(dwte, (std::vector<float>{3.5f, 4.5f, 0.5f, 0.5f, 6.5f, 8.5f, 0.5f, 0.5f}));
    EXPECT_EQ(dwpe, (std::vector<float>{0, 1, 2, 3, 4, 5}));
  }
}

}  // namespace
}  // namespace accel::kernels
