#include "engine/model/llama.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/recording_access.h"
#include "engine/testing/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::model {
namespace {

using ::testing::HasSubstr;

// A small GQA model with every optional tensor: 2 query heads per kv head, head_dim not
// hidden/heads, q/k/v/o and MLP biases, an untied head (or tied, for the second fixture).
LlamaConfig SmallConfig(bool tied) {
  LlamaConfig c;
  c.name = tied ? "tied" : "untied";
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 6;
  c.num_hidden_layers = 2;
  c.vocab_size = 29;
  c.max_position_embeddings = 12;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 100.0;
  c.tie_word_embeddings = tied;
  c.attention_bias = true;
  c.mlp_bias = true;
  return c;
}

class LlamaTest : public ::testing::TestWithParam<bool> {
 protected:
  static constexpr int64_t B = 2, T = 5;
  void SetUp() override {
    auto layout = ModelLayout::Create(SmallConfig(GetParam()));
    ASSERT_TRUE(layout.ok()) << layout.status();
    layout_ = std::make_unique<ModelLayout>(std::move(*layout));
    params_.resize(layout_->num_params());
    grads_.assign(layout_->num_params(), 0.f);
    // Larger than the 0.02 init, and every norm weight and bias away from 1 and 0, so that every
    // term of the gradient is exercised.
    accel::testing::TestRng rng(11);
    for (float& p : params_) p = rng.Uniform(-0.3f, 0.3f);
    for (const LayoutEntry& e : layout_->flat().entries()) {
      if (e.name.find("norm") == std::string::npos) continue;
      for (int64_t i = 0; i < e.numel; ++i) params_[e.offset + i] += 1.0f;
    }
    x_ = rng.IntVector(B * T, 0, 29);
    y_ = rng.IntVector(B * T, 0, 29);
  }
  LlamaActivations Acts(ActivationOptions o = {}) {
    auto acts = LlamaActivations::Create(*layout_->config().As<LlamaConfig>(), B, T,
                                         MemoryPool::kHost, nullptr, o);
    EXPECT_TRUE(acts.ok()) << acts.status();
    return std::move(*acts);
  }

