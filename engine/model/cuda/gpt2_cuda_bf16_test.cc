// The CUDA model's bf16 matmul path (label gpu; skips without a device), as gpt2_bf16_test.cc
// checks the CPU model's: with a device bf16 copy of the weights offered through
// ParamAccess::ParamsBf16 and bf16 scratch in the activations, the linear layers and the tied
// lm_head multiply bf16 inputs with fp32 accumulation. Compared with the fp32 path on the same
// (bf16-representable) weights: logits and each unit's gradients within 1e-2 relative L2 (the
// CPU model's bf16 path is about 2e-3 off at this size), yet more than 1e-4 apart, which shows
// the bf16 path ran (two fp32 runs differ only by the atomics' summation order, ~1e-7).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "engine/kernels/cuda/blas.h"
#include "engine/tensor/cuda/caching_allocator.h"
#include "engine/kernels/cuda/test_util.h"
#include "engine/model/cuda/gpt2_cuda.h"
#include "engine/model/gpt2_config.h"
#include "engine/model/param_access.h"
#include "engine/model/param_specs.h"
#include "engine/tensor/dtype.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::model {
namespace {

using cuda::testing::DeviceArray;
using cuda::testing::DeviceOk;

// FlatParamAccess over device buffers plus, when params16 is not null, a device bf16 copy.
class DeviceAccess : public ParamAccess {
 public:
  DeviceAccess(const ModelLayout* layout, const float* params, const uint16_t* params16,
               float* grads)
      : layout_(layout), flat_(layout, params, grads), params16_(params16) {}
  absl::StatusOr<const float*> Params(int unit, Pass pass) override {
    return flat_.Params(unit, pass);
  }
  absl::Status Release(int unit, Pass pass) override { return flat_.Release(unit, pass); }
  const uint16_t* ParamsBf16(int unit) override {
    return params16_ == nullptr ? nullptr : params16_ + layout_->unit(unit).offset;
  }
  absl::StatusOr<float*> Grads(int unit) override { return flat_.Grads(unit); }
  absl::Status GradsReady(int unit) override { return flat_.GradsReady(unit); }

 private:
  const ModelLayout* layout_;
  FlatParamAccess flat_;
  const uint16_t* params16_;
};

struct Result {
  float loss = 0;
  int64_t activation_bytes = 0;
  std::vector<float> logits, grads;
};

double RelativeL2(const float* a, const float* b, int64_t n) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

double RelativeL2(const std::vector<float>& a, const std::vector<float>& b) {
  return RelativeL2(a.data(), b.data(), static_cast<int64_t>(b.size()));
}

class Gpt2CudaBf16Test : public ::testing::Test {
 protected:
  void SetUp() override {
    ACCEL_SKIP_WITHOUT_GPU();
    // gpt2-tiny: C = 64, V = 256, every leading dimension a multiple of 8 for cuBLASLt.
    auto config = Gpt2Preset("gpt2-tiny");
    ASSERT_TRUE(config.ok()) << config.status();
    auto layout = ModelLayout::Create(*config);
    ASSERT_TRUE(layout.ok()) << layout.status();
    layout_ = std::make_unique<ModelLayout>(std::move(*layout));
    V_ = config->vocab_size;
    std::vector<float> params(layout_->num_params());
    InitParams(*layout_, 7, params.data());
    // Round the weights to bf16 so that both paths see the same values.
    std::vector<uint16_t> params16(params.size());
    FloatToBf16(params.data(), params16.data(), params.size());
    Bf16ToFloat(params16.data(), params.data(), params.size());
    params_ = std::make_unique<DeviceArray<float>>(params);
    params16_ = std::make_unique<DeviceArray<uint16_t>>(params16);
    testing::TestRng rng(11);
    x_ = rng.IntVector(B * T, 0, static_cast<int32_t>(V_));
    y_ = rng.IntVector(B * T, 0, static_cast<int32_t>(V_));
    auto blas = cuda::Blas::Create();
    ASSERT_TRUE(blas.ok()) << blas.status();
    blas_ = std::move(*blas);
    allocator_ = std::make_unique<cuda::CachingAllocator>(cuda::CudaRawAllocator(0), nullptr);
  }
  // The model queues on the legacy default stream, as test_util's copies do.
  cudaStream_t stream() const { return nullptr; }

