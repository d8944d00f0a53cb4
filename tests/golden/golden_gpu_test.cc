// The golden test on the GPU path (label gpu; skips without a device): the tiny GPT-2 of
// tests/golden (with and without loss masks) through the CUDA model (engine/model/cuda/gpt2_cuda.h) and the CUDA AdamW,
// against the same PyTorch float64 truth as golden_test.cc.
//
// Tolerances are ten times the CPU test's: 1e-4 of each tensor's largest magnitude for logits,
// gradients and parameters, 1e-5 relative for losses and gradient norms. The device sums in
// other orders than the CPU (cuBLAS's blocking, atomics in LayerNorm's weight gradient, the
// embedding's and the norm), each within fp32 rounding of the truth; the CPU engine's 1e-5 is
// the same rounding with one fixed order. Matmuls run in fp32 without TF32.
#include <cmath>
#include <string>
#include <vector>

#include "engine/kernels/cuda/blas.h"
#include "engine/tensor/cuda/caching_allocator.h"
#include "engine/kernels/cuda/kernels.h"
#include "engine/kernels/cuda/test_util.h"
#include "engine/model/cuda/gpt2_cuda.h"
#include "engine/optim/adamw.h"
#include "engine/optim/clip.h"
#include "engine/testing/matchers.h"
#include "gtest/gtest.h"
#include "tests/golden/golden_fixture.h"

namespace accel {
namespace {

using cuda::testing::DeviceArray;
using cuda::testing::DeviceOk;
using testing::AllCloseToScale;

class GoldenGpuTest : public GoldenFixture {
 protected:
  void SetUp() override {
    ACCEL_SKIP_WITHOUT_GPU();
    GoldenFixture::SetUp();
    auto blas = cuda::Blas::Create();
    ASSERT_TRUE(blas.ok()) << blas.status();
    blas_ = std::move(*blas);
    allocator_ = std::make_unique<cuda::CachingAllocator>(cuda::CudaRawAllocator(0), nullptr);
  }
  // The model queues on the legacy default stream, as test_util's copies do.
  cudaStream_t stream() const { return nullptr; }

