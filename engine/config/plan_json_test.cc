// The plan's JSON: exactly the issue's top-level keys, in order, with the documented value forms.
#include "engine/config/plan_json.h"

#include "engine/config/test_util.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

TEST(PlanJsonTest, ExactlyTheContractKeysInOrder) {
  const std::vector<std::string> expected = {
      "distributed_type", "num_processes", "num_machines", "strategy", "reshard_after_forward",
      "offload_params", "offload_optimizer", "offload_param_nvme_path",
      "offload_optimizer_nvme_path", "wrap_policy", "transformer_layer_cls_to_wrap",
      "min_num_params", "backward_prefetch", "forward_prefetch", "state_dict_type",
      "save_16bit_model", "use_orig_params", "sync_module_states", "cpu_ram_efficient_loading",
      "zero3_init", "activation_checkpointing", "mixed_precision", "gradient_accumulation_steps",
      "gradient_clipping", "train_micro_batch_size_per_gpu", "train_batch_size", "loss_scaling",
      "prefetch", "warnings"};
  const auto j = PlanToJson(TrainPlan{});
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  EXPECT_EQ(keys, expected);
  std::vector<std::string> mp, prefetch;
  for (const auto& [key, value] : j["mixed_precision"].items()) mp.push_back(key);
  for (const auto& [key, value] : j["prefetch"].items()) prefetch.push_back(key);
  EXPECT_EQ(mp, (std::vector<std::string>{"mode", "param_dtype", "reduce_dtype", "master_dtype",
                                          "optimizer_dtype"}));
  EXPECT_EQ(prefetch, (std::vector<std::string>{"bucket_size", "param_persistence_threshold",
                                                "max_live_parameters", "max_reuse_distance"}));
}

TEST(PlanJsonTest, ValueForms) {
  TrainPlan p;
  p.distributed_type = DistributedType::kDeepSpeed;
  p.strategy = Strategy::kHybridShardZero2;
  p.offload_params = OffloadDevice::kNvme;
  p.offload_param_nvme_path = "/nvme";
  p.offload_optimizer_nvme_path = "/unused";  // device none: printed as null
  p.loss_scaling = LossScalingPlan{};
  p.train_micro_batch_size_per_gpu = 3;
  p.prefetch.bucket_size.reset();
  p.warnings = {"w1"};
  const auto j = PlanToJson(p);
  EXPECT_EQ(j["distributed_type"], "DEEPSPEED");
  EXPECT_EQ(j["strategy"], "hybrid_shard_zero2");
  EXPECT_EQ(j["offload_params"], "nvme");
  EXPECT_EQ(j["offload_param_nvme_path"], "/nvme");
  EXPECT_TRUE(j["offload_optimizer_nvme_path"].is_null());
  EXPECT_EQ(j["loss_scaling"]["hysteresis"], 2);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 3);
  EXPECT_TRUE(j["train_batch_size"].is_null());
  EXPECT_TRUE(j["prefetch"]["bucket_size"].is_null());
  EXPECT_EQ(j["warnings"], nlohmann::ordered_json::array({"w1"}));
}

TEST(PlanJsonTest, TextAndJsonSurviveInvalidUtf8) {
  TrainPlan p;
  p.transformer_layer_cls_to_wrap = {std::string("Bl\xff\xfeock")};
  p.warnings = {std::string("bad \xc3")};
  EXPECT_NE(PlanToJsonText(p).find("transformer_layer_cls_to_wrap"), std::string::npos);
  const std::string text = PlanToText(p);
  EXPECT_NE(text.find("strategy:"), std::string::npos);
  EXPECT_NE(text.find("warning: bad"), std::string::npos);
}

TEST(PlanJsonTest, PlanMatchesReportsDifferencesAndUncheckedKeys) {
  TrainPlan p;
  EXPECT_TRUE(testing::PlanMatches(p, R"({"strategy": "no_shard"})", /*complete=*/false));
  auto wrong = testing::PlanMatches(p, R"({"strategy": "full_shard"})", false);
  EXPECT_FALSE(wrong);
  EXPECT_NE(std::string(wrong.message()).find("strategy: got \"no_shard\""), std::string::npos);
  EXPECT_FALSE(testing::PlanMatches(p, R"({"strategy": "no_shard"})", /*complete=*/true));
}

}  // namespace
}  // namespace accel::config
