// What a config.json says the checkpoint is (issue 32 items 6 and 7), checked for every family by
// ModelConfigFromJson: a causal-LM class trains, another task head and a quantized checkpoint
// are refused naming the key, a class this engine does not know is a note naming it.
#include <string>

#include "engine/model/checkpoint_kind.h"
#include "engine/model/model_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::model {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kLlama[] =
    R"("model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
       "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
       "vocab_size": 256, "max_position_embeddings": 128)";
constexpr char kGpt2[] =
    R"("model_type": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 64, "vocab_size": 256,
       "n_positions": 64)";

absl::StatusOr<ModelConfig> Read(const std::string& base, const std::string& extra) {
  return ModelConfigFromJson("{" + base + ", " + extra + "}", "m.json");
}

// The notes CheckCheckpointKind gives the same file (Lower adds them to the job's warnings).
std::vector<std::string> Notes(const std::string& base, const std::string& extra) {
  std::vector<std::string> notes;
  EXPECT_TRUE(CheckCheckpointKind(nlohmann::json::parse("{" + base + ", " + extra + "}"),
                                  "m.json", &notes)
                  .ok());
  return notes;
}

TEST(CheckpointKindTest, CausalLmClassesTrainWithoutANote) {
  for (const auto& [base, cls] : {std::pair{kLlama, "LlamaForCausalLM"},
                                  std::pair{kLlama, "MistralForCausalLM"},
                                  std::pair{kGpt2, "GPT2LMHeadModel"}}) {
    const std::string extra = std::string(R"("architectures": [")") + cls + "\"]";
    auto c = Read(base, extra);
    ASSERT_TRUE(c.ok()) << cls << ": " << c.status();
    EXPECT_TRUE(Notes(base, extra).empty()) << cls;
  }
  // No architectures key (older files), or not a list: nothing to check.
  EXPECT_TRUE(ModelConfigFromJson(std::string("{") + kLlama + "}", "m.json").ok());
  EXPECT_TRUE(Notes(kLlama, R"("architectures": "LlamaForCausalLM")").empty());
}

TEST(CheckpointKindTest, AnotherTaskHeadIsRefusedNamingArchitectures) {
  for (const char* cls : {"Qwen2ForSequenceClassification", "LlamaForTokenClassification",
                          "LlamaForQuestionAnswering", "GPT2DoubleHeadsModel"}) {
    auto c = Read(kLlama, std::string(R"("architectures": [")") + cls + "\"]");
    ASSERT_FALSE(c.ok()) << cls;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(c.status().message()),
                StartsWith(std::string("m.json: architectures: ") + cls + " has "));
    EXPECT_THAT(std::string(c.status().message()),
                HasSubstr("this engine trains *ForCausalLM / *LMHeadModel models"));
  }
}

TEST(CheckpointKindTest, AnUnknownClassIsANoteNamingIt) {
  const char* custom = R"("architectures": ["LlamaForMultiCausalLMv2"])";
  ASSERT_TRUE(Read(kLlama, custom).ok());  // trained, as a causal LM of its model_type
  std::vector<std::string> notes = Notes(kLlama, custom);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], StartsWith("m.json: architectures: LlamaForMultiCausalLMv2 is not a "
                                   "class this engine knows"));
  EXPECT_THAT(notes[0], HasSubstr("ignored"));
  // A value that is not a class name is described, never quoted (config_json.h).
  notes = Notes(kLlama, R"("architectures": ["line one\nline two"])");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], StartsWith("m.json: architectures: a class is not"));
}

TEST(CheckpointKindTest, AQuantizedCheckpointIsRefusedNamingTheKey) {
  auto c = Read(kLlama, R"("architectures": ["LlamaForCausalLM"],
                          "quantization_config": {"quant_method": "gptq", "bits": 4})");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              StartsWith("m.json: quantization_config: a quantized checkpoint"));
  // null is "not quantized", as transformers reads it.
  EXPECT_TRUE(Read(kLlama, R"("quantization_config": null)").ok());
}

}  // namespace
}  // namespace accel::model
