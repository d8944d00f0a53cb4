// The model's bf16 matmul path (bf16 mixed precision): with bf16 weights offered through
// ParamAccess::ParamsBf16 and bf16 scratch in the activations, every linear layer and the
// lm_head multiply bf16 inputs with fp32 accumulation. Checked against the fp32 path on the
// same (bf16-representable) weights: close within bf16's rounding, yet not the same bits,
// which shows the bf16 path ran.
#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/model/gpt2.h"
#include "engine/model/recording_access.h"
#include "engine/tensor/dtype.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::model {
namespace {

struct Result {
  float loss = 0;
  std::vector<float> logits, grads;
};

class Gpt2Bf16Test : public ::testing::Test {
 protected:
  void SetUp() override {
    // C = 64 and V = 96: matmuls big enough for oneDNN's blocked kernels, small enough to be quick.
    auto layout = ModelLayout::Create(Gpt2Config{"t", 2, 4, 64, 96, 16});
    ASSERT_TRUE(layout.ok());
    layout_ = std::make_unique<ModelLayout>(std::move(*layout));
    params_.resize(layout_->num_params());
    InitParams(*layout_, 7, params_.data());
    // Round the weights to bf16 so that both paths see the same values.
    for (float& p : params_) p = Bf16ToFloat(FloatToBf16(p));
    testing::TestRng rng(11);
    x_ = rng.IntVector(B * T, 0, 96);
    y_ = rng.IntVector(B * T, 0, 96);
  }

  Result Run(bool bf16_scratch, bool offer_bf16, bool checkpoint_blocks = false) {
    Result r;
    r.grads.assign(layout_->num_params(), 0.f);
    Gpt2 gpt(layout_.get());
    auto acts = Gpt2Activations::Create(
        *layout_->config().As<Gpt2Config>(), B, T, MemoryPool::kHost, nullptr,
        {.bf16_matmuls = bf16_scratch, .checkpoint_blocks = checkpoint_blocks});
    EXPECT_TRUE(acts.ok());
    EXPECT_EQ(acts->bf16_matmuls(), bf16_scratch);
    Bf16Access access(layout_.get(), params_.data(), r.grads.data(), offer_bf16);
    auto loss = gpt.Forward(access, x_.data(), y_.data(), *acts);
    EXPECT_TRUE(loss.ok());
    r.loss = *loss;
    r.logits.assign(acts->logits(), acts->logits() + B * T * 96);
    // A second micro-batch accumulates, so a recompute that depended on stale scratch would show.
    EXPECT_TRUE(gpt.Backward(access, x_.data(), y_.data(), *acts).ok());
    EXPECT_TRUE(gpt.Forward(access, y_.data(), x_.data(), *acts).ok());
    EXPECT_TRUE(gpt.Backward(access, x_.data(), y_.data(), *acts).ok());
    return r;
  }

  static constexpr int64_t B = 2, T = 16;
  std::unique_ptr<ModelLayout> layout_;
  std::vector<float> params_;
  std::vector<int32_t> x_, y_;
};

double RelativeL2(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

TEST_F(Gpt2Bf16Test, Bf16MatmulsAreCloseToFp32ButNotTheSameBits) {
  const Result fp32 = Run(false, false);
  const Result bf16 = Run(true, true);
  std::printf("loss fp32 %.6f bf16 %.6f; relative L2 logits %.2e, gradients %.2e\n", fp32.loss,
              bf16.loss, RelativeL2(bf16.logits, fp32.logits), RelativeL2(bf16.grads, fp32.grads));
  EXPECT_NEAR(bf16.loss, fp32.loss, 1e-2 * fp32.loss);
  // Activations rounded to 8 significant bits before each matmul: errors of a few 1e-3 per
  // element, which average out over a tensor.
  EXPECT_LT(RelativeL2(bf16.logits, fp32.logits), 1e-2);
  EXPECT_LT(RelativeL2(bf16.grads, fp32.grads), 1e-2);
  EXPECT_GT(RelativeL2(bf16.logits, fp32.logits), 0.0) << "the bf16 path did not run";
  EXPECT_GT(RelativeL2(bf16.grads, fp32.grads), 0.0) << "the bf16 path did not run";
  // Every unit's gradient moved in the same direction as fp32's.
  for (int u = 0; u < layout_->num_units(); ++u) {
    const auto& unit = layout_->unit(u);
    double dot = 0, n16 = 0, n32 = 0;
    for (int64_t i = unit.offset; i < unit.offset + unit.numel; ++i) {
      dot += double(bf16.grads[i]) * fp32.grads[i];
      n16 += double(bf16.grads[i]) * bf16.grads[i];
      n32 += double(fp32.grads[i]) * fp32.grads[i];
    }
    EXPECT_GT(dot / std::sqrt(n16 * n32), 0.999) << "unit " << u;
  }
}

TEST_F(Gpt2Bf16Test, WithoutBf16WeightsTheScratchChangesNothing) {
  // An engine that keeps fp32 parameters offers no bf16 copy: the model stays on fp32 matmuls.
  const Result plain = Run(false, false);
  const Result scratch_only = Run(true, false);
  EXPECT_EQ(scratch_only.loss, plain.loss);
  EXPECT_EQ(scratch_only.logits, plain.logits);
  EXPECT_EQ(scratch_only.grads, plain.grads);
  // And bf16 weights without scratch are ignored the same way.
  const Result weights_only = Run(false, true);
  EXPECT_EQ(weights_only.grads, plain.grads);
}

TEST_F(Gpt2Bf16Test, CheckpointedBlocksGiveTheSameBitsInBf16) {
  const Result kept = Run(true, true);
  const Result recomputed = Run(true, true, /*checkpoint_blocks=*/true);
  EXPECT_EQ(recomputed.loss, kept.loss);
  EXPECT_EQ(recomputed.logits, kept.logits);
  EXPECT_EQ(recomputed.grads, kept.grads);
}

}  // namespace
}  // namespace accel::model