  std::unique_ptr<cuda::Blas> blas_;
  std::unique_ptr<cuda::CachingAllocator> allocator_;
};

TEST_P(GoldenGpuTest, ForwardLogitsLossAndEveryGradient) {
  DeviceArray<float> params(params_), grads(std::vector<float>(params_.size(), 0.f));
  model::Gpt2Cuda gpt(layout_.get(), blas_.get(), stream());
  {
    auto acts = model::Gpt2CudaActivations::Create(config_, B_, T_, allocator_.get(), stream());
    ASSERT_TRUE(acts.ok()) << acts.status();
    std::vector<int32_t> x, y;
    ReadBatch(0, &x, &y);
    model::FlatParamAccess access(layout_.get(), params.get(), grads.get());
    auto loss = gpt.Forward(access, x.data(), y.data(), *acts);
    ASSERT_TRUE(loss.ok()) << loss.status();
    const float expected_loss = Read("step0.loss")[0];
    EXPECT_NEAR(*loss, expected_loss, 1e-5 * expected_loss);
    std::vector<float> logits = Read("step0.logits"), got(logits.size());
    ASSERT_EQ(cudaMemcpy(got.data(), acts->logits(), got.size() * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_TRUE(AllCloseToScale(got, logits, 1e-4));
    ASSERT_TRUE(gpt.Backward(access, *acts).ok());
    ASSERT_TRUE(DeviceOk());
  }
  const std::vector<float> g = grads.Download();
  for (const LayoutEntry& e : layout_->flat().entries()) {
    std::vector<float> expected = Read("step0.grad." + e.name);
    EXPECT_TRUE(AllCloseToScale(ParamSpan(g, e), expected, 1e-4)) << "gradient of " << e.name;
  }
}

TEST_P(GoldenGpuTest, ThreeAdamWStepsWithClipping) {
  const int64_t n = layout_->num_params();
  DeviceArray<float> params(params_), grads(n), m(std::vector<float>(n, 0.f)),
      v(std::vector<float>(n, 0.f));
  DeviceArray<double> norm_squared(1);
  optim::AdamWConfig ac;
  ac.beta1 = hyper_["beta1"];
  ac.beta2 = hyper_["beta2"];
  ac.eps = hyper_["eps"];
  ac.weight_decay = hyper_["weight_decay"];
  // The host optimizer only supplies the weight-decay ranges; the update runs on the device.
  auto ranges = optim::AdamW::Create(*layout_, 0, n, ac);
  ASSERT_TRUE(ranges.ok()) << ranges.status();
  const float lr = hyper_["lr"], max_norm = hyper_["max_norm"];
  model::Gpt2Cuda gpt(layout_.get(), blas_.get(), stream());
  auto acts = model::Gpt2CudaActivations::Create(config_, B_, T_, allocator_.get(), stream());
  ASSERT_TRUE(acts.ok()) << acts.status();
  model::FlatParamAccess access(layout_.get(), params.get(), grads.get());
  std::vector<float> grad0(n);
  ASSERT_TRUE(ReadParams("step0.grad.", grad0.data()));
  for (int step = 0; step < 3; ++step) {
    const std::string s = "step" + std::to_string(step);
    std::vector<int32_t> x, y;
    ReadBatch(step, &x, &y);
    ASSERT_EQ(cudaMemset(grads.get(), 0, n * sizeof(float)), cudaSuccess);
    auto loss = gpt.Forward(access, x.data(), y.data(), *acts);
    ASSERT_TRUE(loss.ok()) << loss.status();
    ASSERT_TRUE(gpt.Backward(access, *acts).ok());
    ASSERT_TRUE(kernels::cuda::SquaredL2Norm(norm_squared.get(), grads.get(), DType::kF32, n,
                                             false, stream()).ok());
    const double norm = std::sqrt(norm_squared.Download()[0]);
    const float expected_loss = Read(s + ".loss")[0], expected_norm = Read(s + ".grad_norm")[0];
    EXPECT_NEAR(*loss, expected_loss, 1e-5 * expected_loss) << s;
    EXPECT_NEAR(norm, expected_norm, 1e-5 * expected_norm) << s;
    kernels::AdamWHyper h;
    h.lr = lr;
    h.beta1 = ac.beta1;
    h.beta2 = ac.beta2;
    h.eps = ac.eps;
    h.step = step + 1;
    h.grad_scale = optim::ClipScale(norm, max_norm);
    for (const optim::AdamW::DecayRange& r : ranges->ranges()) {
      h.weight_decay = r.decay ? ac.weight_decay : 0.0f;
      ASSERT_TRUE(kernels::cuda::AdamWUpdate(params.get() + r.begin, m.get() + r.begin,
                                             v.get() + r.begin, grads.get() + r.begin,
                                             DType::kF32, r.end - r.begin, h, nullptr,
                                             DType::kF32, stream())
                      .ok());
    }
    ASSERT_TRUE(DeviceOk());
    const std::vector<float> got = params.Download();
    std::vector<float> expected(n);
    ASSERT_TRUE(ReadParams(s + ".param.", expected.data()));
    for (const LayoutEntry& e : layout_->flat().entries()) {
      // As in golden_test.cc: elements whose true gradient is within rounding of 0 (the key
      // bias of c_attn, gradients below 1e-6) move by rounding noise / eps, in any fp32
      // engine; they are held to one learning-rate step per update.
      const bool is_qkv_bias = e.name.ends_with("attn.c_attn.bias");
      const double scale = testing::MaxAbs(ParamSpan(expected, e));
      for (int64_t i = 0; i < e.numel; ++i) {
        const bool key_bias = is_qkv_bias && i >= config_.n_embd && i < 2 * config_.n_embd;
        const float g0 = std::fabs(grad0[e.offset + i]);
        const bool tiny_grad = g0 > 0.f && g0 < 1e-6f;
        const double tol = key_bias || tiny_grad ? lr * (step + 1) : 1e-4 * scale;
        ASSERT_NEAR(got[e.offset + i], expected[e.offset + i], tol)
            << s << " param " << e.name << "[" << i << "]";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenGpuTest,
                         ::testing::Values("gpt2_tiny", "gpt2_tiny_masked"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace accel
