// TrainingSampler's doors (what train.sample_every refuses, with which message, and where an
// empty prompt starts) and SampleLine, the one-line text form of a sample.
#include "engine/generate/training_sample.h"

#include <string>
#include <vector>

#include "engine/model/gpt2_config.h"
#include "engine/testing/mem_env.h"
#include "engine/text/small_tokenizer_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::generate {
namespace {

using ::testing::HasSubstr;

model::ModelConfig Gpt2(int64_t vocab) { return model::Gpt2Config{"s", 2, 4, 20, vocab, 16}; }

TEST(TrainingSamplerTest, APromptMustLeaveAPositionInSeqLen) {
  testing::MemEnv env;
  config::SampleOptions o{.every = 1, .prompt = "abcdefgh"};
  auto refused = TrainingSampler::Open(&env, o, Gpt2(256), 8);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("train.sample_prompt: 8 tokens; at most train.seq_len - 1 = 7"));
  o.prompt = "abcdefg";
  auto fits = TrainingSampler::Open(&env, o, Gpt2(256), 8);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(fits->prompt_ids(), (std::vector<int32_t>{'a', 'b', 'c', 'd', 'e', 'f', 'g'}));
}

TEST(TrainingSamplerTest, AnEmptyPromptStartsFromANewlineOrTheTokenizersBos) {
  testing::MemEnv env;
  auto bytes = TrainingSampler::Open(&env, {.every = 1}, Gpt2(256), 8);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(bytes->prompt_ids(), std::vector<int32_t>{'\n'});

  ASSERT_TRUE(env.CreateDirs("/tok").ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "/tok/tokenizer.json",
                              text::small_tokenizer::TokenizerJson().dump())
                  .ok());
  const config::SampleOptions o{.every = 1, .tokenizer = "/tok/tokenizer.json"};
  // Without tokenizer_config.json the tokenizer names no BOS or EOS: nothing to start from.
  auto none = TrainingSampler::Open(&env, o, Gpt2(300), 8);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(none.status().message(),
              HasSubstr("train.sample_prompt: required: the tokenizer has no BOS or EOS"));
  ASSERT_TRUE(WriteFileAtomic(&env, "/tok/tokenizer_config.json",
                              R"({"bos_token": "<s>", "eos_token": "</s>"})")
                  .ok());
  auto bos = TrainingSampler::Open(&env, o, Gpt2(300), 8);
  ASSERT_TRUE(bos.ok()) << bos.status();
  EXPECT_EQ(bos->prompt_ids(), std::vector<int32_t>{text::small_tokenizer::kBos});
  // A prompt is encoded as `accelctl generate --prompt` encodes it: the BOS template added.
  config::SampleOptions with_prompt = o;
  with_prompt.prompt = "a";
  auto a = TrainingSampler::Open(&env, with_prompt, Gpt2(300), 8);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->prompt_ids().front(), text::small_tokenizer::kBos);
  EXPECT_GT(a->prompt_ids().size(), 1u);
}

TEST(TrainingSamplerTest, TheTokenizerMustFitTheModel) {
  testing::MemEnv env;
  ASSERT_TRUE(env.CreateDirs("/tok").ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "/tok/tokenizer.json",
                              text::small_tokenizer::TokenizerJson().dump())
                  .ok());
  auto small = TrainingSampler::Open(&env, {.every = 1, .tokenizer = "/tok/tokenizer.json"},
                                     Gpt2(256), 8);
  EXPECT_EQ(small.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(small.status().message(),
              HasSubstr("data.tokenizer (the text of train.sample_every's samples): "));
  // No tokenizer for a model that is not byte-level: its tokens have no text.
  auto none = TrainingSampler::Open(&env, {.every = 1}, Gpt2(300), 8);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SampleLineTest, OneLineWhateverTheTextHolds) {
  EXPECT_EQ(SampleLine(7, "plain"), "step 7 sample: \"plain\"");
  EXPECT_EQ(SampleLine(8, "a\nb\t\"c\"\\"), "step 8 sample: \"a\\nb\\t\\\"c\\\"\\\\\"");
  EXPECT_EQ(SampleLine(9, "\xc3\xa9\x01"), "step 9 sample: \"\xc3\xa9\\001\"");
}

}  // namespace
}  // namespace accel::generate
