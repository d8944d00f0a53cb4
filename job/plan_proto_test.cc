// The typed plan: a lowered job into accel.v1.TrainingPlan and back, field by field; what a
// rank refuses (unknown enum values, newer versions); the world and the hybrid rule decided at
// the lowering.
#include "job/plan_proto.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job/job_file.h"
#include "job/job_lowering.h"

namespace accel::job {
namespace {

using ::testing::HasSubstr;

// The fields of `m` and of the messages inside it that hold their proto default, as paths.
void CollectUnset(const google::protobuf::Message& m, const std::string& path,
                  std::set<std::string>* unset) {
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  const google::protobuf::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    const bool set = f->is_repeated() ? r->FieldSize(m, f) > 0 : r->HasField(m, f);
    if (!set) unset->insert(path + f->name());
    if (set && !f->is_repeated() &&
        f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      CollectUnset(r->GetMessage(m, f), path + f->name() + ".", unset);
    }
  }
}

// A TrainOptions with every field away from its default.
config::TrainOptions Unusual() {
  config::TrainOptions o;
  o.model = "llama-tiny";
  o.model_config = "/m/config.json";
  o.init_weights = "/m/model.safetensors";
  o.data = "/d/text.txt";
  o.batch = 3;
  o.seq = 48;
  o.steps = 77;
  o.grad_accum = 5;
  o.activation_checkpointing = true;
  o.shuffle_seed = 42;
  o.schedule.kind = optim::ScheduleKind::kCosine;
  o.schedule.base_lr = 2e-3f;
  o.schedule.min_lr = 1e-5f;
  o.schedule.warmup_steps = 9;
  o.schedule.total_steps = 77;
  optim::DeepSpeedLr ds;
  ds.type = optim::DeepSpeedLr::Type::kWarmupCosineLR;
  ds.log_warmup = false;
  ds.min_lr = 1e-6;
  ds.max_lr = 3e-3;
  ds.warmup_min_ratio = 0.1;
  ds.cos_min_ratio = 0.01;
  ds.warmup_steps = 11;
  ds.total_steps = 70;
  o.schedule.deepspeed = ds;
  o.adamw = {0.8f, 0.95f, 1e-6f, 0.1f, false, DType::kBF16};
  o.grad_clip = 0.5f;
  o.seed = 7;
  shard::ShardOptions& s = o.shard;
  s.strategy = shard::Strategy::kHybridShardZero2;
  s.hybrid_group_size = 2;
  s.reshard_after_forward = false;
  s.forward_prefetch = true;
  s.backward_prefetch = shard::BackwardPrefetch::kBackwardPost;
  s.max_inflight_gathers = 3;
  s.param_persistence_threshold = 1000;
  s.reduce_every_micro_step = true;
  s.param_dtype = DType::kBF16;
  s.reduce_dtype = DType::kF16;
  s.master_dtype = DType::kBF16;
  s.offload_optimizer = true;
  s.offload_params = true;
  s.offload_dir = "/nvme";
  s.offload_param_dir = "/nvme-params";
  s.offload_params_to_host = true;  // (not with offload_param_dir: the round trip only)
  s.offload_tile_numel = 4096;
  s.offload_aio.block_size = 8192;
  s.offload_aio.queue_depth = 4;
  s.offload_aio.single_submit = true;
  s.offload_aio.overlap_events = false;
  s.offload_aio.backend = io::AioBackend::kThreads;
  s.offload_pin_buffers = true;
  s.prefetch_bucket_numel = 10;
  s.max_live_numel = 20;
  s.max_reuse_distance = 30;
  o.sync_module_states = true;
  o.checkpoint_dir = "/ck";
  o.checkpoint_every = 10;
  o.keep_last = 2;
  o.keep_best = 3;
  o.eval = {"/held_out.bin", 25, 7, true, false};
  o.sample = {.every = 50, .prompt = "Once upon", .max_new_tokens = 12, .temperature = 0.5,
              .tokenizer = "/tok/tokenizer.json"};
  o.resume_dir = "/ck-old";
  o.state_dict_type = config::TrainOptions::StateDictType::kFull;
  o.save_16bit = true;
  o.max_shard_bytes = 123456;
  o.cpu_ram_efficient_loading = true;
  o.zero3_init = true;
  o.loss_scaling = {12, 500, 3, 0.5};
  o.rank_stats_every = 4;
  o.max_nonfinite_steps = 9;
  o.ignore_memory_plan = true;
  o.dataset.format = "messages";
  o.dataset.source = "/chats/*.jsonl";
  o.dataset.tokenizer = "/m/tokenizer.json";
  o.dataset.text_field = "body";
  o.dataset.validation = "/held/*.jsonl";
  o.dataset.validation_fraction = 0.25;
  o.dataset.skip_invalid = true;
  o.dataset.cache_dir = "/cache";
  o.dataset.mix = {{"/web/*.jsonl", 0.5}, {"/code.jsonl", 2}};
  return o;
}

model::LlamaConfig UnusualLlama() {
  model::LlamaConfig l;
  l.name = "toy";
  l.model_type = "qwen2";
  l.hidden_size = 64;
  l.intermediate_size = 176;
  l.num_attention_heads = 4;
  l.num_key_value_heads = 2;
  l.head_dim = 16;
  l.num_hidden_layers = 3;
  l.vocab_size = 300;
  l.max_position_embeddings = 128;
  l.rms_norm_eps = 1e-5;
  l.rope_theta = 50000;
  l.rope_scaling = {model::RopeScaling::Type::kLlama3, 8.0, 1.5, 3.0, 64};
  l.tie_word_embeddings = true;
  l.attention_bias = true;
  l.mlp_bias = true;
  l.initializer_range = 0.01;
  return l;
}

RunWorld UnusualWorld() {
  return {.world_size = 4, .nodes = 2, .ranks_per_node = 2, .device = "cuda",
          .launcher = "slurm", .threads = 3, .log_every = 6, .comm_timeout_s = 45};
}

config::LoweredJob UnusualJob() {
  config::LoweredJob job;
  job.options = Unusual();
  job.world_size = 4;
  job.source = "fsdp.yaml + ds.json";
  job.notes = {"one note", "another"};
  job.model = UnusualLlama();
  return job;
}

TEST(PlanProtoTest, EveryFieldRoundTrips) {
  absl::StatusOr<accel::v1::TrainingPlan> plan =
      TrainingPlanFromLowered(UnusualJob(), UnusualWorld());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->version(), kTrainingPlanVersion);
  // Every plan field is written: each one is away from its proto default in this plan or in one
  // with the booleans whose engine default is true turned back on (a field added to plan.proto
  // and forgotten by the encoder fails here).
  config::LoweredJob other = UnusualJob();
  other.options.shard.reshard_after_forward = other.options.adamw.bias_correction = true;
  other.options.shard.offload_aio.overlap_events = other.options.schedule.deepspeed->log_warmup =
      other.options.eval.at_end = true;
  auto other_plan = TrainingPlanFromLowered(other, UnusualWorld());
  ASSERT_TRUE(other_plan.ok());
  std::set<std::string> unset, other_unset, never;
  CollectUnset(*plan, "", &unset);
  CollectUnset(*other_plan, "", &other_unset);
  std::set_intersection(unset.begin(), unset.end(), other_unset.begin(), other_unset.end(),
                        std::inserter(never, never.begin()));
  EXPECT_THAT(never, ::testing::IsEmpty());
  // Through the wire, as acceld stores it and a rank receives it.
  accel::v1::TrainingPlan received;
  ASSERT_TRUE(received.ParseFromString(plan->SerializeAsString()));
  absl::StatusOr<PlannedJob> back = PlannedJobFromPlan(received);
  ASSERT_TRUE(back.ok()) << back.status();

