// The trainer with a loss mask beside its data (docs/data.md "Loss mask"): a mask that masks
// nothing changes no bit; a step whose targets are all masked has zero loss and gradients, is
// not skipped, and leaves the weights alone when nothing else moves them; metrics carry the
// count of targets that counted.
#include <string>
#include <vector>

#include "engine/data/loss_mask.h"
#include "engine/train/repetitive_text_test_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::train {
namespace {

using ::testing::HasSubstr;

class MaskedStepTest : public RepetitiveTextTest {
 protected:
  // data_'s mask: every byte `value`.
  void WriteMask(uint8_t value) {
    auto text = ReadFileToString(Env::Default(), data_);
    ASSERT_TRUE(text.ok());
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), data::LossMaskPath(data_),
                                data::LossMaskBytes(std::vector<uint8_t>(text->size(), value)))
                    .ok());
  }
  struct Run {
    std::vector<StepMetrics> steps;
    std::vector<float> initial, final;
  };
  Run Train(TrainOptions o) {
    Run run;
    auto trainer = Trainer::Create(o);
    EXPECT_TRUE(trainer.ok()) << trainer.status();
    if (!trainer.ok()) return run;
    run.initial = *(*trainer)->GatherParams();
    EXPECT_TRUE((*trainer)->Train([&](const StepMetrics& m) {
      run.steps.push_back(m);
      return absl::OkStatus();
    }).ok());
    run.final = *(*trainer)->GatherParams();
    return run;
  }
  TrainOptions Short() {
    TrainOptions o = Options();
    o.steps = 3;
    o.grad_accum = 2;
    return o;
  }
};

TEST_F(MaskedStepTest, AMaskOfOnesChangesNoBit) {
  const Run plain = Train(Short());
  WriteMask(1);
  const Run ones = Train(Short());
  ASSERT_EQ(ones.steps.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ones.steps[i].loss, plain.steps[i].loss);
    EXPECT_EQ(ones.steps[i].grad_norm, plain.steps[i].grad_norm);
    EXPECT_EQ(ones.steps[i].loss_targets, 2 * 4 * 32);
    EXPECT_FALSE(plain.steps[i].loss_targets.has_value());
  }
  EXPECT_EQ(ones.final, plain.final);
}

TEST_F(MaskedStepTest, AllMaskedStepHasZeroLossAndGradientsAndStillSteps) {
  WriteMask(0);
  TrainOptions o = Short();
  o.adamw.weight_decay = 0;  // then a zero gradient moves nothing
  const Run run = Train(o);
  ASSERT_EQ(run.steps.size(), 3u);
  for (const StepMetrics& m : run.steps) {
    EXPECT_EQ(m.loss, 0.0f);
    EXPECT_EQ(m.grad_norm, 0.0);
    EXPECT_EQ(m.loss_targets, 0);
    EXPECT_FALSE(m.skipped);
    EXPECT_EQ(m.tokens, 2 * 4 * 32);
  }
  EXPECT_EQ(run.final, run.initial);
  // With weight decay the optimizer's step shows: the weights shrink.
  o.adamw.weight_decay = 0.1f;
  const Run decayed = Train(o);
  EXPECT_NE(decayed.final, decayed.initial);
}

TEST_F(MaskedStepTest, MetricsJsonCarriesTheTargetCount) {
  StepMetrics m;
  EXPECT_EQ(StepMetricsToJson(m).find("loss_targets"), std::string::npos);
  m.loss_targets = 17;
  EXPECT_THAT(StepMetricsToJson(m), HasSubstr("\"loss_targets\":17"));
}

}  // namespace
}  // namespace accel::train
