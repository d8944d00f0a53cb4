#include "job/plan_proto.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "job/job_lowering.h"
#include "job/plan_enums.h"

namespace accel::job {
namespace {

namespace v1 = accel::v1;

void ShardToProto(const shard::ShardOptions& s, v1::PlanShardOptions* p) {
  p->set_strategy(ToProto(s.strategy));
  p->set_hybrid_group_size(s.hybrid_group_size);
  p->set_reshard_after_forward(s.reshard_after_forward);
  p->set_forward_prefetch(s.forward_prefetch);
  p->set_backward_prefetch(ToProto(s.backward_prefetch));
  p->set_max_inflight_gathers(s.max_inflight_gathers);
  p->set_param_persistence_threshold(s.param_persistence_threshold);
  p->set_reduce_every_micro_step(s.reduce_every_micro_step);
  p->set_param_dtype(ToProto(s.param_dtype));
  p->set_reduce_dtype(ToProto(s.reduce_dtype));
  p->set_master_dtype(ToProto(s.master_dtype));
  p->set_offload_optimizer(s.offload_optimizer);
  p->set_offload_params(s.offload_params);
  p->set_offload_dir(s.offload_dir);
  p->set_offload_param_dir(s.offload_param_dir);
  p->set_offload_params_to_host(s.offload_params_to_host);
  p->set_offload_tile_numel(s.offload_tile_numel);
  p->set_aio_block_size(s.offload_aio.block_size);
  p->set_aio_queue_depth(s.offload_aio.queue_depth);
  p->set_aio_single_submit(s.offload_aio.single_submit);
  p->set_aio_overlap_events(s.offload_aio.overlap_events);
  p->set_aio_backend(ToProto(s.offload_aio.backend));
  p->set_offload_pin_buffers(s.offload_pin_buffers);
  p->set_prefetch_bucket_numel(s.prefetch_bucket_numel);
  p->set_max_live_numel(s.max_live_numel);
  p->set_max_reuse_distance(s.max_reuse_distance);
}

absl::Status ShardFromProto(const v1::PlanShardOptions& p, shard::ShardOptions* s) {
  ACCEL_ASSIGN_OR_RETURN(s->strategy, FromProto(p.strategy(), "options.shard.strategy"));
  s->hybrid_group_size = p.hybrid_group_size();
  s->reshard_after_forward = p.reshard_after_forward();
  s->forward_prefetch = p.forward_prefetch();
  ACCEL_ASSIGN_OR_RETURN(s->backward_prefetch,
                         FromProto(p.backward_prefetch(), "options.shard.backward_prefetch"));
  s->max_inflight_gathers = p.max_inflight_gathers();
  s->param_persistence_threshold = p.param_persistence_threshold();
  s->reduce_every_micro_step = p.reduce_every_micro_step();
  ACCEL_ASSIGN_OR_RETURN(s->param_dtype, FromProto(p.param_dtype(), "options.shard.param_dtype"));
  ACCEL_ASSIGN_OR_RETURN(s->reduce_dtype,
                         FromProto(p.reduce_dtype(), "options.shard.reduce_dtype"));
  ACCEL_ASSIGN_OR_RETURN(s->master_dtype,
                         FromProto(p.master_dtype(), "options.shard.master_dtype"));
  s->offload_optimizer = p.offload_optimizer();
  s->offload_params = p.offload_params();
  s->offload_dir = p.offload_dir();
  s->offload_param_dir = p.offload_param_dir();
  s->offload_params_to_host = p.offload_params_to_host();
  s->offload_tile_numel = p.offload_tile_numel();
  s->offload_aio.block_size = p.aio_block_size();
  s->offload_aio.queue_depth = p.aio_queue_depth();
  s->offload_aio.single_submit = p.aio_single_submit();
  s->offload_aio.overlap_events = p.aio_overlap_events();
  ACCEL_ASSIGN_OR_RETURN(s->offload_aio.backend,
                         FromProto(p.aio_backend(), "options.shard.aio_backend"));
  s->offload_pin_buffers = p.offload_pin_buffers();
  s->prefetch_bucket_numel = p.prefetch_bucket_numel();
  s->max_live_numel = p.max_live_numel();
  s->max_reuse_distance = p.max_reuse_distance();
  return absl::OkStatus();
}

void ScheduleToProto(const optim::LrSchedule& s, v1::PlanLrSchedule* p) {
  p->set_kind(ToProto(s.kind));
  p->set_base_lr(s.base_lr);
  p->set_min_lr(s.min_lr);
  p->set_warmup_steps(s.warmup_steps);
  p->set_total_steps(s.total_steps);
  if (!s.deepspeed.has_value()) return;
  const optim::DeepSpeedLr& d = *s.deepspeed;
  v1::PlanDeepSpeedLr* pd = p->mutable_deepspeed();
  pd->set_type(ToProto(d.type));
  pd->set_log_warmup(d.log_warmup);
  pd->set_min_lr(d.min_lr);
  pd->set_max_lr(d.max_lr);
  pd->set_warmup_min_ratio(d.warmup_min_ratio);
  pd->set_cos_min_ratio(d.cos_min_ratio);
  pd->set_warmup_steps(d.warmup_steps);
  pd->set_total_steps(d.total_steps);
}

absl::Status ScheduleFromProto(const v1::PlanLrSchedule& p, optim::LrSchedule* s) {
  ACCEL_ASSIGN_OR_RETURN(s->kind, FromProto(p.kind(), "options.schedule.kind"));
  s->base_lr = p.base_lr();
  s->min_lr = p.min_lr();
  s->warmup_steps = p.warmup_steps();
  s->total_steps = p.total_steps();
  s->deepspeed.reset();
  if (!p.has_deepspeed()) return absl::OkStatus();
  const v1::PlanDeepSpeedLr& pd = p.deepspeed();
  optim::DeepSpeedLr d;
  ACCEL_ASSIGN_OR_RETURN(d.type, FromProto(pd.type(), "options.schedule.deepspeed.type"));
  d.log_warmup = pd.log_warmup();
  d.min_lr = pd.min_lr();
  d.max_lr = pd.max_lr();
  d.warmup_min_ratio = pd.warmup_min_ratio();
  d.cos_min_ratio = pd.cos_min_ratio();
  d.warmup_steps = pd.warmup_steps();
  d.total_steps = pd.total_steps();
  s->deepspeed = d;
  return absl::OkStatus();
}

void OptionsToProto(const config::TrainOptions& o, v1::PlanTrainOptions* p) {
  p->set_model(o.model);
  p->set_model_config(o.model_config);
  p->set_init_weights(o.init_weights);
  p->set_data(o.data);
  p->set_batch(o.batch);
  p->set_seq(o.seq);
  p->set_steps(o.steps);
  p->set_grad_accum(o.grad_accum);
  p->set_activation_checkpointing(o.activation_checkpointing);
  if (o.shuffle_seed.has_value()) p->set_shuffle_seed(*o.shuffle_seed);
  ScheduleToProto(o.schedule, p->mutable_schedule());
  v1::PlanAdamW* a = p->mutable_adamw();
  a->set_beta1(o.adamw.beta1);
  a->set_beta2(o.adamw.beta2);
  a->set_eps(o.adamw.eps);
  a->set_weight_decay(o.adamw.weight_decay);
  a->set_bias_correction(o.adamw.bias_correction);
  a->set_state_dtype(ToProto(o.adamw.state_dtype));
  p->set_grad_clip(o.grad_clip);
  p->set_seed(o.seed);
  ShardToProto(o.shard, p->mutable_shard());
  p->set_sync_module_states(o.sync_module_states);
  p->set_checkpoint_dir(o.checkpoint_dir);
  p->set_checkpoint_every(o.checkpoint_every);
  p->set_keep_last(o.keep_last);
  p->set_resume_dir(o.resume_dir);
  p->set_state_dict_type(ToProto(o.state_dict_type));
  p->set_save_16bit(o.save_16bit);
  if (o.max_shard_bytes.has_value()) p->set_max_shard_bytes(*o.max_shard_bytes);
  p->set_cpu_ram_efficient_loading(o.cpu_ram_efficient_loading);
  p->set_zero3_init(o.zero3_init);
  v1::PlanLossScaling* ls = p->mutable_loss_scaling();
  ls->set_initial_scale_power(o.loss_scaling.initial_scale_power);
  ls->set_window(o.loss_scaling.window);
  ls->set_hysteresis(o.loss_scaling.hysteresis);
  ls->set_min_scale(o.loss_scaling.min_scale);
  p->set_rank_stats_every(o.rank_stats_every);
  p->set_max_nonfinite_steps(o.max_nonfinite_steps);
  p->set_ignore_memory_plan(o.ignore_memory_plan);
  v1::PlanEval* e = p->mutable_eval();
  e->set_data(o.eval.data);
  e->set_every_n_steps(o.eval.every_n_steps);
  e->set_max_batches(o.eval.max_batches);
  e->set_at_start(o.eval.at_start);
  e->set_at_end(o.eval.at_end);
  p->set_keep_best(o.keep_best);
  v1::PlanSample* sm = p->mutable_sample();
  sm->set_every(o.sample.every);
  sm->set_prompt(o.sample.prompt);
  sm->set_max_new_tokens(o.sample.max_new_tokens);
  sm->set_temperature(o.sample.temperature);
  sm->set_tokenizer(o.sample.tokenizer);

  v1::PlanDataset* d = p->mutable_dataset();
  d->set_format(o.dataset.format);
  d->set_source(o.dataset.source);
  d->set_tokenizer(o.dataset.tokenizer);
  d->set_text_field(o.dataset.text_field);
  d->set_validation(o.dataset.validation);
  d->set_validation_fraction(o.dataset.validation_fraction);
  d->set_skip_invalid(o.dataset.skip_invalid);
  d->set_cache_dir(o.dataset.cache_dir);
  for (const auto& [path, weight] : o.dataset.mix) {
    v1::PlanWeightedSource* m = d->add_mix();
    m->set_path(path);
    m->set_weight(weight);
  }
}

// checkpoint_owner is the worker's to set (acceld's job and state id, or a standalone run's).
absl::Status OptionsFromProto(const v1::PlanTrainOptions& p, config::TrainOptions* o) {
  o->model = p.model();
  o->model_config = p.model_config();
  o->init_weights = p.init_weights();
  o->data = p.data();
  o->batch = p.batch();
  o->seq = p.seq();
  o->steps = p.steps();
  o->grad_accum = p.grad_accum();
  o->activation_checkpointing = p.activation_checkpointing();
  o->shuffle_seed.reset();
  if (p.has_shuffle_seed()) o->shuffle_seed = p.shuffle_seed();
  ACCEL_RETURN_IF_ERROR(ScheduleFromProto(p.schedule(), &o->schedule));
  o->adamw.beta1 = p.adamw().beta1();
  o->adamw.beta2 = p.adamw().beta2();
  o->adamw.eps = p.adamw().eps();
  o->adamw.weight_decay = p.adamw().weight_decay();
  o->adamw.bias_correction = p.adamw().bias_correction();
  ACCEL_ASSIGN_OR_RETURN(o->adamw.state_dtype,
                         FromProto(p.adamw().state_dtype(), "options.adamw.state_dtype"));
  o->grad_clip = p.grad_clip();
  o->seed = p.seed();
  ACCEL_RETURN_IF_ERROR(ShardFromProto(p.shard(), &o->shard));
  o->sync_module_states = p.sync_module_states();
  o->checkpoint_dir = p.checkpoint_dir();
  o->checkpoint_every = p.checkpoint_every();
  o->keep_last = p.keep_last();
  o->resume_dir = p.resume_dir();
  ACCEL_ASSIGN_OR_RETURN(o->state_dict_type,
                         FromProto(p.state_dict_type(), "options.state_dict_type"));
  o->save_16bit = p.save_16bit();
  o->max_shard_bytes.reset();
  if (p.has_max_shard_bytes()) o->max_shard_bytes = p.max_shard_bytes();
  o->cpu_ram_efficient_loading = p.cpu_ram_efficient_loading();
  o->zero3_init = p.zero3_init();
  o->loss_scaling.initial_scale_power = p.loss_scaling().initial_scale_power();
  o->loss_scaling.window = p.loss_scaling().window();
  o->loss_scaling.hysteresis = p.loss_scaling().hysteresis();
  o->loss_scaling.min_scale = p.loss_scaling().min_scale();
  o->rank_stats_every = p.rank_stats_every();
  o->max_nonfinite_steps = p.max_nonfinite_steps();
  o->ignore_memory_plan = p.ignore_memory_plan();
  o->eval.data = p.eval().data();
  o->eval.every_n_steps = p.eval().every_n_steps();
  o->eval.max_batches = p.eval().max_batches();
  o->eval.at_start = p.eval().at_start();
  o->eval.at_end = p.eval().at_end();
  o->keep_best = p.keep_best();
  o->sample.every = p.sample().every();
  o->sample.prompt = p.sample().prompt();
  // A plan from before samples: every is 0 (off), max_new_tokens is kept at its default.
  if (p.sample().max_new_tokens() > 0) o->sample.max_new_tokens = p.sample().max_new_tokens();
  o->sample.temperature = p.sample().temperature();
  o->sample.tokenizer = p.sample().tokenizer();

  o->dataset.format = p.dataset().format();
  o->dataset.source = p.dataset().source();
  o->dataset.tokenizer = p.dataset().tokenizer();
  o->dataset.text_field = p.dataset().text_field();
  o->dataset.validation = p.dataset().validation();
  o->dataset.validation_fraction = p.dataset().validation_fraction();
  o->dataset.skip_invalid = p.dataset().skip_invalid();
  o->dataset.cache_dir = p.dataset().cache_dir();
  o->dataset.mix.clear();
  for (const auto& m : p.dataset().mix()) o->dataset.mix.push_back({m.path(), m.weight()});
  return absl::OkStatus();
}

// The model as its registry entry writes it: no code here asks which architecture it is.
void ModelToProto(const model::ModelConfig& c, v1::PlanModelConfig* p) {
  p->set_name(c.name());
  p->set_model_type(c.model_type());
  p->set_config_json(model::ModelConfigToJson(c));
}

absl::StatusOr<model::ModelConfig> ModelFromProto(const v1::PlanModelConfig& p) {
  if (p.config_json().empty()) {
    return absl::InvalidArgumentError("training plan: model.config_json is empty (no model)");
  }
  ACCEL_ASSIGN_OR_RETURN(model::ModelConfig c,
                         model::ModelConfigFromJson(p.config_json(), "training plan: model"));
  c.set_name(p.name());
  return c;
}

}  // namespace

RunWorld WorldOfSpec(const accel::v1::JobSpec& spec, int world_size) {
  RunWorld w;
  w.world_size = world_size;
  w.nodes = std::max(1, spec.resources().nodes());
  w.ranks_per_node = std::max(1, world_size / w.nodes);
  w.device = spec.resources().device().empty() ? "cpu" : spec.resources().device();
  w.launcher = spec.resources().launcher().empty() ? "local" : spec.resources().launcher();
  w.threads = std::max(1, spec.resources().threads_per_process());
  w.log_every = std::max<int64_t>(1, spec.train().log_every());
  w.comm_timeout_s = std::max(0.0, spec.comm_timeout_s());
  return w;
}

absl::StatusOr<v1::TrainingPlan> TrainingPlanFromLowered(const config::LoweredJob& job,
                                                         const RunWorld& world) {
  v1::TrainingPlan plan;
  plan.set_version(kTrainingPlanVersion);
  OptionsToProto(job.options, plan.mutable_options());
  ModelToProto(job.model, plan.mutable_model());
  // A model field the plan does not carry would change the model on the ranks: caught here, at
  // submit, as the bug it is (a field added to a config and not to PlanModelConfig).
  ACCEL_ASSIGN_OR_RETURN(model::ModelConfig decoded, ModelFromProto(plan.model()));
  if (model::ModelConfigToJson(decoded) != model::ModelConfigToJson(job.model) ||
      decoded.name() != job.model.name()) {
    return absl::InternalError(absl::StrCat("training plan: model ", job.model.name(),
                                            " does not survive the plan (a config field missing "
                                            "from PlanModelConfig)"));
  }
  v1::PlanWorld* w = plan.mutable_world();
  w->set_world_size(world.world_size);
  w->set_nodes(world.nodes);
  w->set_ranks_per_node(world.ranks_per_node);
  ACCEL_ASSIGN_OR_RETURN(v1::PlanDevice device, DeviceToProto(world.device, "resources.device"));
  w->set_device(device);
  ACCEL_ASSIGN_OR_RETURN(v1::LauncherKind launcher,
                         LauncherToProto(world.launcher, "resources.launcher"));
  w->set_launcher(launcher);
  w->set_threads(world.threads);
  w->set_log_every(world.log_every);
  w->set_comm_timeout_s(world.comm_timeout_s);
  plan.set_source(job.source);
  for (const std::string& n : job.notes) plan.add_notes(n);
  return plan;
}

absl::StatusOr<v1::TrainingPlan> TrainingPlanOfSpec(const v1::JobSpec& spec,
                                                    const config::LoweredJob& job) {
  ACCEL_ASSIGN_OR_RETURN(v1::TrainingPlan plan,
                         TrainingPlanFromLowered(job, WorldOfSpec(spec, job.world_size)));
  v1::PlanTrainOptions* o = plan.mutable_options();
  o->set_checkpoint_dir(spec.checkpoint().dir());
  o->set_checkpoint_every(std::max<int64_t>(0, spec.checkpoint().every_n_steps()));
  o->set_keep_last(std::max(0, spec.checkpoint().keep_last()));
  // Every rank's memory and traffic ride on each metrics record.
  o->set_rank_stats_every(plan.world().log_every());
  return plan;
}

absl::StatusOr<v1::TrainingPlan> PlanJobSpec(const v1::JobSpec& spec, Env* env) {
  ACCEL_ASSIGN_OR_RETURN(config::LoweredJob job,
                         LowerJobSpec(spec, /*check_files=*/false, env, Echo::kPositionsOnly));
  return TrainingPlanOfSpec(spec, job);
}

absl::StatusOr<PlannedJob> PlannedJobFromPlan(const v1::TrainingPlan& plan) {
  if (plan.version() == 0 || plan.version() > kTrainingPlanVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training plan: version ", plan.version(), " is not one this build reads (1 to ",
        kTrainingPlanVersion, "); ",
        plan.version() == 0 ? "the assignment carries no plan (an acceld older than the typed "
                              "plan?)"
                            : "a plan from a newer acceld"));
  }
  PlannedJob out;
  out.version = plan.version();
  ACCEL_RETURN_IF_ERROR(OptionsFromProto(plan.options(), &out.options));
  ACCEL_ASSIGN_OR_RETURN(out.model, ModelFromProto(plan.model()));
  out.options.resolved_model = out.model;
  config::NoteModelConfigRead();  // the rank's one model-config read: from its plan
  const v1::PlanWorld& w = plan.world();
  out.world.world_size = w.world_size();
  out.world.nodes = w.nodes();
  out.world.ranks_per_node = w.ranks_per_node();
  ACCEL_ASSIGN_OR_RETURN(out.world.device, DeviceFromProto(w.device(), "world.device"));
  ACCEL_ASSIGN_OR_RETURN(out.world.launcher, LauncherFromProto(w.launcher(), "world.launcher"));
  out.world.threads = w.threads();
  out.world.log_every = w.log_every();
  out.world.comm_timeout_s = w.comm_timeout_s();
  if (out.world.world_size < 1 || out.world.threads < 1 || out.world.log_every < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training plan: world has world_size ", out.world.world_size, ", threads ",
        out.world.threads, ", log_every ", out.world.log_every, " (each must be at least 1)"));
  }
  out.source = plan.source();
  out.notes.assign(plan.notes().begin(), plan.notes().end());
  return out;
}

v1::JobPlan PlanToProto(const PlannedJob& job) {
  config::LoweredJob lowered;
  lowered.options = job.options;
  lowered.world_size = job.world.world_size;
  lowered.source = job.source;
  lowered.notes = job.notes;
  lowered.model = job.model;
  return PlanToProto(lowered, job.world.device);
}

}  // namespace accel::job
