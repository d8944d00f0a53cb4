#include "engine/model/llama_config.h"

#include <cmath>
#include <numbers>
#include <string>
#include <utility>

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
      {R"("sliding_window": 0)", "sliding_window"},
      {R"("partial_rotary_factor": 0.5)", "partial_rotary_factor"},
      {R"("num_key_value_heads": 3)", "num_key_value_heads"},
      {R"("head_dim": 7)", "head_dim"},
      {R"("rms_norm_eps": -1)", "rms_norm_eps"},
      {R"("rope_scaling": {"rope_type": "llama3", "factor": 8})",
       "original_max_position_embeddings"},
      {R"("hidden_size": "big")", "hidden_size"},
      {R"("layer_types": ["sliding_attention", "full_attention"])", "layer_types"}};
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

// Mistral's window binds on every layer and only on sequences longer than it, so a config names
// any window (Mistral-7B's 4096 at seq_len 16 included); Qwen2's and Qwen3's only with
// use_sliding_window, from max_window_layers on (transformers' configuration_qwen2 / _qwen3).
TEST(LlamaConfigTest, SlidingWindowFollowsHuggingFace) {
  const std::string base = R"("hidden_size": 32, "intermediate_size": 64,
      "num_attention_heads": 4, "num_hidden_layers": 3, "max_position_embeddings": 128)";
  auto read = [&](const std::string& type, const std::string& extra) {
    auto c = LlamaConfigFromJson(R"({"model_type": ")" + type + R"(", )" + base + extra + "}",
                                 "w.json");
    EXPECT_TRUE(c.ok()) << type << extra << ": " << c.status();
    return c.value_or(LlamaConfig{});
  };
  const LlamaConfig mistral = read("mistral", R"(, "sliding_window": 64)");
  for (int64_t l = 0; l < 3; ++l) EXPECT_EQ(mistral.AttentionWindow(l), 64) << l;
  EXPECT_EQ(read("mistral", "").sliding_window, 4096);  // MistralConfig's default
  EXPECT_EQ(read("mistral", R"(, "sliding_window": null)").sliding_window, 0);
  EXPECT_EQ(read("llama", "").sliding_window, 0);
  const LlamaConfig qwen = read("qwen2", R"(, "use_sliding_window": true, "sliding_window": 32,
      "max_window_layers": 1)");
  EXPECT_EQ(qwen.AttentionWindow(0), 0);
  EXPECT_EQ(qwen.AttentionWindow(1), 32);
  EXPECT_EQ(qwen.AttentionWindow(2), 32);
  EXPECT_EQ(read("qwen2", R"(, "use_sliding_window": false, "sliding_window": 32)")
                .AttentionWindow(2),
            0);
  // Qwen2's default max_window_layers (28) keeps a 3-layer model's attention full.
  EXPECT_EQ(read("qwen3", R"(, "use_sliding_window": true, "sliding_window": 32)")
                .AttentionWindow(2),
            0);
  const LlamaConfig typed = read("qwen3", R"(, "use_sliding_window": true, "sliding_window": 8,
      "layer_types": ["full_attention", "full_attention", "sliding_attention"])");
  EXPECT_EQ(typed.AttentionWindow(1), 0);
  EXPECT_EQ(typed.AttentionWindow(2), 8);
  EXPECT_EQ(read("mistral", R"(, "sliding_window": 8,
      "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention"])")
                .AttentionWindow(0),
            8);
  // The window round-trips through the config.json this engine writes.
  for (const LlamaConfig& c : {mistral, qwen, typed}) {
    auto back = LlamaConfigFromJson(LlamaConfigToJson(c), "back.json");
    ASSERT_TRUE(back.ok()) << back.status();
    for (int64_t l = 0; l < 3; ++l) EXPECT_EQ(back->AttentionWindow(l), c.AttentionWindow(l));
  }
  for (const auto& [extra, key] :
       {std::pair{R"(, "sliding_window": -3)", "sliding_window"},
        std::pair{R"(, "sliding_window": "4k")", "sliding_window"},
        std::pair{R"(, "layer_types": ["full_attention"])", "layer_types"},
        std::pair{R"(, "layer_types": ["full_attention", "chunked_attention", "full_attention"])",
                  "layer_types"}}) {
    auto c = LlamaConfigFromJson(R"({"model_type": "mistral", )" + base + extra + "}", "w.json");
    ASSERT_FALSE(c.ok()) << extra;
    EXPECT_THAT(c.status().message(), HasSubstr(key)) << extra;
    EXPECT_THAT(c.status().message(), HasSubstr("w.json")) << extra;
  }
}

// Qwen3 (modeling_qwen3): q_norm / k_norm over head_dim, no q/k/v bias unless attention_bias
// (then on o_proj too), head_dim from the file (Qwen3Config's default 128, not hidden / heads).
TEST(LlamaConfigTest, ReadsQwen3) {
  auto c = LlamaConfigFromJson(R"({"model_type": "qwen3", "hidden_size": 32,
      "intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
      "head_dim": 16, "num_hidden_layers": 2, "vocab_size": 64, "tie_word_embeddings": true,
      "use_sliding_window": false, "sliding_window": null, "max_window_layers": 2})", "q3.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->qk_norm());
  EXPECT_FALSE(c->attention_bias);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->DecoderLayerClass(), "Qwen3DecoderLayer");
  EXPECT_THAT(LlamaConfigToJson(*c), HasSubstr("Qwen3ForCausalLM"));
  // embed 64·32 + norm 32 + per layer: q 64·32, k, v 32·32 each, o 32·64, MLP 3·32·64,
  // two norms 32 and q/k norms 16.
  EXPECT_EQ(c->NumParams(), 64 * 32 + 32 + 2 * (2048 + 1024 + 1024 + 2048 + 6144 + 64 + 32));
  auto defaults = LlamaConfigFromJson(R"({"model_type": "qwen3", "hidden_size": 1024,
      "intermediate_size": 64, "num_attention_heads": 16, "num_hidden_layers": 2})", "d.json");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->head_dim, 128);
  auto biased = LlamaConfigFromJson(R"({"model_type": "qwen3", "hidden_size": 32,
      "intermediate_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1,
      "head_dim": 8, "attention_bias": true})", "b.json");
  ASSERT_TRUE(biased.ok()) << biased.status();
  EXPECT_TRUE(biased->o_proj_bias());
  // Qwen3-0.6B: 0.6B parameters, 0.44B of them outside the embedding (its model card).
  auto preset = LlamaPreset("qwen3-0.6b");
  ASSERT_TRUE(preset.ok());
  EXPECT_EQ(preset->NumParams(), 596049920);
  EXPECT_EQ(preset->NumParams() - preset->vocab_size * preset->hidden_size, 440467456);
  EXPECT_EQ(ModelPreset("qwen3-tiny")->block_class(), "Qwen3DecoderLayer");
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
