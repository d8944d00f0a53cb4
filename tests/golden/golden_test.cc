// The engine against PyTorch: a tiny GPT-2 (tests/golden/make_reference.py, float64 truth rounded
// once to f32) — logits, loss, every gradient, and parameters and losses over 3 AdamW steps with
// global-norm clipping. Tolerances (tests/golden/README.md): logits and gradients within 1e-5 of
// each tensor's largest magnitude, losses and gradient norms within 1e-6 relative.
#include <cmath>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.h"
#include "engine/kernels/adamw.h"
#include "engine/model/gpt2.h"
#include "engine/optim/adamw.h"
#include "engine/optim/clip.h"
#include "engine/testing/matchers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/golden/golden_fixture.h"

namespace accel {
namespace {

using testing::AllCloseToScale;

using GoldenTest = GoldenFixture;

TEST_F(GoldenTest, ForwardLogitsLossAndEveryGradient) {
  model::Gpt2 gpt(layout_.get());
  auto acts = model::Gpt2Activations::Create(config_, B_, T_, MemoryPool::kHost);
  ASSERT_TRUE(acts.ok()) << acts.status();
  std::vector<int32_t> x, y;
  ReadBatch(0, &x, &y);
  model::FlatParamAccess access(layout_.get(), params_.data(), grads_.data());
  auto loss = gpt.Forward(access, x.data(), y.data(), *acts);
  ASSERT_TRUE(loss.ok()) << loss.status();
  const float expected_loss = Read("step0.loss")[0];
  EXPECT_NEAR(*loss, expected_loss, 1e-6 * expected_loss);
  std::vector<float> logits = Read("step0.logits");
  EXPECT_TRUE(AllCloseToScale({acts->logits(), logits.size()}, logits, 1e-5));

  ASSERT_TRUE(gpt.Backward(access, x.data(), y.data(), *acts).ok());
  for (const LayoutEntry& e : layout_->flat().entries()) {
    std::vector<float> expected = Read("step0.grad." + e.name);
    EXPECT_TRUE(AllCloseToScale(ParamSpan(grads_, e), expected, 1e-5)) << "gradient of " << e.name;
  }
}

TEST_F(GoldenTest, ThreeAdamWStepsWithClipping) {
  model::Gpt2 gpt(layout_.get());
  auto acts = model::Gpt2Activations::Create(config_, B_, T_, MemoryPool::kHost);
  ASSERT_TRUE(acts.ok());
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
    auto loss = gpt.Forward(access, x.data(), y.data(), *acts);
    ASSERT_TRUE(loss.ok());
    ASSERT_TRUE(gpt.Backward(access, x.data(), y.data(), *acts).ok());
    const std::string s = "step" + std::to_string(step);
    const float expected_loss = Read(s + ".loss")[0];
    EXPECT_NEAR(*loss, expected_loss, 1e-6 * expected_loss) << s;
    double norm = std::sqrt(kernels::SquaredL2Norm(grads_.data(), grads_.size()));
    const float expected_norm = Read(s + ".grad_norm")[0];
    EXPECT_NEAR(norm, expected_norm, 1e-6 * expected_norm) << s;
    ASSERT_TRUE(opt->Step(params_.data(), grads_.data(), lr, optim::ClipScale(norm, max_norm)).ok());

    std::vector<float> expected(params_.size());
    ASSERT_TRUE(ReadParams(s + ".param.", expected.data()));
    for (const LayoutEntry& e : layout_->flat().entries()) {
      // Adam's first steps are lr·g/(|g|+eps): where the true gradient is within a few eps of 0
      // (the key bias of c_attn is exactly 0 mathematically, softmax being shift-invariant) the
      // update is fp32 rounding noise divided by eps, in any fp32 engine, PyTorch's included
      // (README "Tolerances"). Those elements are held to one learning-rate step per update;
      // everything else to 1e-5 of the tensor's scale.
      std::span<const float> got = ParamSpan(params_, e), want = ParamSpan(expected, e);
      const double scale = testing::MaxAbs(want);
      const bool is_qkv_bias = e.name.ends_with("attn.c_attn.bias");
      for (int64_t i = 0; i < e.numel; ++i) {
        const bool key_bias = is_qkv_bias && i >= config_.n_embd && i < 2 * config_.n_embd;
        const float g0 = std::fabs(grad0[e.offset + i]);
        const bool tiny_grad = g0 > 0.f && g0 < 1e-6f;
        if (step == 0 && (key_bias || tiny_grad)) ++ill_conditioned;
        const double tol = key_bias || tiny_grad ? lr * (step + 1) : 1e-5 * scale;
        ASSERT_NEAR(got[i], want[i], tol) << s << " param " << e.name << "[" << i << "]";
      }
    }
  }
  // The exemption must stay an exception: the key biases (2 layers x C) plus a handful.
  EXPECT_LT(ill_conditioned, 2 * config_.n_embd + 200);
}

}  // namespace
}  // namespace accel
