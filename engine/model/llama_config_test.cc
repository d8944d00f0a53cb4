#include "engine/model/llama_config.h"

#include <cmath>
#include <numbers>
#include <string>

#include "engine/model/model_config.h"
#include "engine/model/param_specs.h"
#include "engine/model/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::model {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The parameter counts the published checkpoints have (their model.safetensors' numel).
TEST(LlamaConfigTest, PresetsHaveThePublishedParameterCounts) {
  const std::pair<const char*, int64_t> published[] = {{"smollm-135m", 134515008},
                                                       {"tinyllama-1.1b", 1100048384},
                                                       {"llama3.2-1b", 1235814400}};
  for (const auto& [name, count] : published) {
    auto c = ModelPreset(name);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(&c->architecture(), &LlamaConfig::Family());
    EXPECT_EQ(c->NumParams(), count) << name;
  }
  // The table agrees with the formula, with every optional tensor too.
  auto tiny = LlamaPreset("llama-tiny");
  ASSERT_TRUE(tiny.ok());
  tiny->attention_bias = tiny->mlp_bias = true;
  auto layout = ModelLayout::Create(*tiny);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->num_params(), tiny->NumParams());
  ASSERT_NE(layout->flat().Find("model.layers.1.self_attn.o_proj.bias"), nullptr);
  tiny->model_type = "qwen2";  // q/k/v biases, none on o_proj
  EXPECT_EQ(ModelLayout::Create(*tiny)->flat().Find("model.layers.1.self_attn.o_proj.bias"),
            nullptr);
}

TEST(LlamaConfigTest, ReadsHuggingFaceKeysWithTheirDefaults) {
  auto c = LlamaConfigFromJson(R"({"model_type": "llama", "hidden_size": 64,
      "intermediate_size": 100, "num_attention_heads": 8, "num_hidden_layers": 3})", "cfg.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_key_value_heads, 8);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->vocab_size, 32000);
  EXPECT_EQ(c->max_position_embeddings, 2048);
  EXPECT_EQ(c->rms_norm_eps, 1e-6);
  EXPECT_EQ(c->rope_theta, 10000.0);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_EQ(c->DecoderLayerClass(), "LlamaDecoderLayer");
  auto qwen = LlamaConfigFromJson(R"({"model_type": "qwen2", "hidden_size": 64,
      "intermediate_size": 100, "num_attention_heads": 8, "num_key_value_heads": 2,
      "num_hidden_layers": 3, "sliding_window": 32, "use_sliding_window": false})", "q.json");
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  EXPECT_TRUE(qwen->attention_bias);
  EXPECT_FALSE(qwen->o_proj_bias());
  EXPECT_EQ(qwen->DecoderLayerClass(), "Qwen2DecoderLayer");
}

TEST(LlamaConfigTest, JsonRoundTripsThroughModelConfig) {
  for (const std::string& name : LlamaPresetNames()) {
    auto preset = ModelPreset(name);
    ASSERT_TRUE(preset.ok());
    const std::string json = ModelConfigToJson(*preset);
    auto back = ModelConfigFromJson(json, name);
    ASSERT_TRUE(back.ok()) << name << ": " << back.status();
    EXPECT_EQ(ModelConfigToJson(*back), json) << name;
    EXPECT_EQ(back->NumParams(), preset->NumParams());
  }
}

