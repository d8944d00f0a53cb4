#include "server/job_configs.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/job_file.h"

namespace accel::server {
namespace {

using ::testing::HasSubstr;

std::string Config(const std::string& name) {
  std::ifstream in(std::string(ACCEL_SOURCE_DIR) + "/configs/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

accel::v1::JobSpec Spec(int processes) {
  accel::v1::JobSpec spec = rpc::DefaultJobSpec();
  spec.mutable_resources()->set_num_processes(processes);
  return spec;
}

TEST(JobConfigsTest, NoConfigAndTheShippedConfigsPass) {
  EXPECT_TRUE(ValidateJobConfigs(Spec(1)).ok());
  for (const auto& [name, processes] :
       {std::pair<const char*, int>{"fsdp_full_shard.yaml", 2}, {"ds_zero2.yaml", 2}}) {
    accel::v1::JobSpec spec = Spec(processes);
    spec.set_accelerate_config_path(name);
    spec.set_accelerate_config_text(Config(name));
    EXPECT_TRUE(ValidateJobConfigs(spec).ok()) << name << ": " << ValidateJobConfigs(spec);
  }
  accel::v1::JobSpec spec = Spec(2);
  spec.set_accelerate_config_text(Config("ds_zero3_nvme.yaml"));
  spec.set_deepspeed_config_path("/cfg/ds_zero3_nvme.json");
  spec.set_deepspeed_config_text(Config("ds_zero3_nvme.json"));
  EXPECT_TRUE(ValidateJobConfigs(spec).ok()) << ValidateJobConfigs(spec);
}

TEST(JobConfigsTest, ABadDeepSpeedJsonIsRejectedNamingTheFileAndKeyPath) {
  accel::v1::JobSpec spec = Spec(2);
  spec.set_accelerate_config_path("/cfg/ds.yaml");
  spec.set_accelerate_config_text(Config("ds_zero3_nvme.yaml"));
  spec.set_deepspeed_config_path("/cfg/bad.json");
  spec.set_deepspeed_config_text(R"({"zero_optimization": {"stage": 7}})");
  absl::Status s = ValidateJobConfigs(spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/cfg/bad.json"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("zero_optimization.stage"));
}

TEST(JobConfigsTest, ABadAccelerateKeyIsRejectedNamingTheKeyPath) {
  accel::v1::JobSpec spec = Spec(2);
  spec.set_accelerate_config_path("/cfg/fsdp.yaml");
  spec.set_accelerate_config_text(
      "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_sharding_strategy: HALF\n");
  absl::Status s = ValidateJobConfigs(spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/cfg/fsdp.yaml:4"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("fsdp_config.fsdp_sharding_strategy"));
}

TEST(JobConfigsTest, MismatchedPiecesAreRejected) {
  accel::v1::JobSpec spec = Spec(2);
  spec.set_deepspeed_config_text(Config("ds_zero3_nvme.json"));
  EXPECT_THAT(std::string(ValidateJobConfigs(spec).message()),
              HasSubstr("needs an Accelerate config with distributed_type: DEEPSPEED"));
  spec.set_accelerate_config_text(Config("fsdp_full_shard.yaml"));
  EXPECT_THAT(std::string(ValidateJobConfigs(spec).message()),
              HasSubstr("distributed_type is FSDP, not DEEPSPEED"));
  accel::v1::JobSpec three = Spec(3);
  three.set_accelerate_config_text(Config("fsdp_full_shard.yaml"));
  EXPECT_THAT(std::string(ValidateJobConfigs(three).message()),
              HasSubstr("num_processes: the config is for 2 processes but resources.num_processes "
                        "is 3"));
}

}  // namespace
}  // namespace accel::server
