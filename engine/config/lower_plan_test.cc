#include "engine/config/lower.h"
#include "engine/config/mode.h"

#include "engine/config/document.h"
#include "engine/config/resolve.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::config {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Resolves YAML (+ JSON) text the way a worker does, with a job of the given options.
config::TrainPlan Resolve(const std::string& yaml, const std::string& json = "",
                          const TrainOptions& job = {}) {
  auto y = config::ParseYamlDocument(yaml, "acc.yaml");
  EXPECT_TRUE(y.ok()) << y.status();
  std::optional<config::Document> j;
  if (!json.empty()) {
    auto parsed = config::ParseJsonDocument(json, "ds.json");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    j = *parsed;
  }
  config::ConfigInputs in;
  in.job = JobSettingsFromOptions(job);
  in.job_complete = true;
  auto plan = config::ResolveDocuments(*y, j ? &*j : nullptr, in);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : config::TrainPlan{};
}

config::OptimizerPlan Optimizer(std::string type, std::optional<double> weight_decay = {},
                                bool adam_w_mode = true) {
  config::OptimizerPlan o;
  o.type = std::move(type);
  o.weight_decay = weight_decay;
  o.adam_w_mode = adam_w_mode;
  return o;
}

config::SchedulerPlan Scheduler(std::string type, std::optional<int64_t> warmup,
                                std::optional<int64_t> total = {},
                                std::optional<double> min_lr = {},
                                std::optional<double> max_lr = {}) {
  config::SchedulerPlan s;
  s.type = std::move(type);
  s.warmup_num_steps = warmup;
  s.total_num_steps = total;
  s.warmup_min_lr = min_lr;
  s.warmup_max_lr = max_lr;
  return s;
}

TEST(PlanOptionsTest, FsdpFullShardBf16) {
  const config::TrainPlan plan = Resolve(R"(
distributed_type: FSDP
mixed_precision: bf16
num_processes: 4
fsdp_config:
  fsdp_sharding_strategy: FULL_SHARD
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_transformer_layer_cls_to_wrap: GPT2Block
  fsdp_backward_prefetch: BACKWARD_POST
  fsdp_forward_prefetch: true
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_cpu_ram_efficient_loading: true
)");
  TrainOptions o;
  std::vector<std::string> notes;
  ASSERT_TRUE(ApplyTrainPlan(plan, &o, &notes).ok());
  EXPECT_THAT(notes, IsEmpty());
  EXPECT_EQ(o.shard.strategy, shard::Strategy::kFullShard);
  EXPECT_EQ(o.shard.hybrid_group_size, 0);
  EXPECT_TRUE(o.shard.reshard_after_forward);
  EXPECT_TRUE(o.shard.forward_prefetch);
  EXPECT_EQ(o.shard.backward_prefetch, shard::BackwardPrefetch::kBackwardPost);
  EXPECT_FALSE(o.shard.reduce_every_micro_step);  // FSDP reduces at the boundary (no_sync)
  EXPECT_EQ(o.shard.param_dtype, DType::kBF16);
  EXPECT_EQ(o.shard.reduce_dtype, DType::kBF16);
  EXPECT_EQ(o.shard.prefetch_bucket_numel, 0);  // FSDP's rule: exactly the next unit
  EXPECT_TRUE(o.sync_module_states);            // forced by cpu_ram_efficient_loading
  EXPECT_TRUE(o.cpu_ram_efficient_loading);
  EXPECT_TRUE(o.zero3_init);
  EXPECT_EQ(o.state_dict_type, TrainOptions::StateDictType::kSharded);
  EXPECT_FALSE(o.save_16bit);
  EXPECT_EQ(DescribeMode(o),
            "full_shard: params bf16, grads bf16, master f32, optimizer state f32, loss scaling "
            "off, accum 1, clip 1, checkpoints sharded");
}

TEST(PlanOptionsTest, FsdpHybridGroupIsOneMachine) {
  const config::TrainPlan plan = Resolve(R"(
distributed_type: FSDP
num_processes: 4
num_machines: 2
fsdp_config: {fsdp_sharding_strategy: HYBRID_SHARD_ZERO2, fsdp_state_dict_type: FULL_STATE_DICT}
)");
  TrainOptions o;
  std::vector<std::string> notes;
  ASSERT_TRUE(ApplyTrainPlan(plan, &o, &notes).ok());
  EXPECT_EQ(o.shard.strategy, shard::Strategy::kHybridShardZero2);
  EXPECT_EQ(o.shard.hybrid_group_size, 2);
  EXPECT_FALSE(o.shard.reshard_after_forward);
  EXPECT_EQ(o.shard.param_dtype, DType::kF32);
  EXPECT_EQ(o.state_dict_type, TrainOptions::StateDictType::kFull);
  EXPECT_FALSE(o.save_16bit);  // FULL_STATE_DICT is the fp32 file, not a 16-bit one
  // The launcher profile's NO_WRAP default is reported, not silently changed.
  EXPECT_THAT(notes, ElementsAre(HasSubstr("fsdp_auto_wrap_policy: no_wrap")));
}