  // Forward and backward from zero gradients.
  void Run(bool bf16_scratch, bool offer_bf16, Result* r) {
    DeviceArray<float> grads(std::vector<float>(layout_->num_params(), 0.f));
    Gpt2Cuda gpt(layout_.get(), blas_.get(), stream());
    {
      auto acts = Gpt2CudaActivations::Create(*layout_->config().As<Gpt2Config>(), B, T,
                                              allocator_.get(), stream(), bf16_scratch);
      ASSERT_TRUE(acts.ok()) << acts.status();
      EXPECT_EQ(acts->bf16_matmuls(), bf16_scratch);
      r->activation_bytes = acts->bytes();
      DeviceAccess access(layout_.get(), params_->get(), offer_bf16 ? params16_->get() : nullptr,
                          grads.get());
      auto loss = gpt.Forward(access, x_.data(), y_.data(), *acts);
      ASSERT_TRUE(loss.ok()) << loss.status();
      r->loss = *loss;
      r->logits.resize(B * T * V_);
      ASSERT_EQ(cudaMemcpy(r->logits.data(), acts->logits(), r->logits.size() * sizeof(float),
                           cudaMemcpyDeviceToHost),
                cudaSuccess);
      ASSERT_TRUE(gpt.Backward(access, *acts).ok());
      ASSERT_TRUE(DeviceOk());
    }
    r->grads = grads.Download();
  }

  static constexpr int64_t B = 4, T = 32;
  int64_t V_ = 0;
  std::unique_ptr<ModelLayout> layout_;
  std::unique_ptr<DeviceArray<float>> params_;
  std::unique_ptr<DeviceArray<uint16_t>> params16_;
  std::vector<int32_t> x_, y_;
  std::unique_ptr<cuda::Blas> blas_;
  std::unique_ptr<cuda::CachingAllocator> allocator_;
};

TEST_F(Gpt2CudaBf16Test, Bf16MatmulsAreCloseToFp32ButNotTheSameBits) {
  Result fp32, bf16;
  ASSERT_NO_FATAL_FAILURE(Run(false, false, &fp32));
  ASSERT_NO_FATAL_FAILURE(Run(true, true, &bf16));
  const double logits_l2 = RelativeL2(bf16.logits, fp32.logits);
  std::printf("loss fp32 %.6f bf16 %.6f; relative L2 logits %.2e, gradients %.2e\n", fp32.loss,
              bf16.loss, logits_l2, RelativeL2(bf16.grads, fp32.grads));
  EXPECT_NEAR(bf16.loss, fp32.loss, 1e-2 * fp32.loss);
  EXPECT_LT(logits_l2, 1e-2);
  EXPECT_GT(logits_l2, 1e-4) << "the bf16 path did not run";
  for (int u = 0; u < layout_->num_units(); ++u) {
    const UnitRange& unit = layout_->unit(u);
    const double l2 = RelativeL2(bf16.grads.data() + unit.offset, fp32.grads.data() + unit.offset,
                                 unit.numel);
    EXPECT_LT(l2, 1e-2) << "unit " << u;
    EXPECT_GT(l2, 1e-4) << "unit " << u << ": the bf16 path did not run";
  }
}

TEST_F(Gpt2CudaBf16Test, WithoutBf16WeightsTheScratchChangesNothing) {
  // An engine that keeps fp32 parameters offers no bf16 copy: the model stays on fp32 matmuls,
  // equal to the plain run up to the atomics' order in the gradients.
  Result plain, scratch_only, weights_only;
  ASSERT_NO_FATAL_FAILURE(Run(false, false, &plain));
  ASSERT_NO_FATAL_FAILURE(Run(true, false, &scratch_only));
  EXPECT_LT(RelativeL2(scratch_only.logits, plain.logits), 1e-5);
  EXPECT_LT(RelativeL2(scratch_only.grads, plain.grads), 1e-5);
  // The scratch is charged as activations: BT·4C and BT·max(4C, V) bf16 elements.
  const int64_t BT = B * T, C = layout_->config().hidden_size();
  EXPECT_EQ(scratch_only.activation_bytes - plain.activation_bytes,
            2 * BT * 4 * C + 2 * BT * std::max<int64_t>(4 * C, V_));
  // And bf16 weights without scratch are ignored the same way.
  ASSERT_NO_FATAL_FAILURE(Run(false, true, &weights_only));
  EXPECT_LT(RelativeL2(weights_only.logits, plain.logits), 1e-5);
  EXPECT_LT(RelativeL2(weights_only.grads, plain.grads), 1e-5);
}

}  // namespace
}  // namespace accel::model
