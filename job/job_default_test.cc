// The shipped example job file parses and validates (with its files present).
#include <filesystem>

#include "gtest/gtest.h"
#include "job/job_file.h"
#include "job/job_lowering.h"

namespace accel::job {
namespace {

TEST(JobDefaultTest, ConfigsJobDefaultIsValid) {
  const std::string path = std::string(ACCEL_SOURCE_DIR) + "/configs/jobs/job_default.yaml";
  auto spec = ParseJobFile(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(ValidateJobSpec(*spec, /*check_files=*/true).ok());
  // What runs is what the Accelerate config lowers to: FULL_SHARD on its 2 processes.
  auto lowered = job::LowerJobSpec(*spec);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->world_size, 2);
  EXPECT_EQ(lowered->options.shard.strategy, shard::Strategy::kFullShard);
  EXPECT_EQ(spec->model().preset(), "gpt2-mini");
  EXPECT_EQ(std::filesystem::path(spec->data().path()).filename(), "kjv.txt");
  EXPECT_FALSE(spec->accelerate_config_text().empty());
}

}  // namespace
}  // namespace accel::job
