// Fused softmax + cross-entropy against kernels::ref, including in place (dlogits == logits).
#include <cstdint>
#include <vector>

#include "engine/kernels/cross_entropy.h"
#include "engine/kernels/cuda/kernels.h"
#include "engine/kernels/cuda/test_util.h"
#include "engine/testing/matchers.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::kernels::cuda {
namespace {

using ::accel::cuda::testing::DeviceArray;
using ::accel::cuda::testing::DeviceOk;
using ::accel::testing::AllClose;
using ::accel::testing::TestRng;

struct Case {
  int64_t N, V;
};
// V = 50257 is GPT-2's vocabulary (not a multiple of the block size); 1 and 33 exercise
// blocks narrower than a thousand threads.
constexpr Case kCases[] = {{1, 1}, {3, 33}, {17, 1000}, {5, 50257}};

TEST(CudaCrossEntropyTest, ForwardAndBackwardMatchRef) {
  ACCEL_SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "N=" << c.N << " V=" << c.V << " in_place=" << in_place);
      TestRng rng(c.N * 7 + c.V);
      const std::vector<float> logits = rng.NormalVector(c.N * c.V, 0.0f, 4.0f);
      const std::vector<int32_t> targets = rng.IntVector(c.N, 0, static_cast<int32_t>(c.V));
      const float dloss = 1.0f / static_cast<float>(c.N);
      std::vector<float> losses(c.N), dlogits(c.N * c.V);
      ref::SoftmaxCrossEntropyBackward(dlogits.data(), losses.data(), logits.data(),
                                       targets.data(), c.N, c.V, dloss);

      DeviceArray<float> d_logits(logits), d_losses(c.N), d_dlogits(c.N * c.V);
      DeviceArray<int32_t> d_targets(targets);
      ASSERT_TRUE(SoftmaxCrossEntropyForward(d_losses.get(), d_logits.get(), d_targets.get(), c.N,
                                             c.V, nullptr)
                      .ok());
      ASSERT_TRUE(DeviceOk());
      EXPECT_TRUE(AllClose(d_losses.Download(), losses, 1e-5, 1e-5));

      float* out = in_place ? d_logits.get() : d_dlogits.get();
      ASSERT_TRUE(SoftmaxCrossEntropyBackward(out, d_losses.get(), d_logits.get(),
                                              d_targets.get(), c.N, c.V, dloss, nullptr)
                      .ok());
      ASSERT_TRUE(DeviceOk());
      EXPECT_TRUE(AllClose(d_losses.Download(), losses, 1e-5, 1e-5));
      const std::vector<float> got = in_place ? d_logits.Download() : d_dlogits.Download();
      EXPECT_TRUE(AllClose(got, dlogits, 1e-7, 1e-4));
    }
  }
}

// Targets of kIgnoreIndex (masked positions) give loss 0 and a zero gradient row, as the
// reference does; the other rows are unchanged.
TEST(CudaCrossEntropyTest, IgnoredTargetsMatchRef) {
  ACCEL_SKIP_WITHOUT_GPU();
  const int64_t N = 6, V = 1000;
  TestRng rng(77);
  const std::vector<float> logits = rng.NormalVector(N * V, 0.0f, 4.0f);
  std::vector<int32_t> targets = rng.IntVector(N, 0, static_cast<int32_t>(V));
  targets[0] = targets[3] = targets[4] = kIgnoreIndex;
  const float dloss = 1.0f / 3.0f;
  std::vector<float> losses(N), dlogits(N * V);
  ref::SoftmaxCrossEntropyBackward(dlogits.data(), losses.data(), logits.data(), targets.data(), N,
                                   V, dloss);
  DeviceArray<float> d_logits(logits), d_losses(N);
  DeviceArray<int32_t> d_targets(targets);
  ASSERT_TRUE(
      SoftmaxCrossEntropyForward(d_losses.get(), d_logits.get(), d_targets.get(), N, V, nullptr)
          .ok());
  ASSERT_TRUE(DeviceOk());
  EXPECT_TRUE(AllClose(d_losses.Download(), losses, 1e-5, 1e-5));
  ASSERT_TRUE(SoftmaxCrossEntropyBackward(d_logits.get(), d_losses.get(), d_logits.get(),
                                          d_targets.get(), N, V, dloss, nullptr)
                  .ok());
  ASSERT_TRUE(DeviceOk());
  const std::vector<float> got = d_logits.Download();
  EXPECT_TRUE(AllClose(got, dlogits, 1e-7, 1e-4));
  for (int64_t i : {0, 3, 4}) {
    EXPECT_EQ(d_losses.Download()[i], 0.0f);
    for (int64_t j = 0; j < V; ++j) ASSERT_EQ(got[i * V + j], 0.0f) << "row " << i;
  }
}

}  // namespace
}  // namespace accel::kernels::cuda
