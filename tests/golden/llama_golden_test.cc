// The engine against PyTorch for Llama-family models (tests/golden/make_llama_reference.py,
// Hugging Face LlamaForCausalLM conventions, float64 truth rounded once to f32): a GQA model with
// an untied head (llama_tiny) and a tied one with q/k/v/o biases, head_dim ≠ hidden/heads, one
// kv head and llama3 rope_scaling (llama_tiny_tied_bias). Logits, loss, every gradient, the
// rotary frequencies, and parameters and losses over 3 AdamW steps with global-norm clipping;
// the tolerances are the GPT-2 golden's (tests/golden/README.md).
#include <cmath>
#include <string>
#include <vector>

#include "engine/kernels/adamw.h"
#include "engine/model/llama.h"
#include "engine/optim/adamw.h"
#include "engine/optim/clip.h"
#include "engine/testing/matchers.h"
#include "gtest/gtest.h"
#include "tests/golden/golden_fixture.h"

namespace accel {
namespace {

using testing::AllCloseToScale;

class LlamaGoldenTest : public ::testing::TestWithParam<std::string>, public GoldenFileFixture {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Load(GetParam() + ".safetensors"));
    ASSERT_NE(layout_->config().llama(), nullptr);
  }
  model::LlamaActivations Acts() {
    auto acts = model::LlamaActivations::Create(*layout_->config().llama(), B_, T_,
                                                MemoryPool::kHost);
    EXPECT_TRUE(acts.ok()) << acts.status();
    return std::move(*acts);
  }
};

TEST_P(LlamaGoldenTest, ConfigFileAndRotaryFrequencies) {
  // The config.json beside the fixture is the model the fixture was made with.
  auto file = model::LoadModelConfig(Env::Default(),
                                     std::string(ACCEL_GOLDEN_DIR) + "/" + GetParam() +
                                         ".config.json");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->NumParams(), layout_->num_params());
  const std::vector<double> ours = layout_->config().llama()->InverseFrequencies();
  const std::vector<float> want = Read("rope.inv_freq");
  ASSERT_EQ(ours.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(ours[i], want[i], 1e-7 * want[i]) << i;
}

TEST_P(LlamaGoldenTest, ForwardLogitsLossAndEveryGradient) {
  model::Llama llama(layout_.get());
  model::LlamaActivations acts = Acts();
  std::vector<int32_t> x, y;
  ReadBatch(0, &x, &y);
  model::FlatParamAccess access(layout_.get(), params_.data(), grads_.data());
  auto loss = llama.Forward(access, x.data(), y.data(), acts);
  ASSERT_TRUE(loss.ok()) << loss.status();
  const float expected_loss = Read("step0.loss")[0];
  EXPECT_NEAR(*loss, expected_loss, 1e-6 * expected_loss);
  std::vector<float> logits = Read("step0.logits");
  EXPECT_TRUE(AllCloseToScale({acts.logits(), logits.size()}, logits, 1e-5));

  ASSERT_TRUE(llama.Backward(access, x.data(), y.data(), acts).ok());
  for (const LayoutEntry& e : layout_->flat().entries()) {
    std::vector<float> expected = Read("step0.grad." + e.name);
    EXPECT_TRUE(AllCloseToScale(ParamSpan(grads_, e), expected, 1e-5)) << "gradient of " << e.name;
  }
}

TEST_P(LlamaGoldenTest, ThreeAdamWStepsWithClipping) {
  model::Llama llama(layout_.get());
  model::LlamaActivations acts = Acts();
  optim::AdamWConfig ac;
  ac.beta1 = hyper_["beta1"];
  ac.beta2 = hyper_["beta2"];
  ac.eps = hyper_["eps"];
  ac.weight_decay = hyper_["weight_decay"];
  auto opt = optim::AdamW::Create(*layout_, 0, layout_->num_params(), ac);
  ASSERT_TRUE(opt.ok()) << opt.status();
  const float lr = hyper_["lr"], max_norm = hyper_["max_norm"];
  model::FlatParamAccess access(layout_.get(), params_.data(), grads_.data());
  std::vector<float> grad0(params_.size());
  ASSERT_TRUE(ReadParams("step0.grad.", grad0.data()));
  int64_t ill_conditioned = 0;
  for (int step = 0; step < 3; ++step) {
    std::vector<int32_t> x, y;
    ReadBatch(step, &x, &y);
    std::fill(grads_.begin(), grads_.end(), 0.f);
    auto loss = llama.Forward(access, x.data(), y.data(), acts);
    ASSERT_TRUE(loss.ok());
    ASSERT_TRUE(llama.Backward(access, x.data(), y.data(), acts).ok());
    const std::string s = "step" + std::to_string(step);
    const float expected_loss = Read(s + ".loss")[0];
    EXPECT_NEAR(*loss, expected_loss, 1e-6 * expected_loss) << s;
    const double norm = std::sqrt(kernels::SquaredL2Norm(grads_.data(), grads_.size()));
    const float expected_norm = Read(s + ".grad_norm")[0];
    EXPECT_NEAR(norm, expected_norm, 1e-6 * expected_norm) << s;
    ASSERT_TRUE(opt->Step(params_.data(), grads_.data(), lr, optim::ClipScale(norm, max_norm)).ok());

    std::vector<float> expected(params_.size());
    ASSERT_TRUE(ReadParams(s + ".param.", expected.data()));
    for (const LayoutEntry& e : layout_->flat().entries()) {
      // Where the true step-0 gradient is nonzero but below 1e-6, Adam's first updates
      // lr·g/(|g|+eps) turn fp32 rounding noise into visible moves in any fp32 engine,
      // PyTorch's included (README "Tolerances": with RoPE the key biases are such elements).
      // Those are held to one learning-rate step per update; everything else to 1e-5 of the
      // tensor's scale.
      std::span<const float> got = ParamSpan(params_, e), want = ParamSpan(expected, e);
      const double scale = testing::MaxAbs(want);
      for (int64_t i = 0; i < e.numel; ++i) {
        const float g0 = std::fabs(grad0[e.offset + i]);
        const bool tiny_grad = g0 > 0.f && g0 < 1e-6f;
        if (step == 0 && tiny_grad) ++ill_conditioned;
        const double tol = tiny_grad ? lr * (step + 1) : 1e-5 * scale;
        ASSERT_NEAR(got[i], want[i], tol) << s << " param " << e.name << "[" << i << "]";
      }
    }
  }
  // The exemption must stay an exception (the README counts 21 and 125 such elements).
  EXPECT_LT(ill_conditioned, 200);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LlamaGoldenTest,
                         ::testing::Values("llama_tiny", "llama_tiny_tied_bias"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace accel
