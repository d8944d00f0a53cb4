// The shipped example job file parses and validates (with its files present).
#include <filesystem>

#include "gtest/gtest.h"
#include "rpc/job_file.h"

namespace accel::rpc {
namespace {

TEST(JobDefaultTest, ConfigsJobDefaultIsValid) {
  const std::string path = std::string(ACCEL_SOURCE_DIR) + "/configs/jobs/job_default.yaml";
  auto spec = ParseJobFile(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(ValidateJobSpec(*spec, /*check_files=*/true).ok());
  EXPECT_EQ(spec->resources().num_processes(), 2);
  EXPECT_EQ(spec->sharding().strategy(), "full_shard");
  EXPECT_EQ(spec->model().preset(), "gpt2-mini");
  EXPECT_EQ(std::filesystem::path(spec->data().path()).filename(), "kjv.txt");
  EXPECT_FALSE(spec->accelerate_config_text().empty());
}

}  // namespace
}  // namespace accel::rpc
