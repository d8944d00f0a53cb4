// The architecture registry's built-in entries and its refusals. The toy third family that
// trains a step through the same paths is engine/train/toy_architecture_test.cc (its own binary:
// a registered family stays registered, and these tests list the supported names).
#include "engine/model/registry.h"

#include <string>

#include "absl/strings/str_join.h"
#include "engine/model/architecture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::model {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RegistryTest, HuggingFaceModelTypesFindTheirFamily) {
  EXPECT_EQ(FindArchitecture("gpt2"), &Gpt2Config::Family());
  for (const char* t : {"llama", "mistral", "qwen2", "qwen3"}) {
    EXPECT_EQ(FindArchitecture(t), &LlamaConfig::Family()) << t;
  }
  EXPECT_EQ(FindArchitecture("bert"), nullptr);
  EXPECT_THAT(SupportedModelTypes(),
              ElementsAre("gpt2", "llama", "mistral", "qwen2", "qwen3"));
  EXPECT_THAT(FamiliesOn("cuda"), ElementsAre("GPT-2"));
  EXPECT_THAT(FamiliesOn("cpu"), ElementsAre("GPT-2", "Llama"));
}

// A config knows its entry, whichever way it was made, and the entry answers for it.
TEST(RegistryTest, AConfigAnswersThroughItsEntry) {
  auto llama = ModelPreset("llama-tiny");
  auto gpt2 = ModelPreset("gpt2-tiny");
  ASSERT_TRUE(llama.ok() && gpt2.ok());
  EXPECT_EQ(llama->architecture().name, "llama");
  EXPECT_EQ(gpt2->architecture().name, "gpt2");
  EXPECT_NE(llama->As<LlamaConfig>(), nullptr);
  EXPECT_EQ(llama->As<Gpt2Config>(), nullptr);
  EXPECT_EQ(gpt2->architecture().positions_key, "n_positions");
  EXPECT_EQ(llama->architecture().positions_key, "max_position_embeddings");
  EXPECT_FALSE(llama->architecture().TrainsOn("cuda"));
  EXPECT_TRUE(gpt2->architecture().TrainsOn("cuda"));
  // A renamed config keeps its family and shape.
  ModelConfig renamed = *llama;
  renamed.set_name("mine");
  EXPECT_EQ(renamed.name(), "mine");
  EXPECT_EQ(llama->name(), "llama-tiny");
  EXPECT_EQ(&renamed.architecture(), &LlamaConfig::Family());
  EXPECT_EQ(renamed.NumParams(), llama->NumParams());
  // The default config is GPT-2's, as before the registry.
  EXPECT_EQ(&ModelConfig().architecture(), &Gpt2Config::Family());
  // Round trip through the entry's writer and the registry's reader.
  auto back = ModelConfigFromJson(ModelConfigToJson(*llama), "m.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Describe(), llama->Describe());
}

TEST(RegistryTest, BlockClassesComeFromTheEntries) {
  for (const char* cls :
       {"GPT2Block", "Block", "LlamaDecoderLayer", "MistralDecoderLayer", "Qwen2DecoderLayer"}) {
    EXPECT_TRUE(IsBlockClass(cls)) << cls;
  }
  EXPECT_FALSE(IsBlockClass("BertLayer"));
}

// An unknown model_type is refused naming the key and every supported name (not the value:
// config.json files may be a client's, config_json.h); so is a model_type that is not a string.
TEST(RegistryTest, AnUnknownModelTypeIsRefusedNamingTheKey) {
  for (const char* text : {R"({"model_type": "bert"})", R"({"model_type": 7})"}) {
    auto c = ModelConfigFromJson(text, "b.json");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(c.status().message(),
                HasSubstr("b.json: model_type: not supported (supported: gpt2, llama, mistral, "
                          "qwen2, qwen3)"));
    EXPECT_THAT(c.status().message(), ::testing::Not(HasSubstr("bert")));
  }
}

TEST(RegistryTest, RegistrationRefusesIncompleteAndConflictingEntries) {
  static Architecture incomplete;
  incomplete.name = "half";
  incomplete.model_types = {"half"};
  absl::Status s = RegisterArchitecture(&incomplete);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("architecture half: from_json is missing"));
  // A copy of GPT-2's entry under another name still reads model_type gpt2.
  static Architecture twin = Gpt2Config::Family();
  twin.name = "twin";
  s = RegisterArchitecture(&twin);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s.message(), HasSubstr("model_type gpt2 is already read by gpt2"));
  EXPECT_EQ(Architectures().size(), 2u);
}

}  // namespace
}  // namespace accel::model
