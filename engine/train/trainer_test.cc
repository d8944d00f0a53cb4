#include "engine/train/trainer.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/checkpoint/hf_shards.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/testing/token_shard.h"
#include "engine/train/repetitive_text_test_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::train {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

using TrainerTest = RepetitiveTextTest;

TEST_F(TrainerTest, LossFallsOnRepetitiveText) {
  auto trainer = Trainer::Create(Options());
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  std::vector<StepMetrics> seen;
  ASSERT_TRUE((*trainer)->Train([&](const StepMetrics& m) {
    seen.push_back(m);
    return absl::OkStatus();
  }).ok());
  ASSERT_EQ(seen.size(), 30u);
  EXPECT_NEAR(seen.front().loss, std::log(256.0), 0.3);
  EXPECT_LT(seen.back().loss, seen.front().loss - 1.5);
  for (const StepMetrics& m : seen) {
    EXPECT_TRUE(std::isfinite(m.grad_norm));
    EXPECT_EQ(m.tokens, 4 * 32);
    EXPECT_GT(m.tokens_per_s, 0);
    EXPECT_FALSE(m.skipped);
  }
  EXPECT_EQ(seen.back().step, 29);
  EXPECT_EQ(seen.back().eta_seconds, 0);
}

// A probe of issue 16: an infinite lr once skipped every step and ended SUCCEEDED. Now the
// fifth non-finite step in a row fails the run, naming the steps and the likely causes.
TEST_F(TrainerTest, ARunThatCannotLearnFails) {
  TrainOptions o = Options();
  o.schedule.base_lr = INFINITY;
  auto trainer = Trainer::Create(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  std::vector<StepMetrics> seen;
  absl::Status s = (*trainer)->Train([&](const StepMetrics& m) {
    seen.push_back(m);
    return absl::OkStatus();
  });
  ASSERT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  ASSERT_GE(seen.size(), 5u);
  ASSERT_LT(seen.size(), 30u);
  const int64_t last = seen.back().step + 1;
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("cannot learn"),
                    HasSubstr(absl::StrCat("steps ", last - 4, " to ", last)),
                    HasSubstr("learning rate")));
  for (size_t i = seen.size() - 5; i < seen.size(); ++i) EXPECT_TRUE(seen[i].skipped);
  // 0 turns the rule off: every step runs (and is skipped).
  o.max_nonfinite_steps = 0;
  auto patient = Trainer::Create(o);
  ASSERT_TRUE(patient.ok());
  EXPECT_TRUE((*patient)->Train([](const StepMetrics&) { return absl::OkStatus(); }).ok());
  EXPECT_EQ((*patient)->step(), o.steps);
}

TEST_F(TrainerTest, AccumulationMatchesOneLargerBatch) {
  // B=2 x 2 micro-batches reads exactly the rows of one B=4 batch (llm.c's window order), so the
  // updates agree to rounding.
  TrainOptions big = Options(), small = Options();
  big.steps = small.steps = 3;
  small.batch = 2;
  small.grad_accum = 2;
  auto a = Trainer::Create(big);
  auto b = Trainer::Create(small);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int s = 0; s < 3; ++s) {
    auto ma = (*a)->TrainStep();
    auto mb = (*b)->TrainStep();
    ASSERT_TRUE(ma.ok() && mb.ok());
    EXPECT_NEAR(ma->loss, mb->loss, 1e-5);
    EXPECT_NEAR(ma->grad_norm, mb->grad_norm, 1e-4 * ma->grad_norm);
  }
  auto pa = (*a)->GatherParams();
  auto pb = (*b)->GatherParams();
  ASSERT_TRUE(pa.ok() && pb.ok());
  double max_diff = 0;
  for (size_t i = 0; i < pa->size(); ++i) {
    max_diff = std::max(max_diff, double(std::fabs((*pa)[i] - (*pb)[i])));
  }
  EXPECT_LT(max_diff, 1e-5);
}

TEST_F(TrainerTest, SavedWeightsReloadExactly) {
  TrainOptions o = Options();
  o.steps = 2;
  auto trainer = Trainer::Create(o);
  ASSERT_TRUE(trainer.ok());
  ASSERT_TRUE((*trainer)->Train(nullptr).ok());
  const std::string path = dir_ + "/model.safetensors";
  ASSERT_TRUE((*trainer)->SaveWeights(path).ok());
  EXPECT_TRUE(Env::Default()->FileExists(dir_ + "/config.json"));

  TrainOptions reload = Options();
  reload.init_weights = path;
  reload.model_config = dir_ + "/config.json";
  auto again = Trainer::Create(reload);
  ASSERT_TRUE(again.ok()) << again.status();
  auto saved = (*trainer)->GatherParams();
  auto loaded = (*again)->GatherParams();
  ASSERT_TRUE(saved.ok() && loaded.ok());
  EXPECT_EQ(*saved, *loaded);

  auto reader = checkpoint::SafetensorsReader::Open(Env::Default(), path);
  ASSERT_TRUE(reader.ok());
  ASSERT_NE((*reader)->Find("h.1.mlp.c_fc.weight"), nullptr);
  EXPECT_EQ((*reader)->Find("h.1.mlp.c_fc.weight")->shape, (std::vector<int64_t>{64, 256}));
}