  const config::TrainOptions want = Unusual();
  const config::TrainOptions& o = back->options;
  EXPECT_EQ(o.model, want.model);
  EXPECT_EQ(o.model_config, want.model_config);
  EXPECT_EQ(o.init_weights, want.init_weights);
  EXPECT_EQ(o.data, want.data);
  EXPECT_EQ(o.batch, want.batch);
  EXPECT_EQ(o.seq, want.seq);
  EXPECT_EQ(o.steps, want.steps);
  EXPECT_EQ(o.grad_accum, want.grad_accum);
  EXPECT_EQ(o.activation_checkpointing, want.activation_checkpointing);
  EXPECT_EQ(o.shuffle_seed, want.shuffle_seed);
  EXPECT_EQ(o.schedule.kind, want.schedule.kind);
  EXPECT_EQ(o.schedule.base_lr, want.schedule.base_lr);
  EXPECT_EQ(o.schedule.min_lr, want.schedule.min_lr);
  EXPECT_EQ(o.schedule.warmup_steps, want.schedule.warmup_steps);
  EXPECT_EQ(o.schedule.total_steps, want.schedule.total_steps);
  ASSERT_TRUE(o.schedule.deepspeed.has_value());
  EXPECT_EQ(o.schedule.deepspeed->type, want.schedule.deepspeed->type);
  EXPECT_EQ(o.schedule.deepspeed->log_warmup, want.schedule.deepspeed->log_warmup);
  EXPECT_EQ(o.schedule.deepspeed->min_lr, want.schedule.deepspeed->min_lr);
  EXPECT_EQ(o.schedule.deepspeed->max_lr, want.schedule.deepspeed->max_lr);
  EXPECT_EQ(o.schedule.deepspeed->warmup_min_ratio, want.schedule.deepspeed->warmup_min_ratio);
  EXPECT_EQ(o.schedule.deepspeed->cos_min_ratio, want.schedule.deepspeed->cos_min_ratio);
  EXPECT_EQ(o.schedule.deepspeed->warmup_steps, want.schedule.deepspeed->warmup_steps);
  EXPECT_EQ(o.schedule.deepspeed->total_steps, want.schedule.deepspeed->total_steps);
  EXPECT_EQ(o.adamw.beta1, want.adamw.beta1);
  EXPECT_EQ(o.adamw.beta2, want.adamw.beta2);
  EXPECT_EQ(o.adamw.eps, want.adamw.eps);
  EXPECT_EQ(o.adamw.weight_decay, want.adamw.weight_decay);
  EXPECT_EQ(o.adamw.bias_correction, want.adamw.bias_correction);
  EXPECT_EQ(o.adamw.state_dtype, want.adamw.state_dtype);
  EXPECT_EQ(o.grad_clip, want.grad_clip);
  EXPECT_EQ(o.seed, want.seed);
  const shard::ShardOptions& s = o.shard;
  const shard::ShardOptions& ws = want.shard;
  EXPECT_EQ(s.strategy, ws.strategy);
  EXPECT_EQ(s.hybrid_group_size, ws.hybrid_group_size);
  EXPECT_EQ(s.reshard_after_forward, ws.reshard_after_forward);
  EXPECT_EQ(s.forward_prefetch, ws.forward_prefetch);
  EXPECT_EQ(s.backward_prefetch, ws.backward_prefetch);
  EXPECT_EQ(s.max_inflight_gathers, ws.max_inflight_gathers);
  EXPECT_EQ(s.param_persistence_threshold, ws.param_persistence_threshold);
  EXPECT_EQ(s.reduce_every_micro_step, ws.reduce_every_micro_step);
  EXPECT_EQ(s.param_dtype, ws.param_dtype);
  EXPECT_EQ(s.reduce_dtype, ws.reduce_dtype);
  EXPECT_EQ(s.master_dtype, ws.master_dtype);
  EXPECT_EQ(s.offload_optimizer, ws.offload_optimizer);
  EXPECT_EQ(s.offload_params, ws.offload_params);
  EXPECT_EQ(s.offload_dir, ws.offload_dir);
  EXPECT_EQ(s.offload_param_dir, ws.offload_param_dir);
  EXPECT_EQ(s.offload_params_to_host, ws.offload_params_to_host);
  EXPECT_EQ(s.offload_tile_numel, ws.offload_tile_numel);
  EXPECT_EQ(s.offload_aio.block_size, ws.offload_aio.block_size);
  EXPECT_EQ(s.offload_aio.queue_depth, ws.offload_aio.queue_depth);
  EXPECT_EQ(s.offload_aio.single_submit, ws.offload_aio.single_submit);
  EXPECT_EQ(s.offload_aio.overlap_events, ws.offload_aio.overlap_events);
  EXPECT_EQ(s.offload_aio.backend, ws.offload_aio.backend);
  EXPECT_EQ(s.offload_pin_buffers, ws.offload_pin_buffers);
  EXPECT_EQ(s.prefetch_bucket_numel, ws.prefetch_bucket_numel);
  EXPECT_EQ(s.max_live_numel, ws.max_live_numel);
  EXPECT_EQ(s.max_reuse_distance, ws.max_reuse_distance);
  EXPECT_EQ(o.sync_module_states, want.sync_module_states);
  EXPECT_EQ(o.checkpoint_dir, want.checkpoint_dir);
  EXPECT_EQ(o.checkpoint_every, want.checkpoint_every);
  EXPECT_EQ(o.keep_last, want.keep_last);
  EXPECT_EQ(o.keep_best, want.keep_best);
  EXPECT_EQ(o.eval.data, want.eval.data);
  EXPECT_EQ(o.eval.every_n_steps, want.eval.every_n_steps);
  EXPECT_EQ(o.eval.max_batches, want.eval.max_batches);
  EXPECT_EQ(o.eval.at_start, want.eval.at_start);
  EXPECT_EQ(o.eval.at_end, want.eval.at_end);
  EXPECT_EQ(o.sample.every, want.sample.every);
  EXPECT_EQ(o.sample.prompt, want.sample.prompt);
  EXPECT_EQ(o.sample.max_new_tokens, want.sample.max_new_tokens);
  EXPECT_EQ(o.sample.temperature, want.sample.temperature);
  EXPECT_EQ(o.sample.tokenizer, want.sample.tokenizer);
  EXPECT_EQ(o.resume_dir, want.resume_dir);
  EXPECT_EQ(o.state_dict_type, want.state_dict_type);
  EXPECT_EQ(o.save_16bit, want.save_16bit);
  EXPECT_EQ(o.max_shard_bytes, want.max_shard_bytes);
  EXPECT_EQ(o.cpu_ram_efficient_loading, want.cpu_ram_efficient_loading);
  EXPECT_EQ(o.zero3_init, want.zero3_init);
  EXPECT_EQ(o.loss_scaling.initial_scale_power, want.loss_scaling.initial_scale_power);
  EXPECT_EQ(o.loss_scaling.window, want.loss_scaling.window);
  EXPECT_EQ(o.loss_scaling.hysteresis, want.loss_scaling.hysteresis);
  EXPECT_EQ(o.loss_scaling.min_scale, want.loss_scaling.min_scale);
  EXPECT_EQ(o.rank_stats_every, want.rank_stats_every);
  EXPECT_EQ(o.max_nonfinite_steps, want.max_nonfinite_steps);
  EXPECT_EQ(o.ignore_memory_plan, want.ignore_memory_plan);
  EXPECT_EQ(o.dataset.format, want.dataset.format);
  EXPECT_EQ(o.dataset.source, want.dataset.source);
  EXPECT_EQ(o.dataset.tokenizer, want.dataset.tokenizer);
  EXPECT_EQ(o.dataset.text_field, want.dataset.text_field);
  EXPECT_EQ(o.dataset.validation, want.dataset.validation);
  EXPECT_EQ(o.dataset.validation_fraction, want.dataset.validation_fraction);
  EXPECT_EQ(o.dataset.skip_invalid, want.dataset.skip_invalid);
  EXPECT_EQ(o.dataset.cache_dir, want.dataset.cache_dir);
  EXPECT_EQ(o.dataset.mix, want.dataset.mix);

