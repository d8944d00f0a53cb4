// Offload placement from DeepSpeed's two offload sections (issue 32 item 4): the parameters
// and the optimizer each where their own key says — parameters alone, each in its own NVMe
// directory, or cpu parameters beside an nvme optimizer — and what `config explain` says.
#include <algorithm>

#include "engine/base/status_macros.h"
#include "engine/config/document.h"
#include "engine/config/lower.h"
#include "engine/config/mode.h"
#include "engine/config/resolve.h"
#include "engine/shard/shard_plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::config {
namespace {

using ::testing::HasSubstr;

// A ZeRO-3 DeepSpeed JSON with `offload` (the inside of zero_optimization after the stage),
// resolved and lowered as a worker does.
absl::StatusOr<TrainOptions> Lower(const std::string& offload) {
  auto y = ParseYamlDocument("distributed_type: DEEPSPEED\nnum_processes: 2\n", "acc.yaml");
  if (!y.ok()) return y.status();
  auto j = ParseJsonDocument(
      R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3)" + offload +
          "}}",
      "ds.json");
  if (!j.ok()) return j.status();
  ConfigInputs in;
  in.job = JobSettingsFromOptions(TrainOptions{});
  in.job_complete = true;
  auto plan = ResolveDocuments(*y, &*j, in);
  if (!plan.ok()) return plan.status();
  TrainOptions o;
  ACCEL_RETURN_IF_ERROR(ApplyTrainPlan(*plan, &o));
  return o;
}

TEST(OffloadLoweringTest, ParametersAloneStayApartFromTheOptimizer) {
  auto cpu = Lower(R"(, "offload_param": {"device": "cpu"})");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_TRUE(cpu->shard.offload_params);
  EXPECT_FALSE(cpu->shard.offload_optimizer);
  EXPECT_EQ(shard::ParamOffloadDir(cpu->shard), "");
  EXPECT_EQ(OptimizerDevice(*cpu), "compute");
  EXPECT_EQ(ParamsDevice(*cpu), "host");

  auto nvme = Lower(R"(, "offload_param": {"device": "nvme", "nvme_path": "/p"})");
  ASSERT_TRUE(nvme.ok()) << nvme.status();
  EXPECT_TRUE(nvme->shard.offload_params);
  EXPECT_FALSE(nvme->shard.offload_optimizer);
  EXPECT_EQ(nvme->shard.offload_param_dir, "/p");
  EXPECT_EQ(nvme->shard.offload_dir, "");
  EXPECT_EQ(ParamsDevice(*nvme), "nvme");
  EXPECT_THAT(DescribeMode(*nvme), HasSubstr("parameters offloaded to files in /p"));
  const nlohmann::json j = nlohmann::json::parse(ModeJson(*nvme, "", {}));
  EXPECT_EQ(j["optimizer_device"], "compute");
  EXPECT_EQ(j["params_device"], "nvme");
  EXPECT_EQ(j["offload_param_dir"], "/p");
}

TEST(OffloadLoweringTest, TwoNvmePathsKeepTheirOwnDirectories) {
  auto two = Lower(R"(, "offload_param": {"device": "nvme", "nvme_path": "/p"},
      "offload_optimizer": {"device": "nvme", "nvme_path": "/o"})");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->shard.offload_param_dir, "/p");
  EXPECT_EQ(two->shard.offload_dir, "/o");
  EXPECT_FALSE(shard::ParamsWithOptimizer(two->shard));
  EXPECT_THAT(DescribeMode(*two),
              HasSubstr("(offloaded to files in /o), parameters offloaded to files in /p"));

  // One path for both: one storage, as before.
  auto one = Lower(R"(, "offload_param": {"device": "nvme", "nvme_path": "/n"},
      "offload_optimizer": {"device": "nvme", "nvme_path": "/n"})");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->shard.offload_param_dir, "");
  EXPECT_TRUE(shard::ParamsWithOptimizer(one->shard));
  EXPECT_THAT(DescribeMode(*one), HasSubstr("(offloaded to files in /n, with the parameters)"));
}

TEST(OffloadLoweringTest, MixedDevicesGoWhereEachKeySays) {
  // Accelerate's Scenario 3: cpu parameters beside an nvme optimizer.
  auto cpu_params = Lower(R"(, "offload_param": {"device": "cpu"},
      "offload_optimizer": {"device": "nvme", "nvme_path": "/o"})");
  ASSERT_TRUE(cpu_params.ok()) << cpu_params.status();
  EXPECT_TRUE(cpu_params->shard.offload_params_to_host);
  EXPECT_EQ(shard::ParamOffloadDir(cpu_params->shard), "");
  EXPECT_EQ(ParamsDevice(*cpu_params), "host");
  EXPECT_EQ(OptimizerDevice(*cpu_params), "nvme");

  auto nvme_params = Lower(R"(, "offload_param": {"device": "nvme", "nvme_path": "/p"},
      "offload_optimizer": {"device": "cpu"})");
  ASSERT_TRUE(nvme_params.ok()) << nvme_params.status();
  EXPECT_EQ(nvme_params->shard.offload_param_dir, "/p");
  EXPECT_EQ(ParamsDevice(*nvme_params), "nvme");
  EXPECT_EQ(OptimizerDevice(*nvme_params), "host");
}

TEST(OffloadLoweringTest, WhatRemainsRefusedNamesItsKeyInOneLine) {
  // Parameter offload under a strategy that keeps parameters whole (ZeRO-2).
  TrainPlan p;
  p.distributed_type = DistributedType::kDeepSpeed;
  p.strategy = Strategy::kShardGradOp;
  p.offload_params = OffloadDevice::kNvme;
  p.offload_param_nvme_path = "/p";
  TrainOptions o;
  const absl::Status s = ApplyTrainPlan(p, &o);
  EXPECT_THAT(s.message(), HasSubstr("zero_optimization.offload_param.device: nvme offload "
                                     "needs sharded parameters"));
  EXPECT_EQ(std::count(s.message().begin(), s.message().end(), '\n'), 0) << s;
}

}  // namespace
}  // namespace accel::config
