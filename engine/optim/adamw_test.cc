#include "engine/optim/adamw.h"

#include <cmath>
#include <vector>

#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::optim {
namespace {

model::ModelLayout Layout() {
  auto layout = model::ModelLayout::Create(model::Gpt2Config{"t", 2, 2, 8, 20, 10});
  EXPECT_TRUE(layout.ok());
  return std::move(*layout);
}

TEST(AdamWTest, DecayRangesFollowTheParamSpecs) {
  model::ModelLayout layout = Layout();
  auto opt = AdamW::Create(layout, 0, layout.num_params(), {});
  ASSERT_TRUE(opt.ok());
  // Every element is covered exactly once, ranges are merged, and each agrees with its spec.
  int64_t covered = 0;
  for (size_t i = 0; i < opt->ranges().size(); ++i) {
    const auto& r = opt->ranges()[i];
    EXPECT_EQ(r.begin, covered);
    covered = r.end;
    if (i > 0) EXPECT_NE(r.decay, opt->ranges()[i - 1].decay);  // merged
    for (const LayoutEntry& e : layout.flat().entries()) {
      if (e.offset >= r.begin && e.offset < r.end) {
        EXPECT_EQ(e.shape.size() >= 2, r.decay) << e.name;
      }
    }
  }
  EXPECT_EQ(covered, layout.num_params());
}

TEST(AdamWTest, WeightDecayOnlyTouchesMatrices) {
  model::ModelLayout layout = Layout();
  AdamWConfig config;
  config.weight_decay = 0.5f;
  auto opt = AdamW::Create(layout, 0, layout.num_params(), config);
  ASSERT_TRUE(opt.ok());
  std::vector<float> params(layout.num_params(), 1.0f), grads(layout.num_params(), 0.0f);
  ASSERT_TRUE(opt->Step(params.data(), grads.data(), 0.1f).ok());
  // Zero gradient: the only change is p *= 1 - lr·wd on decayed tensors.
  EXPECT_FLOAT_EQ(params[layout.flat().Find("h.0.mlp.c_fc.weight")->offset], 0.95f);
  EXPECT_FLOAT_EQ(params[layout.flat().Find("wte.weight")->offset], 0.95f);
  EXPECT_FLOAT_EQ(params[layout.flat().Find("h.0.mlp.c_fc.bias")->offset], 1.0f);
  EXPECT_FLOAT_EQ(params[layout.flat().Find("ln_f.weight")->offset], 1.0f);
  EXPECT_EQ(opt->step(), 1);
}

TEST(AdamWTest, AShardUpdatesExactlyLikeItsSliceOfTheWhole) {
  model::ModelLayout layout = Layout();
  const int64_t n = layout.num_params();
  AdamWConfig config;
  config.weight_decay = 0.1f;
  testing::TestRng rng(1);
  std::vector<float> full = rng.NormalVector(n), shard_params = full;
  auto whole = AdamW::Create(layout, 0, n, config);
  const int64_t begin = n / 3, end = 2 * n / 3 + 5;
  auto shard = AdamW::Create(layout, begin, end, config);
  ASSERT_TRUE(whole.ok() && shard.ok());
  for (int step = 0; step < 3; ++step) {
    std::vector<float> grads = rng.NormalVector(n);
    ASSERT_TRUE(whole->Step(full.data(), grads.data(), 1e-2f, 0.7f).ok());
    ASSERT_TRUE(shard->Step(shard_params.data() + begin, grads.data() + begin, 1e-2f, 0.7f).ok());
  }
  for (int64_t i = begin; i < end; ++i) ASSERT_EQ(full[i], shard_params[i]) << i;
}

TEST(AdamWTest, BiasCorrectionFalseReachesTheKernel) {
  // One step from zero moments, no decay: m = (1-b1)·g, v = (1-b2)·g², and the update is
  // lr·m/(sqrt(v)+eps) uncorrected (about 3.16·lr for b1 = 0.9, b2 = 0.999), lr corrected.
  model::ModelLayout layout = Layout();
  const int64_t n = layout.num_params();
  for (bool correct : {true, false}) {
    AdamWConfig config;
    config.bias_correction = correct;
    auto opt = AdamW::Create(layout, 0, n, config);
    ASSERT_TRUE(opt.ok());
    std::vector<float> params(n, 0.0f), grads(n, 0.5f);
    const float lr = 1e-3f;
    ASSERT_TRUE(opt->Step(params.data(), grads.data(), lr).ok());
    const double b1 = config.beta1, b2 = config.beta2, eps = config.eps;
    const double m = (1 - b1) * 0.5, v = (1 - b2) * 0.25;
    const double want = correct ? -lr * (m / (1 - b1)) / (std::sqrt(v / (1 - b2)) + eps)
                                : -lr * m / (std::sqrt(v) + eps);
    EXPECT_NEAR(params[0], want, 1e-6 * std::fabs(want)) << "bias_correction=" << correct;
    EXPECT_NEAR(params[n - 1], want, 1e-6 * std::fabs(want)) << "bias_correction=" << correct;
  }
}

TEST(AdamWTest, RejectsBadHyperparameters) {
  model::ModelLayout layout = Layout();
  AdamWConfig bad_beta;
  bad_beta.beta2 = 1.0f;
  EXPECT_EQ(AdamW::Create(layout, 0, 10, bad_beta).status().code(),
            absl::StatusCode::kInvalidArgument);
  AdamWConfig bad_eps;
  bad_eps.eps = 0;
  EXPECT_FALSE(AdamW::Create(layout, 0, 10, bad_eps).ok());
  EXPECT_FALSE(AdamW::Create(layout, 10, 5, {}).ok());
}

TEST(AdamWTest, StateIsChargedAsOptimizerState) {
  model::ModelLayout layout = Layout();
  MemoryLedger ledger;
  auto opt = AdamW::Create(layout, 0, 100, {}, MemoryPool::kHost, &ledger);
  ASSERT_TRUE(opt.ok());
  EXPECT_EQ(ledger.Get(MemoryPool::kHost, MemoryCategory::kOptimizerState).current, 800);
}

}  // namespace
}  // namespace accel::optim