  // The model travels as its registry entry's config.json: every field the entry writes comes
  // back (the entry's writer is complete: model_config_test round-trips every preset).
  const model::ModelConfig want_model = UnusualLlama();
  EXPECT_EQ(back->model.name(), want_model.name());
  EXPECT_EQ(back->model.model_type(), "qwen2");
  EXPECT_EQ(model::ModelConfigToJson(back->model), model::ModelConfigToJson(want_model));
  EXPECT_EQ(back->model.NumParams(), want_model.NumParams());
  EXPECT_EQ(back->model.Describe(), want_model.Describe());
  // The options carry the model: ModelConfigOf hands it back and reads nothing.
  ASSERT_TRUE(o.resolved_model.has_value());
  EXPECT_EQ(o.resolved_model->Describe(), back->model.Describe());

  const RunWorld ww = UnusualWorld();
  EXPECT_EQ(back->world.world_size, ww.world_size);
  EXPECT_EQ(back->world.nodes, ww.nodes);
  EXPECT_EQ(back->world.ranks_per_node, ww.ranks_per_node);
  EXPECT_EQ(back->world.device, ww.device);
  EXPECT_EQ(back->world.launcher, ww.launcher);
  EXPECT_EQ(back->world.threads, ww.threads);
  EXPECT_EQ(back->world.log_every, ww.log_every);
  EXPECT_EQ(back->world.comm_timeout_s, ww.comm_timeout_s);
  EXPECT_EQ(back->source, "fsdp.yaml + ds.json");
  EXPECT_EQ(back->notes, (std::vector<std::string>{"one note", "another"}));
  EXPECT_EQ(back->version, kTrainingPlanVersion);
}