  std::unique_ptr<ModelLayout> layout_;
  std::vector<float> params_, grads_;
  std::vector<int32_t> x_, y_;
};

TEST_P(LlamaTest, LossAtInitIsNearLogVocabulary) {
  std::vector<float> init(layout_->num_params());
  InitParams(*layout_, 3, init.data());
  Llama llama(layout_.get());
  LlamaActivations acts = Acts();
  FlatParamAccess access(layout_.get(), init.data(), grads_.data());
  auto loss = llama.Forward(access, x_.data(), y_.data(), acts);
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_NEAR(*loss, std::log(29.0f), 0.05f);
}

TEST_P(LlamaTest, GradientMatchesFiniteDifferences) {
  Llama llama(layout_.get());
  LlamaActivations acts = Acts();
  FlatParamAccess access(layout_.get(), params_.data(), grads_.data());
  ASSERT_TRUE(llama.Forward(access, x_.data(), y_.data(), acts).ok());
  ASSERT_TRUE(llama.Backward(access, x_.data(), y_.data(), acts).ok());
  std::vector<std::string> names = {
      "model.embed_tokens.weight",           "model.norm.weight",
      "model.layers.0.input_layernorm.weight", "model.layers.0.self_attn.q_proj.weight",
      "model.layers.1.self_attn.k_proj.weight", "model.layers.0.self_attn.v_proj.bias",
      "model.layers.1.self_attn.o_proj.weight", "model.layers.0.self_attn.o_proj.bias",
      "model.layers.1.post_attention_layernorm.weight", "model.layers.0.mlp.gate_proj.weight",
      "model.layers.1.mlp.up_proj.bias",     "model.layers.0.mlp.down_proj.weight"};
  if (!GetParam()) names.push_back("lm_head.weight");
  // Central differences in fp32 with h = 1e-2, as Gpt2's test.
  for (const std::string& name : names) {
    const LayoutEntry* e = layout_->flat().Find(name);
    ASSERT_NE(e, nullptr) << name;
    for (int64_t i : {int64_t{0}, e->numel / 2, e->numel - 1}) {
      float& p = params_[e->offset + i];
      const float saved = p, h = 1e-2f;
      p = saved + h;
      const float up = *llama.Forward(access, x_.data(), y_.data(), acts);
      p = saved - h;
      const float down = *llama.Forward(access, x_.data(), y_.data(), acts);
      p = saved;
      const double numeric = (double(up) - down) / (2.0 * h);
      EXPECT_NEAR(grads_[e->offset + i], numeric, 2e-3 + 2e-2 * std::fabs(numeric))
          << name << "[" << i << "]";
    }
  }
}

// Two micro-batches with and without per-layer checkpointing: the same losses, the same
// gradient bits and the same ParamAccess calls in the same order.
TEST_P(LlamaTest, CheckpointedBlocksGiveTheSameBitsAndTheSameAccessOrder) {
  struct Run {
    std::vector<float> losses, grads;
    std::vector<std::string> log;
  };
  auto run = [&](bool checkpoint_blocks) {
    Run r;
    r.grads.assign(layout_->num_params(), 0.f);
    Llama llama(layout_.get());
    LlamaActivations acts = Acts({.checkpoint_blocks = checkpoint_blocks});
    RecordingAccess access(layout_.get(), params_.data(), r.grads.data());
    for (const auto& [in, out] : {std::pair(&x_, &y_), std::pair(&y_, &x_)}) {
      auto loss = llama.Forward(access, in->data(), out->data(), acts);
      EXPECT_TRUE(loss.ok());
      r.losses.push_back(*loss);
      EXPECT_TRUE(llama.Backward(access, in->data(), out->data(), acts, 0.5f).ok());
    }
    r.log = access.log;
    return r;
  };
  const Run kept = run(false), recomputed = run(true);
  EXPECT_EQ(recomputed.losses, kept.losses);
  EXPECT_EQ(recomputed.log, kept.log);
  EXPECT_EQ(kept.log.front(), "FP0");
  EXPECT_EQ(kept.log.back(), "D0");
  ASSERT_EQ(recomputed.grads.size(), kept.grads.size());
  EXPECT_EQ(0, std::memcmp(recomputed.grads.data(), kept.grads.data(),
                           kept.grads.size() * sizeof(float)));
  EXPECT_NE(kept.grads, std::vector<float>(kept.grads.size(), 0.f));
}

TEST_P(LlamaTest, PlannedBytesAreWhatCreateAllocates) {
  const LlamaConfig& c = *layout_->config().As<LlamaConfig>();
  for (bool bf16 : {false, true}) {
    for (bool checkpoint : {false, true}) {
      const ActivationOptions o{.bf16_matmuls = bf16, .checkpoint_blocks = checkpoint};
      MemoryLedger ledger;
      auto acts = LlamaActivations::Create(c, B, T, MemoryPool::kDevice, &ledger, o);
      ASSERT_TRUE(acts.ok());
      auto planned = LlamaActivations::PlannedBytes(c, B, T, o);
      ASSERT_TRUE(planned.ok());
      EXPECT_EQ(*planned, acts->bytes()) << "bf16 " << bf16 << " checkpoint " << checkpoint;
      EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kActivations).current, *planned);
    }
  }
  EXPECT_THAT(LlamaActivations::Create(c, 1, 13, MemoryPool::kHost).status().message(),
              HasSubstr("exceeds the model's 12 positions"));
}

TEST_P(LlamaTest, RejectsTokensOutsideTheVocabulary) {
  Llama llama(layout_.get());
  LlamaActivations acts = Acts();
  FlatParamAccess access(layout_.get(), params_.data(), grads_.data());
  x_[4] = 29;
  auto bad = llama.Forward(access, x_.data(), y_.data(), acts);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("position 4"));
}

// The matmul weights the bf16 path reads only in bf16: every layer's four (q/k/v as one),
// and the untied head.
TEST_P(LlamaTest, MatmulWeightRangesCoverTheProjections) {
  Llama llama(layout_.get());
  const LlamaConfig& c = *layout_->config().As<LlamaConfig>();
  int64_t block = 0;
  for (const auto& [offset, n] : llama.MatmulWeightRanges(1)) block += n;
  EXPECT_EQ(block, (c.q_dim() + 2 * c.kv_dim()) * 16 + 16 * c.q_dim() + 3 * 24 * 16);
  EXPECT_EQ(llama.MatmulWeightRanges(0).size(), GetParam() ? 0u : 1u);
}

INSTANTIATE_TEST_SUITE_P(TiedAndUntied, LlamaTest, ::testing::Bool());

}  // namespace
}  // namespace accel::model
