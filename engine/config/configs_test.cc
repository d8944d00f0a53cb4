// Every ready file in configs/ resolves to the plan its header comment promises.
#include "engine/config/test_util.h"
#include "engine/config/resolve.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using testing::kDeepSpeedZero3Base;
using testing::kFsdpFullShardBase;
using testing::Merge;
using testing::PlanMatches;
using testing::ResolveFile;

constexpr char kBf16[] = R"({"mode": "bf16", "param_dtype": "bf16", "reduce_dtype": "bf16",
                             "master_dtype": "fp32", "optimizer_dtype": "fp32"})";

std::string WithBf16(std::string_view base, std::string_view overrides) {
  return Merge(Merge(base, overrides), std::string(R"({"mixed_precision": )") + kBf16 + "}");
}

TEST(ConfigsTest, FsdpFullShard) {
  auto plan = ResolveFile("configs/fsdp_full_shard.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, WithBf16(kFsdpFullShardBase, R"({"num_processes": 2,
      "transformer_layer_cls_to_wrap": ["Block"]})")));
  EXPECT_EQ(plan->fsdp_version, 1);
  EXPECT_EQ(plan->shard_group_size, 2);
}

TEST(ConfigsTest, FsdpLlama) {
  auto plan = ResolveFile("configs/fsdp_llama.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, WithBf16(kFsdpFullShardBase, R"({"num_processes": 2,
      "transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]})")));
}

TEST(ConfigsTest, FsdpOffload) {
  auto plan = ResolveFile("configs/fsdp_offload.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Merge(kFsdpFullShardBase, R"({"offload_params": "cpu",
      "offload_optimizer": "cpu"})")));
}

TEST(ConfigsTest, FsdpShardGradOp) {
  auto plan = ResolveFile("configs/fsdp_shard_grad_op.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Merge(kFsdpFullShardBase, R"({"strategy": "shard_grad_op",
      "reshard_after_forward": false, "state_dict_type": "full", "save_16bit_model": true,
      "cpu_ram_efficient_loading": false, "zero3_init": false})")));
}

TEST(ConfigsTest, FsdpHybrid) {
  auto plan = ResolveFile("configs/fsdp_hybrid.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, WithBf16(kFsdpFullShardBase, R"({"strategy": "hybrid_shard",
      "num_processes": 4, "num_machines": 2})")));
  EXPECT_EQ(plan->shard_group_size, 2);  // shard inside a node, replicate across the two
}

TEST(ConfigsTest, MultiNode) {
  auto plan = ResolveFile("configs/multi_node.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, WithBf16(kFsdpFullShardBase, R"({"num_processes": 8,
      "num_machines": 2})")));
  EXPECT_EQ(plan->shard_group_size, 8);
  EXPECT_EQ(plan->machine_rank, 0);
}

TEST(ConfigsTest, DeepSpeedZero1) {
  auto plan = ResolveFile("configs/ds_zero1.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Merge(kDeepSpeedZero3Base, R"({"strategy": "zero1",
      "reshard_after_forward": false, "backward_prefetch": "none", "forward_prefetch": false,
      "cpu_ram_efficient_loading": false, "zero3_init": false,
      "prefetch": {"bucket_size": 0, "param_persistence_threshold": 0,
                   "max_live_parameters": 0, "max_reuse_distance": 0}})")));
}

TEST(ConfigsTest, DeepSpeedZero2) {
  auto plan = ResolveFile("configs/ds_zero2.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, WithBf16(kDeepSpeedZero3Base, R"({"strategy": "shard_grad_op",
      "reshard_after_forward": false, "backward_prefetch": "none", "forward_prefetch": false,
      "cpu_ram_efficient_loading": false, "zero3_init": false,
      "prefetch": {"bucket_size": 0, "param_persistence_threshold": 0,
                   "max_live_parameters": 0, "max_reuse_distance": 0}})")));
}

TEST(ConfigsTest, DeepSpeedZero3) {
  auto plan = ResolveFile("configs/ds_zero3.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, WithBf16(kDeepSpeedZero3Base, R"({"save_16bit_model": true})")));
}

TEST(ConfigsTest, DeepSpeedZero3Offload) {
  auto plan = ResolveFile("configs/ds_zero3_offload.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, WithBf16(kDeepSpeedZero3Base, R"({"save_16bit_model": true,
      "offload_params": "cpu", "offload_optimizer": "cpu"})")));
}

TEST(ConfigsTest, DeepSpeedZero3NvmeWithAutoJson) {
  ConfigInputs inputs;
  inputs.env = {{"ACCELERATE_MIXED_PRECISION", "bf16"}};
  inputs.job.micro_batch_size = 4;
  inputs.job.gradient_accumulation_steps = 2;
  inputs.job.gradient_clipping = 0.5;
  inputs.job.hidden_size = 768;
  inputs.job.lr = 6e-4;
  inputs.job.weight_decay = 0.1;
  inputs.job.betas = {{0.9, 0.95}};
  inputs.job.eps = 1e-8;
  inputs.job.warmup_steps = 10;
  inputs.job_complete = true;
  auto plan = ResolveFile("configs/ds_zero3_nvme.yaml", inputs);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, WithBf16(kDeepSpeedZero3Base, R"({"save_16bit_model": true,
      "offload_params": "nvme", "offload_optimizer": "nvme",
      "offload_param_nvme_path": "/tmp/accel-nvme",
      "offload_optimizer_nvme_path": "/tmp/accel-nvme",
      "gradient_accumulation_steps": 2, "gradient_clipping": 0.5,
      "train_micro_batch_size_per_gpu": 4, "train_batch_size": 16,
      "prefetch": {"bucket_size": 530841, "param_persistence_threshold": 7680,
                   "max_live_parameters": 1000000000, "max_reuse_distance": 1000000000}})")));
  EXPECT_EQ(plan->comm.reduce_bucket_size, 768 * 768);
  ASSERT_TRUE(plan->optimizer.has_value());
  EXPECT_EQ(plan->optimizer->type, "AdamW");
  EXPECT_DOUBLE_EQ(*plan->optimizer->lr, 6e-4);
  EXPECT_DOUBLE_EQ(*plan->optimizer->weight_decay, 0.1);
  EXPECT_DOUBLE_EQ((*plan->optimizer->betas)[1], 0.95);
  EXPECT_DOUBLE_EQ(*plan->optimizer->eps, 1e-8);
  ASSERT_TRUE(plan->scheduler.has_value());
  EXPECT_EQ(plan->scheduler->type, "WarmupLR");
  EXPECT_DOUBLE_EQ(*plan->scheduler->warmup_min_lr, 0.0);
  EXPECT_DOUBLE_EQ(*plan->scheduler->warmup_max_lr, 6e-4);
  EXPECT_EQ(*plan->scheduler->warmup_num_steps, 10);
  EXPECT_EQ(plan->offload_tuning.param_buffer_count, 5);
  EXPECT_EQ(plan->offload_tuning.optimizer_buffer_count, 4);
  EXPECT_EQ(plan->offload_tuning.max_in_cpu, 1000000000);
  EXPECT_EQ(plan->offload_tuning.aio_queue_depth, 8);
}

TEST(ConfigsTest, EveryConfigResolvesWithACompleteJob) {
  ConfigInputs inputs;
  inputs.job = JobSettings{4, 1, 1.0, 3e-4, 0.1, {{0.9, 0.95}}, 1e-8, 0, 100, 768, {}};
  inputs.job_complete = true;
  for (const char* file :
       {"fsdp_full_shard", "fsdp_llama", "fsdp_offload", "fsdp_shard_grad_op", "fsdp_hybrid",
        "ds_zero1", "ds_zero2", "ds_zero2_offload", "ds_zero3", "ds_zero3_offload",
        "ds_zero3_nvme", "multi_node"}) {
    auto plan = ResolveFile(std::string("configs/") + file + ".yaml", inputs);
    ASSERT_TRUE(plan.ok()) << file << ": " << plan.status();
    EXPECT_EQ(plan->train_batch_size, 4 * plan->num_processes) << file;
    EXPECT_TRUE(plan->warnings.empty()) << file << ": " << plan->warnings[0];
  }
}

}  // namespace
}  // namespace accel::config
