#include "worker/job_spec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/job_file.h"

namespace accel::worker {
namespace {

TEST(JobSpecTest, EveryJobFileKeyReachesTrainOptions) {
  auto spec = rpc::ParseJobYaml(R"(
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
}

TEST(JobSpecTest, BadValuesNameTheKey) {
  accel::v1::JobSpec spec = rpc::DefaultJobSpec();
  spec.mutable_sharding()->set_strategy("zero7");
  EXPECT_THAT(std::string(JobSpecToTrainOptions(spec).status().message()),
              ::testing::HasSubstr("sharding.strategy"));
  spec = rpc::DefaultJobSpec();
  spec.mutable_train()->set_schedule("steps");
  EXPECT_THAT(std::string(JobSpecToTrainOptions(spec).status().message()),
              ::testing::HasSubstr("train.schedule"));
}

}  // namespace
}  // namespace accel::worker