TEST(PlanProtoTest, Gpt2RoundTripsAndShowsAsTheLoweredJobDoes) {
  config::LoweredJob job = UnusualJob();
  absl::StatusOr<model::ModelConfig> gpt2 = model::ModelPreset("gpt2-tiny");
  ASSERT_TRUE(gpt2.ok());
  job.model = *gpt2;
  auto plan = TrainingPlanFromLowered(job, UnusualWorld());
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto back = PlannedJobFromPlan(*plan);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->model.name(), gpt2->name());
  EXPECT_EQ(back->model.model_type(), "gpt2");
  EXPECT_EQ(model::ModelConfigToJson(back->model), model::ModelConfigToJson(*gpt2));
  EXPECT_EQ(back->model.shape().num_layers, gpt2->shape().num_layers);
  EXPECT_EQ(back->model.shape().max_positions, gpt2->shape().max_positions);
  // GetJob's JobPlan from the stored plan is the one made from the lowering itself.
  const accel::v1::JobPlan from_plan = PlanToProto(*back);
  const accel::v1::JobPlan from_lowering = PlanToProto(job, "cuda");
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(from_plan, from_lowering)) << diff;
}

TEST(PlanProtoTest, UnknownEnumValuesAndNewerVersionsAreRefusedNamingTheField) {
  auto plan = TrainingPlanFromLowered(UnusualJob(), UnusualWorld());
  ASSERT_TRUE(plan.ok());
  auto refused = [](const accel::v1::TrainingPlan& p) {
    absl::StatusOr<PlannedJob> r = PlannedJobFromPlan(p);
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    return std::string(r.status().message());
  };
  accel::v1::TrainingPlan p = *plan;
  p.mutable_options()->mutable_shard()->set_strategy(static_cast<accel::v1::ShardStrategy>(99));
  EXPECT_THAT(refused(p), HasSubstr("options.shard.strategy has value 99, which this build does "
                                    "not know"));
  p = *plan;
  p.mutable_options()->mutable_shard()->set_param_dtype(accel::v1::DTYPE_UNSPECIFIED);
  EXPECT_THAT(refused(p), HasSubstr("options.shard.param_dtype has value 0"));
  p = *plan;
  p.mutable_world()->set_device(static_cast<accel::v1::PlanDevice>(7));
  EXPECT_THAT(refused(p), HasSubstr("world.device has value 7"));
  p = *plan;
  p.mutable_model()->clear_config_json();
  EXPECT_THAT(refused(p), HasSubstr("model.config_json is empty"));
  p = *plan;
  p.mutable_model()->set_config_json(R"({"model_type": "mamba"})");
  EXPECT_THAT(refused(p), HasSubstr("model_type: not supported"));
  p = *plan;
  p.set_version(kTrainingPlanVersion + 1);
  EXPECT_THAT(refused(p), HasSubstr("a plan from a newer acceld"));
  EXPECT_THAT(refused(accel::v1::TrainingPlan()), HasSubstr("carries no plan"));
}

