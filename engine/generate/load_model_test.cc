// LoadModel from sharded checkpoints (any world size, DIR or DIR/step_N) and Hugging Face files,
// and TextCodec's doors: what each refuses, with which message.
#include "engine/generate/load_model.h"

#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_test_util.h"
#include "engine/checkpoint/hf_weights.h"
#include "engine/testing/mem_env.h"
#include "engine/text/small_tokenizer_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::generate {
namespace {

using ::testing::HasSubstr;
namespace ct = ::accel::checkpoint::testing;

TEST(LoadModelTest, ReadsACheckpointSavedAtAnyWorldSize) {
  const model::ModelLayout layout = ct::SmallLayout();
  for (int world : {1, 3}) {
    testing::MemEnv env;
    const ct::State state(layout.num_params(), 5);
    ASSERT_TRUE(ct::SaveAll(&env, "/ck", layout, state, 4, world).ok());
    ASSERT_TRUE(ct::SaveAll(&env, "/ck", layout, ct::State(layout.num_params(), 6), 8, world).ok());
    auto latest = LoadModel(&env, {.checkpoint = "/ck"});
    ASSERT_TRUE(latest.ok()) << latest.status();
    EXPECT_EQ(latest->params, ct::State(layout.num_params(), 6).params);
    EXPECT_THAT(latest->origin, HasSubstr("step_8"));
    auto step4 = LoadModel(&env, {.checkpoint = "/ck/step_4"});
    ASSERT_TRUE(step4.ok()) << step4.status();
    EXPECT_EQ(step4->params, state.params);
  }
}

TEST(LoadModelTest, RefusesACheckpointOfAnotherModel) {
  testing::MemEnv env;
  const model::ModelLayout layout = ct::SmallLayout();
  ASSERT_TRUE(ct::SaveAll(&env, "/ck", layout, ct::State(layout.num_params(), 5), 4, 2).ok());
  model::Gpt2Config other = *layout.config().As<model::Gpt2Config>();
  other.n_layer = 3;
  ASSERT_TRUE(WriteFileAtomic(&env, "/other.json", model::ModelConfigToJson(other)).ok());
  auto m = LoadModel(&env, {.checkpoint = "/ck", .model_config = "/other.json"});
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("/ck/step_4 holds another model"));
  EXPECT_THAT(m.status().message(), HasSubstr("/other.json"));
  EXPECT_EQ(LoadModel(&env, {.checkpoint = "/nope"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(LoadModel(&env, {}).status().message(), HasSubstr("no model: give --checkpoint"));
}

TEST(LoadModelTest, ReadsHuggingFaceFilesAndRefusesAnotherModelsWeights) {
  testing::MemEnv env;
  const model::ModelLayout layout = ct::SmallLayout();
  const ct::State state(layout.num_params(), 9);
  ASSERT_TRUE(env.CreateDirs("/hf").ok());
  ASSERT_TRUE(checkpoint::SaveHfWeights(&env, "/hf/model.safetensors", layout,
                                        state.params.data())
                  .ok());
  auto m = LoadModel(&env, {.model_dir = "/hf"});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->params, state.params);
  m = LoadModel(&env, {.weights = "/hf/model.safetensors", .model_config = "/hf/config.json"});
  ASSERT_TRUE(m.ok()) << m.status();

  model::Gpt2Config other = *layout.config().As<model::Gpt2Config>();
  other.n_embd = 12;
  ASSERT_TRUE(WriteFileAtomic(&env, "/other.json", model::ModelConfigToJson(other)).ok());
  m = LoadModel(&env, {.weights = "/hf/model.safetensors", .model_config = "/other.json"});
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("--weights /hf/model.safetensors with /other.json"));
  m = LoadModel(&env, {.weights = "/hf/model.safetensors"});
  EXPECT_THAT(m.status().message(), HasSubstr("needs --model-config"));
}

TEST(TextCodecTest, BytesWithoutATokenizerOnlyForVocabulary256) {
  testing::MemEnv env;
  auto bytes = TextCodec::Open(&env, "", 256);
  ASSERT_TRUE(bytes.ok());
  auto ids = bytes->Encode("h\xC3\xA9", true);
  EXPECT_EQ(*ids, (std::vector<int32_t>{'h', 0xC3, 0xA9}));
  EXPECT_EQ(bytes->Decode(*ids), "h\xC3\xA9");
  EXPECT_TRUE(bytes->end_ids().empty());
  EXPECT_THAT(TextCodec::Open(&env, "", 50257).status().message(),
              HasSubstr("vocabulary is 50257 tokens, not 256 bytes: give its tokenizer"));
}

TEST(TextCodecTest, RefusesATokenizerLargerThanTheModel) {
  testing::MemEnv env;
  const std::string json = text::small_tokenizer::TokenizerJson().dump();
  ASSERT_TRUE(env.CreateDirs("/tok").ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "/tok/tokenizer.json", json).ok());
  auto fits = TextCodec::Open(&env, "/tok/tokenizer.json", 300);
  ASSERT_TRUE(fits.ok()) << fits.status();
  auto ids = fits->Encode("a b", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(fits->Decode(*ids), "a b");
  auto small = TextCodec::Open(&env, "/tok/tokenizer.json", 256);
  EXPECT_EQ(small.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(small.status().message(),
              HasSubstr("more than the model's vocabulary of 256: it is another model's"));
  EXPECT_EQ(TextCodec::Open(&env, "/missing.json", 300).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace accel::generate
