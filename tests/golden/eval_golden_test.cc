// Evaluation (engine/train/evaluation.h) against float64 PyTorch: the eval loss of the golden
// fixtures' initial weights on held-out tokens (tests/golden/eval_reference.json, written by
// make_eval_reference.py), through Trainer::Evaluate (one rank) at the fixture's (B, T),
// 1e-6 relative. With a loss mask (contract 1: X.mask
// beside X.bin) the mean is over the unmasked targets only.
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/base/env.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/testing/token_shard.h"
#include "engine/data/loss_mask.h"
#include "engine/train/trainer.h"
#include "tests/golden/golden_fixture.h"

namespace accel {
namespace {

nlohmann::json EvalReference() {
  std::ifstream in(std::string(ACCEL_GOLDEN_DIR) + "/eval_reference.json");
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

class EvalGoldenTest : public GoldenFileFixture, public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Load(GetParam() + ".safetensors"));
    ref_ = EvalReference().at(GetParam());
    dir_ = ::testing::TempDir() + "/eval_golden_" + std::to_string(::getpid()) + GetParam();
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
    // The fixture's model and initial weights, as a job would name them.
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/config.json",
                                model::ModelConfigToJson(layout_->config()))
                    .ok());
    checkpoint::SafetensorsWriter w;
    for (const LayoutEntry& e : layout_->flat().entries()) {
      ASSERT_TRUE(w.Add(e.name, DType::kF32, e.shape, params_.data() + e.offset).ok());
    }
    ASSERT_TRUE(w.Write(Env::Default(), dir_ + "/model.safetensors").ok());
    const std::vector<uint32_t> tokens = ref_.at("tokens").get<std::vector<uint32_t>>();
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/eval.bin",
                                testing::TokenShardBytes(tokens))
                    .ok());
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(dir_); }

  train::TrainOptions Options() const {
    train::TrainOptions o;
    o.model_config = dir_ + "/config.json";
    o.init_weights = dir_ + "/model.safetensors";
    o.data = o.eval.data = dir_ + "/eval.bin";
    o.batch = ref_.at("B");
    o.seq = ref_.at("T");
    o.steps = 0;
    return o;
  }

  nlohmann::json ref_;
  std::string dir_;
};

TEST_P(EvalGoldenTest, EvalLossMatchesFloat64Reference) {
  auto trainer = train::Trainer::Create(Options());
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  absl::StatusOr<train::EvalMetrics> e = (*trainer)->Evaluate();
  ASSERT_TRUE(e.ok()) << e.status();
  const double want = ref_.at("eval_loss");
  EXPECT_NEAR(e->loss, want, 1e-6 * want);
  EXPECT_EQ(e->tokens, ref_.at("eval_tokens").get<int64_t>());
  EXPECT_EQ(e->batches, ref_.at("batches").get<int64_t>());
  EXPECT_NEAR(e->perplexity, std::exp(want), 1e-5 * std::exp(want));
}

// The loss mask beside the shard (docs/data.md "Loss mask"): only the targets whose mask is 1
// count.
TEST_P(EvalGoldenTest, MaskedEvalLossMatchesFloat64Reference) {
  const std::vector<uint8_t> mask = ref_.at("mask").get<std::vector<uint8_t>>();
  ASSERT_TRUE(
      WriteFileAtomic(Env::Default(), data::LossMaskPath(dir_ + "/eval.bin"), data::LossMaskBytes(mask))
          .ok());
  auto trainer = train::Trainer::Create(Options());
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  absl::StatusOr<train::EvalMetrics> e = (*trainer)->Evaluate();
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->tokens, ref_.at("eval_tokens_masked").get<int64_t>());
  const double want = ref_.at("eval_loss_masked");
  EXPECT_NEAR(e->loss, want, 1e-6 * want);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EvalGoldenTest, ::testing::Values("gpt2_tiny", "llama_tiny"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace accel