TEST(PlanOptionsTest, DeepSpeedStagesAndMicroStepReduction) {
  auto stage = [](int s) {
    return Resolve(absl::StrCat(R"(
distributed_type: DEEPSPEED
num_processes: 2
deepspeed_config: {zero_stage: )", s, R"(, gradient_accumulation_steps: 4, gradient_clipping: 0.5,
                   offload_optimizer_device: none, offload_param_device: none,
                   zero3_save_16bit_model: true})"));
  };
  const struct {
    int stage;
    shard::Strategy strategy;
    bool every_micro_step;
  } cases[] = {{0, shard::Strategy::kNoShard, false},
               {1, shard::Strategy::kShardOptimizer, false},
               {2, shard::Strategy::kShardGradOp, true},
               {3, shard::Strategy::kFullShard, true}};
  for (const auto& c : cases) {
    TrainOptions o;
    ASSERT_TRUE(ApplyTrainPlan(stage(c.stage), &o).ok()) << c.stage;
    EXPECT_EQ(o.shard.strategy, c.strategy) << c.stage;
    EXPECT_EQ(o.shard.reduce_every_micro_step, c.every_micro_step) << c.stage;
    EXPECT_EQ(o.grad_accum, 4);
    EXPECT_FLOAT_EQ(o.grad_clip, 0.5f);
    EXPECT_EQ(o.state_dict_type, TrainOptions::StateDictType::kSharded);
    EXPECT_TRUE(o.save_16bit);
    EXPECT_TRUE(o.sync_module_states);
  }
}

TEST(PlanOptionsTest, DeepSpeedJsonFp16PrefetchOptimizerAndScheduler) {
  TrainOptions job;
  job.model = "gpt2-tiny";
  job.steps = 30;
  const config::TrainPlan plan = Resolve("distributed_type: DEEPSPEED\nnum_processes: 2\n", R"({
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": 2,
  "fp16": {"enabled": true, "initial_scale_power": 12, "loss_scale_window": 50,
           "hysteresis": 3, "min_loss_scale": 0.5},
  "communication_data_type": "fp32",
  "optimizer": {"type": "AdamW", "params": {"lr": 0.002, "betas": [0.8, 0.9], "eps": 1e-6,
                                            "weight_decay": 0.05}},
  "scheduler": {"type": "WarmupDecayLR",
                "params": {"warmup_num_steps": 3, "total_num_steps": "auto",
                           "warmup_max_lr": "auto", "warmup_type": "linear"}},
  "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": "auto",
                        "stage3_param_persistence_threshold": 1000,
                        "stage3_max_live_parameters": 50000, "stage3_max_reuse_distance": 7000}
})",
                                         job);
  TrainOptions o = job;
  std::vector<std::string> notes;
  ASSERT_TRUE(ApplyTrainPlan(plan, &o, &notes).ok());
  EXPECT_EQ(o.shard.param_dtype, DType::kF16);
  EXPECT_EQ(o.shard.reduce_dtype, DType::kF32);  // communication_data_type
  EXPECT_EQ(o.loss_scaling.initial_scale_power, 12);
  EXPECT_EQ(o.loss_scaling.window, 50);
  EXPECT_EQ(o.loss_scaling.hysteresis, 3);
  EXPECT_DOUBLE_EQ(o.loss_scaling.min_scale, 0.5);
  const int64_t h = 64;  // gpt2-tiny's n_embd: "auto" bucket = 0.9·h²
  ASSERT_EQ(JobSettingsFromOptions(job).hidden_size, h);
  EXPECT_EQ(o.shard.prefetch_bucket_numel, static_cast<int64_t>(0.9 * h * h));
  EXPECT_EQ(o.shard.param_persistence_threshold, 1000);
  EXPECT_EQ(o.shard.max_live_numel, 50000);
  EXPECT_EQ(o.shard.max_reuse_distance, 7000);
  EXPECT_EQ(o.grad_accum, 2);
  EXPECT_EQ(o.batch, job.batch);  // "auto" micro batch = the job's
  EXPECT_FLOAT_EQ(o.schedule.base_lr, 0.002f);
  EXPECT_FLOAT_EQ(o.adamw.beta1, 0.8f);
  EXPECT_FLOAT_EQ(o.adamw.beta2, 0.9f);
  EXPECT_FLOAT_EQ(o.adamw.eps, 1e-6f);
  EXPECT_FLOAT_EQ(o.adamw.weight_decay, 0.05f);
  EXPECT_EQ(o.schedule.kind, optim::ScheduleKind::kLinear);
  EXPECT_EQ(o.schedule.warmup_steps, 3);
  EXPECT_FLOAT_EQ(o.schedule.min_lr, 0.0f);
  // DeepSpeed's own WarmupDecayLR: linear warmup from warmup_min_lr over iterations 0..2, the
  // scheduler one step behind the optimizer, then down to 0 at total_num_steps (the job's 30).
  ASSERT_TRUE(o.schedule.deepspeed.has_value());
  EXPECT_FALSE(o.schedule.deepspeed->log_warmup);
  EXPECT_EQ(o.schedule.deepspeed->total_steps, 30);
  EXPECT_FLOAT_EQ(o.schedule.LrAt(0), 0.0f);
  EXPECT_FLOAT_EQ(o.schedule.LrAt(2), 0.002f / 3);
  EXPECT_FLOAT_EQ(o.schedule.LrAt(4), 0.002f);
  EXPECT_NEAR(o.schedule.LrAt(30), 0.002 / 27, 1e-9);
  EXPECT_THAT(notes, IsEmpty());
  EXPECT_THAT(DescribeMode(o), AllOf(HasSubstr("params f16, grads f32, master f32"),
                                     HasSubstr("loss scaling on"),
                                     HasSubstr("(reduce every micro-step)")));
}

