// DeviceTrainer on a device (label gpu; skips without one): trains gpt2-tiny on repetitive text
// until the loss falls, agrees with the CPU Trainer on its first steps, and saves a model file
// the CPU side reads.
#include <cmath>
#include <string>
#include <vector>

#include "engine/base/env.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/kernels/cuda/device.h"
#include "engine/train/cuda/device_trainer.h"
#include "engine/train/repetitive_text_test_fixture.h"
#include "gtest/gtest.h"

namespace accel::train {
namespace {

class DeviceTrainerGpuTest : public RepetitiveTextTest {
 protected:
  void SetUp() override {
    if (cuda::ListDevices().empty()) GTEST_SKIP() << "no CUDA device";
    RepetitiveTextTest::SetUp();
  }
  TrainOptions Options(int64_t steps) {
    TrainOptions o = RepetitiveTextTest::Options();
    o.steps = steps;
    o.grad_accum = 2;
    o.adamw.weight_decay = 0.1f;
    return o;
  }
};

TEST_F(DeviceTrainerGpuTest, LossFallsOnRepetitiveText) {
  auto t = DeviceTrainer::Create(Options(40));
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<float> losses;
  ASSERT_TRUE((*t)->Train([&](const StepMetrics& m) {
    losses.push_back(m.loss);
    EXPECT_FALSE(m.skipped);
    EXPECT_GT(m.tokens_per_s, 0);
    return absl::OkStatus();
  }).ok());
  ASSERT_EQ(losses.size(), 40u);
  EXPECT_LT(losses.back(), 0.5f * losses.front()) << losses.front() << " -> " << losses.back();
  EXPECT_GT((*t)->ledger()->Get(MemoryPool::kDevice, MemoryCategory::kParams).current, 0);
}

TEST_F(DeviceTrainerGpuTest, FirstStepsAgreeWithTheCpuTrainer) {
  auto gpu = DeviceTrainer::Create(Options(5));
  auto cpu = Trainer::Create(Options(5));
  ASSERT_TRUE(gpu.ok() && cpu.ok()) << gpu.status() << cpu.status();
  for (int s = 0; s < 5; ++s) {
    auto g = (*gpu)->TrainStep();
    auto c = (*cpu)->TrainStep();
    ASSERT_TRUE(g.ok() && c.ok()) << g.status() << c.status();
    EXPECT_NEAR(g->loss, c->loss, 1e-3 * c->loss) << "step " << s;
    EXPECT_NEAR(g->grad_norm, c->grad_norm, 1e-3 * c->grad_norm) << "step " << s;
  }
  const std::string path = dir_ + "/final/model.safetensors";
  ASSERT_TRUE((*gpu)->SaveWeights(path).ok());
  auto reader = checkpoint::SafetensorsReader::Open(Env::Default(), path);
  ASSERT_TRUE(reader.ok()) << reader.status();
}

}  // namespace
}  // namespace accel::train
