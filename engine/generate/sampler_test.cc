#include "engine/generate/sampler.h"

#include <map>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::generate {
namespace {

using ::testing::HasSubstr;

const std::vector<float> kLogits = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f, 0.0f};

TEST(SamplerTest, GreedyIsTheFirstArgMax) {
  auto s = Sampler::Create({});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->Next(kLogits.data(), 6), 1);  // 1 and 3 tie: the first, as torch.argmax
}

TEST(SamplerTest, SameSeedSameTokensOtherSeedOtherTokens) {
  auto draw = [](uint64_t seed) {
    auto s = Sampler::Create({.temperature = 1.5, .seed = seed});
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s->Next(kLogits.data(), 6));
    return out;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

TEST(SamplerTest, FollowsTheTemperedSoftmax) {
  auto s = Sampler::Create({.temperature = 1.0, .seed = 1});
  std::map<int32_t, int> counts;
  const int n = 40000;
  for (int i = 0; i < n; ++i) ++counts[s->Next(kLogits.data(), 6)];
  double z = 0;
  for (float l : kLogits) z += std::exp(l);
  for (int v = 0; v < 6; ++v) {
    EXPECT_NEAR(counts[v] / double(n), std::exp(kLogits[v]) / z, 0.01) << v;
  }
}

TEST(SamplerTest, TopKAndTopPKeepOnlyTheLargest) {
  // top_k 2: only tokens 1 and 3 (the two 2.0s); top_p 0.5: the mass of {1, 3} is ~0.64 of
  // the whole, and 1 alone ~0.32 < 0.5, so again {1, 3}.
  for (SamplingOptions o : {SamplingOptions{.temperature = 1, .top_k = 2, .seed = 3},
                            SamplingOptions{.temperature = 1, .top_p = 0.5, .seed = 3}}) {
    auto s = Sampler::Create(o);
    std::map<int32_t, int> counts;
    for (int i = 0; i < 2000; ++i) ++counts[s->Next(kLogits.data(), 6)];
    EXPECT_EQ(counts.size(), 2u);
    EXPECT_GT(counts[1], 800);
    EXPECT_GT(counts[3], 800);
  }
  auto k1 = Sampler::Create({.temperature = 5, .top_k = 1, .seed = 3});
  auto p0 = Sampler::Create({.temperature = 5, .top_p = 1e-6, .seed = 3});
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(k1->Next(kLogits.data(), 6), 1);
    EXPECT_EQ(p0->Next(kLogits.data(), 6), 1);
  }
}

TEST(SamplerTest, RefusesBadOptionsNamingTheFlag) {
  EXPECT_THAT(Sampler::Create({.temperature = -1}).status().message(),
              HasSubstr("--temperature -1 must be 0 (greedy) or positive"));
  EXPECT_THAT(Sampler::Create({.top_k = -2}).status().message(), HasSubstr("--top-k -2"));
  EXPECT_THAT(Sampler::Create({.top_p = 0}).status().message(),
              HasSubstr("--top-p 0 must be in (0, 1]"));
  EXPECT_THAT(Sampler::Create({.top_p = 1.5}).status().message(), HasSubstr("--top-p 1.5"));
}

}  // namespace
}  // namespace accel::generate