TEST(PlanOptionsTest, DeepSpeedOptimizerOffloadToCpuIsZeroOffload) {
  config::TrainPlan ds;
  ds.distributed_type = config::DistributedType::kDeepSpeed;
  ds.offload_optimizer = config::OffloadDevice::kCpu;
  TrainOptions o;
  ASSERT_TRUE(ApplyTrainPlan(ds, &o).ok());
  EXPECT_TRUE(o.shard.offload_optimizer);
  EXPECT_THAT(DescribeMode(o), HasSubstr("optimizer state f32 (offloaded to the host)"));
  EXPECT_THAT(ModeJson(o, "", {}), HasSubstr(R"("optimizer_device":"host")"));
  // NVMe: the state goes to files in nvme_path, which it needs.
  ds.offload_optimizer = config::OffloadDevice::kNvme;
  TrainOptions n;
  EXPECT_THAT(ApplyTrainPlan(ds, &n).message(),
              HasSubstr("zero_optimization.offload_optimizer.nvme_path: nvme offload needs a "
                        "directory"));
  EXPECT_FALSE(n.shard.offload_optimizer);
  ds.offload_optimizer_nvme_path = "/local_nvme";
  ASSERT_TRUE(ApplyTrainPlan(ds, &n).ok());
  EXPECT_TRUE(n.shard.offload_optimizer);
  EXPECT_EQ(n.shard.offload_dir, "/local_nvme");
  EXPECT_THAT(DescribeMode(n), HasSubstr("(offloaded to files in /local_nvme)"));
  EXPECT_THAT(ModeJson(n, "", {}), HasSubstr(R"("optimizer_device":"nvme")"));
}

// The aio section drives NVMe offload's transfers, and pin_memory locks its staging buffers; an
// aio block size the transfers cannot use is refused naming the key.
TEST(PlanOptionsTest, DeepSpeedAioReachesTheNvmeOffload) {
  config::TrainPlan ds;
  ds.distributed_type = config::DistributedType::kDeepSpeed;
  ds.offload_optimizer = config::OffloadDevice::kNvme;
  ds.offload_optimizer_nvme_path = "/local_nvme";
  ds.offload_tuning.aio_block_size = 262144;
  ds.offload_tuning.aio_queue_depth = 32;
  ds.offload_tuning.aio_single_submit = true;
  ds.offload_tuning.aio_overlap_events = false;
  ds.offload_tuning.pin_memory = true;
  TrainOptions o;
  ASSERT_TRUE(ApplyTrainPlan(ds, &o).ok());
  EXPECT_EQ(o.shard.offload_aio.block_size, 262144);
  EXPECT_EQ(o.shard.offload_aio.queue_depth, 32);
  EXPECT_TRUE(o.shard.offload_aio.single_submit);
  EXPECT_FALSE(o.shard.offload_aio.overlap_events);
  EXPECT_TRUE(o.shard.offload_pin_buffers);
  ds.offload_tuning.aio_block_size = 1000;
  TrainOptions bad;
  EXPECT_THAT(ApplyTrainPlan(ds, &bad).message(), HasSubstr("aio.block_size"));
}

