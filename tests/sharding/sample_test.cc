// Samples during training (engine/train/sampling.h) over real gloo (ranks as threads):
//  - sampling changes nothing a step keeps: the losses and parameters of a run with samples are
//    bit-identical to one without, and neither the model state nor the compute pool's peak
//    grows; only rank 0 reports samples, at every N-th step and the last;
//  - a sample is Generate (engine/generate, what `accelctl generate` runs) on the gathered
//    weights of its step, token for token, under every strategy, offload and bf16;
//  - on the golden models (tests/golden/generate) with a learning rate of 0, a greedy sample is
//    the float64 PyTorch greedy decode of make_generate_reference.py and `accelctl generate`'s
//    loading of the same files (generate::LoadModel), token for token.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/generate/generator.h"
#include "engine/generate/load_model.h"
#include "engine/generate/training_sample.h"
#include "engine/model/registry.h"
#include "engine/text/utf8.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/sharding/gang.h"
#include "tests/sharding/gang_fixture.h"

namespace accel::testing {
namespace {

using shard::Strategy;

// Generate on `params` as `accelctl generate --prompt P` runs it (bytes: a vocabulary-256 model).
generate::GenerateResult GenerateOn(const model::ModelConfig& config,
                                    const std::vector<float>& params,
                                    const std::vector<int32_t>& prompt, int64_t max_new_tokens) {
  auto layout = model::ModelLayout::Create(config);
  EXPECT_TRUE(layout.ok()) << layout.status();
  auto codec = generate::TextCodec::Open(Env::Default(), "", config.vocab_size());
  EXPECT_TRUE(codec.ok());
  const int64_t capacity = std::min<int64_t>(
      config.max_positions(), static_cast<int64_t>(prompt.size()) + max_new_tokens);
  auto decoder = config.architecture().decoder(&*layout, params.data(), {.capacity = capacity});
  EXPECT_TRUE(decoder.ok()) << decoder.status();
  auto r = generate::Generate(**decoder, config.vocab_size(), prompt,
                              {.max_new_tokens = max_new_tokens},
                              [&](absl::Span<const int32_t> ids) { return codec->Decode(ids); });
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : generate::GenerateResult{};
}

class SampleTest : public GangTest, public ::testing::WithParamInterface<std::string> {
 protected:
  SampleTest() : GangTest(SmallModel(GetParam(), "sample")) {}
  train::TrainOptions Options(Strategy s, DType dtype = DType::kF32) const {
    train::TrainOptions o = GangOptions(dir_, s, /*accum=*/1, /*batch=*/2, dtype);
    o.sample.every = 2;
    o.sample.prompt = "ab";
    o.sample.max_new_tokens = 6;
    return o;
  }
};

TEST_P(SampleTest, SamplingChangesNothingAStepKeeps) {
  for (Strategy s : {Strategy::kNoShard, Strategy::kShardOptimizer, Strategy::kFullShard}) {
    for (int world : {1, 3}) {
      const std::string what =
          absl::StrCat(std::string(shard::StrategyName(s)), " world ", world);
      train::TrainOptions without = Options(s);
      without.sample = {};
      auto plain = RunGang(without, world);
      auto sampled = RunGang(Options(s), world);
      ASSERT_TRUE(plain.ok() && sampled.ok()) << what;
      EXPECT_TRUE(plain->samples[0].empty());
      // Steps 2 and 4, and the last (5); rank 0 only.
      ASSERT_EQ(sampled->samples[0].size(), 3u) << what;
      EXPECT_EQ(sampled->samples[0][0].step, 2);
      EXPECT_EQ(sampled->samples[0][1].step, 4);
      EXPECT_EQ(sampled->samples[0][2].step, 5);
      for (int r = 1; r < world; ++r) EXPECT_TRUE(sampled->samples[r].empty()) << what;
      for (const train::SampleResult& x : sampled->samples[0]) {
        EXPECT_EQ(x.prompt, "ab");
        EXPECT_EQ(x.prompt_ids, (std::vector<int32_t>{'a', 'b'}));
        EXPECT_EQ(x.ids.size(), 6u) << what;  // no EOS for bytes: the length stops it
        EXPECT_EQ(x.stop_reason, "length");
        EXPECT_EQ(x.text, text::ToValidUtf8(std::string(x.ids.begin(), x.ids.end())));
      }
      EXPECT_EQ(sampled->losses, plain->losses) << what;
      EXPECT_EQ(sampled->params, plain->params) << what;
      EXPECT_EQ(sampled->model_state_bytes, plain->model_state_bytes) << what;
      EXPECT_EQ(sampled->compute_peak_bytes, plain->compute_peak_bytes) << what;
    }
  }
}

// The last sample (step 5) is Generate on the final weights gathered after training; the
// non-hybrid strategies give the same bits, so the same sample.
TEST_P(SampleTest, ASampleIsGenerateOnTheGatheredWeightsUnderEveryStrategy) {
  for (int world : {1, 2, 4}) {
    std::vector<int32_t> no_shard;  // at this world size: the same global batch
    for (Strategy s : {Strategy::kNoShard, Strategy::kShardGradOp, Strategy::kFullShard,
                       Strategy::kHybridShard}) {
      if (shard::IsHybrid(s) && world == 1) continue;
      const std::string what =
          absl::StrCat(std::string(shard::StrategyName(s)), " world ", world);
      train::TrainOptions o = Options(s);
      o.sample.max_new_tokens = 12;
      auto run = RunGang(o, world);
      ASSERT_TRUE(run.ok()) << what << ": " << run.status();
      ASSERT_EQ(run->samples[0].size(), 3u) << what;
      const train::SampleResult& last = run->samples[0].back();
      const generate::GenerateResult want = GenerateOn(config(), run->params, {'a', 'b'}, 12);
      EXPECT_EQ(last.ids, want.ids) << what;
      EXPECT_EQ(last.text, text::ToValidUtf8(want.text)) << what;
      if (s == Strategy::kNoShard) no_shard = last.ids;
      if (!shard::IsHybrid(s)) {
        EXPECT_EQ(last.ids, no_shard) << what;
      }
    }
  }
}

TEST_P(SampleTest, ASampleIsGenerateOnTheGatheredWeightsUnderOffloadAndBf16) {
  for (const bool params : {false, true}) {
    train::TrainOptions o = Options(Strategy::kFullShard);
    o.shard.offload_optimizer = true;
    o.shard.offload_params = params;
    const std::string what = params ? "offload params" : "offload optimizer";
    train::TrainOptions without = o;
    without.sample = {};
    auto run = RunGang(o, 3);
    auto plain = RunGang(without, 3);
    ASSERT_TRUE(run.ok() && plain.ok()) << what;
    ASSERT_EQ(run->samples[0].size(), 3u) << what;
    EXPECT_EQ(run->losses, plain->losses) << what;
    EXPECT_EQ(run->params, plain->params) << what;
    EXPECT_EQ(run->samples[0].back().ids,
              GenerateOn(config(), run->params, {'a', 'b'}, 6).ids) << what;
  }
  // bf16 mixed precision: the sample decodes in fp32 from the fp32 masters, which are what
  // GatherParams gives too.
  for (int world : {1, 2}) {
    train::TrainOptions o = Options(Strategy::kFullShard, DType::kBF16);
    train::TrainOptions without = o;
    without.sample = {};
    auto run = RunGang(o, world);
    auto plain = RunGang(without, world);
    ASSERT_TRUE(run.ok() && plain.ok()) << world;
    ASSERT_EQ(run->samples[0].size(), 3u);
    EXPECT_EQ(run->losses, plain->losses) << "bf16 world " << world;
    EXPECT_EQ(run->params, plain->params) << "bf16 world " << world;
    EXPECT_EQ(run->samples[0].back().ids, GenerateOn(config(), run->params, {'a', 'b'}, 6).ids);
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, SampleTest, ::testing::Values("gpt2", "llama"));

nlohmann::json GoldenReference() {
  std::ifstream in(std::string(ACCEL_GOLDEN_DIR) + "/generate/reference.json");
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

class GoldenSampleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenSampleTest, GreedySampleIsTheReferenceDecodeAndAccelGenerates) {
  const nlohmann::json ref = GoldenReference()[GetParam()];
  const std::string model_dir = std::string(ACCEL_GOLDEN_DIR) + "/generate/" + GetParam();
  const std::vector<int32_t> want = ref["new_ids"].get<std::vector<int32_t>>();
  const std::string dir = ::testing::TempDir() + "/golden_sample_" + GetParam();
  ASSERT_TRUE(Env::Default()->CreateDirs(dir).ok());
  std::string text;
  for (int i = 0; i < 2000; ++i) text += static_cast<char>('a' + (i * 7 + i / 13) % 26);
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir + "/data.txt", text).ok());