// --save-final above max_shard_bytes: Hugging Face's sharded form, which the directory reloads.
TEST_F(TrainerTest, SavedWeightsAboveTheShardSizeAreShardedAndReloadExactly) {
  TrainOptions o = Options();
  o.steps = 1;
  auto config = config::ModelConfigOf(Env::Default(), o);
  ASSERT_TRUE(config.ok()) << config.status();
  auto layout = model::ModelLayout::Create(*config);
  ASSERT_TRUE(layout.ok());
  o.max_shard_bytes = layout->num_params() * 4 / 3;
  const int shards =
      static_cast<int>(checkpoint::HfShards(*layout, DType::kF32, *o.max_shard_bytes).size());
  ASSERT_GE(shards, 3);
  auto saver = Trainer::Create(o);
  ASSERT_TRUE(saver.ok());
  ASSERT_TRUE((*saver)->Train(nullptr).ok());
  ASSERT_TRUE(Env::Default()->CreateDirs(dir_ + "/sharded").ok());
  ASSERT_TRUE((*saver)->SaveWeights(dir_ + "/sharded/model.safetensors").ok());
  EXPECT_FALSE(Env::Default()->FileExists(dir_ + "/sharded/model.safetensors"));
  EXPECT_TRUE(Env::Default()->FileExists(dir_ + "/sharded/model.safetensors.index.json"));
  for (int k = 0; k < shards; ++k) {
    EXPECT_TRUE(Env::Default()->FileExists(dir_ + "/sharded/" +
                                           checkpoint::HfShardFileName(k, shards)));
  }

  TrainOptions reload = Options();
  reload.init_weights = dir_ + "/sharded";
  reload.model_config = dir_ + "/sharded/config.json";
  auto again = Trainer::Create(reload);
  ASSERT_TRUE(again.ok()) << again.status();
  auto saved = (*saver)->GatherParams();
  auto loaded = (*again)->GatherParams();
  ASSERT_TRUE(saved.ok() && loaded.ok());
  EXPECT_EQ(*saved, *loaded);
}

TEST_F(TrainerTest, BadInputNamesTheCulprit) {
  TrainOptions missing = Options();
  missing.data = dir_ + "/nope.bin";
  auto a = Trainer::Create(missing);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(a.status().message(), HasSubstr("nope.bin"));

  TrainOptions too_long = Options();
  too_long.seq = 1000;
  EXPECT_THAT(Trainer::Create(too_long).status().message(), HasSubstr("exceeds"));

  TrainOptions bad_batch = Options();
  bad_batch.batch = 0;
  EXPECT_THAT(Trainer::Create(bad_batch).status().message(), HasSubstr("--batch"));

  // A checkpoint for another shape is refused, naming the tensor.
  TrainOptions o = Options();
  o.steps = 0;
  auto small = Trainer::Create(o);
  ASSERT_TRUE(small.ok());
  ASSERT_TRUE((*small)->SaveWeights(dir_ + "/tiny.safetensors").ok());
  TrainOptions mini = Options();
  mini.model = "gpt2-mini";
  mini.init_weights = dir_ + "/tiny.safetensors";
  auto mismatch = Trainer::Create(mini);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_THAT(mismatch.status().message(), HasSubstr("wte.weight"));
}

TEST_F(TrainerTest, TokenIdOutsideTheVocabularyNamesTheFile) {
  // gpt2-tiny has vocab_size 256. A GPT-2 shard with id 300 and a Llama 3 shard with id 128255
  // are both refused in one line naming the file, the largest id and the vocab_size; before
  // the weights are read (the init_weights file does not exist, and is not what is reported).
  std::vector<uint32_t> ids(200, 7);
  for (const auto& [name, magic, big] :
       {std::tuple{"gpt2.bin", data::kTokenShardMagic, uint32_t{300}},
        std::tuple{"llama3.bin", data::kTokenShard32Magic, uint32_t{128255}}}) {
    ids[150] = big;
    const std::string path = dir_ + "/" + name;
    ASSERT_TRUE(
        WriteFileAtomic(Env::Default(), path, accel::testing::TokenShardBytes(ids, magic)).ok());
    TrainOptions o = Options();
    o.data = path;
    o.init_weights = dir_ + "/absent.safetensors";
    auto t = Trainer::Create(o);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message(),
              absl::StrCat("data file ", path, ": token id ", big,
                           " (the largest in the file) is not below the model's vocab_size 256 "
                           "(model gpt2-tiny)"));
  }
  // The largest id the model takes (255) in the wide form trains.
  ids[150] = 255;
  const std::string ok_path = dir_ + "/llama3_ok.bin";
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), ok_path,
                              accel::testing::TokenShardBytes(ids, data::kTokenShard32Magic))
                  .ok());
  TrainOptions o = Options();
  o.data = ok_path;
  o.steps = 1;
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status();
  auto m = (*t)->TrainStep();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(std::isfinite(m->loss));
}

}  // namespace
}  // namespace accel::train

namespace accel::train {
namespace {

TEST_F(TrainerTest, EveryStrategyAloneIsBitIdenticalToNoShard) {
  std::vector<float> reference;
  for (const char* name : {"no_shard", "zero1", "shard_grad_op", "full_shard"}) {
    TrainOptions o = Options();
    o.steps = 3;
    o.grad_accum = 2;
    o.shard.strategy = *shard::ParseStrategy(name);
    o.shard.forward_prefetch = true;
    auto trainer = Trainer::Create(o);
    ASSERT_TRUE(trainer.ok()) << trainer.status();
    ASSERT_TRUE((*trainer)->Train(nullptr).ok()) << name;
    auto params = (*trainer)->GatherParams();
    ASSERT_TRUE(params.ok());
    if (reference.empty()) {
      reference = *params;
    } else {
      EXPECT_EQ(*params, reference) << name;
    }
  }
}

}  // namespace
}  // namespace accel::train
