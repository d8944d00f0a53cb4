#include "worker/job_spec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job/job_file.h"

namespace accel::worker {
namespace {

TEST(JobSpecTest, EveryJobFileKeyReachesTrainOptions) {
  auto spec = job::ParseJobYaml(R"(
model: {preset: gpt2-tiny, init_weights: w.safetensors}
data: {path: /data/kjv.txt, shuffle_seed: 9}
train: {steps: 50, micro_batch: 3, grad_accum: 2, seq_len: 32, lr: 1.0e-3, min_lr: 1.0e-5,
        schedule: linear, warmup: 5, weight_decay: 0.1, beta1: 0.8, beta2: 0.95, eps: 1.0e-6,
        grad_clip: 0.5, seed: 7, log_every: 4}
checkpoint: {dir: /ck, every_n_steps: 20, keep_last: 2}
resources: {num_processes: 4, threads_per_process: 3}
sharding: {strategy: hybrid_shard, hybrid_group_size: 2, forward_prefetch: true,
           backward_prefetch: backward_post, reshard_after_forward: false, sync_module_states: true}
comm_timeout_s: 30
)",
                                 "job.yaml", "/jobs");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto run = JobRunFromSpec(*spec);
  ASSERT_TRUE(run.ok()) << run.status();
  const train::TrainOptions& o = run->train;
  EXPECT_EQ(o.model, "gpt2-tiny");
  EXPECT_EQ(o.init_weights, "/jobs/w.safetensors");
  EXPECT_EQ(o.data, "/data/kjv.txt");
  ASSERT_TRUE(o.shuffle_seed.has_value());
  EXPECT_EQ(*o.shuffle_seed, 9u);
  EXPECT_EQ(o.batch, 3);
  EXPECT_EQ(o.grad_accum, 2);
  EXPECT_EQ(o.seq, 32);
  EXPECT_EQ(o.steps, 50);
  EXPECT_EQ(o.schedule.kind, optim::ScheduleKind::kLinear);
  EXPECT_FLOAT_EQ(o.schedule.base_lr, 1e-3f);
  EXPECT_FLOAT_EQ(o.schedule.min_lr, 1e-5f);
  EXPECT_EQ(o.schedule.warmup_steps, 5);
  EXPECT_FLOAT_EQ(o.adamw.weight_decay, 0.1f);
  EXPECT_FLOAT_EQ(o.adamw.beta1, 0.8f);
  EXPECT_FLOAT_EQ(o.adamw.beta2, 0.95f);
  EXPECT_FLOAT_EQ(o.adamw.eps, 1e-6f);
  EXPECT_FLOAT_EQ(o.grad_clip, 0.5f);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.shard.strategy, shard::Strategy::kHybridShard);
  EXPECT_EQ(o.shard.hybrid_group_size, 2);
  EXPECT_TRUE(o.shard.forward_prefetch);
  EXPECT_EQ(o.shard.backward_prefetch, shard::BackwardPrefetch::kBackwardPost);
  EXPECT_FALSE(o.shard.reshard_after_forward);
  EXPECT_TRUE(o.sync_module_states);
  EXPECT_EQ(run->threads, 3);
  EXPECT_EQ(run->log_every, 4);
  EXPECT_EQ(run->checkpoint_dir, "/ck");
  EXPECT_EQ(run->checkpoint_every, 20);
  EXPECT_EQ(run->keep_last, 2);
  EXPECT_EQ(run->comm_timeout, absl::Seconds(30));
  EXPECT_EQ(run->train.sample.heartbeat_s, 1.0);  // a quarter of 30 s, at most 1 s
}

TEST(JobSpecTest, SampleHeartbeatIsAQuarterOfTheDeadlineAtMostOneSecond) {
  EXPECT_EQ(SampleHeartbeatSeconds(absl::Seconds(120)), 1.0);
  EXPECT_EQ(SampleHeartbeatSeconds(absl::Seconds(2)), 0.5);
  EXPECT_EQ(SampleHeartbeatSeconds(absl::Milliseconds(400)), 0.1);
}

TEST(JobSpecTest, BadValuesNameTheKey) {
  accel::v1::JobSpec spec = job::DefaultJobSpec();
  spec.mutable_sharding()->set_strategy("zero7");
  EXPECT_THAT(std::string(JobSpecToTrainOptions(spec).status().message()),
              ::testing::HasSubstr("sharding.strategy"));
  spec = job::DefaultJobSpec();
  spec.mutable_train()->set_schedule("steps");
  EXPECT_THAT(std::string(JobSpecToTrainOptions(spec).status().message()),
              ::testing::HasSubstr("train.schedule"));
}

// A complete spec (the lowering checks what a rank would): DefaultJobSpec plus data.
accel::v1::JobSpec Spec() {
  accel::v1::JobSpec spec = job::DefaultJobSpec();
  spec.mutable_data()->set_path("/data/kjv.txt");
  return spec;
}

