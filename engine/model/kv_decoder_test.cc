// The KV-cache decoders against the training model's full forward: feeding a sequence in chunks
// (the prompt at once, then one token at a time) gives, after every chunk, the logits the full
// no-cache forward gives at that chunk's last position.
#include "engine/model/kv_decoder.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/gpt2.h"
#include "engine/model/llama.h"
#include "engine/model/registry.h"
#include "engine/testing/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::model {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kT = 11;
const std::vector<int64_t> kChunks = {4, 1, 1, 3, 1, 1};  // sums to kT

Gpt2Config SmallGpt2() {
  Gpt2Config c;
  c.n_layer = 2;
  c.n_head = 3;
  c.n_embd = 24;
  c.vocab_size = 37;
  c.n_positions = 16;
  return c;
}

// GQA (2 query heads per kv head), head_dim not hidden/heads, llama3 RoPE scaling, biases.
LlamaConfig SmallLlama(bool tied) {
  LlamaConfig c;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 6;
  c.num_hidden_layers = 2;
  c.vocab_size = 29;
  c.max_position_embeddings = 16;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 100.0;
  c.rope_scaling.type = RopeScaling::Type::kLlama3;
  c.rope_scaling.factor = 4.0;
  c.rope_scaling.original_max_position_embeddings = 8;
  c.tie_word_embeddings = tied;
  c.attention_bias = true;
  c.mlp_bias = true;
  return c;
}

struct Model {
  std::unique_ptr<ModelLayout> layout;
  std::vector<float> params;
};

Model MakeModel(const ModelConfig& config, uint64_t seed) {
  Model m;
  auto layout = ModelLayout::Create(config);
  EXPECT_TRUE(layout.ok()) << layout.status();
  m.layout = std::make_unique<ModelLayout>(std::move(*layout));
  accel::testing::TestRng rng(seed);
  m.params = rng.UniformVector(m.layout->num_params(), -0.3f, 0.3f);
  for (const LayoutEntry& e : m.layout->flat().entries()) {
    if (e.name.find("norm") == std::string::npos && e.name.find("ln_") == std::string::npos) {
      continue;
    }
    for (int64_t i = 0; i < e.numel; ++i) m.params[e.offset + i] += 1.0f;
  }
  return m;
}

// The training forward's logits (T, V) over the whole sequence, no cache.
template <typename Net, typename Acts, typename Config>
std::vector<float> FullLogits(const Model& m, const Config& c, const std::vector<int32_t>& tokens) {
  auto acts = Acts::Create(c, 1, static_cast<int64_t>(tokens.size()), MemoryPool::kDevice);
  EXPECT_TRUE(acts.ok()) << acts.status();
  FlatParamAccess access(m.layout.get(), m.params.data(), nullptr);
  Net net(m.layout.get());
  EXPECT_TRUE(net.Forward(access, tokens.data(), nullptr, *acts).ok());
  const int64_t V = m.layout->config().vocab_size();
  return std::vector<float>(acts->logits(), acts->logits() + tokens.size() * V);
}

void ExpectCachedEqualsFull(const Model& m, const std::vector<int32_t>& tokens,
                            const std::vector<float>& full) {
  const int64_t V = m.layout->config().vocab_size();
  auto decoder = m.layout->config().architecture().decoder(m.layout.get(), m.params.data(), {});
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  std::vector<float> logits(V);
  int64_t at = 0;
  for (int64_t n : kChunks) {
    ASSERT_TRUE((*decoder)->Step(tokens.data() + at, n, logits.data()).ok());
    at += n;
    EXPECT_EQ((*decoder)->position(), at);
    for (int64_t v = 0; v < V; ++v) {
      ASSERT_NEAR(logits[v], full[(at - 1) * V + v], 2e-5f * (1 + std::fabs(full[(at - 1) * V + v])))
          << "position " << at - 1 << " logit " << v;
    }
  }
}

TEST(KvDecoderTest, Gpt2CachedLogitsEqualFullForward) {
  const Gpt2Config c = SmallGpt2();
  const Model m = MakeModel(c, 3);
  const std::vector<int32_t> tokens = accel::testing::TestRng(5).IntVector(kT, 0, 37);
  ExpectCachedEqualsFull(m, tokens, FullLogits<Gpt2, Gpt2Activations>(m, c, tokens));
}

TEST(KvDecoderTest, LlamaCachedLogitsEqualFullForward) {
  for (bool tied : {false, true}) {
    const LlamaConfig c = SmallLlama(tied);
    const Model m = MakeModel(c, 7);
    const std::vector<int32_t> tokens = accel::testing::TestRng(9).IntVector(kT, 0, 29);
    ExpectCachedEqualsFull(m, tokens, FullLogits<Llama, LlamaActivations>(m, c, tokens));
  }
}

TEST(KvDecoderTest, Bf16IsCloseToFp32AndDiffers) {
  for (const ModelConfig& config : {ModelConfig(SmallGpt2()), ModelConfig(SmallLlama(false))}) {
    const Model m = MakeModel(config, 13);
    const int64_t V = config.vocab_size();
    const std::vector<int32_t> tokens = accel::testing::TestRng(2).IntVector(kT, 0, 29);
    auto f32 = config.architecture().decoder(m.layout.get(), m.params.data(), {});
    auto b16 = config.architecture().decoder(m.layout.get(), m.params.data(), {.bf16 = true});
    ASSERT_TRUE(f32.ok() && b16.ok());
    std::vector<float> a(V), b(V);
    ASSERT_TRUE((*f32)->Step(tokens.data(), kT, a.data()).ok());
    ASSERT_TRUE((*b16)->Step(tokens.data(), kT, b.data()).ok());
    double max_diff = 0;
    for (int64_t v = 0; v < V; ++v) max_diff = std::max(max_diff, double(std::fabs(a[v] - b[v])));
    EXPECT_GT(max_diff, 0.0) << config.Describe();  // bf16 really ran
    EXPECT_LT(max_diff, 0.1) << config.Describe();
  }
}

TEST(KvDecoderTest, RefusesPastCapacityAndBadTokensLeavingTheCache) {
  const Model m = MakeModel(SmallGpt2(), 3);
  auto decoder =
      m.layout->config().architecture().decoder(m.layout.get(), m.params.data(), {.capacity = 4});
  ASSERT_TRUE(decoder.ok());
  std::vector<float> logits(37);
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5};
  absl::Status s = (*decoder)->Step(tokens.data(), 5, logits.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("past the context of 4 positions"));
  const std::vector<int32_t> bad = {1, 37};
  s = (*decoder)->Step(bad.data(), 2, logits.data());
  EXPECT_THAT(s.message(), HasSubstr("token 37 at position 1 is outside the vocabulary [0, 37)"));
  EXPECT_EQ((*decoder)->position(), 0);
  EXPECT_TRUE((*decoder)->Step(tokens.data(), 4, logits.data()).ok());
  auto too_long = m.layout->config().architecture().decoder(m.layout.get(), m.params.data(),
                                                            {.capacity = 17});
  EXPECT_THAT(too_long.status().message(), HasSubstr("outside [1, max_positions 16]"));
}

}  // namespace
}  // namespace accel::model
