// DeviceTrainer without a device (runs everywhere): bad options are named before any device is
// looked for, and Create says Unavailable. The device tests are
// device_trainer_gpu_test.cc (label gpu).
#include "engine/train/cuda/device_trainer.h"

#include <string>
#include <vector>

#include "engine/base/env.h"
#include "engine/tensor/cuda/device.h"
#include "engine/train/repetitive_text_test_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::train {
namespace {

using ::testing::HasSubstr;

using DeviceTrainerTest = RepetitiveTextTest;

TEST_F(DeviceTrainerTest, ChecksOptionsBeforeTouchingADevice) {
  TrainOptions bad = Options();
  bad.batch = 0;
  EXPECT_THAT(DeviceTrainer::Create(bad).status().message(), HasSubstr("--batch"));
  EXPECT_THAT(DeviceTrainer::CheckOptions(bad).message(), HasSubstr("--batch"));
  // Everything the CPU trainer takes passes: checkpoints, resume, mixed and low precision,
  // efficient loading.
  TrainOptions full = Options();
  full.checkpoint_dir = dir_ + "/ckpt";
  full.checkpoint_every = 5;
  full.shard.param_dtype = full.shard.reduce_dtype = full.shard.master_dtype = DType::kBF16;
  full.sync_module_states = full.cpu_ram_efficient_loading = true;
  EXPECT_TRUE(DeviceTrainer::CheckOptions(full).ok());
}

TEST_F(DeviceTrainerTest, UnavailableWithoutADevice) {
  if (!cuda::ListDevices().empty()) GTEST_SKIP() << "a device is present";
  auto t = DeviceTrainer::Create(Options());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kUnavailable) << t.status();
}

}  // namespace
}  // namespace accel::train