TEST(JobSpecTest, AccelerateConfigReplacesTheShardingSection) {
  accel::v1::JobSpec spec = Spec();
  spec.mutable_resources()->set_num_processes(4);
  spec.mutable_train()->set_grad_accum(2);
  auto* sh = spec.mutable_sharding();
  sh->set_strategy("no_shard");
  sh->set_forward_prefetch(true);
  spec.set_accelerate_config_path("/cfg/fsdp.yaml");
  spec.set_accelerate_config_text(R"(distributed_type: FSDP
mixed_precision: bf16
num_processes: 4
num_machines: 2
fsdp_config:
  fsdp_sharding_strategy: HYBRID_SHARD
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_backward_prefetch: BACKWARD_POST
)");
  auto run = JobRunFromSpec(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  const train::TrainOptions& o = run->train;
  EXPECT_EQ(o.shard.strategy, shard::Strategy::kHybridShard);
  EXPECT_EQ(o.shard.hybrid_group_size, 2);
  EXPECT_FALSE(o.shard.forward_prefetch);  // the config's, not the sharding section's
  EXPECT_EQ(o.shard.backward_prefetch, shard::BackwardPrefetch::kBackwardPost);
  EXPECT_EQ(o.shard.param_dtype, DType::kBF16);
  EXPECT_EQ(o.shard.reduce_dtype, DType::kBF16);
  EXPECT_EQ(o.grad_accum, 2);  // FSDP: accumulation is the job's
  EXPECT_EQ(run->config.source, "/cfg/fsdp.yaml");
}

TEST(JobSpecTest, DeepSpeedJsonTextIsApplied) {
  accel::v1::JobSpec spec = Spec();
  spec.mutable_resources()->set_num_processes(2);
  spec.mutable_train()->set_steps(40);
  spec.set_accelerate_config_text("distributed_type: DEEPSPEED\nnum_processes: 2\n");
  spec.set_deepspeed_config_path("/cfg/ds.json");
  spec.set_deepspeed_config_text(R"({"train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": 3, "gradient_clipping": 0.7, "bf16": {"enabled": true},
    "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "betas": "auto", "eps": "auto",
                                              "weight_decay": "auto"}},
    "scheduler": {"type": "WarmupCosineLR", "params": {"warmup_num_steps": 4,
                                                       "total_num_steps": "auto"}},
    "zero_optimization": {"stage": 2}})");
  JobConfigReport report;
  auto o = JobSpecToTrainOptions(spec, &report);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->shard.strategy, shard::Strategy::kShardGradOp);
  EXPECT_TRUE(o->shard.reduce_every_micro_step);
  EXPECT_EQ(o->grad_accum, 3);
  EXPECT_FLOAT_EQ(o->grad_clip, 0.7f);
  EXPECT_EQ(o->shard.param_dtype, DType::kBF16);
  EXPECT_FLOAT_EQ(o->schedule.base_lr, 0.001f);
  EXPECT_EQ(o->schedule.kind, optim::ScheduleKind::kCosine);
  EXPECT_EQ(o->schedule.warmup_steps, 4);
  EXPECT_EQ(report.source, "accelerate_config + /cfg/ds.json");
  // DeepSpeed's own WarmupCosineLR over the job's 40 steps, with its defaults (log warmup,
  // cos_min_ratio 1e-4): nothing about the schedule needs a note any more.
  ASSERT_TRUE(o->schedule.deepspeed.has_value());
  EXPECT_EQ(o->schedule.deepspeed->type, optim::DeepSpeedLr::Type::kWarmupCosineLR);
  EXPECT_TRUE(o->schedule.deepspeed->log_warmup);
  EXPECT_EQ(o->schedule.deepspeed->total_steps, 40);
  EXPECT_DOUBLE_EQ(o->schedule.deepspeed->cos_min_ratio, 1e-4);
  EXPECT_THAT(report.notes,
              ::testing::Not(::testing::Contains(::testing::HasSubstr("WarmupCosineLR"))));
}

TEST(JobSpecTest, ConfigErrorsNameTheFileAndKey) {
  accel::v1::JobSpec spec = Spec();
  spec.mutable_resources()->set_num_processes(2);
  spec.set_accelerate_config_path("/cfg/fsdp.yaml");
  // The launcher's count wins over the file's, with a note naming both.
  spec.set_accelerate_config_text("distributed_type: FSDP\nnum_processes: 4\n");
  JobConfigReport report;
  ASSERT_TRUE(JobSpecToTrainOptions(spec, &report).ok());
  EXPECT_THAT(report.notes, ::testing::Contains(::testing::AllOf(
                                ::testing::HasSubstr("the file says 4"),
                                ::testing::HasSubstr("resources.num_processes says 2"))));
  spec.set_accelerate_config_text(
      "distributed_type: FSDP\nnum_processes: 2\nfsdp_config: {fsdp_sharding_strategy: "
      "FULL_SHRAD}\n");
  EXPECT_THAT(std::string(JobSpecToTrainOptions(spec).status().message()),
              ::testing::AllOf(::testing::HasSubstr("/cfg/fsdp.yaml"),
                               ::testing::HasSubstr("fsdp_sharding_strategy")));
  // Offload under a strategy that keeps parameters whole: the key, not a silent fallback.
  spec.set_accelerate_config_text(
      "distributed_type: FSDP\nnum_processes: 2\nfsdp_config: {fsdp_offload_params: true, "
      "fsdp_sharding_strategy: SHARD_GRAD_OP}\n");
  EXPECT_THAT(std::string(JobSpecToTrainOptions(spec).status().message()),
              ::testing::HasSubstr("/cfg/fsdp.yaml: fsdp_config.fsdp_offload_params"));
}

}  // namespace
}  // namespace accel::worker