  // What `accelctl generate --model DIR --prompt P --max-new-tokens 40` computes.
  auto m = generate::LoadModel(Env::Default(), {.model_dir = model_dir});
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<int32_t> prompt = ref["prompt_ids"].get<std::vector<int32_t>>();
  const generate::GenerateResult accel_generate =
      GenerateOn(m->layout->config(), m->params, prompt, static_cast<int64_t>(want.size()));
  EXPECT_EQ(accel_generate.ids, want);

  for (const auto& [strategy, world] :
       {std::pair<Strategy, int>{Strategy::kNoShard, 1}, {Strategy::kFullShard, 2},
        {Strategy::kShardGradOp, 3}}) {
    const std::string what =
        absl::StrCat(std::string(shard::StrategyName(strategy)), " world ", world);
    train::TrainOptions o;
    o.model_config = model_dir + "/config.json";
    o.init_weights = model_dir + "/model.safetensors";
    o.data = dir + "/data.txt";
    o.batch = 1;
    o.seq = 64;  // the 51-token prompt fits seq_len - 1
    o.steps = 1;
    o.schedule.base_lr = 0;  // AdamW moves nothing: the sample is of the golden weights
    o.shard.strategy = strategy;
    o.sample.every = 1;
    o.sample.prompt = ref["prompt"].get<std::string>();
    o.sample.max_new_tokens = static_cast<int64_t>(want.size());
    auto run = RunGang(o, world);
    ASSERT_TRUE(run.ok()) << what << ": " << run.status();
    EXPECT_EQ(run->params, m->params) << what;
    ASSERT_EQ(run->samples[0].size(), 1u) << what;
    const train::SampleResult& s = run->samples[0][0];
    EXPECT_EQ(s.step, 1);
    EXPECT_EQ(s.prompt_ids, prompt) << what;
    EXPECT_EQ(s.ids, want) << what;
    EXPECT_EQ(s.text, text::ToValidUtf8(accel_generate.text)) << what;
    EXPECT_EQ(s.stop_reason, "length");
  }
  (void)Env::Default()->DeleteRecursively(dir);
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenSampleTest, ::testing::Values("gpt2", "llama"));

}  // namespace
}  // namespace accel::testing