TEST(PlanOptionsTest, FsdpAndDeepSpeedParameterOffloadToCpu) {
  TrainOptions o;
  ASSERT_TRUE(ApplyTrainPlan(Resolve("distributed_type: FSDP\nnum_processes: 2\nfsdp_config: "
                                     "{fsdp_offload_params: true}\n"),
                             &o)
                  .ok());
  EXPECT_TRUE(o.shard.offload_params);
  EXPECT_TRUE(o.shard.offload_optimizer);
  EXPECT_THAT(DescribeMode(o), HasSubstr("(offloaded to the host, with the parameters)"));
  EXPECT_THAT(ModeJson(o, "", {}), HasSubstr(R"("params_device":"host")"));

  config::TrainPlan ds;
  ds.distributed_type = config::DistributedType::kDeepSpeed;
  ds.strategy = config::Strategy::kFullShard;
  ds.offload_params = config::OffloadDevice::kCpu;
  // DeepSpeed's offload_param alone: the shards on the host, the optimizer on the rank.
  TrainOptions alone;
  ASSERT_TRUE(ApplyTrainPlan(ds, &alone).ok());
  EXPECT_TRUE(alone.shard.offload_params);
  EXPECT_FALSE(alone.shard.offload_optimizer);
  EXPECT_THAT(DescribeMode(alone), HasSubstr("optimizer state f32, parameters offloaded to the "
                                             "host, loss scaling"));
  EXPECT_THAT(ModeJson(alone, "", {}),
              HasSubstr(R"("optimizer_device":"compute","params_device":"host")"));
  ds.offload_optimizer = config::OffloadDevice::kCpu;
  TrainOptions both;
  ASSERT_TRUE(ApplyTrainPlan(ds, &both).ok());
  EXPECT_TRUE(both.shard.offload_params && both.shard.offload_optimizer);
}

TEST(PlanOptionsTest, UnsupportedSettingsNameTheirKeysAndChangeNothing) {
  TrainOptions o;
  o.grad_accum = 7;
  const TrainOptions before = o;
  absl::Status s = ApplyTrainPlan(
      Resolve("distributed_type: FSDP\nnum_processes: 2\nfsdp_config: {fsdp_offload_params: "
              "true, fsdp_sharding_strategy: SHARD_GRAD_OP}\n"),
      &o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("fsdp_config.fsdp_offload_params: cpu offload needs sharded "
                                     "parameters (FULL_SHARD / ZeRO stage 3, or HYBRID_SHARD), "
                                     "not shard_grad_op"));
  EXPECT_EQ(std::count(s.message().begin(), s.message().end(), '\n'), 0) << s;  // reported once
  EXPECT_EQ(o.grad_accum, before.grad_accum);
  EXPECT_EQ(o.shard.strategy, before.shard.strategy);

  config::TrainPlan ds;
  ds.distributed_type = config::DistributedType::kDeepSpeed;
  ds.strategy = config::Strategy::kFullShard;
  ds.offload_params = config::OffloadDevice::kNvme;
  ds.offload_optimizer = config::OffloadDevice::kCpu;
  ds.optimizer = Optimizer("SGD");
  s = ApplyTrainPlan(ds, &o);
  // nvme parameters without a directory, and SGD: both named, in one run.
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("zero_optimization.offload_param.nvme_path: nvme offload needs a "
                              "directory"),
                    HasSubstr("optimizer.type: SGD")));

  config::TrainPlan adam;
  adam.optimizer = Optimizer("Adam", 0.1, /*adam_w_mode=*/false);
  EXPECT_THAT(ApplyTrainPlan(adam, &o).message(), HasSubstr("optimizer.params.adam_w_mode"));
  adam.optimizer->weight_decay = 0.0;  // without decay Adam and AdamW are the same update
  EXPECT_TRUE(ApplyTrainPlan(adam, &o).ok());

  config::TrainPlan sched;
  sched.scheduler = Scheduler("WarmupDecayLR", 2, 0);
  EXPECT_THAT(ApplyTrainPlan(sched, &o).message(),
              HasSubstr("scheduler.params.total_num_steps: must be >= 1, got 0"));

  config::TrainPlan bf16_master;
  bf16_master.mixed_precision.master_dtype = config::FloatType::kBf16;
  EXPECT_THAT(ApplyTrainPlan(bf16_master, &o).message(), HasSubstr("master weights in bf16"));
  config::TrainPlan fp16_weights;  // fp16 loaded without mixed precision: no low-precision fp16
  fp16_weights.mixed_precision.param_dtype = fp16_weights.mixed_precision.reduce_dtype =
      fp16_weights.mixed_precision.master_dtype =
          fp16_weights.mixed_precision.optimizer_dtype = config::FloatType::kFp16;
  EXPECT_THAT(ApplyTrainPlan(fp16_weights, &o).message(),
              HasSubstr("fp16 weights need mixed_precision fp16"));
}

