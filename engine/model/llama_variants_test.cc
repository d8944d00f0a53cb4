// The Llama family's two options on a small model: Qwen3's per-head q/k RMSNorm and the sliding
// window (here both, the window on the second layer only, as Qwen2/Qwen3's max_window_layers
// gives it). Gradients against finite differences (the q/k norm weights included), per-layer
// checkpointing bit-identical, the activation plan exact, the bf16 path close to fp32, and a
// window that does not bind bit-identical to none.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/llama.h"
#include "engine/model/recording_access.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::model {
namespace {

constexpr int64_t B = 2, T = 6;

LlamaConfig Qwen3Windowed() {
  LlamaConfig c;
  c.name = "qwen3-windowed";
  c.model_type = "qwen3";
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 6;
  c.num_hidden_layers = 2;
  c.vocab_size = 29;
  c.max_position_embeddings = 12;
  c.rope_theta = 100.0;
  c.tie_word_embeddings = true;
  c.sliding_window = 2;
  c.max_window_layers = 1;
  return c;
}

struct Model {
  explicit Model(const LlamaConfig& c) {
    auto l = ModelLayout::Create(c);
    EXPECT_TRUE(l.ok()) << l.status();
    layout = std::make_unique<ModelLayout>(std::move(*l));
    params.resize(layout->num_params());
    accel::testing::TestRng rng(23);
    for (float& p : params) p = rng.Uniform(-0.3f, 0.3f);
    for (const LayoutEntry& e : layout->flat().entries()) {
      if (e.name.find("norm") == std::string::npos) continue;
      for (int64_t i = 0; i < e.numel; ++i) params[e.offset + i] += 1.0f;
    }
    x = rng.IntVector(B * T, 0, 29);
    y = rng.IntVector(B * T, 0, 29);
  }
  LlamaActivations Acts(ActivationOptions o = {}) const {
    auto acts = LlamaActivations::Create(*layout->config().As<LlamaConfig>(), B, T,
                                         MemoryPool::kHost, nullptr, o);
    EXPECT_TRUE(acts.ok()) << acts.status();
    return std::move(*acts);
  }
  // Loss and gradients of one forward and backward.
  std::pair<float, std::vector<float>> Run(ActivationOptions o = {}) {
    std::vector<float> grads(layout->num_params(), 0.f);
    Llama llama(layout.get());
    LlamaActivations acts = Acts(o);
    FlatParamAccess access(layout.get(), params.data(), grads.data());
    auto loss = llama.Forward(access, x.data(), y.data(), acts);
    EXPECT_TRUE(loss.ok()) << loss.status();
    EXPECT_TRUE(llama.Backward(access, x.data(), y.data(), acts).ok());
    return {loss.value_or(0.f), std::move(grads)};
  }
  std::unique_ptr<ModelLayout> layout;
  std::vector<float> params;
  std::vector<int32_t> x, y;
};

TEST(LlamaVariantsTest, Qwen3HasPerHeadQkNormWeights) {
  Model m(Qwen3Windowed());
  for (const char* name : {"model.layers.0.self_attn.q_norm.weight",
                           "model.layers.1.self_attn.k_norm.weight"}) {
    const LayoutEntry* e = m.layout->flat().Find(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->shape, std::vector<int64_t>{6}) << name;
  }
  EXPECT_EQ(m.layout->num_params(), Qwen3Windowed().NumParams());
  EXPECT_EQ(Qwen3Windowed().AttentionWindow(0), 0);
  EXPECT_EQ(Qwen3Windowed().AttentionWindow(1), 2);
}

TEST(LlamaVariantsTest, GradientMatchesFiniteDifferences) {
  Model m(Qwen3Windowed());
  auto [loss0, grads] = m.Run();
  Llama llama(m.layout.get());
  LlamaActivations acts = m.Acts();
  std::vector<float> unused(m.layout->num_params());
  FlatParamAccess access(m.layout.get(), m.params.data(), unused.data());
  for (const char* name :
       {"model.layers.0.self_attn.q_norm.weight", "model.layers.0.self_attn.k_norm.weight",
        "model.layers.1.self_attn.q_norm.weight", "model.layers.1.self_attn.k_norm.weight",
        "model.layers.0.self_attn.q_proj.weight", "model.layers.1.self_attn.k_proj.weight",
        "model.layers.1.self_attn.v_proj.weight", "model.layers.0.input_layernorm.weight",
        "model.embed_tokens.weight"}) {
    const LayoutEntry* e = m.layout->flat().Find(name);
    ASSERT_NE(e, nullptr) << name;
    for (int64_t i : {int64_t{0}, e->numel / 2, e->numel - 1}) {
      float& p = m.params[e->offset + i];
      const float saved = p, h = 1e-2f;
      p = saved + h;
      const float up = *llama.Forward(access, m.x.data(), m.y.data(), acts);
      p = saved - h;
      const float down = *llama.Forward(access, m.x.data(), m.y.data(), acts);
      p = saved;
      const double numeric = (double(up) - down) / (2.0 * h);
      EXPECT_NEAR(grads[e->offset + i], numeric, 2e-3 + 2e-2 * std::fabs(numeric))
          << name << "[" << i << "]";
    }
  }
}

TEST(LlamaVariantsTest, CheckpointedBlocksAreBitIdenticalAndPlannedBytesExact) {
  Model m(Qwen3Windowed());
  const auto [loss, grads] = m.Run();
  const auto [loss_ck, grads_ck] = m.Run({.checkpoint_blocks = true});
  EXPECT_EQ(loss, loss_ck);
  EXPECT_EQ(0, std::memcmp(grads.data(), grads_ck.data(), grads.size() * sizeof(float)));
  const LlamaConfig& c = *m.layout->config().As<LlamaConfig>();
  for (bool bf16 : {false, true}) {
    for (bool checkpoint : {false, true}) {
      const ActivationOptions o{.bf16_matmuls = bf16, .checkpoint_blocks = checkpoint};
      auto acts = LlamaActivations::Create(c, B, T, MemoryPool::kHost, nullptr, o);
      ASSERT_TRUE(acts.ok());
      auto planned = LlamaActivations::PlannedBytes(c, B, T, o);
      ASSERT_TRUE(planned.ok());
      EXPECT_EQ(*planned, acts->bytes()) << "bf16 " << bf16 << " checkpoint " << checkpoint;
    }
  }
  // The q/k norms keep the projection and one rstd per head and position on top of Llama's.
  LlamaConfig plain = c;
  plain.model_type = "llama";
  EXPECT_EQ(*LlamaActivations::PlannedBytes(c, B, T, {}) -
                *LlamaActivations::PlannedBytes(plain, B, T, {}),
            c.num_hidden_layers * B * T *
                (c.q_dim() + 2 * c.kv_dim() + c.num_attention_heads + c.num_key_value_heads) *
                static_cast<int64_t>(sizeof(float)));
}

TEST(LlamaVariantsTest, Bf16MatmulsStayCloseToFp32) {
  Model m(Qwen3Windowed());
  auto [loss, grads] = m.Run();
  std::vector<float> grads16(m.layout->num_params(), 0.f);
  Llama llama(m.layout.get());
  LlamaActivations acts = m.Acts({.bf16_matmuls = true});
  Bf16Access access(m.layout.get(), m.params.data(), grads16.data());
  auto loss16 = llama.Forward(access, m.x.data(), m.y.data(), acts);
  ASSERT_TRUE(loss16.ok()) << loss16.status();
  ASSERT_TRUE(llama.Backward(access, m.x.data(), m.y.data(), acts).ok());
  EXPECT_NEAR(*loss16, loss, 2e-2 * loss);
  const LayoutEntry* e = m.layout->flat().Find("model.layers.1.self_attn.q_norm.weight");
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < e->numel; ++i) {
    diff = std::max(diff, std::fabs(double(grads16[e->offset + i]) - grads[e->offset + i]));
    scale = std::max(scale, std::fabs(double(grads[e->offset + i])));
  }
  EXPECT_GT(scale, 0);
  EXPECT_LT(diff, 0.1 * scale);
}

// The window changes the result when it is shorter than the sequence, and not at all (the same
// bits) when it is as long or longer: Mistral's 4096 at seq_len T trains as before.
TEST(LlamaVariantsTest, WindowBindsOnlyOnLongerSequences) {
  LlamaConfig c = Qwen3Windowed();
  c.model_type = "mistral";
  c.max_window_layers = 0;
  c.sliding_window = 0;
  Model full(c);
  const auto [loss, grads] = full.Run();
  for (int64_t window : {T, int64_t{4096}}) {
    c.sliding_window = window;
    Model same(c);
    const auto [loss_w, grads_w] = same.Run();
    EXPECT_EQ(loss_w, loss) << window;
    EXPECT_EQ(0, std::memcmp(grads.data(), grads_w.data(), grads.size() * sizeof(float)))
        << window;
  }
  c.sliding_window = T - 1;
  Model shorter(c);
  EXPECT_NE(shorter.Run().first, loss);
}

}  // namespace
}  // namespace accel::model