TEST(PlanProtoTest, AnUnknownDeviceOrLauncherIsRefusedAtTheDoor) {
  RunWorld w = UnusualWorld();
  w.device = "tpu";
  EXPECT_THAT(std::string(TrainingPlanFromLowered(UnusualJob(), w).status().message()),
              HasSubstr("resources.device: unknown device \"tpu\""));
  w = UnusualWorld();
  w.launcher = "pbs";
  EXPECT_THAT(std::string(TrainingPlanFromLowered(UnusualJob(), w).status().message()),
              HasSubstr("resources.launcher: unknown launcher \"pbs\""));
}

TEST(PlanProtoTest, TheSpecsWorldAndHybridGroupAreDecidedByTheLowering) {
  accel::v1::JobSpec spec = job::DefaultJobSpec();
  spec.mutable_data()->set_path("/data/text.txt");  // not opened
  spec.mutable_model()->set_preset("gpt2-tiny");
  spec.mutable_resources()->set_num_processes(4);
  spec.mutable_resources()->set_nodes(2);
  spec.mutable_resources()->set_launcher("slurm");
  spec.mutable_resources()->set_threads_per_process(2);
  spec.mutable_sharding()->set_strategy("hybrid_shard");
  spec.mutable_checkpoint()->set_dir("/ck");
  spec.mutable_checkpoint()->set_every_n_steps(5);
  spec.mutable_checkpoint()->set_keep_last(3);
  spec.set_comm_timeout_s(12);
  const int64_t lowerings = config::LoweringsInProcess();
  absl::StatusOr<accel::v1::TrainingPlan> plan = PlanJobSpec(spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(config::LoweringsInProcess(), lowerings + 1);
  EXPECT_EQ(plan->options().shard().strategy(), accel::v1::STRATEGY_HYBRID_SHARD);
  EXPECT_EQ(plan->options().shard().hybrid_group_size(), 2);  // ranks per node
  EXPECT_EQ(plan->world().world_size(), 4);
  EXPECT_EQ(plan->world().nodes(), 2);
  EXPECT_EQ(plan->world().ranks_per_node(), 2);
  EXPECT_EQ(plan->world().launcher(), accel::v1::LAUNCHER_SLURM);
  EXPECT_EQ(plan->world().device(), accel::v1::DEVICE_CPU);
  EXPECT_EQ(plan->world().threads(), 2);
  EXPECT_EQ(plan->world().comm_timeout_s(), 12);
  EXPECT_EQ(plan->options().checkpoint_dir(), "/ck");
  EXPECT_EQ(plan->options().checkpoint_every(), 5);
  EXPECT_EQ(plan->options().keep_last(), 3);
  EXPECT_EQ(plan->model().model_type(), "gpt2");
  // Decoding lowers nothing and counts the rank's one model-config read.
  const int64_t reads = config::ModelConfigReads();
  ASSERT_TRUE(PlannedJobFromPlan(*plan).ok());
  EXPECT_EQ(config::LoweringsInProcess(), lowerings + 1);
  EXPECT_EQ(config::ModelConfigReads(), reads + 1);
}

}  // namespace
}  // namespace accel::job
