#include "engine/model/gpt2_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::model {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Gpt2ConfigTest, PresetsHaveHuggingFaceShapes) {
  auto gpt2 = Gpt2Preset("gpt2");
  ASSERT_TRUE(gpt2.ok());
  EXPECT_EQ(gpt2->n_layer, 12);
  EXPECT_EQ(gpt2->n_embd, 768);
  EXPECT_EQ(gpt2->vocab_size, 50257);
  // The well-known 124M count (tied lm_head, unpadded vocabulary).
  EXPECT_EQ(gpt2->NumParams(), 124439808);
  auto xl = Gpt2Preset("gpt2-xl");
  ASSERT_TRUE(xl.ok());
  EXPECT_EQ(xl->n_head, 25);
  EXPECT_EQ(xl->NumParams(), 1557611200);
  for (const std::string& name : Gpt2PresetNames()) EXPECT_TRUE(Gpt2Preset(name).ok()) << name;
}

TEST(Gpt2ConfigTest, UnknownPresetListsTheKnownOnes) {
  auto c = Gpt2Preset("gpt3");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("gpt3"));
  EXPECT_THAT(c.status().message(), HasSubstr("gpt2-medium"));
}

TEST(Gpt2ConfigTest, ParsesHuggingFaceConfigJson) {
  auto c = Gpt2ConfigFromJson(
      R"({"model_type": "gpt2", "n_layer": 3, "n_head": 2, "n_embd": 16, "vocab_size": 100,
          "n_ctx": 32, "activation_function": "gelu_new"})",
      "cfg.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->n_layer, 3);
  EXPECT_EQ(c->n_positions, 32);  // from n_ctx
  EXPECT_EQ(c->head_size(), 8);
}

TEST(Gpt2ConfigTest, RoundTripsThroughJson) {
  Gpt2Config c{"x", 2, 4, 64, 300, 128};
  auto back = Gpt2ConfigFromJson(Gpt2ConfigToJson(c), "rt");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->n_layer, 2);
  EXPECT_EQ(back->n_head, 4);
  EXPECT_EQ(back->n_embd, 64);
  EXPECT_EQ(back->vocab_size, 300);
  EXPECT_EQ(back->n_positions, 128);
}

TEST(Gpt2ConfigTest, BadConfigsNameTheKey) {
  auto missing = Gpt2ConfigFromJson(R"({"n_layer": 1, "n_head": 1, "n_embd": 4, "vocab_size": 9})",
                                    "a.json");
  EXPECT_THAT(missing.status().message(), HasSubstr("n_positions"));
  EXPECT_THAT(missing.status().message(), HasSubstr("a.json"));
  auto wrong_type = Gpt2ConfigFromJson(
      R"({"n_layer": "2", "n_head": 1, "n_embd": 4, "vocab_size": 9, "n_positions": 4})", "b.json");
  EXPECT_THAT(wrong_type.status().message(), HasSubstr("n_layer"));
  auto indivisible = Gpt2ConfigFromJson(
      R"({"n_layer": 1, "n_head": 3, "n_embd": 4, "vocab_size": 9, "n_positions": 4})", "c.json");
  EXPECT_THAT(indivisible.status().message(), HasSubstr("divisible"));
  auto other_model = Gpt2ConfigFromJson(R"({"model_type": "llama"})", "d.json");
  EXPECT_THAT(other_model.status().message(), HasSubstr("llama"));
  auto not_json = Gpt2ConfigFromJson("{oops", "e.json");
  EXPECT_EQ(not_json.status().code(), absl::StatusCode::kInvalidArgument);
  auto zero = Gpt2ConfigFromJson(
      R"({"n_layer": 0, "n_head": 1, "n_embd": 4, "vocab_size": 9, "n_positions": 4})", "f.json");
  EXPECT_THAT(zero.status().message(), HasSubstr("n_layer must be positive"));
}

// Probes of issue 16: a huge dimension is a one-line error (n_layer 2^40 aborted with bad_alloc),
// and keys that change the model are never silently ignored.
TEST(Gpt2ConfigTest, HugeDimensionsAndUnimplementedKeysNameTheKey) {
  auto json = [](const std::string& extra) {
    return Gpt2ConfigFromJson(R"({"n_layer": 2, "n_head": 2, "n_embd": 8, "vocab_size": 9,
                                  "n_positions": 16)" + extra + "}",
                              "g.json");
  };
  auto msg = [&](const std::string& extra) { return std::string(json(extra).status().message()); };
  EXPECT_THAT(Gpt2ConfigFromJson(R"({"n_layer": 1099511627776, "n_head": 1, "n_embd": 4,
                                     "vocab_size": 9, "n_positions": 4})",
                                 "h.json")
                  .status()
                  .message(),
              HasSubstr("n_layer must be at most 4096, got 1099511627776"));
  // The key and what is implemented, never the file's value (acceld reads config.json files
  // for clients that may not read them; docs/rpc.md).
  EXPECT_THAT(msg(R"(, "activation_function": "relu")"),
              HasSubstr("g.json: activation_function: this value is not implemented"));
  EXPECT_THAT(msg(R"(, "activation_function": "relu")"), Not(HasSubstr("relu")));
  EXPECT_THAT(msg(R"(, "layer_norm_epsilon": 10)"), HasSubstr("layer_norm_epsilon: this value"));
  EXPECT_THAT(msg(R"(, "n_inner": 7)"), HasSubstr("n_inner: this value is not implemented"));
  EXPECT_THAT(msg(R"(, "tie_word_embeddings": false)"), HasSubstr("tie_word_embeddings"));
  EXPECT_THAT(msg(R"(, "add_cross_attention": true)"), HasSubstr("add_cross_attention"));
  // Hugging Face's defaults are what the engine runs.
  EXPECT_TRUE(json(R"(, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05,
                     "n_inner": null, "tie_word_embeddings": true, "resid_pdrop": 0.1)")
                  .ok());
  EXPECT_TRUE(json(R"(, "n_inner": 32, "activation_function": "gelu_pytorch_tanh")").ok());
}

}  // namespace
}  // namespace accel::model
