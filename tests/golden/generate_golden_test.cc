// Greedy decoding token-identical to a float64 PyTorch greedy decode of the same weights
// (make_generate_reference.py): a tiny GPT-2 and a tiny Llama with grouped-query attention and
// llama3 RoPE scaling, 40 new tokens each, loaded from their Hugging Face files as `accelctl
// generate --model DIR` loads them.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/generate/generator.h"
#include "engine/generate/load_model.h"
#include "engine/model/registry.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::generate {
namespace {

nlohmann::json Reference() {
  std::ifstream in(std::string(ACCEL_GOLDEN_DIR) + "/generate/reference.json");
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

class GenerateGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GenerateGoldenTest, GreedyMatchesTheFloat64Reference) {
  const nlohmann::json ref = Reference()[GetParam()];
  ASSERT_TRUE(ref["f32_same_tokens"].get<bool>()) << "the fixture's margins are too thin";
  auto m = LoadModel(Env::Default(),
                     {.model_dir = std::string(ACCEL_GOLDEN_DIR) + "/generate/" + GetParam()});
  ASSERT_TRUE(m.ok()) << m.status();
  auto codec = TextCodec::Open(Env::Default(), "", m->layout->config().vocab_size());
  ASSERT_TRUE(codec.ok());
  auto prompt = codec->Encode(ref["prompt"].get<std::string>(), true);
  ASSERT_EQ(*prompt, ref["prompt_ids"].get<std::vector<int32_t>>());
  const std::vector<int32_t> want = ref["new_ids"].get<std::vector<int32_t>>();
  ASSERT_GE(want.size(), 32u);
  auto decoder = m->layout->config().architecture().decoder(m->layout.get(), m->params.data(), {});
  ASSERT_TRUE(decoder.ok());
  auto r = Generate(**decoder, m->layout->config().vocab_size(), *prompt,
                    {.max_new_tokens = static_cast<int64_t>(want.size())},
                    [&](absl::Span<const int32_t> ids) { return codec->Decode(ids); });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ids, want);
}

INSTANTIATE_TEST_SUITE_P(Models, GenerateGoldenTest, ::testing::Values("gpt2", "llama"));

}  // namespace
}  // namespace accel::generate