// Each key that changes the math and is not implemented is an error naming it.
TEST(LlamaConfigTest, RefusesWhatItDoesNotImplementNamingTheKey) {
  const std::string base = R"("model_type": "mistral", "hidden_size": 32,
      "intermediate_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
      "max_position_embeddings": 128)";
  const std::pair<const char*, const char*> refused[] = {
      {R"("hidden_act": "gelu")", "hidden_act"},
      {R"("rope_scaling": {"rope_type": "yarn", "factor": 4})", "rope_scaling"},
      {R"("rope_scaling": {"type": "dynamic", "factor": 2})", "rope_scaling"},
      {R"("sliding_window": 64)", "sliding_window"},
      {R"("partial_rotary_factor": 0.5)", "partial_rotary_factor"},
      {R"("num_key_value_heads": 3)", "num_key_value_heads"},
      {R"("head_dim": 7)", "head_dim"},
      {R"("rms_norm_eps": -1)", "rms_norm_eps"},
      {R"("rope_scaling": {"rope_type": "llama3", "factor": 8})",
       "original_max_position_embeddings"},
      {R"("hidden_size": "big")", "hidden_size"},
      {R"("layer_types": ["full_attention", "sliding_attention"])", "layer_types"}};
  for (const auto& [extra, key] : refused) {
    auto c = ModelConfigFromJson("{" + base + ", " + extra + "}", "m.json");
    ASSERT_FALSE(c.ok()) << extra;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(c.status().message(), HasSubstr(key)) << extra;
  }
  // A window as long as the context is full attention.
  EXPECT_TRUE(ModelConfigFromJson("{" + base + R"(, "sliding_window": 128})", "m.json").ok());
  EXPECT_THAT(ModelConfigFromJson(R"({"model_type": "bert"})", "b.json").status().message(),
              HasSubstr("supported: gpt2, llama, mistral, qwen2"));
}

// Llama 3.1's rope_scaling: wavelengths longer than original/low_freq_factor are divided by
// factor, shorter than original/high_freq_factor are kept, those between blend.
TEST(LlamaConfigTest, Llama3RopeScalingFollowsTheWavelengthBands) {
  auto c = LlamaPreset("llama3.2-1b");
  ASSERT_TRUE(c.ok());
  LlamaConfig plain = *c;
  plain.rope_scaling = {};
  const std::vector<double> scaled = c->InverseFrequencies(), base = plain.InverseFrequencies();
  ASSERT_EQ(scaled.size(), 32u);
  int kept = 0, divided = 0, blended = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const double wavelen = 2 * std::numbers::pi / base[i];
    if (wavelen < 8192 / 4.0) {
      EXPECT_EQ(scaled[i], base[i]);
      ++kept;
    } else if (wavelen > 8192 / 1.0) {
      EXPECT_DOUBLE_EQ(scaled[i], base[i] / 32);
      ++divided;
    } else {
      EXPECT_LT(scaled[i], base[i]);
      EXPECT_GT(scaled[i], base[i] / 32);
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
  LlamaConfig linear = plain;
  linear.rope_scaling = {RopeScaling::Type::kLinear, 4.0};
  EXPECT_DOUBLE_EQ(linear.InverseFrequencies()[3], base[3] / 4);
}

// Python's json writes NaN and Infinity; they were "not a JSON object" (issue 28). The key is
// named now, and no reader quotes the file (acceld reads config.json files for clients).
TEST(LlamaConfigTest, NonFiniteNumbersNameTheKeyAndNothingQuotesTheFile) {
  const std::string base = R"("model_type": "llama", "hidden_size": 32,
      "intermediate_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2)";
  for (const char* value : {"NaN", "Infinity", "-Infinity"}) {
    auto c = ModelConfigFromJson("{" + base + R"(, "rope_theta": )" + value + "}", "m.json");
    ASSERT_FALSE(c.ok()) << value;
    EXPECT_THAT(c.status().message(), HasSubstr("m.json: key rope_theta must be finite")) << value;
  }
  // Inside a string the word is text, not a number.
  EXPECT_TRUE(ModelConfigFromJson("{" + base + R"(, "note": "NaN Infinity"})", "m.json").ok());
  for (const std::string& text :
       {std::string("root:*:20228:0:99999:7:::\n"), std::string("{\"hidden_size\": \"s3cr3t\"}"),
        "{" + base + R"(, "hidden_act": "s3cr3t"})", std::string(R"({"model_type": "s3cr3t"})"),
        std::string("{\"a\": s3cr3t}")}) {
    auto c = ModelConfigFromJson(text, "m.json");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_THAT(c.status().message(), HasSubstr("m.json")) << text;
    EXPECT_THAT(c.status().message(), Not(HasSubstr("s3cr3t"))) << c.status();
    EXPECT_THAT(c.status().message(), Not(HasSubstr("root"))) << c.status();
  }
  EXPECT_THAT(ModelConfigFromJson("{\n\"a\": s3cr3t}", "m.json").status().message(),
              HasSubstr("m.json: not valid JSON (line 2, column 6)"));
}

}  // namespace
}  // namespace accel::model