TEST(PlanOptionsTest, Bf16WeightsWithoutMixedPrecisionAreLowPrecision) {
  // DESIGN.md §3.2's first row: the resolver puts every dtype at the load dtype.
  config::TrainPlan p;
  p.mixed_precision.param_dtype = p.mixed_precision.reduce_dtype =
      p.mixed_precision.master_dtype = p.mixed_precision.optimizer_dtype = config::FloatType::kBf16;
  TrainOptions o;
  ASSERT_TRUE(ApplyTrainPlan(p, &o).ok());
  EXPECT_EQ(o.shard.param_dtype, DType::kBF16);
  EXPECT_EQ(o.shard.reduce_dtype, DType::kBF16);
  EXPECT_EQ(o.shard.master_dtype, DType::kBF16);
  EXPECT_THAT(DescribeMode(o), HasSubstr("params bf16, grads bf16, master bf16, optimizer "
                                         "state bf16"));
  // Mixed precision keeps fp32 masters.
  p.mixed_precision.master_dtype = p.mixed_precision.optimizer_dtype = config::FloatType::kFp32;
  ASSERT_TRUE(ApplyTrainPlan(p, &o).ok());
  EXPECT_EQ(o.shard.master_dtype, DType::kF32);
}

TEST(PlanOptionsTest, UnsetAutoKeepsTheJobValueAndNotesNameKeys) {
  config::TrainPlan p;
  p.distributed_type = config::DistributedType::kFsdp;
  p.wrap_policy = config::WrapPolicy::kTransformerBased;
  p.prefetch.bucket_size = std::nullopt;  // "auto" waiting for a hidden size
  p.prefetch.param_persistence_threshold = std::nullopt;
  p.state_dict_type = config::StateDictType::kLocal;
  p.activation_checkpointing = true;
  p.use_orig_params = false;
  p.scheduler = Scheduler("WarmupLR", {}, {}, {}, 5e-4);
  TrainOptions o;
  o.shard.prefetch_bucket_numel = 123;
  o.shard.param_persistence_threshold = 45;
  o.schedule.warmup_steps = 6;
  std::vector<std::string> notes;
  ASSERT_TRUE(ApplyTrainPlan(p, &o, &notes).ok());
  EXPECT_EQ(o.shard.prefetch_bucket_numel, 123);
  EXPECT_EQ(o.shard.param_persistence_threshold, 45);
  EXPECT_EQ(o.state_dict_type, TrainOptions::StateDictType::kSharded);
  EXPECT_EQ(o.schedule.kind, optim::ScheduleKind::kConstant);
  EXPECT_EQ(o.schedule.warmup_steps, 6);  // warmup_num_steps unset: the job's
  EXPECT_FLOAT_EQ(o.schedule.base_lr, 5e-4f);
  EXPECT_TRUE(o.activation_checkpointing);  // honoured, so no note
  EXPECT_THAT(notes, ElementsAre(HasSubstr("LOCAL_STATE_DICT"), HasSubstr("fsdp_use_orig_params")));
}

TEST(PlanOptionsTest, ModeJsonIsOneObject) {
  TrainOptions o;
  o.shard.strategy = shard::Strategy::kHybridShard;
  o.shard.hybrid_group_size = 2;
  o.shard.param_dtype = DType::kBF16;
  const std::string line = ModeJson(o, "fsdp.yaml", {"a note"});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["event"], "mode");
  EXPECT_EQ(j["strategy"], "hybrid_shard");
  EXPECT_EQ(j["hybrid_group_size"], 2);
  EXPECT_EQ(j["params"], "bf16");
  EXPECT_EQ(j["grads"], "f32");
  EXPECT_EQ(j["master"], "f32");
  EXPECT_EQ(j["optimizer_state"], "f32");
  EXPECT_EQ(j["config"], "fsdp.yaml");
  EXPECT_EQ(j["notes"].size(), 1u);
  EXPECT_TRUE(nlohmann::json::parse(ModeJson(o, "", {}))["config"].is_null());
}

}  // namespace
}  // namespace accel::config
