#include "job/job_lowering.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/config/mode.h"
#include "engine/generate/training_sample.h"
#include "engine/model/registry.h"
#include "engine/shard/shard_plan.h"
#include "job/job_options.h"

namespace accel::job {

absl::StatusOr<config::LoweredJob> LowerJobSpec(const accel::v1::JobSpec& spec, bool check_files,
                                                Env* env, Echo texts) {
  config::LoweringInputs in;
  ACCEL_ASSIGN_OR_RETURN(in.job, job::JobOptionsFromSpec(spec));
  if (!spec.accelerate_config_text().empty()) {
    in.accelerate = {spec.accelerate_config_path().empty() ? "accelerate_config"
                                                           : spec.accelerate_config_path(),
                     spec.accelerate_config_text()};
  }
  if (!spec.deepspeed_config_text().empty()) {
    in.deepspeed = {spec.deepspeed_config_path().empty() ? "deepspeed_config"
                                                         : spec.deepspeed_config_path(),
                    spec.deepspeed_config_text()};
  }
  // A config the spec only names is opened here, for the client: never quoted.
  in.accelerate.echo = spec.accelerate_config_text().empty() ? Echo::kPositionsOnly : texts;
  in.deepspeed.echo = spec.deepspeed_config_text().empty() ? Echo::kPositionsOnly : texts;
  if (spec.resources().has_num_processes()) {
    in.launcher_world = spec.resources().num_processes();
    in.launcher_world_source = "resources.num_processes";
  }
  if (spec.resources().nodes() > 0) {
    in.launcher_machines = spec.resources().nodes();
    in.launcher_machines_source = "resources.nodes";  // a hybrid group spans one node
  }
  in.check_files = check_files;
  ACCEL_ASSIGN_OR_RETURN(config::LoweredJob job, config::Lower(in, env));
  // Samples during training: the prompt in tokens must fit train.seq_len, refused here rather
  // than when rank 0 starts (it reads the tokenizer, so only where the files can be read).
  if (check_files && job.options.sample.enabled()) {
    ACCEL_RETURN_IF_ERROR(generate::TrainingSampler::Open(env, job.options.sample, job.model,
                                                          job.options.seq)
                              .status());
  }
  // Whether the model's architecture has a CUDA runner is its registry entry's to say
  // (docs/models.md): refused here, not when the ranks start.
  if (spec.resources().device() == "cuda" && !job.model.architecture().TrainsOn("cuda")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resources.device: cuda trains ", absl::StrJoin(model::FamiliesOn("cuda"), ", "),
        " models only so far; model ", job.model.name(), " is ", job.model.model_type(),
        " (architecture ", job.model.architecture().name, "; use device: cpu)"));
  }
  return job;
}

accel::v1::JobSpec ResolvedSpec(const accel::v1::JobSpec& spec, const config::LoweredJob& job) {
  accel::v1::JobSpec out = spec;
  out.mutable_resources()->set_num_processes(job.world_size);
  // A config.json wins over the preset: the preset is not what runs.
  if (!out.model().config().empty()) out.mutable_model()->clear_preset();
  const shard::ShardOptions& s = job.options.shard;
  auto* sh = out.mutable_sharding();
  sh->set_strategy(std::string(shard::StrategyName(s.strategy)));
  sh->set_hybrid_group_size(s.hybrid_group_size);
  sh->set_forward_prefetch(s.forward_prefetch);
  sh->set_backward_prefetch(std::string(config::Name(s.backward_prefetch)));
  sh->set_reshard_after_forward(s.reshard_after_forward);
  sh->set_sync_module_states(job.options.sync_module_states);
  if (job.plan.has_value()) {
    // The values the workers train with, where the config decided them.
    auto* t = out.mutable_train();
    t->set_micro_batch(job.options.batch);
    t->set_grad_accum(job.options.grad_accum);
    t->set_grad_clip(job.options.grad_clip);
  }
  return out;
}

accel::v1::JobPlan PlanToProto(const config::LoweredJob& job, const std::string& device) {
  const config::TrainOptions& o = job.options;
  const config::ResolvedMode mode = config::ModeOf(o);
  accel::v1::JobPlan p;
  p.set_strategy(std::string(shard::StrategyName(o.shard.strategy)));
  p.set_hybrid_group_size(o.shard.hybrid_group_size);
  p.set_precision(config::PrecisionName(o));
  p.set_params_dtype(std::string(DTypeName(mode.params)));
  p.set_grads_dtype(std::string(DTypeName(mode.grads)));
  p.set_master_dtype(std::string(DTypeName(mode.master)));
  p.set_optimizer_device(config::OptimizerDevice(o));
  p.set_params_device(config::ParamsDevice(o));
  p.set_offload_dir(o.shard.offload_dir);
  p.set_offload_param_dir(config::ParamsOffloadDir(o));
  p.set_world_size(job.world_size);
  p.set_micro_batch(o.batch);
  p.set_grad_accum(o.grad_accum);
  p.set_global_batch(o.batch * o.grad_accum * job.world_size);
  p.set_seq_len(o.seq);
  p.set_grad_clip(o.grad_clip);
  p.set_state_dict_type(config::StateDictName(o.state_dict_type));
  p.set_save_16bit(o.save_16bit);
  p.set_config(job.source);
  for (const std::string& n : job.notes) p.add_notes(n);
  p.set_device(device.empty() ? "cpu" : device);
  auto* m = p.mutable_model();
  m->set_name(job.model.name());
  const model::ModelConfig& c = job.model;
  m->set_n_layer(c.num_layers());
  m->set_n_head(c.num_heads());
  m->set_n_embd(c.hidden_size());
  m->set_vocab_size(c.vocab_size());
  m->set_n_positions(c.max_positions());
  m->set_num_params(c.NumParams());
  m->set_architecture(c.model_type());
  m->set_n_kv_head(c.num_kv_heads());
  m->set_head_dim(c.head_dim());
  m->set_intermediate_size(c.intermediate_size());
  m->set_tied_embeddings(c.tied_embeddings());
  m->set_block_class(c.block_class());
  return p;
}

}  // namespace accel::job
